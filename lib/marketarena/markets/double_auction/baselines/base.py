"""What every double_auction baseline shares: the buyer-frame view of the public history, the base
class, and the validated answers.

Written once, in buyer terms, and mirrored for sellers
-------------------------------------------------------
Every strategy is a :class:`Baseline` whose :meth:`Baseline.bid` sees a :class:`View`: the market
*as a buyer would see it*. For a seller the view is reflected through x -> M - x (M = max quote,
100): its cost c becomes a value M - c, its asks become bids, the buyers' bids become asks and every
price p becomes M - p. Payoffs, "bid >= ask" and every ordering the rules use are preserved, so one
rule serves both sides. BAZAAR's own baselines are mirrored the same way (its README's
``MirroredStrategy``), and its published games confirm it: every rule of this package that matches
the logs exactly matches buyers and sellers with the same reflection.

In the buyer frame: ``v`` value; ``own[t]`` my bid in round t (None = sat out); ``same[t]`` the
other buyers' bids; ``opp[t]`` the asks; ``prices[t]`` the round's trade prices; ``my_price[t]``
the price I traded at (None); ``payoff[t]`` my payoff. A strategy's state is a function of this
view (its own past quotes and trades included) and of its own generator, never of what it decided
without quoting it: handed the history a BAZAAR seat saw (``benchmarks/bench_da_teacher_forced.py``)
a strategy quotes what it would have quoted in that seat.

Every strategy has a pydantic params model (roster entry ``params``; unknown keys are errors).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent
from marketarena.core.types import Decision
from marketarena.markets.double_auction.observations import (
    QuoteAction,
    QuoteObservation,
    RoundRecord,
)


def round_half_even(x: float) -> int:
    """Python's (and numpy's) rounding: halves go to the even neighbour, as BAZAAR's quotes show
    (enhanced_bayesian's (50 + 95) / 2 = 72.5 is logged as 72, (50 + 93) / 2 = 71.5 as 72)."""
    return int(round(x))


class View:
    """The public history in buyer terms (see module docstring), updated one round at a time."""

    def __init__(self, obs: QuoteObservation):
        self.me = obs.agent_id
        self.buyer = obs.role == "buyer"
        self.M = obs.max_quote
        self.v = obs.value if self.buyer else self.M - obs.value
        self.T = obs.rounds
        self.t = 0  # 0-based index of the round to quote now
        self.own: list[int | None] = []
        self.same: list[list[int]] = []
        self.opp: list[list[int]] = []
        self.prices: list[list[int]] = []
        self.my_price: list[int | None] = []
        self.payoff: list[int] = []
        self.trades = 0  # rounds I traded in

    def x(self, q: int | None) -> int | None:
        """Market quote/price -> buyer frame (and back: the reflection is its own inverse)."""
        return q if q is None or self.buyer else self.M - q

    def update(self, rec: RoundRecord) -> None:
        d = _side_digest(rec, self.buyer, self.M)
        own, same, my_price = d.of(self.me)
        self.own.append(own)
        self.same.append(same)
        self.opp.append(d.opp)  # shared by the side's seats: read only
        self.prices.append(d.prices)
        self.my_price.append(my_price)
        self.payoff.append(0 if my_price is None else self.v - my_price)
        self.trades += my_price is not None

    # ---- summaries used by several strategies (t: a past round, -1 the last)
    def traded(self, t: int = -1) -> bool:
        return bool(self.my_price) and self.my_price[t] is not None

    def best_ask(self, t: int = -1) -> int | None:
        """The lowest opposing quote of round t."""
        return min(self.opp[t]) if self.opp and self.opp[t] else None

    def best_rival(self, t: int = -1) -> int | None:
        """The highest quote of the other seats of my side in round t."""
        return max(self.same[t]) if self.same and self.same[t] else None

    def mean_price(self, t: int = -1) -> float | None:
        p = self.prices[t] if self.prices else None
        return sum(p) / len(p) if p else None

    def cap(self, b: float) -> int:
        """Round half to even and clip a bid to [0, v]."""
        return min(max(0, round_half_even(b)), self.v)


class _Digest:
    """One completed round in one side's buyer frame, the same for every seat of that side."""

    __slots__ = ("opp", "prices", "_own", "_quoted", "_price_of")

    def __init__(self, rec: RoundRecord, buyer: bool, M: int):
        def x(q):
            return q if q is None or buyer else M - q

        mine, theirs = (rec.bids, rec.asks) if buyer else (rec.asks, rec.bids)
        self.opp = [x(q) for q in theirs.values() if q is not None]
        self.prices = [x(tr.price) for tr in rec.trades]
        price_of: dict[str, int] = {}
        for tr in reversed(rec.trades):  # a seat's first trade of the round (it trades once)
            price_of[tr.buyer] = price_of[tr.seller] = x(tr.price)
        self._own = {a: x(q) for a, q in mine.items()}
        self._quoted = [(a, q) for a, q in self._own.items() if q is not None]
        self._price_of = price_of

    def of(self, me: str) -> tuple:
        """(own quote, rivals' quotes, own price) of seat ``me`` (own quote None when ``me`` is
        not on this side's record: hand-made histories in tests)."""
        return (self._own.get(me), [q for a, q in self._quoted if a != me], self._price_of.get(me))


_DIGESTS: dict[tuple[int, bool, int], tuple[RoundRecord, _Digest]] = {}


def _side_digest(rec: RoundRecord, buyer: bool, M: int) -> _Digest:
    """The :class:`_Digest` of ``rec`` for one side, computed once for the four seats that read
    it. Keyed by the record's id and checked by identity (the entry holds the record, so its id
    cannot be reused while it is cached); the cache is cleared when it passes 256 entries."""
    key = (id(rec), buyer, M)
    hit = _DIGESTS.get(key)
    if hit is not None and hit[0] is rec:
        return hit[1]
    if len(_DIGESTS) >= 256:
        _DIGESTS.clear()
    digest = _Digest(rec, buyer, M)
    _DIGESTS[key] = (rec, digest)
    return digest


class TraderParams(Strict):
    pass


class Baseline(ScriptedAgent):
    Params: ClassVar[type[TraderParams]] = TraderParams

    def setup(self) -> None:
        self.reset(np.random.default_rng(0))

    def reset(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.view: View | None = None
        self.start()

    def start(self) -> None:
        """Reset the strategy's own state (called at every episode start)."""

    def observe(self, view: View) -> None:
        """Called once after each completed round has been folded into ``view``."""

    def bid(self, view: View) -> float | None:
        raise NotImplementedError

    def quote(self, obs: QuoteObservation) -> int | None:
        """The market quote for ``obs``: updates the view, asks :meth:`bid`, reflects back."""
        if self.view is None:
            self.view = View(obs)
        view = self.view
        for rec in obs.history[len(view.own) :]:
            view.update(rec)
            self.observe(view)
        view.t = obs.round - 1
        b = self.bid(view)
        if b is None:
            return None
        b = min(max(0, math.floor(b + 0.5)), view.M)
        return view.x(b)

    def decide(self, observation: QuoteObservation, decision: Decision) -> QuoteAction:
        return quote_action(self.quote(observation))


_ACTIONS: dict[int | None, QuoteAction] = {}


def quote_action(quote: int | None) -> QuoteAction:
    """The (validated) answer ``{"quote": quote}``, one shared instance per quote: a tournament
    asks for millions of them and there are 102 distinct ones."""
    action = _ACTIONS.get(quote)
    if action is None:
        action = _ACTIONS[quote] = QuoteAction(quote=quote)
    return action


def room(view: View) -> int:
    """v minus the last round's best ask: how far below its value a bid could still trade (0
    when no ask was below v, or before any round)."""
    a = view.best_ask() if view.opp else None
    return 0 if a is None else max(0, view.v - a)


def per_round(table: tuple[int, ...], t: int) -> int:
    """Entry ``t`` (0-based round) of a per-round table, its last entry past its end."""
    return table[min(t, len(table) - 1)]
