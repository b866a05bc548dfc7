"""The English auction: items one at a time, open ascending rounds, plans, beliefs and replans
(seed 004, AucArena; rules in ``rules.py``, what bidders see in ``observations.py``).

Time in the logs: ``step`` j is the j-th item presented (0-based), ``round`` k its k-th bidding
round (0-based). Decision points, in order: ``plan`` (step 0, before the first item), then per
item j its ``bid`` rounds, ``belief`` (step j) and, but after the last item, ``replan`` (step j+1,
the item about to be bid).

Bidding, as the authors' auctioneer runs it: in every round every bidder that is neither leading
nor withdrawn is asked, whether or not it can still afford the minimum bid (an over-budget bid is
then a failure it can make, and a withdrawal the right answer). A bid that is not valid
(``rules.bid_error``: over budget, under the start price, under the previous round's highest bid
plus the minimum increase) is a *failed bid*: the bidder is asked again with the reason, until it
answers validly, ``bid_attempts`` answers at most (10: generous; the authors re-ask without a
bound); after the last one it withdraws, logged as event ``forced_withdrawal`` (so is an answer
that was not valid JSON for the answer's schema: a *format failure*, which the runner does not
re-ask; the LLM client has re-asked it already). A withdrawal (``bid: null``) is final for the
item. The highest new bid leads (a tie broken by a seeded draw). A round without a new bid ends the
item: the leader pays its bid, its profit is the true value minus its bid; an item nobody bid on
is unsold. The item ends by itself within ``rules.round_bound`` rounds (392 at the defaults); the
optional ``max_rounds`` caps it (default none), a capped item going to its leader with event
``round_cap``.

Beliefs: after each item every bidder updates its status; the market checks it against the truth
(``rules.belief_errors``, our strict check) and feeds the errors back (``belief_attempts``
answers); then the auctioneer corrects it (event ``belief_corrected``), as the seed's belief
correction does. The status a bidder holds (its last accepted answer, or the correction) is what
its later prompts show: its previous status in the next belief update, its status in a replan,
and before its first bid on an item when it does not replan.

Plans: the priorities of the last valid plan or replan are in force. A bidder that makes no plan
(``PlanSkipped("none")``: the seed's no-plan bidder, the rule bidder) has none: its priorities are
logged as missing, never invented. ``PlanSkipped("static")`` keeps the plan in force at a replan;
an invalid replan keeps it too; an invalid first plan leaves the bidder without one.

Log tables (every answer, failed bids and wrong beliefs included, is in ``decisions``, one row per
attempt; the metrics recompute everything from the tables below and ``decisions``):
  items    step, item, start_price, true_value, estimate, winner (agent id, "" unsold), price,
           rounds, bids (valid bids on it)
  bids     step, round, agent_id, bid (NaN: withdrew), leader (after the round): what was applied
  plans    step (the item about to be bid), agent_id, item, priority (NaN: no plan), source
           (plan | replan: a valid answer; static: kept by a bidder that does not replan; kept: an
           invalid replan, the plan in force stays; none: no plan; failed: an invalid first plan)
  states   step, agent_id, budget_left, profit, items_won (after each item)
  setting  budget, order, bidders, items, min_increment, overestimate
  events   (the runner's) forced_withdrawal, belief_corrected, round_cap

:class:`EnglishAuctionRules` is what the pipeline plays it by (``core.rules``): the challenger
schedule (the lineups of ``params.py``, each lineup's ``runs`` auctions over the settings grid),
its seat matrix, the stopping rule's players (each LLM challenger's auctions) and the ``bdi``
harness of LLM bidders.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.rules import EpisodeSpec, MarketRules, Seat, episode_seed
from marketarena.core.types import AgentId, Checked, Decision, EventLog
from marketarena.markets.english_auction import rules
from marketarena.markets.english_auction.baselines import STRATEGIES
from marketarena.markets.english_auction.bdi import BDI
from marketarena.markets.english_auction.observations import (
    BeliefAction,
    BeliefObservation,
    BidAction,
    BidObservation,
    CorrectedBelief,
    ForcedWithdrawal,
    ItemView,
    PlanAction,
    PlanObservation,
    PlanSkipped,
    RoundView,
    Status,
    breach,
    render_messages,
)
from marketarena.markets.english_auction.params import EnglishAuctionParams


def display_name(agent_id: str) -> str:
    return f"Bidder {agent_id[1:]}"


class EnglishAuctionMarket(EventLog):
    name = "english_auction"

    def __init__(
        self, params: EnglishAuctionParams, agent_ids: list[AgentId], budget: int, order: str
    ):
        self.p = params
        self.ids = list(agent_ids)
        self.names = {a: display_name(a) for a in self.ids}
        self.budget, self.order = float(budget), order

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:
        p = self.p
        self.start_events()
        order_ss, tie_ss = np.random.SeedSequence([seed, 0]).spawn(2)
        self.tie_rng = np.random.default_rng(tie_ss)
        idx = rules.order_items(
            [i.start_price for i in p.items], self.order, np.random.default_rng(order_ss)
        )
        self.items = [p.items[i] for i in idx]
        self.views = [
            ItemView(
                name=i.name,
                description=i.description,
                start_price=i.start_price,
                estimate=p.estimate(i),
            )
            for i in self.items
        ]
        self.left = dict.fromkeys(self.ids, self.budget)
        self.profit = dict.fromkeys(self.ids, 0.0)
        self.won: dict[AgentId, dict[str, float]] = {a: {} for a in self.ids}
        self.belief = {a: self.status_of(a) for a in self.ids}  # what each bidder holds
        self.plan: dict[AgentId, dict[str, int] | None] = dict.fromkeys(self.ids)
        self.rows: dict[str, list] = {n: [] for n in self.COLUMNS}
        self.j = 0
        self.phase = "plan"
        obs = {
            a: PlanObservation(agent_id=a, me=self.names[a], budget=self.budget, items=self.views)
            for a in self.ids
        }
        return Decision("plan", 0, 0, obs, PlanAction, max_attempts=p.plan_attempts)

    def status_of(self, a: AgentId) -> Status:
        """The truth as ``a``'s status: its remaining budget, everyone's profit and winning bids."""
        return Status(
            remaining_budget=self.left[a],
            total_profits={self.names[b]: self.profit[b] for b in self.ids},
            winning_bids={self.names[b]: dict(self.won[b]) for b in self.ids},
        )

    # ------------------------------------------------------------------ checks
    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        if isinstance(action, BidAction):
            if action.bid is None:
                return Checked(action)
            error = rules.bid_error(
                action.bid,
                self.left[agent_id],
                self.items[self.j].start_price,
                self.highest,
                self.p.min_increment,
            )
            return Checked(action) if error is None else Checked(None, breach("bid", *error))
        if isinstance(action, PlanSkipped):
            return Checked(action)
        if isinstance(action, PlanAction):
            wanted = {v.name for v in decision.observations[agent_id].items}
            keys = set(action.priorities)
            bad = sorted(k for k, v in action.priorities.items() if v not in (1, 2, 3))
            if keys != wanted or bad:
                return Checked(
                    None,
                    breach(
                        decision.phase,
                        "",
                        (
                            f"priorities must give 1, 2 or 3 to exactly the items {sorted(wanted)}; missing "
                            f"{sorted(wanted - keys)}, unknown {sorted(keys - wanted)}, out of range {bad}"
                        ),
                    ),
                )
            return Checked(action)
        if isinstance(action, BeliefAction):
            own, others = rules.belief_errors(
                self.names[agent_id], action.model_dump(), self.status_of(agent_id).model_dump()
            )
            if own or others:
                return Checked(
                    None,
                    breach(
                        "belief", f"self {len(own)}, other {len(others)}", "\n".join(own + others)
                    ),
                )
            return Checked(action)
        return Checked(action)

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel | None:
        if decision.phase == "bid":
            return ForcedWithdrawal()
        if decision.phase == "belief":  # the auctioneer corrects it
            return CorrectedBelief(**self.status_of(agent_id).model_dump())
        return None  # (re)plan: the plan in force stays

    # ------------------------------------------------------------------ the flow
    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        if self.phase in ("plan", "replan"):
            self._apply_plans(actions)
            return self._start_item()
        if self.phase == "bid":
            return self._after_round(actions)
        if self.phase == "belief":
            for a, act in actions.items():
                self.belief[a] = act.status()
                if isinstance(act, CorrectedBelief):
                    self.log_event(
                        self.j,
                        0,
                        a,
                        "belief_corrected",
                        f"no correct status after {self.p.belief_attempts} answers",
                    )
            if self.j + 1 >= len(self.items):
                return None
            return self._replan()
        raise RuntimeError(f"unexpected phase {self.phase}")

    def _apply_plans(self, actions: dict[AgentId, BaseModel]) -> None:
        remaining = [v.name for v in self.views[self.j :]]
        for a in self.ids:
            act = actions.get(a)
            if isinstance(act, PlanSkipped):
                if act.skipped == "none":
                    self.plan[a] = None
                source = act.skipped if self.plan[a] is not None else "none"
            elif act is not None:
                self.plan[a], source = dict(act.priorities), self.phase
            else:
                source = (
                    "kept"
                    if self.plan[a] is not None
                    else ("failed" if self.phase == "plan" else "none")
                )
            plan = self.plan[a] or {}
            for item in remaining:
                self.rows["plans"].append((self.j, a, item, plan.get(item, np.nan), source))

    def _start_item(self) -> Decision | None:
        self.highest: float | None = None
        self.leader: AgentId | None = None
        self.out: set[AgentId] = set()
        self.history: list[RoundView] = []
        self.k = 0
        self.n_bids = 0  # valid bids on this item
        return self._bid_decision()

    def _bid_decision(self) -> Decision | None:
        acting = [a for a in self.ids if a != self.leader and a not in self.out]
        if not acting:
            return self._close_item()
        if self.p.max_rounds is not None and self.k >= self.p.max_rounds:
            self.log_event(
                self.j,
                self.k,
                self.leader or "",
                "round_cap",
                f"{self.items[self.j].name} closed after max_rounds = {self.p.max_rounds}",
            )
            return self._close_item()
        self.phase = "bid"
        item = self.items[self.j]
        common = dict(
            item=self.views[self.j],
            round=self.k + 1,
            remaining=self.views[self.j :],
            history=list(self.history),
            highest=self.highest,
            highest_bidder=self.names[self.leader] if self.leader else None,
            min_increase=self.p.min_increment * item.start_price,
        )
        obs = {
            a: BidObservation(agent_id=a, me=self.names[a], status=self.belief[a], **common)
            for a in acting
        }
        return Decision("bid", self.j, self.k, obs, BidAction, max_attempts=self.p.bid_attempts)

    def _after_round(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        new = {a: float(act.bid) for a, act in actions.items() if act.bid is not None}
        for a, act in actions.items():
            if act.bid is None:
                self.out.add(a)
            if isinstance(act, ForcedWithdrawal):
                self.log_event(
                    self.j,
                    self.k,
                    a,
                    "forced_withdrawal",
                    f"no valid bid on {self.items[self.j].name} in this round",
                )
        view = {
            self.names[a]: (None if actions[a].bid is None else float(actions[a].bid))
            for a in actions
        }
        if new:
            self.leader = rules.leader(new, self.tie_rng)
            self.highest = new[self.leader]
            self.n_bids += len(new)
        for a, act in actions.items():
            self.rows["bids"].append(
                (
                    self.j,
                    self.k,
                    a,
                    np.nan if act.bid is None else float(act.bid),
                    self.leader or "",
                )
            )
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
        self.rows["items"].append(
            (
                self.j,
                item.name,
                item.start_price,
                value,
                p.estimate(item),
                winner or "",
                self.highest if winner else np.nan,
                self.k,
                self.n_bids,
            )
        )
        for a in self.ids:
            self.rows["states"].append((self.j, a, self.left[a], self.profit[a], len(self.won[a])))
        self.phase = "belief"
        obs = {
            a: BeliefObservation(
                agent_id=a,
                me=self.names[a],
                item=self.views[self.j],
                history=list(self.history),
                winner=self.names[winner] if winner else None,
                price=self.highest if winner else None,
                true_value=value,
                status=self.belief[a],
                bidders=[self.names[b] for b in self.ids],
            )
            for a in self.ids
        }
        return Decision("belief", self.j, 0, obs, BeliefAction, max_attempts=p.belief_attempts)

    def _replan(self) -> Decision:
        self.j += 1
        self.phase = "replan"
        obs = {
            a: PlanObservation(
                agent_id=a,
                me=self.names[a],
                budget=self.budget,
                items=self.views[self.j :],
                replan=True,
                status=self.belief[a],
            )
            for a in self.ids
        }
        return Decision("replan", self.j, 0, obs, PlanAction, max_attempts=self.p.plan_attempts)

    # ------------------------------------------------------------------ logs
    COLUMNS = {
        "items": [
            "step",
            "item",
            "start_price",
            "true_value",
            "estimate",
            "winner",
            "price",
            "rounds",
            "bids",
        ],
        "bids": ["step", "round", "agent_id", "bid", "leader"],
        "plans": ["step", "agent_id", "item", "priority", "source"],
        "states": ["step", "agent_id", "budget_left", "profit", "items_won"],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        p = self.p
        out = {n: pd.DataFrame(self.rows[n], columns=c) for n, c in self.COLUMNS.items()}
        out["plans"]["priority"] = out["plans"]["priority"].astype(float)
        out["setting"] = pd.DataFrame(
            [
                {
                    "budget": self.budget,
                    "order": self.order,
                    "bidders": len(self.ids),
                    "items": len(self.items),
                    "min_increment": p.min_increment,
                    "overestimate": p.overestimate,
                }
            ]
        )
        return out


class EnglishAuctionRules(MarketRules):
    kind = "english_auction"
    params_model = EnglishAuctionParams
    strategies = STRATEGIES
    harnesses = ("bdi",)
    own_harnesses = {"bdi": BDI}
    default_harness = "bdi"

    def plan(self, mp: EnglishAuctionParams) -> list[EpisodeSpec]:
        """Each lineup's ``runs`` auctions, lineup by lineup (challengers in roster order)."""
        return [
            self._auction(mp, challenger, names, r)
            for challenger, names in mp.lineups()
            for r in range(mp.runs)
        ]

    def seat_matrix(self, mp: EnglishAuctionParams) -> tuple[np.ndarray, list[str]]:
        """Every lineup's roster indices repeated over its ``runs`` auctions (the plan's order);
        the seat roles are those :meth:`_auction` gives every lineup's first auction."""
        index = {e.name: i for i, e in enumerate(mp.roster)}
        lineups = mp.lineups()
        matrix = np.repeat(
            np.array([[index[n] for n in names] for _, names in lineups]), mp.runs, axis=0
        )
        return matrix, [seat.role for seat in self._auction(mp, *lineups[0], 0).seats]

    def episode(self, mp: EnglishAuctionParams, run: int) -> EpisodeSpec:
        """The ``run``-th auction of the plan (the first lineup's come first)."""
        challenger, names = mp.lineups()[run // mp.runs]
        return self._auction(mp, challenger, names, run % mp.runs)

    @staticmethod
    def _auction(
        mp: EnglishAuctionParams, challenger: str | None, names: list[str], r: int
    ) -> EpisodeSpec:
        entries = {e.name: e for e in mp.roster}
        role = (
            (lambda n: "bidder")
            if challenger is None
            else (lambda n: "challenger" if n == challenger else "baseline")
        )
        seats = tuple(Seat(f"B{i + 1}", entries[n], role(n)) for i, n in enumerate(names))
        budget, order = mp.cell_of(r)
        episode_id = f"ep-{r:04d}" if challenger is None else f"ep-{challenger}-{r:04d}"
        return EpisodeSpec(
            episode_id, r, episode_seed(mp.seed, r), seats, (("budget", budget), ("order", order))
        )

    def stop_players(self, mp: EnglishAuctionParams) -> dict[str, list[str]]:
        """Each LLM challenger's auctions, in order (the stopping rule: ``simulate/stopping.py``); with
        every bidder in every auction (no ``baselines``) there is no challenger: none."""
        entries = {e.name: e for e in mp.roster}
        return {
            c: [self._auction(mp, c, names, r).episode_id for r in range(mp.runs)]
            for c, names in mp.lineups()
            if c is not None and entries[c].kind == "llm"
        }

    def build_market(self, mp: EnglishAuctionParams, resources, episode: EpisodeSpec):
        return EnglishAuctionMarket(
            mp, [s.agent_id for s in episode.seats], episode.get("budget"), episode.get("order")
        )

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
