"""Fixed rules: truthful, fixed shading, random, the linear equilibrium, collusive.

Evidence: BAZAAR's 1,954 published games (``lechmazur/bazaar``, ``logs/*.jsonl``), every quote of
every seat under the strategy's name, replayed with ``benchmarks/bench_da_teacher_forced.py``;
"exact" means the rule gives the logged quote in every round of every logged seat of that name.
"""

from __future__ import annotations

from pydantic import Field

from marketarena.markets.double_auction.baselines.base import Baseline, TraderParams


class Truthful(Baseline):
    """The seed's Truthful: bids its exact value every round (the CSα reference). Exact on 111
    logged seats."""

    strategy = "truthful"

    def bid(self, view):
        return view.v


class ShadeParams(TraderParams):
    delta: int = Field(default=5, ge=0, description="bid v - delta")


class Shade(Baseline):
    """The seed's Fixed Shading (+5, +10): bids ``delta`` below its value, never adapting (not
    below 0; a seller's ask not above 100). Exact on 93 (+5) and 106 (+10) logged seats."""

    strategy, Params = "shade", ShadeParams

    def bid(self, view):
        return view.cap(view.v - self.params.delta)


class RandomTrader(Baseline):
    """The seed's Random: a uniform integer bid between the minimum (0) and its value (Gode &
    Sunder's ZI-C). The logs agree: mean offset 25.7, no quote through the value, no structure
    from round to round."""

    strategy = "random"

    def bid(self, view):
        return int(self.rng.integers(0, view.v + 1))


class LinearEq(Baseline):
    """BAZAAR's LinearEq as its logs show it: bid round(2/3 v), ask round(100 - 2/3 (100 - c)),
    every round, no intercept. Exact on all 7,380 logged quotes (246 seats). The textbook linear
    equilibrium it is named after (Chatterjee & Samuelson) has an intercept: :class:`LinearEqCS`,
    outside the default pool."""

    strategy = "linear_eq"

    def bid(self, view):
        return view.cap(2 * view.v / 3)


class LinearEqCSParams(TraderParams):
    slope: float = Field(default=2 / 3, ge=0, le=1, description="bid = slope × v + intercept × M")
    intercept: float = Field(default=1 / 12, ge=0, le=1)


class LinearEqCS(Baseline):
    """Textbook variant (not in the default pool): the linear Bayes-Nash equilibrium of
    Chatterjee & Samuelson (1983) for the k = 1/2 double auction with values uniform on [0, M]: a
    buyer bids 2/3 v + M/12, a seller asks 2/3 c + M/4 (the same rule mirrored), capped at the
    value. BAZAAR's LinearEq (:class:`LinearEq`) drops the intercept."""

    strategy, Params = "linear_eq_cs", LinearEqCSParams

    def bid(self, view):
        return view.cap(self.params.slope * view.v + self.params.intercept * view.M)


#: Round-1 shade of the logged Collusive seats (offset 0..12) among the 268 seats valuing 13 or
#: more (lower values cap it): how many seats opened with each shade.
COLLUSIVE_OPENING = (43, 31, 28, 26, 18, 16, 20, 16, 20, 8, 11, 2, 7)


class CollusiveParams(TraderParams):
    opening: list[int] = Field(
        default_factory=lambda: list(COLLUSIVE_OPENING),
        min_length=1,
        description="weights of round 1's shade 0, 1, 2, ...",
    )


class Collusive(Baseline):
    """BAZAAR's Collusive (listed in its table, not described) as its 276 logged seats show it:
    round 1 a shade drawn with the logged frequencies (:data:`COLLUSIVE_OPENING`, 0-12, mean 4),
    then exactly its value every round (270 of 276 seats from round 2 on; the rest within a few
    units for a few rounds). Chat is off in these games, so there is no cartel to keep; the name
    is the rule's only trace of collusion."""

    strategy, Params = "collusive", CollusiveParams

    def bid(self, view):
        if view.t == 0:
            w = self.params.opening
            total = sum(w)
            k = int(self.rng.choice(len(w), p=[x / total for x in w]))
            return view.cap(view.v - k)
        return view.v
