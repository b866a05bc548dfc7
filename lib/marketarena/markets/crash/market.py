"""The crash market: firms post a price and buy supply each day; consumers buy from the cheapest
firm they see; firms whose cash falls below zero go bankrupt for good (seed 001, section 3.1).

A day ``t`` (``step`` t, 0-based; prompts count days from 1) is one decision point at which every
active firm answers ``{"price", "supply"}``. Then, in this order:

1. supply: a firm buys ``supply`` units at the unit cost, at most what its cash pays for (a larger
   order is scaled down and noted; the decision stays valid); with ``unsold: carry`` (default, as
   in the authors' code) yesterday's leftovers are still in stock, with ``perish`` they are gone;
2. sales (``rules``): every consumer earns the day's income (``consumer_savings``: unspent income
   is kept); today's shoppers each see ``discovery_limit`` firms with stock, order their demand
   (income over the day's price index, ``demand_index``) from the cheapest, capped at their
   cash, and are filled in their drawn order up to the firm's stock; revenue = price x units
   filled, consumer surplus per order as ``rules.ces_surplus`` (no choke price) or
   ``rules.consumer_surplus`` (with ``max_price``);
3. costs (``rules.day_costs``): overhead and the holding cost of carried stock; then the tax on
   the cash left, then the optional platform fee on the cash left after the tax;
4. bankruptcy: a firm whose cash cannot cover overhead and holding is bankrupt (``liability:
   limited``: it pays what it has and ends at 0; ``unlimited``: it ends below 0; exactly enough
   survives): retired (an event), it never acts or sells again. The episode ends after ``days``
   days or when no firm is left.

Money: consumers' spending equals firms' revenue (and leaves their savings); supply, overhead,
holding, tax and fee leave the firms to outside sinks; so each day sum(cash change) = revenue -
every expense, which the tests check. Units: bought = sold + perished (or carried).

Fallback (invalid or missing answer): yesterday's price (the unit cost on day 1, as the authors'
engine) and no supply.

Randomness: ``SeedSequence([seed, 0]).spawn(4)``: consumers' budgets, shoppers, what each shopper
sees, the firm-side sample of competitor prices.

Log tables (``step`` = the day, 0-based):
  states    step, agent_id, cash_start, price, supply_asked, supply, cost, units_sold, revenue,
            unsold, overhead, holding, tax, fee, profit, cash_end, bankrupt
  orders    step, order, consumer, firm (agent id, "" for none), seen, price, wanted, budget
            (the shopper's cash before it, NaN without consumer_savings), filled, spend, surplus
  days      step, active, shoppers, mean_price, filled, wanted, spend, surplus, health
  consumers consumer, income
  setting   discovery_limit, stabilizing, firms, consumers, days, unit_cost, max_price (NaN:
            none), initial_cash, overhead, tax_rate, platform_fee, holding_cost, unsold,
            arrival_rate, demand_index, consumer_savings, liability
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.rules import EpisodeSpec, MarketRules, Seat, episode_seed
from marketarena.core.types import AgentId, Checked, Decision, EventLog
from marketarena.markets.crash import joint, rules
from marketarena.markets.crash.baselines import STRATEGIES
from marketarena.markets.crash.observations import (
    MAX_PRICE,
    MAX_SUPPLY,
    DayRecord,
    FirmAction,
    FirmObservation,
    render_messages,
)
from marketarena.markets.crash.params import CrashParams

PHASE = "firm"


def market_health(active: int, firms: int, mean_price: float, unit_cost: float) -> float:
    """The authors' per-day market health: mean of the survivors' share and price closeness to
    cost, ``(alive / firms + max(0, 1 - |mean price / c - 1|)) / 2``."""
    closeness = (
        0.0 if not np.isfinite(mean_price) else max(0.0, 1.0 - abs(mean_price / unit_cost - 1.0))
    )
    return (active / firms + closeness) / 2.0


class CrashMarket(EventLog):
    name = "crash"

    def __init__(
        self,
        params: CrashParams,
        agent_ids: list[AgentId],
        roles: list[str],
        personas: list[str],
        discovery_limit: int,
        setting_extra: dict | None = None,
    ):
        self.p = params
        self.setting_extra = dict(setting_extra or {})  # a joint run's model and seed
        self.ids = list(agent_ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.roles, self.personas = list(roles), list(personas)
        self.discovery_limit = discovery_limit

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:
        p = self.p
        streams = np.random.SeedSequence([seed, 0]).spawn(4)
        income_rng, self.shop_rng, self.see_rng, self.peer_rng = map(np.random.default_rng, streams)
        c = p.consumer
        self.consumers = rules.draw_consumers(
            income_rng,
            p.consumers,
            c.income_lo,
            c.income_hi,
            c.labour_hours,
            c.skill_lo,
            c.skill_hi,
        )
        n = len(self.ids)
        self.t = 0
        self.cash = np.full(n, float(p.initial_cash))
        self.savings = np.zeros(p.consumers)  # consumers' cash (consumer_savings)
        self.stock = np.zeros(n)
        self.active = np.ones(n, dtype=bool)
        self.last_price = np.full(n, float(p.unit_cost))
        self.last_profit = np.zeros(n)
        self.health = 1.0
        self.history: list[list[DayRecord]] = [[] for _ in range(n)]
        self.rows: dict[str, list] = {"states": [], "orders": [], "days": []}
        self.start_events()
        return self._decision()

    def _decision(self) -> Decision:
        p = self.p
        alive = np.flatnonzero(self.active)
        obs = {}
        for i in alive:
            rivals = alive[alive != i]
            if p.firm_discovery_limit is not None and len(rivals) > p.firm_discovery_limit:
                rivals = np.sort(
                    self.peer_rng.choice(rivals, p.firm_discovery_limit, replace=False)
                )
            prices = [float(self.last_price[j]) for j in rivals] if self.t > 0 else []
            a = self.ids[i]
            obs[a] = FirmObservation.model_construct(
                agent_id=a,
                day=self.t + 1,
                persona=self.personas[i],
                stabilizing=self.roles[i] == "stabilizing",
                cash=float(self.cash[i]),
                stock=float(self.stock[i]),
                unit_cost=p.unit_cost,
                overhead=p.overhead,
                tax_rate=p.tax_rate,
                platform_fee=p.platform_fee,
                consumers=p.consumers,
                unsold=p.unsold,
                holding_cost=p.holding_cost,
                initial_cash=p.initial_cash,
                history=self.history[i][-p.history :] if p.history else [],
                competitor_prices=prices,
                competitor_names=[self.ids[j] for j in rivals],
                active_firms=int(self.active.sum()),
                health=self.health,
                last_profit=float(self.last_profit[i]),
            )
        return Decision(PHASE, self.t, 0, obs, FirmAction)

    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        i = self.index[agent_id]
        afford = self.cash[i] / self.p.unit_cost
        if action.supply > afford:
            return Checked(
                action,
                None,
                [
                    f"supply {action.supply:g} scaled down to {afford:g} "
                    f"units, what cash {self.cash[i]:.2f} pays for"
                ],
            )
        return Checked(action)

    def fallback(self, agent_id: AgentId, decision: Decision) -> FirmAction:
        return FirmAction(price=float(self.last_price[self.index[agent_id]]), supply=0.0)

    def absurd(self, agent_id: AgentId, observation, decision: Decision) -> FirmAction:
        """A valid extreme action (the contract's absurd seat): the highest price and the largest
        supply an answer may give."""
        return FirmAction(price=MAX_PRICE, supply=MAX_SUPPLY)

    # ------------------------------------------------------------------ a day
    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        p, n, t = self.p, len(self.ids), self.t
        price = np.where(self.active, self.last_price, np.nan)
        asked = np.zeros(n)
        for a, act in actions.items():
            i = self.index[a]
            price[i], asked[i] = act.price, act.supply
        cash_start = self.cash.copy()
        supply = np.where(
            self.active, np.minimum(asked, np.maximum(self.cash, 0) / p.unit_cost), 0.0
        )
        cost = supply * p.unit_cost
        self.cash -= cost
        self.stock += supply

        # -- sales
        who = rules.shoppers(self.shop_rng, p.consumers, p.consumer.arrival_rate)
        offering = self.active & (self.stock > 0)
        seen = rules.visible_firms(self.see_rng, who.size, offering, self.discovery_limit)
        firm = rules.choose_cheapest(seen, np.where(np.isnan(price), np.inf, price))
        order_price = np.where(firm >= 0, price[np.maximum(firm, 0)], np.nan)
        income = self.consumers.income[who]
        index = rules.posted_mean(price, offering) if p.demand_index == "mean_quote" else None
        wanted = rules.demand(income, order_price, p.max_price, index)
        firm = np.where(wanted > 0, firm, -1)
        budget = np.full(who.size, np.nan)
        if p.consumer_savings:  # every consumer earns the day's income; shoppers spend from it
            self.savings += self.consumers.income
            budget = self.savings[who]
            with np.errstate(divide="ignore", invalid="ignore"):
                affordable = np.where(firm >= 0, np.minimum(wanted, budget / order_price), 0.0)
        else:
            affordable = wanted
        filled = rules.fill_orders(firm, affordable, self.stock)
        spend = np.where(filled > 0, filled * order_price, 0.0)
        if p.consumer_savings:
            self.savings[who] -= spend
        if p.max_price is None:
            surplus = rules.ces_surplus(
                income, filled, order_price, order_price if index is None else index, p.ces_sigma
            )
        else:
            surplus = rules.consumer_surplus(income, wanted, filled, order_price, p.max_price)
        units = np.bincount(firm[firm >= 0], weights=filled[firm >= 0], minlength=n)
        revenue = np.bincount(firm[firm >= 0], weights=spend[firm >= 0], minlength=n)
        self.stock -= units
        self.cash += revenue

        # -- costs and bankruptcy
        unsold = self.stock.copy()
        holding = np.zeros(n)
        if p.unsold == "perish":
            self.stock[:] = 0.0
        else:
            holding = unsold * p.holding_cost
        overhead, holding, tax, fee, bankrupt = rules.day_costs(
            self.cash,
            self.active,
            p.overhead,
            holding,
            p.tax_rate,
            p.platform_fee,
            limited=p.liability == "limited",
        )
        self.cash -= overhead + holding + tax + fee
        profit = revenue - cost - overhead - holding - tax - fee

        # -- logs
        sellers = self.active.copy()
        posted = price[sellers]
        mean_price = float(posted.mean()) if posted.size else float("nan")
        for i in np.flatnonzero(sellers):
            self.rows["states"].append(
                (
                    t,
                    self.ids[i],
                    cash_start[i],
                    price[i],
                    asked[i],
                    supply[i],
                    cost[i],
                    units[i],
                    revenue[i],
                    unsold[i],
                    overhead[i],
                    holding[i],
                    tax[i],
                    fee[i],
                    profit[i],
                    self.cash[i],
                    bool(bankrupt[i]),
                )
            )
            self.history[i].append(
                DayRecord.model_construct(
                    day=t + 1,
                    price=float(price[i]),
                    supply=float(supply[i]),
                    units_sold=float(units[i]),
                    revenue=float(revenue[i]),
                    expenses=float(cost[i] + overhead[i] + holding[i] + tax[i] + fee[i]),
                    profit=float(profit[i]),
                )
            )
        self.rows["orders"].append(
            (
                np.full(who.size, t),
                np.arange(who.size),
                who,
                np.where(firm >= 0, firm, n),
                (seen >= 0).sum(axis=1),
                order_price,
                wanted,
                budget,
                filled,
                spend,
                surplus,
            )
        )
        for i in np.flatnonzero(bankrupt):
            self.retire(t, 0, self.ids[i], f"cash {self.cash[i]:.4f} < 0")
        self.active &= ~bankrupt
        self.last_price = np.where(sellers, price, self.last_price)
        self.last_profit = profit
        self.health = market_health(int(self.active.sum()), n, mean_price, p.unit_cost)
        self.rows["days"].append(
            (
                t,
                int(sellers.sum()),
                int(who.size),
                mean_price,
                float(filled.sum()),
                float(wanted.sum()),
                float(spend.sum()),
                float(surplus.sum()),
                self.health,
            )
        )
        self.t += 1
        if self.t >= p.days or not self.active.any():
            return None
        return self._decision()

    # ------------------------------------------------------------------ logs
    COLUMNS = {
        "states": [
            "step",
            "agent_id",
            "cash_start",
            "price",
            "supply_asked",
            "supply",
            "cost",
            "units_sold",
            "revenue",
            "unsold",
            "overhead",
            "holding",
            "tax",
            "fee",
            "profit",
            "cash_end",
            "bankrupt",
        ],
        "days": [
            "step",
            "active",
            "shoppers",
            "mean_price",
            "filled",
            "wanted",
            "spend",
            "surplus",
            "health",
        ],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        p = self.p
        out = {
            name: pd.DataFrame(self.rows[name], columns=cols) for name, cols in self.COLUMNS.items()
        }
        columns = [
            "step",
            "order",
            "consumer",
            "firm",
            "seen",
            "price",
            "wanted",
            "budget",
            "filled",
            "spend",
            "surplus",
        ]
        orders = self.rows["orders"]
        if orders:  # one frame at the end: a frame a day costs more than the day's arithmetic
            data = dict(zip(columns, (np.concatenate(c) for c in zip(*orders))))
            data["firm"] = np.array(self.ids + [""], dtype=object)[data["firm"]]
            out["orders"] = pd.DataFrame(data)
        else:
            out["orders"] = pd.DataFrame(columns=columns)
        out["consumers"] = pd.DataFrame(
            {"consumer": np.arange(p.consumers), "income": self.consumers.income}
        )
        out["setting"] = pd.DataFrame(
            [
                {
                    "discovery_limit": self.discovery_limit,
                    "stabilizing": sum(r == "stabilizing" for r in self.roles),
                    "firms": len(self.ids),
                    "consumers": p.consumers,
                    "days": p.days,
                    "unit_cost": p.unit_cost,
                    "max_price": np.nan if p.max_price is None else p.max_price,
                    "initial_cash": p.initial_cash,
                    "overhead": p.overhead,
                    "tax_rate": p.tax_rate,
                    "platform_fee": p.platform_fee,
                    "holding_cost": p.holding_cost,
                    "unsold": p.unsold,
                    "arrival_rate": p.consumer.arrival_rate,
                    "demand_index": p.demand_index,
                    "consumer_savings": p.consumer_savings,
                    "liability": p.liability,
                    "ces_sigma": p.ces_sigma,
                    **self.setting_extra,
                }
            ]
        )
        return out


class CrashRules(MarketRules):
    """How the pipeline plays crash: seats ``F1..Fn`` per cell of the settings grid
    (``CrashParams``), the stabilizing seats first, the competitors rotated; the signals the
    ``stabilizing`` harness scores its past days by."""

    kind = "crash"
    params_model = CrashParams
    strategies = STRATEGIES
    harnesses = ("plain", "stabilizing", "agent_bazaar")
    # their firm's code, from the user's copy (imported when a seat plays on it)
    own_harnesses = {"agent_bazaar": "marketarena.markets.crash.authors_firm:AuthorsFirm"}
    role_keys = {
        "stabilizing": "stabilizer (or stabilizers)",
        "competitor": "competitors",
        "filler": "competitors",
    }
    cost_seat = "myopic"

    def seating_period(self, mp: CrashParams) -> int | None:
        """The cells times the competitors' rotation (``CrashParams.seat_names``); a joint
        instance's runs seat each entry alone (``joint.py``)."""
        return None if mp.imported else len(mp.cells) * len(mp.competitor_names())

    def may_sit_out(self, mp: CrashParams) -> set[int]:
        """A joint instance's entries other than its LLM ones (none needed: the authors' runs are
        imported, each LLM entry holds every seat of its own runs)."""
        return {i for i, e in enumerate(mp.roster) if e.kind != "llm"} if mp.imported else set()

    def input_files(self, mp: CrashParams, data_dir):
        """Their firm's code a joint instance's entries run (``joint.input_files``)."""
        return joint.input_files(mp, data_dir)

    def plan(self, mp: CrashParams) -> list[EpisodeSpec]:
        """The grid's runs; an imported instance's: each LLM entry's runs of ``joint_grid``."""
        return joint.plan(mp) if mp.imported else super().plan(mp)

    def seating_hint(self, mp: CrashParams, entry) -> str:
        seats = mp.firms - min(mp.stabilizing)
        return (
            f"name it in markets.{mp.instance}.competitors (or .stabilizer / .stabilizers); "
            f"competitors take "
            f"the non-stabilizing seats in turn, at most {seats} per episode, so list at most "
            f"{seats} or raise firms"
        )

    def seats(self, mp: CrashParams, run: int) -> list[Seat]:
        """``F1..Fn``: the stabilizing seats of the run's cell, the fillers of a paired design in
        the missing stabilizers' seats, then the competitor seats, their holders rotated with the
        cell's replicate (``CrashParams.seat_names``)."""
        by_name = {e.name: e for e in mp.roster}
        return [
            Seat(f"F{i + 1}", by_name[name], role)
            for i, (role, name) in enumerate(mp.seat_names(run))
        ]

    def episode(self, mp: CrashParams, run: int) -> EpisodeSpec:
        """``ep-<run:04d>`` with the seed of (seed, run), or in a paired design (the spillover
        study, ``CrashParams.paired``) of (seed, the run's replicate): every cell's replicate j
        then draws the same consumers, shoppers and seat streams (common random numbers)."""
        e = super().episode(mp, run)
        d, s, _ = mp.cell_of(run)
        seed = episode_seed(mp.seed, mp.seed_index(run))
        return EpisodeSpec(
            e.episode_id, run, seed, e.seats, (("discovery_limit", d), ("stabilizing", s))
        )

    def build_market(self, mp: CrashParams, resources, episode: EpisodeSpec) -> CrashMarket:
        """Each competitor or filler seat shows its player's own persona
        (``CrashParams.persona_of``), wherever the rotation seats it; stabilizing seats none."""
        extra = {}
        if mp.imported:  # a joint instance's run: the authors' setting, the entry as its model
            extra = {"model": episode.get("model"), "seed": episode.seed}
            mp = mp.joint_setting().model_copy(update={"days": episode.get("days")})
        texts = [
            mp.persona_of(seat.entry.name) if seat.role != "stabilizing" else ""
            for seat in episode.seats
        ]
        return CrashMarket(
            mp,
            [s.agent_id for s in episode.seats],
            [s.role for s in episode.seats],
            texts,
            episode.get("discovery_limit"),
            extra,
        )

    def render_messages(self, observation: FirmObservation, **extras):
        return render_messages(observation, **extras)

    def harness_signals(self, observation: FirmObservation) -> dict[str, float]:
        """Yesterday's profit in dollars, the authors' profit score ``max(0, profit) / initial
        cash`` and the market's health in [0, 1] (:func:`market_health`). The stabilizing
        harness scores a day ``market_health + profit_score``, the authors' composite
        (their agents/firm.py, ``reflect``)."""
        profit = observation.last_profit
        return {
            "profit": profit,
            "profit_score": max(0.0, profit) / max(observation.initial_cash, 1.0),
            "market_health": observation.health,
        }
