"""The bertrand market: N firms post a price per product each period (logit demand).

One decision point per period: every firm answers notes + prices (+ an investment letter in the
start-up preset). ``check`` cuts over-long notes and drops an investment letter that was not offered
(logged as a note: no investment). Then investments are paid and take effect, sales and profits
follow (``rules``), and funds grow by the profit.

Documented fallback (invalid or missing answer): the firm keeps last period's prices (its marginal
costs in the first period: no profit) and invests nothing. (Its PLANS / INSIGHTS notes are kept by
the ``notes`` harness, not by the market.)

:class:`BertrandRules` is what the pipeline plays it by (``core.rules``): the round-robin lineups
and the notes harness it shares with cournot (``markets/_shared/oligopoly.py``), the reference
summary as its input, the scripted firms' context.

Log tables (``step`` = the period, 0-based):
  states   step, agent_id, product, level, cost, price, quantity, share, profit, nash_price,
           monopoly_price   (the references of the period's cost configuration, all firms' costs)
  firms    step, agent_id, profit, total_profit, funds, investment (letter, "" = none),
           investment_cost
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision
from marketarena.markets._shared.oligopoly import (
    OligopolyRules,
    choice_vector,
    clip_notes,
    make_action,
)
from marketarena.markets.bertrand import rules
from marketarena.markets.bertrand.baselines import STRATEGIES, Game
from marketarena.markets.bertrand.economics import BertrandConfig, references
from marketarena.markets.bertrand.observations import (
    FIELD,
    BertrandObservation,
    ProductRecord,
    RoundRecord,
    action_schema,
    render_messages,
)
from marketarena.markets.bertrand.params import BertrandParams

PHASE = "price"


class BertrandMarket:
    name = "bertrand"

    def __init__(self, params: BertrandParams, agent_ids: list[AgentId]):
        """``agent_ids``: the firms in seat order (firm i has row i of the cost table)."""
        self.p = params
        self.base = params.config()
        self.ids = list(agent_ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.products = tuple(params.products)
        self.invest = params.invest
        self.schema = action_schema(self.products, self.invest)

    def reset(self, seed: int) -> Decision:  # noqa: ARG002 - the market draws nothing
        n, m = len(self.ids), len(self.products)
        self.t = 0
        self.levels = np.zeros((n, m), dtype=int)
        self.funds = np.full(n, float(self.base.initial_funds or 0.0))
        self.total_profit = np.zeros(n)
        self.last_prices = self.base.cost_matrix.copy()
        self.history: list[list[RoundRecord]] = [[] for _ in range(n)]
        self.options: dict[AgentId, list] = {}
        self.rows: dict[str, list] = {"states": [], "firms": []}
        return self._decision()

    def config(self) -> BertrandConfig:
        if not self.invest:
            return self.base
        ladder = np.asarray(self.base.cost_ladder)
        return self.base.model_copy(
            update={"costs": tuple(tuple(float(x) for x in row) for row in ladder[self.levels])}
        )

    def _decision(self) -> Decision:
        cfg = self.config()
        obs = {}
        for a, i in self.index.items():
            opts = (
                rules.investment_options(
                    self.levels[i].tolist(),
                    float(self.funds[i]),
                    list(self.products),
                    self.base.cost_ladder,
                    self.base.investment_costs,
                    self.p.mixed_bundles,
                )
                if self.invest
                else []
            )
            self.options[a] = opts
            obs[a] = BertrandObservation(
                agent_id=a,
                round=self.t + 1,
                preset=self.p.preset,
                products=list(self.products),
                costs={p: float(cfg.cost_matrix[i, k]) for k, p in enumerate(self.products)},
                levels={p: int(self.levels[i, k]) for k, p in enumerate(self.products)},
                history_window=self.p.history_rounds,
                funds=float(self.funds[i]),
                initial_funds=self.base.initial_funds,
                options=opts,
                history=self.history[i][-self.p.history_rounds :],
                ceiling=self._ceiling(i),
                prefix=self.p.prompt_prefix,
            )
        return Decision(PHASE, self.t, 0, obs, self.schema)

    def _ceiling(self, i: int) -> dict[str, float] | None:
        """Calvano: the price "no customer would pay more than", per product (a multiple of the
        monopoly price of the current costs)."""
        if self.p.preset != "calvano" or self.p.price_ceiling is None:
            return None
        monopoly = references(self.config())[1]
        return {
            p: float(self.p.price_ceiling * monopoly[i, k]) for k, p in enumerate(self.products)
        }

    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        content, notes = clip_notes(action.new_content)
        extra = {}
        if self.invest:
            letter = action.investment_option.strip().upper()
            offered = {o.letter for o in self.options.get(agent_id, [])}
            if letter not in offered:
                notes.append(
                    f"investment option {action.investment_option!r} not offered "
                    f"(offered: {', '.join(sorted(offered))}): no investment"
                )
                letter = "A"
            extra["investment_option"] = letter
        prices = choice_vector(action, FIELD, self.products)
        return Checked(
            make_action(
                self.schema,
                FIELD,
                self.products,
                prices,
                plans=content.plans,
                insights=content.insights,
                thoughts=action.observations_and_thoughts,
                **extra,
            ),
            None,
            notes,
        )

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel:
        i = self.index[agent_id]
        extra = {"investment_option": "A"} if self.invest else {}
        return make_action(self.schema, FIELD, self.products, self.last_prices[i], **extra)

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        n = len(self.ids)
        prices = self.last_prices.copy()
        invested, invest_cost = [""] * n, np.zeros(n)
        for a, act in actions.items():
            i = self.index[a]
            prices[i] = choice_vector(act, FIELD, self.products)
            if self.invest and act.investment_option != "A":
                opt = next(o for o in self.options[a] if o.letter == act.investment_option)
                for prod, level in opt.upgrades.items():
                    self.levels[i, self.products.index(prod)] = level
                self.funds[i] -= opt.cost
                invested[i], invest_cost[i] = opt.letter, opt.cost
        cfg = self.config()
        q, profit, shares = rules.settle(prices, cfg, self.p.sells_nothing_below_cost)
        nash, mono = references(cfg)
        self.funds += profit.sum(axis=1)
        self.total_profit += profit.sum(axis=1)
        self.last_prices = prices
        c = cfg.cost_matrix
        for i, a in enumerate(self.ids):
            records = []
            for k, prod in enumerate(self.products):
                others = [float(prices[j, k]) for j in range(n) if j != i]
                records.append(
                    ProductRecord(
                        product=prod,
                        cost=float(c[i, k]),
                        price=float(prices[i, k]),
                        competitor_prices=others,
                        share=float(shares[i, k]),
                        quantity=float(q[i, k]),
                        profit=float(profit[i, k]),
                        level=int(self.levels[i, k]),
                    )
                )
                self.rows["states"].append(
                    (
                        self.t,
                        a,
                        prod,
                        int(self.levels[i, k]),
                        float(c[i, k]),
                        float(prices[i, k]),
                        float(q[i, k]),
                        float(shares[i, k]),
                        float(profit[i, k]),
                        float(nash[i, k]),
                        float(mono[i, k]),
                    )
                )
            self.history[i].append(
                RoundRecord(
                    round=self.t + 1,
                    products=records,
                    profit=float(profit[i].sum()),
                    total_profit=float(self.total_profit[i]),
                    funds=float(self.funds[i]),
                    investment=invested[i],
                )
            )
            self.rows["firms"].append(
                (
                    self.t,
                    a,
                    float(profit[i].sum()),
                    float(self.total_profit[i]),
                    float(self.funds[i]),
                    invested[i],
                    float(invest_cost[i]),
                )
            )
        self.t += 1
        return None if self.t >= self.p.rounds else self._decision()

    TABLE_COLUMNS = {
        "states": [
            "step",
            "agent_id",
            "product",
            "level",
            "cost",
            "price",
            "quantity",
            "share",
            "profit",
            "nash_price",
            "monopoly_price",
        ],
        "firms": [
            "step",
            "agent_id",
            "profit",
            "total_profit",
            "funds",
            "investment",
            "investment_cost",
        ],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        return {
            name: pd.DataFrame(self.rows[name], columns=cols)
            for name, cols in self.TABLE_COLUMNS.items()
        }


class BertrandRules(OligopolyRules):
    kind = "bertrand"
    params_model = BertrandParams
    strategies = STRATEGIES

    def input_files(self, mp: BertrandParams, data_dir: Path) -> list[Path]:
        return [Path(data_dir) / "references" / mp.instance / "summary.json"]

    def build_market(self, mp: BertrandParams, resources, episode) -> BertrandMarket:
        return BertrandMarket(mp, [s.agent_id for s in episode.seats])

    def scripted_context(self, seat, mp: BertrandParams, resources, episode) -> Game:
        index = [s.agent_id for s in episode.seats].index(seat.agent_id)
        return Game(mp.config(), index, tuple(mp.products), mp.invest)

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
