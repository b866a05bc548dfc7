"""The supply_chain market's rules as pure functions (DESIGN.md 7.1, Market-Bench 3.2-3.3, A.1, E).

Everything here takes arrays and a ``numpy.random.Generator`` and returns arrays, so each rule can be
checked by hand in a test. Conventions: ``m`` retailers (rows), ``n`` items (columns), ``k`` buyers.

- :func:`settle_auction`: per-item multi-unit first-price auction with reserve.
- :func:`draw_buyers`: tribes, personas, wanted item and units, willingness to pay.
- :func:`consideration_mask`: persona-gated attention, sampling without replacement ∝ w (Gumbel top-k).
- :func:`purchase_walk`: buyers in random order walk their visible sellers cheapest first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def settle_auction(
    qty: np.ndarray,
    price: np.ndarray,
    eligible: np.ndarray,
    supply: np.ndarray,
    reserve: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Allocate each item's supply to the highest bids at or above its reserve.

    Per item x, bids with qty > 0 and price >= reserve[x] from eligible bidders are sorted by price
    descending (ties in a seeded random order) and each gets min(qty, remaining). Winners pay their
    own bid (pay-as-bid), which the caller charges. Returns the (m, n) integer allocation.
    """
    m, n = qty.shape
    alloc = np.zeros((m, n), dtype=np.int64)
    tiebreak = rng.random((m, n))
    for x in range(n):
        ok = np.flatnonzero(eligible & (qty[:, x] > 0) & (price[:, x] >= reserve[x]))
        if ok.size == 0:
            continue
        order = ok[np.lexsort((tiebreak[ok, x], -price[ok, x]))]
        q = qty[order, x]
        before = np.cumsum(q) - q
        alloc[order, x] = np.clip(supply[x] - before, 0, q)
    return alloc


@dataclass
class Buyers:
    tribe: np.ndarray  # (k,) tribe index
    persona: np.ndarray  # (k,) row in the persona table
    item: np.ndarray  # (k,) wanted item
    demand: np.ndarray  # (k,) units wanted
    wtp: np.ndarray  # (k,) willingness to pay per unit (inf: no cap)
    lam: np.ndarray  # (k,) slogan sensitivity
    rho: np.ndarray  # (k,) patience


def draw_buyers(
    rng: np.random.Generator,
    k: int,
    persona_tribe: np.ndarray,
    persona_rho: np.ndarray,
    tribe_weight: np.ndarray,
    tribe_lambda: np.ndarray,
    tribe_wtp_multiplier: np.ndarray,
    supply: np.ndarray,
    base_price: np.ndarray,
    demand_ratio: float,
) -> Buyers:
    """Draw one step's buyers.

    Tribe by weight; persona uniformly among that tribe's personas; wanted item with probability
    proportional to supply; per-item demand D_x = round(r·Q_x) split across the buyers who want x by
    a multinomial with equal cells (if nobody wants x, its demand is lost). Willingness to pay =
    base price × the tribe's multiplier (NaN multiplier = no cap).
    """
    tribe = rng.choice(len(tribe_weight), size=k, p=tribe_weight / tribe_weight.sum())
    persona = np.empty(k, dtype=np.int64)
    for t in range(len(tribe_weight)):
        members = np.flatnonzero(tribe == t)
        pool = np.flatnonzero(persona_tribe == t)
        if members.size:
            persona[members] = pool[rng.integers(0, pool.size, size=members.size)]
    item = rng.choice(len(supply), size=k, p=supply / supply.sum())
    demand = np.zeros(k, dtype=np.int64)
    for x in range(len(supply)):
        wanting = np.flatnonzero(item == x)
        if wanting.size:
            total = int(np.floor(demand_ratio * supply[x] + 0.5))  # round half up
            demand[wanting] = rng.multinomial(total, np.full(wanting.size, 1.0 / wanting.size))
    mult = tribe_wtp_multiplier[tribe]
    wtp = np.where(np.isnan(mult), np.inf, base_price[item] * mult)
    return Buyers(
        tribe=tribe,
        persona=persona,
        item=item,
        demand=demand,
        wtp=wtp,
        lam=tribe_lambda[tribe],
        rho=persona_rho[persona],
    )


