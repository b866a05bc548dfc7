"""Margin learners: Adaptive Aggressive (AA), AA-Cliff, Adaptive, and Cliff's ZIP (textbook).

Evidence: BAZAAR's published games (``lechmazur/bazaar``), teacher-forced with
``benchmarks/bench_da_teacher_forced.py``.
"""

from __future__ import annotations

from pydantic import Field

from marketarena.markets.double_auction.baselines.base import (
    Baseline,
    TraderParams,
    room,
    round_half_even,
)


class AAParams(TraderParams):
    margin: float = Field(default=0.08, ge=0, le=1, description="opening margin (share of v)")
    decay: float = Field(default=0.95, gt=0, le=1, description="margin factor per trade")
    floor: float = Field(default=0.03, ge=0, le=1, description="smallest margin")


class AA(Baseline):
    """BAZAAR's "Enhanced Adaptive Aggressive" (roster name ``aa``) as its 285 logged seats show
    it: a margin m, a share of its value, bid v - round(m·v); m opens at 0.08 (exact on every
    logged round 1: 7 below 87, 8 below 95) and shrinks by ``decay`` with each trade, to at least
    ``floor`` (more aggressive over the game: logged mean offset 3.9 in rounds 1-5, 2.4 from
    round 21). The rule is 0.8 off the logged quotes on average. Vytelingum's AA (equilibrium
    estimate, θ learning, aggressiveness r) is not what these seats do."""

    strategy, Params = "aa", AAParams

    def bid(self, view):
        p = self.params
        m = max(p.floor, p.margin * p.decay**view.trades)
        return view.cap(view.v - round_half_even(m * view.v))


class AACliffParams(TraderParams):
    opening: int = Field(default=5, ge=0, description="shade in round 1")
    margin: float = Field(default=0.015, ge=0, le=1, description="shade with room: max(1, m·v)")
    step: int = Field(default=4, ge=0, description="shade grows by U{0..step} a round without room")
    cap: int = Field(default=16, ge=0, description="largest shade without room")


class AACliff(Baseline):
    """BAZAAR's "Adaptive Aggressive Cliff" as its 288 logged seats show it: round 1 v - 5 (all
    seats); with room (the last round's best ask below its value) v - max(1, round(0.015 v)) (1,
    2 at v = 100: 164 seats all through); without room, a shade that climbs by up to ``step`` a
    round to at most ``cap`` (the "cliff": a seat that cannot trade walks away from the market;
    logged mean offset 6.4 for extra-marginal seats, 1.3 for intra-marginal ones)."""

    strategy, Params = "aa_cliff", AACliffParams

    def start(self):
        self.shade = self.params.opening

    def observe(self, view):
        p = self.params
        if room(view) > 0 or view.traded():
            self.shade = max(1, round_half_even(p.margin * view.v))
        else:
            self.shade = min(p.cap, self.shade + int(self.rng.integers(0, p.step + 1)))

    def bid(self, view):
        return view.cap(view.v - self.shade)


class AdaptiveParams(TraderParams):
    warmup: int = Field(default=8, ge=0, description="rounds at value after the first trade")
    patience: int = Field(default=3, ge=1, description="failed rounds before it concedes")
    concede: int = Field(default=2, ge=0, description="rounds it concedes for")


class Adaptive(Baseline):
    """BAZAAR's Adaptive as its 259 logged seats show it (95% of 7,770 quotes exact, 0.7 off on
    average): round 1 v - 1; for ``warmup`` (8) rounds after its first trade, its value; otherwise
    it bids the last round's best ask (never above v: the most conservative bid that could still
    trade), except that every ``patience``-th (3rd) round in a row without a trade makes it
    concede for the next ``concede`` (2) rounds, bidding one under the best rival bid of the last
    round. A trade resets the count. Hence the logged 5-round cycle of an intra-marginal seat
    after round 9 (three rounds at the best ask, no trade; two one under the rival, trading) and
    the collapse of its trade rate after round 10 (46% to 18%): "more conservative after a
    successful trade, more aggressive after failing to trade"."""

    strategy, Params = "adaptive", AdaptiveParams

    def start(self):
        self.fails = self.conceding = 0
        self.warm_until = -1

    def observe(self, view):
        p = self.params
        if view.traded():
            if self.warm_until < 0:
                self.warm_until = len(view.own) - 1 + p.warmup
            self.fails = 0
        else:
            self.fails += 1
        self.conceding = max(0, self.conceding - 1)
        if self.fails and self.fails % p.patience == 0:
            self.conceding = p.concede

    def bid(self, view):
        v = view.v
        if view.t == 0:
            return view.cap(v - 1)
        if view.t <= self.warm_until:
            return v
        if self.conceding:
            rival = view.best_rival()
            return v if rival is None else view.cap(min(v, rival - 1))
        ask = view.best_ask()
        return v if ask is None else min(v, ask)


class ZIPParams(TraderParams):
    margin: float = Field(default=0.3, ge=0, le=1, description="initial profit margin μ")
    beta: float = Field(default=0.3, gt=0, le=1, description="learning rate")
    gamma: float = Field(default=0.3, ge=0, lt=1, description="momentum")
    r_max: float = Field(default=0.05, ge=0, description="relative target perturbation")
    a_max: float = Field(default=2.0, ge=0, description="absolute target perturbation")


class ZIP(Baseline):
    """Textbook (not in BAZAAR's table nor the default pool): Cliff's ZIP (1997), the seed's
    "ZIP+": bid v(1 - μ), the margin μ learned by Widrow-Hoff with momentum towards a perturbed
    target. Call-market adaptation: the target comes from the last round's mean price (or its
    best ask when nothing traded), not from each shout."""

    strategy, Params = "zip", ZIPParams

    def start(self):
        self.mu, self.momentum = self.params.margin, 0.0

    def _target(self, q, up: bool):
        p = self.params
        r, a = self.rng.uniform(0, p.r_max), self.rng.uniform(0, p.a_max)
        return q * (1 + r) + a if up else q * (1 - r) - a

    def observe(self, view):
        if view.v <= 0:
            return
        cur = view.v * (1 - self.mu)
        price = view.mean_price()
        target = None
        if price is not None:
            if cur >= price:  # would have traded: try to pay less
                target = self._target(price, up=False)
            elif price <= view.v:  # lost the trade: close in
                target = self._target(price, up=True)
        else:
            ask = view.best_ask()
            if ask is not None and ask <= view.v and cur < ask:
                target = self._target(ask, up=True)
        if target is None:
            return
        p = self.params
        self.momentum = p.gamma * self.momentum + (1 - p.gamma) * p.beta * (target - cur)
        self.mu = min(1.0, max(0.0, 1 - (cur + self.momentum) / view.v))

    def bid(self, view):
        return view.cap(view.v * (1 - self.mu))
