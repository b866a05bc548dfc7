"""Scripted AucArena bidders: a real field without an LLM, and stand-ins that err as LLMs do.

Every bidder answers all four decisions: it plans (priorities; or none), bids, updates its status
and replans. It knows what a bidder is shown: the highest bid, the minimum increase and its own
status (its remaining budget as last corrected), never a computed minimum bid or a budget handed
over; it works out its next valid bid itself (:func:`next_bid`).

**Errors, as LLMs make them** (every strategy's ``params``, all 0 by default; each answer draws
independently, re-asks included, so the logged rates estimate the configured ones):

| param | what goes wrong | how the metrics see it |
|---|---|---|
| ``under_minimum`` | a bid it makes forgets the increment: the highest bid again (under the start price on an item's first bid) | failed bid, under minimum |
| ``over_budget`` | a bid it makes counts money it has spent: its remaining budget plus the minimum increase | failed bid, over budget |
| ``budget_belief_error`` | its status gets its own remaining budget wrong (it forgets a payment) | self belief error, 1 of 3 self fields |
| ``own_belief_error`` | per field about itself, its total profit (counts its estimate) or its winning bids (forgets its last win, or claims the item it just lost) | self belief error, 2 of 3 self fields |
| ``other_belief_error`` | per field about each other bidder, its total profit or its winning bids, wrong the same ways | other belief error |
| ``format_error`` | an answer that is not in the answer's format (a bid as text, a status without its fields) | format failure (the runner's fallback applies: it withdraws, is corrected, keeps its plan) |

``under_minimum`` and ``over_budget`` are chances per bid it makes (an answer that withdraws cannot
fail); the three belief rates are chances per checked field, so the seed's per-field self rate is
(budget + 2 x own) / 3 and its other rate is ``other_belief_error``.

**Strategies** (a plan's priorities decide how far a bidder goes on an item: its *cap*):

| strategy | plan | bids |
|---|---|---|
| rule | none (the authors' rule bidder has none) | the seed's rule bidder: the start price first, then the minimum increase over the highest bid, at most ``max_bids`` (4) bids per item and while its budget allows; ignores value (seed section 4, notes B.2) |
| planner | the LLM stand-in: ``plan: adaptive`` (replans every item from its remaining budget), ``static`` (keeps its first plan) or ``none`` (no plan). Walks the items in the order of its ``rank`` rule, 3 while their expected cost (``expected_price`` x start) fits its budget, 2 while it fits 1.75 x its budget, then 1. ``rank``: ``impression`` (its impression of their value, start price x a lognormal ``noise``, best first; the default with ``desire: maximize_profit``), ``shuffle`` (a seeded random order, every item counting one: the default with ``desire: maximize_items``, so an item bidder's niche is not built in) or ``cheapest`` (lowest impression first: the niche scripted) | the minimum valid bid, or with chance ``raise_prob`` up to ``raise_max`` x start price more, up to ``cap_<priority>`` x its estimate (``cap_none`` without a plan) and its budget |
| increment | 3 for its priciest third of the items, 2, then 1 | the minimum valid bid up to 1.0 / 0.8 / 0.6 x its estimate for priority 3 / 2 / 1 |
| pacer | as the planner's (expected price 1.2, no noise) | the minimum valid bid up to its share of the remaining budget (the item's start price over the remaining items' total) x 1.5 / 1 / 0.5 for priority 3 / 2 / 1, and at most its estimate |
| sniper | 1 for the first ``skip`` share of the items, 3 after | sits those out, then the minimum up to ``fraction`` of its estimate |
| collector | maximise items: 3 for its cheapest third, 2, then 1 | the minimum valid bid up to 1.0 / 0.8 / 0.6 x its estimate by priority |
| random | random | withdraws with chance ``withdraw``, else the minimum valid bid plus up to ``extra`` x the start price (over budget now and then: a failed bid of its own) |
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.english_auction.observations import (
    BeliefAction,
    BeliefObservation,
    BidAction,
    BidObservation,
    ItemView,
    PlanAction,
    PlanObservation,
    PlanSkipped,
)

Rate = Field(default=0.0, ge=0, le=1)


def status_after(obs: BeliefObservation) -> BeliefAction:
    """The correct status after an item: the previous status plus the hammer's sale."""
    s = obs.status.model_dump()
    if obs.winner is not None:
        s["total_profits"][obs.winner] += obs.true_value - obs.price
        s["winning_bids"][obs.winner][obs.item.name] = obs.price
        if obs.winner == obs.me:
            s["remaining_budget"] -= obs.price
    return BeliefAction(summary="", **s)