def consideration_mask(
    rng: np.random.Generator,
    sims: np.ndarray,
    lam: np.ndarray,
    sizes: np.ndarray,
    tau: float,
) -> np.ndarray:
    """Sample each buyer's consideration set without replacement with probability ∝ w_ij.

    w_ij = exp(λ_j · sim_ij / τ). Adding independent Gumbel noise to log w and keeping the top
    |V_j| is exactly successive sampling without replacement in proportion to w (the Gumbel top-k
    trick), vectorised over all buyers. ``sims`` is (k, a) over the a active retailers; ``sizes``
    is each buyer's |V_j|. Returns a (k, a) boolean mask.

    No last bit can flip a choice (issue 28): ``sims`` are exact (``embeddings.similarity`` of
    quantised vectors, the same number on every machine), the keys are computed from them with
    correctly rounded arithmetic (``log w`` is ``λ·sim/τ`` itself, never an ``exp`` then a
    ``log``), and the Gumbel noise comes from the seeded generator. What remains is the C
    library's ``log`` inside the Gumbel draws, accurate to an ulp: a choice could only change if
    two keys were within ~1e-15 of each other.
    """
    keys = lam[:, None] * sims / tau + rng.gumbel(size=sims.shape)
    ranks = np.argsort(np.argsort(-keys, axis=1, kind="stable"), axis=1, kind="stable")
    return ranks < sizes[:, None]


@dataclass
class WalkResult:
    visits: np.ndarray  # rows (buyer, seller, item, wanted, stock_before, bought, price)
    bought: np.ndarray  # (k,) units each buyer bought
    stock: np.ndarray  # (m, n) stock after the walk


VISIT_FIELDS = ("buyer", "seller", "item", "wanted", "stock_before", "bought", "price")


def purchase_walk(
    rng: np.random.Generator,
    buyers: Buyers,
    visible: np.ndarray,
    prices: np.ndarray,
    stock: np.ndarray,
) -> WalkResult:
    """Buyers arrive in a seeded random order and buy from their visible sellers, cheapest first.

    ``visible`` is (k, m) over all retailers (False for inactive ones), ``prices`` is (m, n) with NaN
    where no price was posted, ``stock`` (m, n) is not modified. A buyer considers the visible
    sellers that posted a price for its item at or below its willingness to pay, sorted by price
    (ties in a seeded random order), and buys min(units still wanted, stock) from each in turn until
    its demand is met. Each seller reached with demand unmet is a *directed attempt* (``wanted`` =
    units still wanted then); reaching it with zero stock is a *stockout*.
    """
    k = len(buyers.item)
    order = rng.permutation(k)
    tiebreak = rng.random(visible.shape)
    # Every buyer's walking order at once: its item's price at each seller, ineligible sellers
    # (invisible, no price: NaN compares False, above willingness to pay) pushed to the end.
    price = prices[:, buyers.item].T  # (k, m)
    eligible = visible & (price <= buyers.wtp[:, None])
    walk_order = np.lexsort((tiebreak, np.where(eligible, price, np.inf)), axis=-1)
    n_eligible = eligible.sum(axis=1).tolist()
    # the walk itself on Python lists: a numpy scalar read or write costs several list accesses
    walks, prices_seen, left = walk_order.tolist(), price.tolist(), stock.tolist()
    demand, items = buyers.demand.tolist(), buyers.item.tolist()
    visits: list[tuple] = []
    bought = [0] * k
    for j in order.tolist():  # sequential: each buyer sees the stock the earlier ones left
        want, x = demand[j], items[j]
        for s in walks[j][: n_eligible[j]]:
            if want == 0:
                break
            have = left[s][x]
            take = min(want, have)
            visits.append((j, s, x, want, have, take, prices_seen[j][s]))
            left[s][x] = have - take
            want -= take
            bought[j] += take
    arr = np.array(visits, dtype=np.float64).reshape(-1, len(VISIT_FIELDS))
    return WalkResult(
        visits=arr,
        bought=np.array(bought, dtype=np.int64),
        stock=np.array(left, dtype=stock.dtype).reshape(stock.shape),
    )
