"""The double-auction market's rules as pure functions (DESIGN.md 7.2, BAZAAR seed 002).

Every function takes arrays (and, where randomness is involved, either a
``numpy.random.Generator`` or the uniforms drawn from it) and returns arrays, so each rule can be
checked by hand. Functions work on a trailing seat axis and broadcast over any leading batch axes:
the market clears one round at a time (a batch of one); tests clear many at once.

- :func:`match`: the call-market clearing. Bids sorted high to low, asks low to high, equal quotes
  ordered by a uniform tie-break key (lower key first); rank k pairs with rank k while
  bid >= ask; each pair trades one unit at its own midpoint (b + a) / 2; a .5 midpoint is rounded
  up when the pair's coin is < 1/2, down otherwise. ``NO_QUOTE`` (-1) marks a seat that sits out.
- :func:`clear`: :func:`match` for one round, drawing its uniforms from a generator. It always
  draws the same number of uniforms (one key per bid seat, one per ask seat, one coin per possible
  pair), so the stream never depends on the quotes.
- :func:`clear_round`: the same clearing of one round on Python ints, with the same draws and
  outcome as :func:`clear` (tested on random rounds); what the market calls, 30 times per game,
  where numpy's per-call overhead on 4 + 4 quotes outweighs the arithmetic.
- :func:`draw_values`: the four private-value distributions.
- :func:`ce_surplus`: competitive-equilibrium surplus of one round (sum b_k - s_k over the sorted
  values while positive).
- :func:`value_bucket`, :func:`csa`: CSα's keying and formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketarena.markets.double_auction.params import ValueParams

NO_QUOTE = -1


@dataclass
class Clearing:
    """One round's outcome; arrays over the K = min(n_bids, n_asks) rank pairs (..., K)."""

    buyer: np.ndarray  # seat index (into the bids) of the rank-k bid
    seller: np.ndarray  # seat index (into the asks) of the rank-k ask
    traded: np.ndarray  # bool: rank k trades
    price: np.ndarray  # int, NO_QUOTE where rank k does not trade

    @property
    def n_trades(self):
        return self.traded.sum(axis=-1)


