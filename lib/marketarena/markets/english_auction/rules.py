"""The English auction's rules as pure functions (seed 004 section 3.1; notes B.2).

- Item order: ``random`` (a seeded permutation), ``ascending`` or ``descending`` start price
  (stable: equal prices keep the items' listed order).
- A valid bid is within the bidder's remaining budget, at least the start price, and at least the
  previous round's highest bid plus ``min_increment`` x start price (``min_bid``).
- In a round every bidder that is neither leading nor withdrawn answers at once; the highest new
  bid leads, an exact tie broken by a seeded draw (``leader``). Withdrawing is final for the item.
- The item is sold to the leader, at its bid, after a round with no new bid (or after ``max_rounds``);
  if nobody ever bid, it goes unsold. Profit = true value - price.
- Belief checks (``belief_errors``): a bidder's status (remaining budget, everyone's total profit,
  everyone's winning bids) against the truth, numbers within ``tolerance``; each wrong field is an
  error about itself or about another bidder.
"""

from __future__ import annotations

import numpy as np


def order_items(prices: list[int], order: str, rng: np.random.Generator) -> list[int]:
    """Indices of the items in presentation order."""
    idx = list(range(len(prices)))
    if order == "random":
        return [int(i) for i in rng.permutation(len(prices))]
    if order == "ascending":
        return sorted(idx, key=lambda i: prices[i])
    if order == "descending":
        return sorted(idx, key=lambda i: -prices[i])
    raise ValueError(f"unknown item order {order!r}")


def min_bid(start: float, highest: float | None, increment: float) -> float:
    return float(start) if highest is None else float(highest + increment * start)


def bid_error(amount: float, budget: float, start: float, highest: float | None,
              increment: float) -> str | None:
    """Why a bid is invalid (a failed bid), or None."""
    floor = min_bid(start, highest, increment)
    if amount > budget + 1e-9:
        return f"your bid ${amount:,.0f} exceeds your remaining budget ${budget:,.0f}"
    if amount < floor - 1e-9:
        what = "the starting price" if highest is None else (
            f"the highest bid ${highest:,.0f} plus the minimum increase ${increment * start:,.0f}")
        return f"your bid ${amount:,.0f} is below ${floor:,.0f} ({what})"
    return None


def leader(bids: dict[str, float], rng: np.random.Generator) -> str:
    """The bidder with the highest bid; an exact tie is broken by a seeded draw."""
    best = max(bids.values())
    tied = sorted(b for b, v in bids.items() if v == best)
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]


def _close(a, b, tol: float) -> bool:
    try:
        return abs(float(a) - float(b)) <= tol
    except (TypeError, ValueError):
        return False


def belief_errors(me: str, belief: dict, truth: dict, tolerance: float = 1.0) -> tuple[list[str], list[str]]:
    """(errors about itself, errors about others) of a status JSON against the truth. ``belief``
    and ``truth`` hold ``remaining_budget``, ``total_profits`` {bidder: profit} and
    ``winning_bids`` {bidder: {item: bid}}; bidders by display name, ``me`` is the bidder's own."""
    own, others = [], []
    if not _close(belief.get("remaining_budget"), truth["remaining_budget"], tolerance):
        own.append(f"remaining_budget is {truth['remaining_budget']:,.0f}, not "
                   f"{belief.get('remaining_budget')}")
    profits = belief.get("total_profits") or {}
    for bidder, value in truth["total_profits"].items():
        if not _close(profits.get(bidder), value, tolerance):
            (own if bidder == me else others).append(
                f"total_profits of {bidder} is {value:,.0f}, not {profits.get(bidder)}")
    wins = belief.get("winning_bids") or {}
    for bidder, items in truth["winning_bids"].items():
        said = wins.get(bidder) or {}
        wrong = set(items) != set(said) or any(not _close(said[i], p, tolerance) for i, p in items.items())
        if wrong:
            (own if bidder == me else others).append(
                f"winning_bids of {bidder} are {items or '{}'}, not {said or '{}'}")
    return own, others
