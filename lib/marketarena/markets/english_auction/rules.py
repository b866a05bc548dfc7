"""The English auction's rules as pure functions (seed 004 section 3.1; notes B.2; the authors'
auction-arena: src/auctioneer_base.py and bidder_base.py).

- Item order: ``random`` (a seeded permutation), ``ascending`` or ``descending`` start price
  (stable: equal prices keep the items' listed order).
- A valid bid is within the bidder's remaining budget, at least the start price, and at least the
  previous round's highest bid plus ``min_increment`` x start price (``min_bid``). A bid that is
  not is a *failed bid* of one of two kinds (the seed's "bids below the previous round's highest
  bid or beyond the budget"): ``over budget`` (checked first, as the authors do) or ``under
  minimum`` (under the start price, or under the highest bid plus the minimum increase).
  :func:`bid_error` returns the kind and the authors' reason ("you must advance previous highest
  bid ($1200) by at least $100 (10%)").
- In a round every bidder that is neither leading nor withdrawn answers at once; the highest new
  bid leads, an exact tie broken by a seeded draw (``leader``). Withdrawing is final for the item.
- The item is sold to the leader, at its bid, after a round with no new bid; if nobody ever bid,
  it goes unsold. Profit = true value - price. Every round with a new bid raises the highest bid
  by at least ``min_increment`` x start price and no bid can pass a budget, so an item ends by
  itself within :func:`round_bound` rounds.

Belief checks, two definitions over the same status JSON (``remaining_budget``, ``total_profits``
{bidder: profit}, ``winning_bids`` {bidder: {item: bid}}, bidders by display name):

- :func:`belief_errors` (ours, what the auctioneer feeds back and corrects): every bidder must be
  there, numbers within ``tolerance`` ($1), winning bids compared item by item with their amounts.
  Returns the lines of the authors' feedback ("Your belief of budget is wrong: ...").
- :func:`seed_belief_fields` (the authors' ``_belief_tracking``, the seed's Figure 3 rates): per
  *checked field*: the own remaining budget (one field), then for every bidder the answer names
  (names it omits or that are not bidders are skipped) its total profit and its winning bids, each a
  field about itself or about another bidder; numbers compared exactly (to 1e-6, float noise), the
  winning bids by the *set of item names* only.
"""

from __future__ import annotations

import math

import numpy as np

OVER_BUDGET, UNDER_MINIMUM = "over budget", "under minimum"


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


def round_bound(start: float, budget: float, increment: float) -> int:
    """Rounds an item can take at most: the first, one per minimum raise up to the budget, and the
    round without a new bid that ends it."""
    return 2 + max(0, math.floor((budget - start) / (increment * start) + 1e-9))


def money(x: float) -> str:
    """Dollars as the authors' auctioneer writes them: ``$1300``, ``$1312.50`` (to the cent)."""
    x = round(float(x), 2)
    return f"${x:.0f}" if x.is_integer() else f"${x:.2f}"


def bid_error(
    amount: float, budget: float, start: float, highest: float | None, increment: float
) -> tuple[str, str] | None:
    """``(kind, reason)`` of a failed bid (the reason as the authors' auctioneer gives it), or None
    when the bid is valid."""
    if amount > budget + 1e-9:
        why = f"you don't have sufficient budget ({money(budget)} left)"
        kind = OVER_BUDGET
    elif amount < start - 1e-9:
        why = f"your bid is lower than the starting bid ({money(start)})"
        kind = UNDER_MINIMUM
    elif highest is not None and amount < highest + increment * start - 1e-9:
        why = (
            f"you must advance previous highest bid ({money(highest)}) by at least "
            f"{money(increment * start)} ({increment:.0%})"
        )
        kind = UNDER_MINIMUM
    else:
        return None
    return kind, why


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


def _said(x) -> str:
    """A value a bidder stated, as a dollar amount when it is a number."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return money(x)
    return "nothing" if x is None else repr(x)


def _wins_text(items: dict) -> str:
    return "nothing" if not items else ", ".join(f"{i} at {_said(p)}" for i, p in items.items())


def belief_errors(
    me: str, belief: dict, truth: dict, tolerance: float = 1.0
) -> tuple[list[str], list[str]]:
    """(errors about itself, errors about others), our strict check: each is one line of the
    auctioneer's feedback. ``me`` is the bidder's own display name."""
    own, others = [], []
    said = belief.get("remaining_budget")
    if not _close(said, truth["remaining_budget"], tolerance):
        own.append(
            f"Your belief of budget is wrong: you have {money(truth['remaining_budget'])} "
            f"left, but you think you have {_said(said)} left."
        )
    profits = belief.get("total_profits") or {}
    for bidder, value in truth["total_profits"].items():
        if not _close(profits.get(bidder), value, tolerance):
            p = profits.get(bidder)
            (own if bidder == me else others).append(
                f"Your belief of total profit of {bidder} is wrong: {bidder} has earned "
                f"{money(value)} so far, but you think {bidder} has earned {_said(p)}."
            )
    wins = belief.get("winning_bids") or {}
    for bidder, items in truth["winning_bids"].items():
        said = wins.get(bidder) or {}
        wrong = set(items) != set(said) or any(
            not _close(said[i], p, tolerance) for i, p in items.items()
        )
        if wrong:
            (own if bidder == me else others).append(
                f"Your belief of winning items of {bidder} is wrong: {bidder} won "
                f"{_wins_text(items)}, but you think {bidder} won {_wins_text(said)}."
            )
    return own, others


def _exact(a, b) -> bool:
    return _close(a, b, 1e-6 * max(1.0, abs(float(b))))


def seed_belief_fields(me: str, belief: dict, truth: dict) -> tuple[int, int, int, int]:
    """The authors' per-field count: (self errors, self fields checked, other errors, other fields
    checked)."""
    self_err, self_n, other_err, other_n = (
        int(not _exact(belief.get("remaining_budget"), truth["remaining_budget"])),
        1,
        0,
        0,
    )
    for key, same in (
        ("total_profits", _exact),
        ("winning_bids", lambda a, b: set(a or {}) == set(b)),
    ):
        for bidder, said in (belief.get(key) or {}).items():
            if bidder not in truth[key]:
                continue  # the authors skip names that are not bidders
            wrong = int(not same(said, truth[key][bidder]))
            if bidder == me:
                self_err, self_n = self_err + wrong, self_n + 1
            else:
                other_err, other_n = other_err + wrong, other_n + 1
    return self_err, self_n, other_err, other_n