def match(bids, asks, u_bid, u_ask, coin) -> Clearing:
    """Clear quotes ``bids`` (..., nb) and ``asks`` (..., ns); ints, ``NO_QUOTE`` = sits out.

    ``u_bid`` (..., nb), ``u_ask`` (..., ns): tie-break keys (equal quotes: lower key ranks first);
    ``coin`` (..., min(nb, ns)): the pair of rank k rounds a .5 midpoint up iff coin[k] < 0.5.
    """
    bids, asks = np.asarray(bids), np.asarray(asks)
    b = np.where(bids >= 0, bids.astype(float), -np.inf)
    a = np.where(asks >= 0, asks.astype(float), np.inf)
    order_b = np.lexsort((u_bid, -b), axis=-1)
    order_a = np.lexsort((u_ask, a), axis=-1)
    k = min(bids.shape[-1], asks.shape[-1])
    order_b, order_a = order_b[..., :k], order_a[..., :k]
    sb = np.take_along_axis(b, order_b, axis=-1)
    sa = np.take_along_axis(a, order_a, axis=-1)
    traded = sb >= sa
    total = (np.where(traded, sb, 0.0) + np.where(traded, sa, 0.0)).astype(np.int64)
    up = (total % 2 == 1) & (np.asarray(coin)[..., :k] < 0.5)
    price = np.where(traded, total // 2 + up, NO_QUOTE)
    return Clearing(order_b, order_a, traded, price)


def clear(bids, asks, rng: np.random.Generator) -> Clearing:
    """One round of the call market, tie-breaks and .5 roundings drawn from ``rng``."""
    nb, ns = len(bids), len(asks)
    u_bid, u_ask, coin = rng.random(nb), rng.random(ns), rng.random(min(nb, ns))
    return match(np.asarray(bids), np.asarray(asks), u_bid, u_ask, coin)


def clear_round(
    bids: list[int], asks: list[int], rng: np.random.Generator
) -> list[tuple[int, int, int, int]]:
    """One round of the call market on Python ints (``NO_QUOTE`` = sits out), drawing from ``rng``
    exactly what :func:`clear` draws (one call for the same uniforms in the same order). Returns the
    trades as (rank, bid seat index, ask seat index, price), by rank; :func:`match` defines the
    rule."""
    nb, ns = len(bids), len(asks)
    u = rng.random(nb + ns + min(nb, ns)).tolist()
    u_bid, u_ask, coin = u[:nb], u[nb : nb + ns], u[nb + ns :]
    order_b = sorted((i for i in range(nb) if bids[i] >= 0), key=lambda i: (-bids[i], u_bid[i]))
    order_a = sorted((j for j in range(ns) if asks[j] >= 0), key=lambda j: (asks[j], u_ask[j]))
    trades = []
    for k, (i, j) in enumerate(zip(order_b, order_a)):
        if bids[i] < asks[j]:
            break  # bids fall and asks rise with the rank: no later pair crosses
        total = bids[i] + asks[j]
        trades.append((k, i, j, total // 2 + (total % 2 == 1 and coin[k] < 0.5)))
    return trades


def _round_clip(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.rint(x), lo, hi).astype(np.int64)


def draw_values(
    distribution: str,
    n_buyers: int,
    n_sellers: int,
    rng: np.random.Generator,
    vp: ValueParams | None = None,
    games: int | None = None,
):
    """Private values (buyers in [1, 100], sellers in [0, 99]) of one game or of ``games`` games.

    - uniform: buyers U{1..100}, sellers U{0..99};
    - semi_bimodal: each value uniform on the low band {0..20} or the high band {80..100}, with
      probability 1/2 each;
    - correlated, ``scheme: bazaar``: each value U(lo, hi) of its role plus N(0, jitter),
      independent across seats; ``design``: one centre c ~ U(20, 80) per game, each value
      c + N(0, sd) (sd 25);
    - heavy_tailed: 50 + scale · t(df = 3).
    Under ``scheme: bazaar`` a draw past a role's unfavourable bound (a buyer's value under 1, a
    seller's cost over 99) goes to its favourable one (100, 0), as BAZAAR's logs show: 4.1% of its
    heavy-tailed buyers value 100 and 0.2% value 1, sellers the mirror image. Continuous draws
    are rounded half to even; everything is clipped to the role's range.
    Returns ``(buyer_values, seller_values)``, shapes (nb,), (ns,) or (games, nb), (games, ns).
    """
    vp = vp or ValueParams()
    g = 1 if games is None else games
    n = n_buyers + n_sellers
    bazaar = vp.scheme == "bazaar"
    if distribution == "uniform":
        x = np.concatenate(
            [rng.integers(1, 101, (g, n_buyers)), rng.integers(0, 100, (g, n_sellers))], axis=1
        ).astype(float)
    elif distribution == "correlated" and bazaar:
        x = np.concatenate(
            [rng.uniform(1, 100, (g, n_buyers)), rng.uniform(0, 99, (g, n_sellers))], axis=1
        ) + rng.normal(0.0, vp.correlated_jitter, size=(g, n))
    elif distribution == "correlated":
        centre = rng.uniform(*vp.correlated_centre, size=(g, 1))
        x = centre + rng.normal(0.0, vp.correlated_noise_sd, size=(g, n))
    elif distribution == "semi_bimodal":
        high = rng.random((g, n)) < 0.5
        lo = rng.integers(vp.bimodal_low[0], vp.bimodal_low[1] + 1, (g, n))
        hi = rng.integers(vp.bimodal_high[0], vp.bimodal_high[1] + 1, (g, n))
        x = np.where(high, hi, lo).astype(float)
    elif distribution == "heavy_tailed":
        x = vp.heavy_centre + vp.heavy_scale * rng.standard_t(vp.heavy_df, size=(g, n))
    else:
        raise ValueError(f"unknown value distribution {distribution!r}")
    xb, xs = x[:, :n_buyers], x[:, n_buyers:]
    if bazaar:
        xb = np.where(np.rint(xb) < 1, 100.0, xb)
        xs = np.where(np.rint(xs) > 99, 0.0, xs)
    buyers = _round_clip(xb, 1, 100)
    sellers = _round_clip(xs, 0, 99)
    return (buyers[0], sellers[0]) if games is None else (buyers, sellers)


def ce_surplus(buyer_values, seller_values) -> np.ndarray:
    """Competitive-equilibrium surplus of one round: sort buyer values high to low, seller values
    low to high, sum b_k - s_k while positive (over the trailing axis)."""
    b = -np.sort(-np.asarray(buyer_values), axis=-1)
    s = np.sort(np.asarray(seller_values), axis=-1)
    k = min(b.shape[-1], s.shape[-1])
    return np.clip(b[..., :k] - s[..., :k], 0, None).sum(axis=-1)


def value_bucket(value, width: int = 5):
    """Bucket of a private value, buckets centred on multiples of ``width``: the k with k·width
    nearest the value, a value halfway between two centres going up: ``(2 v + w) // 2 w``
    (width 5: 0-2 -> 0, 3-7 -> 1, ..., 93-97 -> 19, 98-100 -> 20)."""
    return (2 * np.asarray(value) + width) // (2 * width)


def csa(surplus, mu, sd, clip: float = 5.0):
    """Conditional surplus alpha: clip((S - μ_ref) / σ_ref, -clip, clip)."""
    return np.clip((np.asarray(surplus, float) - mu) / sd, -clip, clip)


def payoffs(clearing: Clearing, buyer_values, seller_values):
    """Per-seat payoff of one cleared round: buyer v - p, seller p - c (0 for seats not trading)."""
    bv, sv = np.asarray(buyer_values), np.asarray(seller_values)
    pay_b = np.zeros(bv.shape, dtype=np.int64)
    pay_s = np.zeros(sv.shape, dtype=np.int64)
    t = clearing.traded
    bi, si, p = clearing.buyer[t], clearing.seller[t], clearing.price[t]
    pay_b[bi] = bv[bi] - p
    pay_s[si] = p - sv[si]
    return pay_b, pay_s
