"""The cournot market: N firms x M products, one simultaneous quantity decision per round.

Round t (``step`` t, 0-based in the logs, 1-based in prompts): every firm answers one JSON action
(notes + quantities per product). ``check`` (pure) enforces the capacity (an over-capacity plan is
scaled down proportionally and flagged, see ``rules``) and notes over-long notes; then the round
settles: prices from the product totals, profits, shares. The number of rounds is never shown to
the firms. An LLM firm's PLANS / INSIGHTS notes are kept by the ``notes`` harness.

Documented fallback (an answer that is missing, not valid JSON for the schema, or negative): the
firm produces nothing this round.

:class:`CournotRules` is what the pipeline plays it by (``core.rules``): the round-robin lineups
and the notes harness it shares with bertrand (``markets/_shared/oligopoly.py``), the reference
solution as its input, the scripted firms' context.

Log tables (besides the generic ones):
  states     step, agent_id, product, cost, planned, quantity, price, share, profit
  firms      step, agent_id, quantity (total), profit, total_profit, scaled, cv
  reference  agent_id, product, nash_quantity, monopoly_quantity, nash_price, monopoly_price,
             nash_profit, monopoly_profit, nash_cv, monopoly_cv, capacity
             (copied from data/references/cournot/summary.json, so every metric is auditable
             from the episode folder alone)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision
from marketarena.markets._shared.oligopoly import OligopolyRules, choice_vector, clip_notes
from marketarena.markets.cournot import rules
from marketarena.markets.cournot.baselines import STRATEGIES, Game
from marketarena.markets.cournot.economics import reference_summary, specialisation_cv
from marketarena.markets.cournot.observations import (
    FIELD,
    CournotObservation,
    ProductRecord,
    RoundRecord,
    action_schema,
    render_messages,
)
from marketarena.markets.cournot.params import CournotParams

PHASE = "quantity"


@dataclass(frozen=True)
class Production:
    """What ``check`` hands ``step`` for one firm: the plan it answered and what it produces."""

    planned: np.ndarray
    quantities: np.ndarray
    scaled: bool


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
        self.history: list[list[RoundRecord]] = [[] for _ in range(n)]
        self.total_profit = np.zeros(n)
        self.rows: dict[str, list] = {"states": [], "firms": []}
        return self._decision()

    def _decision(self) -> Decision:
        obs = {}
        for a, i in self.index.items():
            last = self.history[i][-1] if self.history[i] else None
            obs[a] = CournotObservation(
                agent_id=a,
                round=self.t + 1,
                products=list(self.products),
                costs={p: float(self.costs[i, m]) for m, p in enumerate(self.products)},
                capacity=float(self.capacity[i]),
                history_window=self.p.history_window,
                history=self.history[i][-self.p.history_window :],
                note=(
                    "your planned quantities last round exceeded your capacity and were scaled "
                    "down proportionally"
                    if last is not None and last.scaled
                    else None
                ),
            )
        return Decision(PHASE, self.t, 0, obs, self.schema)

    # ------------------------------------------------------------------ validation
    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        i = self.index[agent_id]
        plan = np.array(choice_vector(action, FIELD, self.products))
        q, scaled = rules.enforce_capacity(plan, float(self.capacity[i]))
        _, notes = clip_notes(action.new_content)
        if scaled:
            notes.append(
                f"plan total {plan.sum():g} > capacity {self.capacity[i]:g}: scaled by "
                f"{self.capacity[i] / plan.sum():.6g}"
            )
        return Checked(Production(plan, np.asarray(q, dtype=float), bool(scaled)), None, notes)

    def fallback(self, agent_id: AgentId, decision: Decision) -> Production:
        zero = np.zeros(len(self.products))
        return Production(zero, zero, False)

    # ------------------------------------------------------------------ settlement
    def step(self, actions: dict[AgentId, Production]) -> Decision | None:
        n, m = len(self.ids), len(self.products)
        q = np.zeros((n, m))
        planned = np.zeros((n, m))
        scaled = np.zeros(n, dtype=bool)
        for a, production in actions.items():
            i = self.index[a]
            q[i], planned[i], scaled[i] = (
                production.quantities,
                production.planned,
                production.scaled,
            )
        prices, profits, shares = rules.settle(q, self.config)
        self.total_profit += profits.sum(axis=1)
        cvs = np.atleast_1d(specialisation_cv(q))
        for i, a in enumerate(self.ids):
            records = []
            for k, prod in enumerate(self.products):
                share = None if np.isnan(shares[i, k]) else float(shares[i, k])
                records.append(
                    ProductRecord(
                        product=prod,
                        cost=float(self.costs[i, k]),
                        quantity=float(q[i, k]),
                        share=share,
                        price=float(prices[k]),
                        profit=float(profits[i, k]),
                    )
                )
                self.rows["states"].append(
                    (
                        self.t,
                        a,
                        prod,
                        float(self.costs[i, k]),
                        float(planned[i, k]),
                        float(q[i, k]),
                        float(prices[k]),
                        float(shares[i, k]),
                        float(profits[i, k]),
                    )
                )
            self.history[i].append(
                RoundRecord(
                    round=self.t + 1,
                    products=records,
                    profit=float(profits[i].sum()),
                    total_profit=float(self.total_profit[i]),
                    scaled=bool(scaled[i]),
                )
            )
            self.rows["firms"].append(
                (
                    self.t,
                    a,
                    float(q[i].sum()),
                    float(profits[i].sum()),
                    float(self.total_profit[i]),
                    bool(scaled[i]),
                    float(cvs[i]),
                )
            )
        self.t += 1
        return None if self.t >= self.p.rounds else self._decision()

    # ------------------------------------------------------------------ logs
    TABLE_COLUMNS = {
        "states": [
            "step",
            "agent_id",
            "product",
            "cost",
            "planned",
            "quantity",
            "price",
            "share",
            "profit",
        ],
        "firms": ["step", "agent_id", "quantity", "profit", "total_profit", "scaled", "cv"],
    }

    def reference_table(self) -> pd.DataFrame:
        nash, mono = self.reference["nash"], self.reference["monopoly"]
        rows = []
        for i, a in enumerate(self.ids):
            for k, prod in enumerate(self.products):
                rows.append(
                    {
                        "agent_id": a,
                        "product": prod,
                        "nash_quantity": nash["quantities"][i][k],
                        "monopoly_quantity": mono["quantities"][i][k],
                        "nash_price": nash["prices"][k],
                        "monopoly_price": mono["prices"][k],
                        "nash_profit": nash["profits"][i][k],
                        "monopoly_profit": mono["profits"][i][k],
                        "nash_cv": nash["cv"][i],
                        "monopoly_cv": mono["cv"][i],
                        "capacity": float(self.capacity[i]),
                    }
                )
        return pd.DataFrame(rows)

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {
            name: pd.DataFrame(self.rows[name], columns=cols)
            for name, cols in self.TABLE_COLUMNS.items()
        }
        out["reference"] = self.reference_table()
        return out


def reference_path(data_dir: Path, instance: str) -> Path:
    return Path(data_dir) / "references" / instance / "summary.json"


class CournotRules(OligopolyRules):
    kind = "cournot"
    params_model = CournotParams
    strategies = STRATEGIES

    def input_files(self, mp: CournotParams, data_dir: Path) -> list[Path]:
        return [reference_path(data_dir, mp.instance)]

    def load_resources(self, mp: CournotParams, data_dir: Path, shared) -> dict:
        """The reference summary, checked against the configured game.

        Without ``summary.json`` (``marketarena play`` before any ``dvc repro``) the reference is
        computed in memory with the same function; the simulate stage itself refuses to run
        without the file (``input_files``), so recorded episodes always match a stored reference.
        """
        path = reference_path(data_dir, mp.instance)
        if not path.is_file():
            return reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
        ref = json.loads(path.read_text())["reference"]
        cfg = mp.config()
        same = (
            np.allclose(ref["config"]["costs"], cfg.cost_matrix)
            and np.allclose(ref["config"]["a"], cfg.a_vec)
            and np.allclose(ref["config"]["b"], cfg.b_vec)
            and [np.inf if c is None else c for c in ref["config"]["capacity"]]
            == cfg.capacity_vec.tolist()
        )
        if not same:
            raise ValueError(
                f"{path} was computed for another configuration than params "
                f"markets.{mp.instance}; re-run the reference stage (dvc repro)"
            )
        return ref

    def build_market(self, mp: CournotParams, resources: dict, episode) -> CournotMarket:
        return CournotMarket(mp, [s.agent_id for s in episode.seats], resources)

    def scripted_context(self, seat, mp: CournotParams, resources: dict, episode) -> Game:
        index = [s.agent_id for s in episode.seats].index(seat.agent_id)
        return Game(
            mp.config(),
            index,
            tuple(mp.products),
            np.asarray(resources["nash"]["quantities"]),
            np.asarray(resources["monopoly"]["quantities"]),
        )

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