def next_bid(obs: BidObservation) -> float:
    """The lowest valid bid: the start price, or the highest bid plus the minimum increase."""
    return obs.item.start_price if obs.highest is None else obs.highest + obs.min_increase


class BidderParams(Strict):
    under_minimum: float = Rate
    over_budget: float = Rate
    budget_belief_error: float = Rate
    own_belief_error: float = Rate
    other_belief_error: float = Rate
    format_error: float = Rate

    @model_validator(mode="after")
    def _bid_errors(self):
        if self.under_minimum + self.over_budget > 1:
            raise ValueError("under_minimum + over_budget: at most 1 together (chances per bid)")
        return self


class ScriptedBidder(ScriptedAgent):
    Params: ClassVar[type[BidderParams]] = BidderParams

    @classmethod
    def objective(cls, params: BidderParams) -> str | None:
        """The seed's objective the strategy pursues (``maximize_profit`` / ``maximize_items``,
        the objectives study of its Figure 8), or None when it states none."""
        return None

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.plan: dict[str, int] | None = None
        self.total_items = 0

    def chance(self, p: float) -> bool:
        """True with chance ``p``; draws nothing when ``p`` is 0 (a bidder without errors keeps
        the random stream it had before error rates existed)."""
        return p > 0 and self.rng.random() < p

    def decide(self, obs, decision: Decision):
        if self.chance(self.params.format_error):
            return malformed(decision.phase)
        if isinstance(obs, PlanObservation):
            self.total_items = self.total_items or len(obs.items)
            prios = self.priorities(obs)
            if prios is None:
                return PlanSkipped(skipped="static" if self.plan else "none")
            self.plan = prios
            return PlanAction(reasoning="", priorities=prios)
        if isinstance(obs, BeliefObservation):
            return self.err_belief(obs, status_after(obs))
        return BidAction(reasoning="", bid=self.err_bid(obs, self.bid(obs)))

    # -- the strategy ----------------------------------------------------------------------------
    def priorities(self, obs: PlanObservation) -> dict[str, int] | None:
        """The plan for ``obs.items`` (None: no plan, or at a replan keep the one in force)."""
        return None

    def bid(self, obs: BidObservation) -> float | None:
        raise NotImplementedError

    def priority(self, item: str) -> int | None:
        return None if self.plan is None else self.plan.get(item)

    @staticmethod
    def budget(obs) -> float:
        """What it believes it has left (its status, as last corrected)."""
        return obs.status.remaining_budget

    def up_to(self, obs: BidObservation, cap: float) -> float | None:
        """The lowest valid bid when it is at most ``cap`` and its budget, else withdraw."""
        amount = next_bid(obs)
        return amount if amount <= min(cap, self.budget(obs)) + 1e-9 else None

    # -- errors ----------------------------------------------------------------------------------
    def err_bid(self, obs: BidObservation, amount: float | None) -> float | None:
        if amount is None:
            return None
        u = self.rng.random() if self.params.under_minimum + self.params.over_budget > 0 else 1.0
        if u < self.params.under_minimum:  # forgets the increment
            return float(
                obs.highest if obs.highest is not None else obs.item.start_price - obs.min_increase
            )
        if u < self.params.under_minimum + self.params.over_budget:  # counts spent money
            return float(self.budget(obs) + obs.min_increase)
        return float(amount)

    def err_belief(self, obs: BeliefObservation, belief: BeliefAction) -> BeliefAction:
        p = self.params
        if self.chance(p.budget_belief_error):  # forgets a payment (or pays for a loss)
            belief.remaining_budget += obs.price if obs.winner == obs.me else obs.item.start_price
        for bidder in obs.bidders:
            rate = p.own_belief_error if bidder == obs.me else p.other_belief_error
            if self.chance(rate):  # counts its estimate, not the true value
                belief.total_profits[bidder] += obs.item.estimate - obs.true_value + 1.0
            if self.chance(rate):
                belief.winning_bids[bidder] = wrong_wins(belief.winning_bids.get(bidder, {}), obs)
        return belief


