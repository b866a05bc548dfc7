"""Market followers: momentum, contrarian, mean reversion, regression, regime switcher.

Evidence: BAZAAR's published games (``lechmazur/bazaar``), teacher-forced with
``benchmarks/bench_da_teacher_forced.py``. Two of these are exact or nearly so (regression, mean
reversion); momentum and contrarian are fitted shapes (their docstrings say which figures).
"""

from __future__ import annotations

from pydantic import Field

from marketarena.markets.double_auction.baselines.base import (
    Baseline,
    TraderParams,
    View,
    per_round,
    room,
)

#: Mean Reversion's shade in round t (0-based) in 210 of 275 logged seats: its value in round 1,
#: v - 1 in round 2, then v - 1 and v - 2 in turn (the other seats differ by a unit now and then).
MEAN_REVERSION_SHADE = (0, 1, 1) + (2, 1) * 14


def price_change(view: View) -> float | None:
    """The last round's mean trade price minus the one before (None unless both traded)."""
    if len(view.prices) < 2:
        return None
    a, b = view.mean_price(-1), view.mean_price(-2)
    return None if a is None or b is None else a - b


class MeanReversion(Baseline):
    """BAZAAR's Mean Reversion as its 275 logged seats show it: its value less a fixed per-round
    shade (:data:`MEAN_REVERSION_SHADE`: 0, 1, 1, then 2 and 1 in turn), whatever the prices: the
    rule gives the logged quote in 87% of 8,250 quotes and is 0.16 off on average. The seed's "bids
    towards a long-run EMA of prices" leaves no trace beyond a unit here and there."""

    strategy = "mean_reversion"

    def bid(self, view):
        return view.cap(view.v - per_round(MEAN_REVERSION_SHADE, view.t))


#: Regression's 3-round cycle added to its shade (rounds 1, 2, 3, 4, ...: +0, +1, -1, +0, ...).
REGRESSION_CYCLE = (0, 1, -1)


def regression_shade(v: int) -> int:
    """Regression's base shade by value (buyer frame): 4 within 28 of 50, one more for every 6
    further (4 for 22-78, 5 for 79-84 and 16-21, 6 for 85-90 and 10-15, 7 for 91-96, 8 above).
    Exact on the 257 of 270 logged seats whose bid is not cut at 0."""
    return 4 + max(0, abs(v - 50) - 23) // 6


class Regression(Baseline):
    """BAZAAR's Regression as its logs show it: v - (shade(v) + cycle), shade(v) from the value
    alone (:func:`regression_shade`) and a 3-round cycle +0, +1, -1 (:data:`REGRESSION_CYCLE`),
    whatever the prices (not below 0). Exact on every logged quote (270 seats, 8,100 quotes). The
    seed's "linear regression over a sliding window of trades" is invisible in these quotes."""

    strategy = "regression"

    def bid(self, view):
        return view.cap(view.v - regression_shade(view.v) - REGRESSION_CYCLE[view.t % 3])


class FollowerParams(TraderParams):
    shade_up: float = Field(description="share of the room given up after prices rose")
    shade_down: float = Field(description="share of the room given up after prices fell")
    jitter: int = Field(default=1, ge=0, description="shade U{0..jitter} without room")
    patient: int = Field(default=0, ge=0, description="rounds bidding v before following")
    opening_share: float = Field(
        default=0.0, ge=0, le=1, description="round 1 (no book seen): shade share × (v - 50)"
    )


class Follower(Baseline):
    """A fitted follower of the last price move: with room below its value (the last round's best
    ask a < v) it bids v - s·(v - a), s the share for the last move's direction (up, down; the
    mean of the two when prices did not move or did not trade); without room, v - U{0..jitter}.
    In round 1, before any book, it shades ``opening_share`` of its value's excess over 50."""

    def bid(self, view):
        p = self.params
        if view.t < p.patient:
            return view.v
        if view.t == 0:
            return view.cap(view.v - p.opening_share * max(0, view.v - 50))
        r = room(view)
        if r == 0:
            return view.v - int(self.rng.integers(0, p.jitter + 1))
        d = price_change(view)
        share = (p.shade_up + p.shade_down) / 2 if not d else p.shade_up if d > 0 else p.shade_down
        return view.cap(view.v - share * r)


class MomentumParams(FollowerParams):
    shade_up: float = Field(default=0.10, ge=0, le=1)
    shade_down: float = Field(default=0.36, ge=0, le=1)
    opening_share: float = 0.5


class Momentum(Follower):
    """BAZAAR's Momentum, fitted to its 231 logged seats (no EMA-and-trend rule reproduces more
    than 31% of their quotes, the ones at value): a :class:`Follower` that concedes after prices
    rose and holds back after they fell. Logged: mean offset 11.0 intra-marginal, 1.6
    extra-marginal, flat over the rounds (6.7 on average), a third of all quotes at value; round
    1: half the value's excess over 50 (logged, 89 seats: 0 for every value under 50, then 3, 8,
    12, 17, 22 at values 50-59, ..., 90-99, 25 at 100)."""

    strategy, Params = "momentum", MomentumParams


class ContrarianParams(FollowerParams):
    shade_up: float = Field(default=0.33, ge=0, le=1)
    shade_down: float = Field(default=0.11, ge=0, le=1)
    jitter: int = 0
    patient: int = 2


class Contrarian(Follower):
    """BAZAAR's Contrarian, fitted to its 275 logged seats: its value in rounds 1-2 (all seats),
    then a :class:`Follower` that bids against the last move (lower after prices rose, higher
    after they fell), so an intra-marginal seat swings between two levels (logged: mean offset
    10.7 intra-marginal, 0.6 extra-marginal; 5-25 apart; fills 71% of intra-marginal rounds)."""

    strategy, Params = "contrarian", ContrarianParams


class RegimeSwitcherParams(TraderParams):
    jump: float = Field(
        default=5.0, ge=0, description="a mean-price move this large is a new regime"
    )
    dip: int = Field(default=13, ge=0, description="shade right after a regime change")


class RegimeSwitcher(Baseline):
    """BAZAAR's Regime Switcher as its 250 logged seats show it: Mean Reversion's quotes
    (:class:`MeanReversion`, 57 seats all through) until the mean price moves by ``jump`` or more
    between two rounds; then its shade jumps to ``dip`` (logged 6-24, typically 13) and falls back
    by one a round until Mean Reversion's is larger again (the decaying ramps of the logs). Logged
    mean offset 2.0 in rounds 1-5, 3.3 later; 4.5 for intra-marginal seats, 1.6 for the others."""

    strategy, Params = "regime_switcher", RegimeSwitcherParams

    def start(self):
        self.ramp = 0

    def observe(self, view):
        self.ramp = max(0, self.ramp - 1)
        d = price_change(view)
        if d is not None and abs(d) >= self.params.jump and view.traded():
            self.ramp = self.params.dip

    def bid(self, view):
        return view.cap(view.v - max(per_round(MEAN_REVERSION_SHADE, view.t), self.ramp))
