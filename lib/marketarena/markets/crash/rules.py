"""The crash market's rules as pure numpy functions (seed 001 section 3.1, appendix F; notes D.2).

Consumers (drawn once per episode): consumer j has a daily budget
``I_j = (U(income_lo, income_hi) + labour_hours * v_j) / 365`` with skill ``v_j ~ U(skill_lo,
skill_hi)`` (the authors' code: U(50, 200) plus 40 hours x U(1.24, 159.1), per year).

Where the seed is explicit it is followed: Poisson arrivals, a few random active firms polled,
the lowest-priced bought from. Where it is silent, the authors' engine is followed, as their
published runs show it: every logged firm-day of their 279 crash runs replayed through these
functions agrees within a cent on 99.98% of 212,262 firm-days (``sources/replay.py``; the rest is a
floating-point accident of their ledger and one rule of theirs we do not copy, named there). The
seed is silent on, and their engine fixes:

- **demand** (:func:`demand`): with one good, CES demand spends the budget on it over a price
  index; the authors' engine takes as index the mean of *every* posted quote
  (:func:`posted_mean`), not the chosen firm's price, so a shopper orders ``I / mean quote``
  units at the chosen firm's price (``demand_index: mean_quote``; ``chosen_price`` keeps our
  former ``I / p``, which the logs rule out on 10% of firm-days);
- **consumers' cash**: income accrues every day, unspent income is saved, and an order is capped
  at the shopper's cash (``consumer_savings``);
- **no choke price**: the authors' consumers buy at any price (``max_price: null``; a number keeps
  our former ceiling, no order at or above it). Consumer surplus is then theirs
  (:func:`ces_surplus`: the CES willingness to pay against the price paid), and with a choke
  price the area under demand up to it (:func:`consumer_surplus`);
- **costs** (:func:`day_costs`): overhead, then the tax on the cash left, then the platform fee
  on the cash left after the tax; a firm that cannot pay its overhead pays what it has, ends at 0
  and is bankrupt (``liability: limited``).

What we do not copy: their fill order (the order their consumer threads finished: not
reproducible) is our shoppers' drawn order; and their ledger's refusal of an order capped at a
shopper's cash when ``price * (cash / price) > cash`` by a rounding error.

A day (functions below, in this order):

1. ``shoppers``: ``k = min(Poisson(arrival_rate * M), M)`` consumers shop, a uniformly random subset
   in a uniformly random order (the order in which they are served);
2. ``visible_firms``: each shopper sees ``discovery_limit`` firms drawn uniformly without replacement
   among the firms that offer the good today (active, with stock); fewer when fewer offer;
3. ``choose_cheapest``: it orders its demand from the cheapest firm it sees (ties: the one drawn
   first, i.e. at random);
4. ``fill_orders``: orders are filled in shopper order, each at most the firm's remaining stock
   (partial fills; an order to a firm already sold out fills 0). Deterministic for a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Consumers:
    income: np.ndarray  # (M,) daily budget


def draw_consumers(
    rng: np.random.Generator,
    m: int,
    income_lo: float,
    income_hi: float,
    labour_hours: float,
    skill_lo: float,
    skill_hi: float,
) -> Consumers:
    base = rng.uniform(income_lo, income_hi, size=m)
    skill = rng.uniform(skill_lo, skill_hi, size=m)
    return Consumers(income=(base + labour_hours * skill) / 365.0)


def shoppers(rng: np.random.Generator, m: int, arrival_rate: float) -> np.ndarray:
    """Indices of today's shoppers, in the order they are served."""
    k = min(int(rng.poisson(arrival_rate * m)), m)
    return rng.permutation(m)[:k]


def visible_firms(
    rng: np.random.Generator, n_shoppers: int, offering: np.ndarray, discovery_limit: int
) -> np.ndarray:
    """(k, L) firm indices each shopper sees, in the (random) order drawn; -1 pads rows when fewer
    than ``discovery_limit`` firms offer. ``offering`` is a bool mask over firms."""
    n = offering.size
    keys = rng.random((n_shoppers, n))
    keys[:, ~offering] = np.inf
    limit = min(discovery_limit, n)
    order = np.argsort(keys, axis=1, kind="stable")[:, :limit]
    seen = np.take_along_axis(keys, order, axis=1)
    return np.where(np.isfinite(seen), order, -1)


def choose_cheapest(visible: np.ndarray, prices: np.ndarray) -> np.ndarray:
    """(k,) the cheapest firm each shopper sees (the first drawn among equal prices); -1 for a
    shopper who sees no firm."""
    if visible.shape[1] == 0:
        return np.full(visible.shape[0], -1)
    p = np.where(visible >= 0, prices[np.maximum(visible, 0)], np.inf)
    pick = np.argmin(p, axis=1)  # first minimum = first drawn
    chosen = visible[np.arange(visible.shape[0]), pick]
    return np.where(np.isfinite(p.min(axis=1)), chosen, -1)


