"""Shading learners: Q-learning, Roth-Erev, the stochastic shading bandit.

Each chooses a shading arm a round and bids v - arm. Evidence: BAZAAR's published games
(``lechmazur/bazaar``): the arms are the shades its quotes take (and, for Roth-Erev and
Q-learning, the keys of the logged ``propensity_snapshot`` records); how often each is taken is
measured on the logged quotes. A learner's record of its own past arms is read from its own past
quotes (v - quote), so handed a logged seat's history it learns what that seat's arms earned.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from marketarena.markets.double_auction.baselines.base import Baseline, TraderParams


class ArmsParams(TraderParams):
    arms: list[int] = Field(min_length=1, description="shading arms: bid v - arm")


class ShadingLearner(Baseline):
    """Chooses an arm each round (:meth:`choose`) and bids v - arm (not below 0)."""

    def choose(self, view) -> int:
        raise NotImplementedError

    def bid(self, view):
        return view.cap(view.v - self.params.arms[self.choose(view)])

    def last_arm(self, view) -> int | None:
        """The arm nearest the shade of my last quote (None if I sat out or bid 0 under my
        arms)."""
        q = view.own[-1]
        if q is None:
            return None
        arms = np.asarray(self.params.arms)
        return int(np.argmin(np.abs(arms - (view.v - q))))


class QLearningParams(ArmsParams):
    arms: list[int] = Field(default_factory=lambda: list(range(0, 21, 2)), min_length=1)
    epsilon: float = Field(default=0.9, ge=0, le=1, description="share of random arms")
    alpha: float = Field(default=0.3, gt=0, le=1, description="learning rate")


class QLearning(ShadingLearner):
    """BAZAAR's Q-Learning as its 262 logged seats show it: arms 0, 2, ..., 20 (the keys of its
    logged Q tables), nearly uniform over the game (each taken in 7-10% of quotes, 0 in 13%: the
    greedy choice of a seat that never traded, all its values still 0, ties to the first arm), so
    mostly exploring: ε-greedy with ε = 0.9, Q(arm) += α (payoff - Q(arm)), one state (the logged
    tables do not move with the market). Logged mean offset 9.1 flat over the rounds, 10.0 for
    intra-marginal seats."""

    strategy, Params = "q_learning", QLearningParams

    def start(self):
        self.q = np.zeros(len(self.params.arms))

    def observe(self, view):
        arm = self.last_arm(view)
        if arm is not None:
            self.q[arm] += self.params.alpha * (view.payoff[-1] - self.q[arm])

    def choose(self, view):
        if self.rng.random() < self.params.epsilon:
            return int(self.rng.integers(len(self.params.arms)))
        return int(np.argmax(self.q))


class RothErevParams(ArmsParams):
    arms: list[int] = Field(default_factory=lambda: [0, 5, 10, 15], min_length=1)
    explore: int = Field(default=4, ge=0, description="rounds choosing among every arm")
    keep: int = Field(default=2, ge=1, description="arms kept after exploring (the smallest)")


class RothErev(ShadingLearner):
    """BAZAAR's Roth-Erev as its 262 logged seats show it: rounds 1-4 a uniform choice among
    shades 0, 5, 10 and 15 (24-26% each in round 1), from round 5 on between 0 and 5 only (10 and
    15 in under 3% of later quotes), whether the seat trades or not. Its logged propensity tables
    (11 arms 0-50, forgetting 0.2 a round: 1, 0.41, 0.134 at rounds 1, 5, 10) do not show in the
    quotes. Logged mean offset 6.8 in rounds 1-5, 2.4 later."""

    strategy, Params = "roth_erev", RothErevParams

    def choose(self, view):
        p = self.params
        n = len(p.arms) if view.t < p.explore else min(p.keep, len(p.arms))
        return int(self.rng.integers(n))


class BanditParams(ArmsParams):
    arms: list[int] = Field(default_factory=lambda: [2, 4, 6, 8, 10, 15], min_length=1)


class Bandit(ShadingLearner):
    """BAZAAR's Stochastic Shading Bandit as its 270 logged seats show it: shades 2, 4, 6, 8, 10
    and 15, each in 15-19% of quotes in every part of the game (0 only where the value is below
    the shade), so its choice stays nearly uniform; yet it fills 84% of its intra-marginal rounds,
    more than a uniform draw does in our pool (77%), and shades more when intra-marginal (7.5)
    than not (6.6). The rule that gives both: win-stay, lose-shift, keeping the arm that traded
    last round and drawing a new one uniformly after a round without a trade. Logged mean offset
    7.1, flat."""

    strategy, Params = "bandit", BanditParams

    def choose(self, view):
        if view.own and view.traded():
            arm = self.last_arm(view)
            if arm is not None:
                return arm
        return int(self.rng.integers(len(self.params.arms)))