def wrong_wins(wins: dict[str, float], obs: BeliefObservation) -> dict[str, float]:
    """A bidder's winning bids with one item wrong: its last win forgotten, or when it has none the
    item just sold claimed for it."""
    if wins:
        return dict(list(wins.items())[:-1])
    return {obs.item.name: obs.price if obs.price is not None else obs.item.start_price}


def malformed(phase: str) -> dict:
    """An answer that is not in the answer's format (a scripted format failure)."""
    return {
        "bid": {"reasoning": "", "bid": "I bid $xxx!"},
        "belief": {"summary": "", "status": "same as before"},
    }.get(phase, {"reasoning": "", "priorities": "all 3"})


# ------------------------------------------------------------------ plans
def budget_priorities(
    items: list[ItemView],
    budget: float,
    expected: float,
    impressions: list[float] | None = None,
    cheapest_first: bool = False,
) -> dict[str, int]:
    """3 for the items (best impression first) whose expected cost (``expected`` x start price,
    accumulated) fits ``budget``, 2 while it fits 1.75 x ``budget``, then 1."""
    score = impressions or [i.start_price for i in items]
    order = sorted(range(len(items)), key=lambda k: score[k] if cheapest_first else -score[k])
    out, spent = {}, 0.0
    for k in order:
        spent += expected * items[k].start_price
        out[items[k].name] = 3 if spent <= budget else (2 if spent <= 1.75 * budget else 1)
    return out


def rank_priorities(items: list[ItemView], cheapest_first: bool = False) -> dict[str, int]:
    """3 for the first third by start price (priciest, or cheapest), 2 for the second, 1 after."""
    ranked = sorted(items, key=lambda i: i.start_price if cheapest_first else -i.start_price)
    n = len(ranked)
    third = max(1, round(n / 3))
    return {i.name: 3 if k < third else (2 if k < 2 * third else 1) for k, i in enumerate(ranked)}


BY_PRIORITY = {3: 1.0, 2: 0.8, 1: 0.6}


class RuleParams(BidderParams):
    max_bids: int = Field(default=4, ge=1, le=1000, description="bids per item at most")


class Rule(ScriptedBidder):
    """The seed's rule bidder (section 4, notes B.2): no plan; it ignores value."""

    strategy, Params = "rule", RuleParams

    def bid(self, obs):
        mine = sum(1 for r in obs.history if r.bids.get(obs.me) is not None)
        return None if mine >= self.params.max_bids else self.up_to(obs, math.inf)


class PlannerParams(BidderParams):
    plan: Literal["adaptive", "static", "none"] = "adaptive"
    desire: Literal["maximize_profit", "maximize_items"] = "maximize_profit"
    cap_1: float = Field(
        default=0.5, gt=0, le=10, description="bids up to this x its estimate on a priority-1 item"
    )
    cap_2: float = Field(default=0.75, gt=0, le=10)
    cap_3: float = Field(default=0.9, gt=0, le=10)
    cap_none: float = Field(default=0.85, gt=0, le=10, description="on every item, without a plan")
    expected_price: float = Field(
        default=1.5,
        gt=0,
        le=100,
        description="what it expects to pay, x start price, when it plans",
    )
    noise: float = Field(
        default=0.2,
        ge=0,
        le=5,
        description="sd of the log of its impression of an item's value when it plans",
    )
    raise_prob: float = Field(default=0.25, ge=0, le=1)
    raise_max: float = Field(default=0.3, ge=0, le=10, description="x start price")
    rank: Literal["impression", "shuffle", "cheapest"] | None = Field(
        default=None,
        description="the order it walks the items in when it plans: impression (its impression "
        "of their value, best first), shuffle (a seeded random order: every item counts one), "
        "cheapest (lowest impression first: the item bidders' niche scripted); null: impression "
        "with desire maximize_profit, shuffle with maximize_items",
    )

    @property
    def ranking(self) -> str:
        """The rule in force (``rank``, or the desire's default)."""
        if self.rank is not None:
            return self.rank
        return "shuffle" if self.desire == "maximize_items" else "impression"