def posted_mean(price: np.ndarray, offering: np.ndarray) -> float:
    """The day's price index of the authors' engine: the mean of every posted quote (the prices of
    the firms that offer the good), NaN when none is posted. Summed in firm order, as their
    engine sums its quote list, so the bits match theirs."""
    posted = price[offering]
    return float(sum(posted.tolist()) / posted.size) if posted.size else float("nan")


def demand(
    income: np.ndarray, price: np.ndarray, max_price: float | None, index: float | None = None
) -> np.ndarray:
    """Units each shopper orders from its chosen firm at that firm's ``price``: its budget over
    the price index (one good, CES, so the whole budget goes to it), none from nobody (NaN price)
    and none at or above the choke price ``max_price`` (None: no choke, as the authors' engine).
    The index is ``index`` (the authors' engine: the mean of every posted quote, the same for
    every shopper of the day, :func:`posted_mean`) or, when None, the chosen price itself. With an
    index a price of 0 is ordered from too (the authors' consumers take such goods for free; our
    firms cannot post 0: their answer's schema wants a price above 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = price > 0 if index is None else price >= 0
        if max_price is not None:
            ok &= price < max_price
        units = income / (price if index is None else index)
        return np.where(ok & np.isfinite(units), units, 0.0)


def fill_orders(firm: np.ndarray, wanted: np.ndarray, stock: np.ndarray) -> np.ndarray:
    """Units filled for each order, served in array order: an order gets what is left of its firm's
    stock after the earlier orders to the same firm (vectorised per firm: cumulative sums). A
    shopper's cash limit is applied by the caller, by capping ``wanted`` at cash / price (the
    authors' engine: ``min(order, stock left, cash / price)``, the same in either order)."""
    filled = np.zeros_like(wanted, dtype=float)
    ok = firm >= 0
    if not ok.any():
        return filled
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(firm[idx], kind="stable")]  # grouped by firm, shopper order kept
    f, w = firm[order], wanted[order]
    starts = np.r_[0, np.flatnonzero(np.diff(f)) + 1]
    cum = np.cumsum(w)
    before = cum - w - np.repeat(np.r_[0.0, cum[starts[1:] - 1]], np.diff(np.r_[starts, len(f)]))
    filled[order] = np.clip(stock[f] - before, 0.0, w)
    return filled


def ces_surplus(
    income: np.ndarray, filled: np.ndarray, price: np.ndarray, index: float, sigma: float
) -> np.ndarray:
    """The authors' consumer surplus per order: ``max(0, (WTP - p) q)`` with the CES willingness
    to pay of one good, ``WTP = P (I / P)^(1 / sigma)``, P the day's price index (``index``):
    what a shopper of budget I values a unit at, against what it paid (0 for nothing filled)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        wtp = index * (income / index) ** (1.0 / sigma)
        return np.where(filled > 0, np.maximum(0.0, (wtp - price) * filled), 0.0)


def day_costs(
    cash: np.ndarray,
    active: np.ndarray,
    overhead: float,
    holding: np.ndarray,
    tax_rate: float,
    platform_fee: float,
    limited: bool = True,
):
    """A day's costs after sales, for firms ``active`` at its start: overhead and holding, then
    the tax on the cash left, then the platform fee on the cash left after the tax (the authors'
    engine charges them in this order). Returns (overhead paid, holding paid, tax, fee, bankrupt).

    ``limited`` (the authors' engine): a firm whose cash cannot cover overhead and holding pays
    what it has, ends at 0 and is bankrupt (no tax or fee that day): it cannot pay with money it
    does not have. Otherwise it is charged in full, ends below 0 and is bankrupt then. Either
    way it is bankrupt exactly when cash after overhead and holding is below 0 (the seed's rule).
    """
    due = np.where(active, overhead + holding, 0.0)
    bankrupt = active & (cash < due)
    share = np.where(
        due > 0, np.clip(np.maximum(cash, 0.0) / np.where(due > 0, due, 1.0), 0, 1), 0.0
    )
    paid = np.where(bankrupt & limited, share, 1.0)
    over, hold = np.where(active, overhead, 0.0) * paid, holding * paid
    left = np.maximum(cash - over - hold, 0.0) * (active & ~bankrupt)
    tax = left * tax_rate
    fee = (left - tax) * platform_fee
    return over, hold, tax, fee, bankrupt


def consumer_surplus(
    income: np.ndarray, wanted: np.ndarray, filled: np.ndarray, price: np.ndarray, max_price: float
) -> np.ndarray:
    """``(filled / wanted) * I * ln(max_price / p)`` per order (0 for an order of nothing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ordered = wanted > 0  # at a finite price below the choke price (``demand``)
        return np.where(ordered, (filled / wanted) * (income * np.log(max_price / price)), 0.0)
