"""Scripted AucArena bidders: a real field without an LLM (issue 12).

Every bidder answers all four decisions: it plans (priorities), bids, updates its status (a
correct one, computed from what it was shown, unless ``belief_error`` makes it slip: a wrong
remaining budget, so the belief checks have something to catch) and replans.

| strategy | bids | plan |
|---|---|---|
| rule | the seed's rule bidder: the start price first, then the minimum increase over the highest bid, at most ``max_bids`` (4) bids per item and while the budget allows; ignores value (seed 4, notes B.2) | all 2 |
| increment | the minimum valid bid while it is at most its estimated value | 3 for its priciest items, then 2, 1 |
| pacer | the minimum valid bid up to its share of the remaining budget (the item's start price over the remaining items' total), and at most its estimate | 2, 3 for items its budget share covers |
| sniper | enters late in the auction: withdraws from the first ``skip`` share of the items (a withdrawal is final within an item, so lateness is across items), then bids the minimum up to ``fraction`` of its estimate | 3 for the later items |
| collector | maximise items: the minimum valid bid up to its estimate on items cheaper than the median start price, on others up to ``fraction`` of it | 3 for the cheapest items |
| random | withdraws with probability ``withdraw``, else the minimum valid bid plus a random extra of up to ``extra`` x the start price (failed bids happen when that is over budget) | random |
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision, Retry
from marketarena.markets.english_auction.observations import (
    BeliefAction,
    BeliefObservation,
    BidAction,
    BidObservation,
    PlanAction,
    PlanObservation,
)


def status_after(obs: BeliefObservation) -> BeliefAction:
    """The correct status after an item: the previous status plus the hammer's sale."""
    s = obs.status.model_dump()
    if obs.winner is not None:
        s["total_profits"][obs.winner] += obs.true_value - obs.price
        s["winning_bids"][obs.winner][obs.item.name] = obs.price
        if obs.winner == obs.me:
            s["remaining_budget"] -= obs.price
    return BeliefAction(summary="", **s)


class BidderParams(Strict):
    belief_error: float = Field(default=0.0, ge=0, le=1,
                                description="chance its status update gets its budget wrong")


class ScriptedBidder(ScriptedAgent):
    Params: ClassVar[type[BidderParams]] = BidderParams

    def decide(self, obs, decision: Decision):
        if isinstance(obs, PlanObservation):
            return PlanAction(reasoning="", priorities=self.priorities(obs))
        if isinstance(obs, BeliefObservation):
            return self.believe(obs, slip=self.rng.random() < self.params.belief_error)
        amount = self.bid(obs)
        return BidAction(reasoning="", bid=None if amount is None else float(amount))

    def revise(self, obs, decision: Decision, retry: Retry):
        if isinstance(obs, BeliefObservation):
            return self.believe(obs, slip=False)  # told its errors, it corrects them
        if isinstance(obs, BidObservation):  # a failed bid: the minimum valid bid, if affordable
            return BidAction(bid=obs.min_bid if obs.min_bid <= obs.budget_left else None)
        return self.decide(obs, decision)

    # -- the four functions ---------------------------------------------------------------------
    def priorities(self, obs: PlanObservation) -> dict[str, int]:
        return {i.name: 2 for i in obs.items}

    def bid(self, obs: BidObservation) -> float | None:
        raise NotImplementedError

    def believe(self, obs: BeliefObservation, slip: bool) -> BeliefAction:
        belief = status_after(obs)
        if slip:
            belief.remaining_budget += obs.item.start_price
        return belief

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def up_to(obs: BidObservation, cap: float) -> float | None:
        """The minimum valid bid when it is at most ``cap`` and affordable, else withdraw."""
        return obs.min_bid if obs.min_bid <= min(cap, obs.budget_left) else None


class RuleParams(BidderParams):
    max_bids: int = Field(default=4, ge=1, description="bids per item at most")


class Rule(ScriptedBidder):
    """The seed's rule bidder (section 4, notes B.2): it ignores value."""

    strategy, Params = "rule", RuleParams

    def bid(self, obs):
        mine = sum(1 for r in obs.history if r.bids.get(obs.me) is not None)
        if mine >= self.params.max_bids:
            return None
        return self.up_to(obs, np.inf)


def _rank_priorities(items, key, top_share=1 / 3) -> dict[str, int]:
    ranked = sorted(items, key=key)
    n = len(ranked)
    return {i.name: 3 if k < max(1, round(top_share * n)) else (2 if k < max(1, round(2 * top_share * n)) else 1)
            for k, i in enumerate(ranked)}


class Increment(ScriptedBidder):
    strategy = "increment"

    def priorities(self, obs):
        return _rank_priorities(obs.items, key=lambda i: -i.start_price)

    def bid(self, obs):
        return self.up_to(obs, obs.item.estimate)


class Pacer(ScriptedBidder):
    strategy = "pacer"

    def priorities(self, obs):
        total = sum(i.start_price for i in obs.items) or 1.0
        return {i.name: 3 if obs.budget * i.start_price / total >= i.start_price else 2 for i in obs.items}

    def bid(self, obs):
        total = sum(i.start_price for i in obs.remaining) or 1.0
        share = obs.budget_left * obs.item.start_price / total
        return self.up_to(obs, min(obs.item.estimate, max(share, obs.item.start_price)))


class SniperParams(BidderParams):
    skip: float = Field(default=0.4, ge=0, lt=1, description="share of the items it sits out first")
    fraction: float = Field(default=0.8, gt=0, description="bids up to this x its estimate")


class Sniper(ScriptedBidder):
    strategy, Params = "sniper", SniperParams

    def setup(self):
        self.total_items: int | None = None

    def priorities(self, obs):
        if self.total_items is None:
            self.total_items = len(obs.items)
        first = self.total_items - len(obs.items)
        return {i.name: 3 if (first + k) >= self.params.skip * self.total_items else 1
                for k, i in enumerate(obs.items)}

    def bid(self, obs):
        position = (self.total_items or len(obs.remaining)) - len(obs.remaining)
        if position < self.params.skip * (self.total_items or len(obs.remaining)):
            return None
        return self.up_to(obs, self.params.fraction * obs.item.estimate)


class CollectorParams(BidderParams):
    fraction: float = Field(default=0.6, gt=0, description="cap on items above the median price")


class Collector(ScriptedBidder):
    """Maximise items (the seed's Item Bidder as a rule)."""

    strategy, Params = "collector", CollectorParams

    def priorities(self, obs):
        return _rank_priorities(obs.items, key=lambda i: i.start_price)

    def bid(self, obs):
        median = float(np.median([i.start_price for i in obs.remaining]))
        cap = obs.item.estimate if obs.item.start_price <= median else self.params.fraction * obs.item.estimate
        return self.up_to(obs, cap)


class RandomParams(BidderParams):
    withdraw: float = Field(default=0.4, ge=0, le=1)
    extra: float = Field(default=0.5, ge=0)
    belief_error: float = Field(default=0.2, ge=0, le=1)


class RandomBidder(ScriptedBidder):
    strategy, Params = "random", RandomParams

    def priorities(self, obs):
        return {i.name: int(self.rng.integers(1, 4)) for i in obs.items}

    def bid(self, obs):
        if self.rng.random() < self.params.withdraw:
            return None
        return float(round(obs.min_bid + self.rng.uniform(0, self.params.extra) * obs.item.start_price))


STRATEGIES = StrategyTable("english_auction", {cls.strategy: cls for cls in (
    Rule, Increment, Pacer, Sniper, Collector, RandomBidder)})