class Planner(ScriptedBidder):
    """The LLM stand-in (see the module docstring): a plan that decides how far it goes."""

    strategy, Params = "planner", PlannerParams

    @classmethod
    def objective(cls, params: PlannerParams) -> str:
        return params.desire

    def priorities(self, obs):
        p = self.params
        if p.plan == "none" or (obs.replan and p.plan == "static"):
            return None
        budget = obs.status.remaining_budget if obs.replan else obs.budget
        if p.ranking == "shuffle":  # no price in the order: a seeded permutation of the items
            order = self.rng.permutation(len(obs.items))
            impressions = [0.0] * len(obs.items)
            for rank, k in enumerate(order):
                impressions[int(k)] = float(len(obs.items) - rank)
        else:
            impressions = (
                [i.start_price * math.exp(p.noise * self.rng.standard_normal()) for i in obs.items]
                if p.noise > 0
                else None
            )
        return budget_priorities(
            obs.items,
            budget,
            p.expected_price,
            impressions,
            cheapest_first=p.ranking == "cheapest",
        )

    def bid(self, obs):
        p = self.params
        prio = self.priority(obs.item.name)
        cap = min(
            obs.item.estimate * (p.cap_none if prio is None else getattr(p, f"cap_{prio}")),
            self.budget(obs),
        )
        amount = self.up_to(obs, cap)
        if amount is not None and self.chance(p.raise_prob):
            amount = max(
                amount,
                min(cap, amount + round(self.rng.uniform(0, p.raise_max) * obs.item.start_price)),
            )
        return amount


class Increment(ScriptedBidder):
    strategy = "increment"

    def priorities(self, obs):
        return rank_priorities(obs.items)

    def bid(self, obs):
        return self.up_to(obs, obs.item.estimate * BY_PRIORITY[self.priority(obs.item.name) or 1])


class Pacer(ScriptedBidder):
    strategy = "pacer"

    def priorities(self, obs):
        budget = obs.status.remaining_budget if obs.replan else obs.budget
        return budget_priorities(obs.items, budget, expected=1.2)

    def bid(self, obs):
        total = sum(i.start_price for i in obs.remaining) or 1.0
        weight = {3: 1.5, 2: 1.0, 1: 0.5}[self.priority(obs.item.name) or 1]
        share = weight * self.budget(obs) * obs.item.start_price / total
        return self.up_to(obs, min(obs.item.estimate, max(share, obs.item.start_price)))


class SniperParams(BidderParams):
    skip: float = Field(default=0.4, ge=0, lt=1, description="share of the items it sits out first")
    fraction: float = Field(default=0.8, gt=0, le=10, description="bids up to this x its estimate")


class Sniper(ScriptedBidder):
    strategy, Params = "sniper", SniperParams

    def priorities(self, obs):
        first = self.total_items - len(obs.items)
        return {
            i.name: 3 if (first + k) >= self.params.skip * self.total_items else 1
            for k, i in enumerate(obs.items)
        }

    def bid(self, obs):
        if self.priority(obs.item.name) == 1:
            return None
        return self.up_to(obs, self.params.fraction * obs.item.estimate)


class Collector(ScriptedBidder):
    """Maximise items (the seed's Item Bidder as a rule)."""

    strategy = "collector"

    @classmethod
    def objective(cls, params: BidderParams) -> str:
        return "maximize_items"

    def priorities(self, obs):
        return rank_priorities(obs.items, cheapest_first=True)

    def bid(self, obs):
        return self.up_to(obs, obs.item.estimate * BY_PRIORITY[self.priority(obs.item.name) or 1])


class RandomParams(BidderParams):
    withdraw: float = Field(default=0.4, ge=0, le=1)
    extra: float = Field(default=0.5, ge=0, le=10)


class RandomBidder(ScriptedBidder):
    strategy, Params = "random", RandomParams

    def priorities(self, obs):
        return {i.name: int(self.rng.integers(1, 4)) for i in obs.items}

    def bid(self, obs):
        if self.rng.random() < self.params.withdraw:
            return None
        return float(
            round(next_bid(obs) + self.rng.uniform(0, self.params.extra) * obs.item.start_price)
        )


STRATEGIES = StrategyTable(
    "english_auction",
    {
        cls.strategy: cls
        for cls in (Rule, Planner, Increment, Pacer, Sniper, Collector, RandomBidder)
    },
)
