"""The English auction: items one at a time, open ascending rounds, plans, beliefs and replans
(seed 004, AucArena; rules in ``rules.py``).

Time in the logs: ``step`` j is the j-th item presented (0-based), ``round`` k its k-th bidding
round (0-based). Decision points, in order: ``plan`` (step 0, before the first item), then per
item j its ``bid`` rounds, ``belief`` (step j) and, but after the last item, ``replan`` (step j).

Bidding: in round 0 every bidder with budget answers; after that, every bidder that is neither
leading nor withdrawn. A bid that is not valid (``rules.bid_error``: over budget, under the start
price, under the previous round's highest bid + the minimum increase) is a *failed bid*: the
bidder is asked again with the reason (``bid_attempts`` answers in all), then withdraws (the
fallback). A withdrawal (``bid: null``) is final for the item. The highest new bid leads (a tie
broken by a seeded draw). A round without a new bid (or ``max_rounds`` rounds) ends the item: the
leader pays its bid, its profit is the true value minus its bid; an item nobody bid on is unsold.
A bidder whose budget cannot cover the minimum bid is not asked (it could only withdraw).

Beliefs: after each item every bidder updates its status; the market checks it against the truth
(``rules.belief_errors``): errors are fed back (``belief_attempts`` answers), then the auctioneer
corrects it (the fallback is the truth), so every bidder starts the next item from a correct
status, as the seed's belief correction does. Plans: the priorities of the last valid plan or
replan are in force and shown with each bid; an invalid (re)plan keeps the plan in force (all 2s
before any).

Log tables (every answer, failed bids and wrong beliefs included, is in ``decisions``, one row per
attempt; the metrics recompute belief errors from those answers and the truth below):
  items    step, item, start_price, true_value, estimate, winner (agent id, "" unsold), price,
           rounds, bids (valid bids on it)
  bids     step, round, agent_id, bid (NaN: withdrew), leader (after the round): what was applied
  plans    step (the item about to be bid), agent_id, item, priority, source (plan | replan |
           kept)
  states   step, agent_id, budget_left, profit, items_won (after each item)
  setting  budget, order, bidders, items, min_increment, overestimate
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision
from marketarena.markets.english_auction import rules
from marketarena.markets.english_auction.observations import (
    BeliefAction,
    BeliefObservation,
    BidAction,
    BidObservation,
    ItemView,
    PlanAction,
    PlanObservation,
    RoundView,
    Status,
)
from marketarena.markets.english_auction.params import EnglishAuctionParams


def display_name(agent_id: str) -> str:
    return f"Bidder {agent_id[1:]}"


class EnglishAuctionMarket:
    name = "english_auction"

    def __init__(self, params: EnglishAuctionParams, agent_ids: list[AgentId], budget: int, order: str):
        self.p = params
        self.ids = list(agent_ids)
        self.names = {a: display_name(a) for a in self.ids}
        self.budget, self.order = float(budget), order

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:
        p = self.p
        order_ss, tie_ss = np.random.SeedSequence([seed, 0]).spawn(2)
        self.tie_rng = np.random.default_rng(tie_ss)
        idx = rules.order_items([i.start_price for i in p.items], self.order,
                                np.random.default_rng(order_ss))
        self.items = [p.items[i] for i in idx]
        self.views = [ItemView(name=i.name, description=i.description, start_price=i.start_price,
                               estimate=p.estimate(i)) for i in self.items]
        self.left = dict.fromkeys(self.ids, self.budget)
        self.profit = dict.fromkeys(self.ids, 0.0)
        self.won: dict[AgentId, dict[str, float]] = {a: {} for a in self.ids}
        self.plan: dict[AgentId, dict[str, int]] = {a: {i.name: 2 for i in self.items} for a in self.ids}
        self.rows: dict[str, list] = {n: [] for n in ("items", "bids", "plans", "states")}
        self.j = 0
        self.phase = "plan"
        obs = {a: PlanObservation(agent_id=a, me=self.names[a], budget=self.budget, items=self.views)
               for a in self.ids}
        return Decision("plan", 0, 0, obs, PlanAction, max_attempts=p.plan_attempts)

    def truth(self) -> Status:
        return Status(remaining_budget=0.0,
                      total_profits={self.names[a]: self.profit[a] for a in self.ids},
                      winning_bids={self.names[a]: dict(self.won[a]) for a in self.ids})

    def status_of(self, a: AgentId) -> Status:
        return self.truth().model_copy(update={"remaining_budget": self.left[a]})

    # ------------------------------------------------------------------ checks
    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        if isinstance(action, BidAction):
            if action.bid is None:
                return Checked(action)
            item = self.items[self.j]
            error = rules.bid_error(action.bid, self.left[agent_id], item.start_price, self.highest,
                                    self.p.min_increment)
            return Checked(action) if error is None else Checked(None, f"failed bid: {error}")
        if isinstance(action, PlanAction):
            wanted = {v.name for v in decision.observations[agent_id].items}
            keys = set(action.priorities)
            bad = sorted(k for k, v in action.priorities.items() if v not in (1, 2, 3))
            if keys != wanted or bad:
                return Checked(None, f"priorities must give 1, 2 or 3 to exactly the items "
                               f"{sorted(wanted)} (missing {sorted(wanted - keys)}, unknown "
                               f"{sorted(keys - wanted)}, out of range {bad})")
            return Checked(action)
        if isinstance(action, BeliefAction):
            truth = self.status_of(agent_id).model_dump()
            own, others = rules.belief_errors(self.names[agent_id], action.model_dump(), truth)
            if own or others:
                return Checked(None, "belief errors: " + "; ".join(own + others))
            return Checked(action)
        return Checked(action)

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel | None:
        if decision.phase == "bid":
            return BidAction(bid=None)
        if decision.phase == "belief":  # the auctioneer corrects it
            s = self.status_of(agent_id)
            return BeliefAction(remaining_budget=s.remaining_budget, total_profits=s.total_profits,
                                winning_bids=s.winning_bids)
        return None  # (re)plan: the plan in force stays

    # ------------------------------------------------------------------ the flow
    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        if self.phase in ("plan", "replan"):
            source = self.phase
            for a in self.ids:
                act = actions.get(a)
                if act is not None:
                    self.plan[a] = {**{k: v for k, v in self.plan[a].items()
                                       if k in act.priorities}, **act.priorities}
                for item, prio in self._plan_in_force(a).items():
                    self.rows["plans"].append((self.j, a, item, prio,
                                               source if act is not None else "kept"))
            return self._start_item()
        if self.phase == "bid":
            return self._after_round(actions)
        if self.phase == "belief":
            self.phase = "done_belief"
            if self.j + 1 >= len(self.items):
                return None
            return self._replan()
        raise RuntimeError(f"unexpected phase {self.phase}")

    def _plan_in_force(self, a: AgentId) -> dict[str, int]:
        """``a``'s priorities for the items not yet presented (this one included)."""
        remaining = {v.name for v in self.views[self.j:]}
        return {k: v for k, v in self.plan[a].items() if k in remaining}

    def _start_item(self) -> Decision | None:
        self.highest: float | None = None
        self.leader: AgentId | None = None
        self.out: set[AgentId] = set()
        self.history: list[RoundView] = []
        self.k = 0
        self.n_bids = 0  # valid bids on this item
        return self._bid_decision()

    def _bid_decision(self) -> Decision | None:
        floor = rules.min_bid(self.items[self.j].start_price, self.highest, self.p.min_increment)
        acting = [a for a in self.ids
                  if a != self.leader and a not in self.out and self.left[a] >= floor]
        if not acting or self.k >= self.p.max_rounds:
            return self._close_item()
        self.phase = "bid"
        obs = {a: BidObservation(
            agent_id=a, me=self.names[a], item=self.views[self.j], round=self.k + 1,
            remaining=self.views[self.j:], history=list(self.history), highest=self.highest,
            highest_bidder=self.names[self.leader] if self.leader else None, min_bid=floor,
            budget_left=self.left[a], status=self.status_of(a), plan=self._plan_in_force(a))
            for a in acting}
        return Decision("bid", self.j, self.k, obs, BidAction, max_attempts=self.p.bid_attempts)

    def _after_round(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        new = {a: float(act.bid) for a, act in actions.items() if act.bid is not None}
        for a, act in actions.items():
            if act.bid is None:
                self.out.add(a)
        view = {self.names[a]: (None if actions[a].bid is None else float(actions[a].bid))
                for a in actions}
        if new:
            self.leader = rules.leader(new, self.tie_rng)
            self.highest = new[self.leader]
            self.n_bids += len(new)
        for a, act in actions.items():
            self.rows["bids"].append((self.j, self.k, a, np.nan if act.bid is None else float(act.bid),
                                      self.leader or ""))
        self.history.append(RoundView(round=self.k + 1, bids=view))
        self.k += 1
        if not new:
            return self._close_item()
        return self._bid_decision()

    def _close_item(self) -> Decision:
        p, item = self.p, self.items[self.j]
        value = p.true_value(item)
        winner = self.leader
        if winner is not None:
            self.left[winner] -= self.highest
            self.profit[winner] += value - self.highest
            self.won[winner][item.name] = self.highest
        self.rows["items"].append((self.j, item.name, item.start_price, value, p.estimate(item),
                                   winner or "", self.highest if winner else np.nan, self.k,
                                   self.n_bids))
        for a in self.ids:
            self.rows["states"].append((self.j, a, self.left[a], self.profit[a], len(self.won[a])))
        self.phase = "belief"
        previous = {a: self.status_of(a) for a in self.ids}
        if winner is not None:  # the previous status: before this item's sale
            for a in self.ids:
                prev = previous[a].model_dump()
                prev["total_profits"][self.names[winner]] -= value - self.highest
                prev["winning_bids"][self.names[winner]].pop(item.name, None)
                if a == winner:
                    prev["remaining_budget"] += self.highest
                previous[a] = Status(**prev)
        obs = {a: BeliefObservation(agent_id=a, me=self.names[a], item=self.views[self.j],
                                    history=list(self.history),
                                    winner=self.names[winner] if winner else None,
                                    price=self.highest if winner else None, true_value=value,
                                    status=previous[a], bidders=[self.names[b] for b in self.ids])
               for a in self.ids}
        return Decision("belief", self.j, 0, obs, BeliefAction, max_attempts=p.belief_attempts)

    def _replan(self) -> Decision:
        self.j += 1
        self.phase = "replan"
        obs = {a: PlanObservation(agent_id=a, me=self.names[a], budget=self.left[a],
                                  items=self.views[self.j:], replan=True, status=self.status_of(a),
                                  plan=self._plan_in_force(a))
               for a in self.ids}
        return Decision("replan", self.j, 0, obs, PlanAction, max_attempts=self.p.plan_attempts)

    # ------------------------------------------------------------------ logs
    COLUMNS = {
        "items": ["step", "item", "start_price", "true_value", "estimate", "winner", "price",
                  "rounds", "bids"],
        "bids": ["step", "round", "agent_id", "bid", "leader"],
        "plans": ["step", "agent_id", "item", "priority", "source"],
        "states": ["step", "agent_id", "budget_left", "profit", "items_won"],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        p = self.p
        out = {n: pd.DataFrame(self.rows[n], columns=c) for n, c in self.COLUMNS.items()}
        out["setting"] = pd.DataFrame([{"budget": self.budget, "order": self.order,
                                        "bidders": len(self.ids), "items": len(self.items),
                                        "min_increment": p.min_increment,
                                        "overestimate": p.overestimate}])
        return out
