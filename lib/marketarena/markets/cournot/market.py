"""The cournot market: N firms x M products, one simultaneous quantity decision per round.

Round t (0-based in the logs, 1-based in prompts): every firm answers one JSON action (notes +
quantities per product). ``check`` enforces the capacity (an over-capacity plan is scaled down
proportionally and flagged, see ``rules``) and cuts over-long notes; then the round settles: prices
from the product totals, profits, shares. The number of rounds is never shown to the firms.

Documented fallback (an answer that is missing, not valid JSON for the schema, or negative): the
firm produces nothing this round and keeps its previous PLANS / INSIGHTS notes.

Log tables (besides the generic ones):
  states     round, agent_id, product, cost, planned, quantity, price, share, profit
  firms      round, agent_id, quantity (total), profit, total_profit, scaled, cv
  reference  agent_id, product, nash_quantity, monopoly_quantity, nash_price, monopoly_price,
             nash_profit, monopoly_profit, nash_cv, monopoly_cv, capacity
             (copied from data/references/cournot/summary.json, so every metric is auditable
             from the episode folder alone)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision
from marketarena.markets.cournot import rules
from marketarena.markets._shared.oligopoly import EMPTY_NOTES, choice_vector, clip_notes, make_action
from marketarena.markets.cournot.economics import specialisation_cv
from marketarena.markets.cournot.observations import (
    FIELD,
    CournotObservation,
    ProductRecord,
    RoundRecord,
    action_schema,
)
from marketarena.markets.cournot.params import CournotParams

PHASE = "quantity"


class CournotMarket:
    name = "cournot"

    def __init__(self, params: CournotParams, agent_ids: list[AgentId], reference: dict):
        self.p = params
        self.config = params.config()
        self.ids = list(agent_ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.products = tuple(params.products)
        self.schema = action_schema(self.products)
        self.costs = self.config.cost_matrix
        self.capacity = self.config.capacity_vec
        self.reference = reference

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:  # noqa: ARG002 - the market itself draws nothing
        n = len(self.ids)
        self.t = 0
        self.notes = [EMPTY_NOTES] * n
        self.history: list[list[RoundRecord]] = [[] for _ in range(n)]
        self.total_profit = np.zeros(n)
        self._scaled: dict[AgentId, bool] = {}
        self._planned: dict[AgentId, np.ndarray] = {}
        self.rows: dict[str, list] = {"states": [], "firms": []}
        return self._decision()

    def _decision(self) -> Decision:
        obs = {}
        for a, i in self.index.items():
            last = self.history[i][-1] if self.history[i] else None
            obs[a] = CournotObservation(
                agent_id=a, round=self.t + 1, products=list(self.products),
                costs={p: float(self.costs[i, m]) for m, p in enumerate(self.products)},
                capacity=float(self.capacity[i]), history_window=self.p.history_window,
                history=self.history[i][-self.p.history_window:],
                plans=self.notes[i].plans, insights=self.notes[i].insights,
                note=("your planned quantities last round exceeded your capacity and were scaled "
                      "down proportionally" if last is not None and last.scaled else None),
            )
        return Decision(PHASE, self.t, 0, obs, self.schema)

    # ------------------------------------------------------------------ validation
    def check(self, agent_id: AgentId, action: BaseModel) -> Checked:
        i = self.index[agent_id]
        plan = np.array(choice_vector(action, FIELD, self.products))
        q, scaled = rules.enforce_capacity(plan, float(self.capacity[i]))
        content, notes = clip_notes(action.new_content)
        if scaled:
            notes.append(f"plan total {plan.sum():g} > capacity {self.capacity[i]:g}: scaled by "
                         f"{self.capacity[i] / plan.sum():.6g}")
        self._scaled[agent_id], self._planned[agent_id] = scaled, plan
        return Checked(make_action(self.schema, FIELD, self.products, q, plans=content.plans,
                                   insights=content.insights,
                                   thoughts=action.observations_and_thoughts), None, notes)

    def fallback(self, agent_id: AgentId, phase: str) -> BaseModel:
        i = self.index[agent_id]
        self._scaled.pop(agent_id, None)
        self._planned.pop(agent_id, None)
        return make_action(self.schema, FIELD, self.products, [0.0] * len(self.products),
                           plans=self.notes[i].plans, insights=self.notes[i].insights)

    # ------------------------------------------------------------------ settlement
    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        n, m = len(self.ids), len(self.products)
        q = np.zeros((n, m))
        planned = np.zeros((n, m))
        scaled = np.zeros(n, dtype=bool)
        for a, act in actions.items():
            i = self.index[a]
            q[i] = choice_vector(act, FIELD, self.products)
            planned[i] = self._planned.get(a, q[i])
            scaled[i] = self._scaled.get(a, False)
            self.notes[i] = act.new_content
        self._scaled, self._planned = {}, {}
        prices, profits, shares = rules.settle(q, self.config)
        self.total_profit += profits.sum(axis=1)
        cvs = np.atleast_1d(specialisation_cv(q))
        for i, a in enumerate(self.ids):
            records = []
            for k, prod in enumerate(self.products):
                share = None if np.isnan(shares[i, k]) else float(shares[i, k])
                records.append(ProductRecord(product=prod, cost=float(self.costs[i, k]),
                                             quantity=float(q[i, k]), share=share,
                                             price=float(prices[k]), profit=float(profits[i, k])))
                self.rows["states"].append((self.t, a, prod, float(self.costs[i, k]),
                                            float(planned[i, k]), float(q[i, k]), float(prices[k]),
                                            float(shares[i, k]), float(profits[i, k])))
            self.history[i].append(RoundRecord(round=self.t + 1, products=records,
                                               profit=float(profits[i].sum()),
                                               total_profit=float(self.total_profit[i]),
                                               scaled=bool(scaled[i])))
            self.rows["firms"].append((self.t, a, float(q[i].sum()), float(profits[i].sum()),
                                       float(self.total_profit[i]), bool(scaled[i]), float(cvs[i])))
        self.t += 1
        return None if self.t >= self.p.rounds else self._decision()

    # ------------------------------------------------------------------ logs
    TABLE_COLUMNS = {
        "states": ["round", "agent_id", "product", "cost", "planned", "quantity", "price", "share",
                   "profit"],
        "firms": ["round", "agent_id", "quantity", "profit", "total_profit", "scaled", "cv"],
    }

    def reference_table(self) -> pd.DataFrame:
        nash, mono = self.reference["nash"], self.reference["monopoly"]
        rows = []
        for i, a in enumerate(self.ids):
            for k, prod in enumerate(self.products):
                rows.append({
                    "agent_id": a, "product": prod,
                    "nash_quantity": nash["quantities"][i][k], "monopoly_quantity": mono["quantities"][i][k],
                    "nash_price": nash["prices"][k], "monopoly_price": mono["prices"][k],
                    "nash_profit": nash["profits"][i][k], "monopoly_profit": mono["profits"][i][k],
                    "nash_cv": nash["cv"][i], "monopoly_cv": mono["cv"][i],
                    "capacity": float(self.capacity[i]),
                })
        return pd.DataFrame(rows)

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {name: pd.DataFrame(self.rows[name], columns=cols)
               for name, cols in self.TABLE_COLUMNS.items()}
        out["reference"] = self.reference_table()
        return out
