"""Scripted crash firms: make the crash and its cure visible without an LLM (issue 10).

Every firm sees what an LLM firm sees (``FirmObservation``) and answers ``FirmAction``. Supply
follows sales: the firm aims to hold ``initial_supply`` units on day 1; then the mean units sold over
the last 3 days times ``buffer``, or, after a day it sold out, yesterday's supply times ``growth``
if that is more (demand was at least that); at least ``min_supply`` (a probe after days without
sales). It buys that target minus the stock it still holds (carried over; 0 when stock perishes),
never more than ``max_cash_share`` of its cash buys. Prices:

| strategy | price | source / intent |
|---|---|---|
| undercut | the cheapest competitor price seen yesterday minus ``step``, down to ``floor`` x unit cost (below cost by default): the price war | seed 3.1 "firms recursively undercut each other below unit cost" |
| markup | unit cost x (1 + ``markup``), whatever the others do | a fixed-markup firm |
| stabilizer | a target "modestly above unit cost" (seed 5.1): unit cost x (1 + ``margin``) plus the overhead spread over ``initial_supply`` units (1.25 at the defaults), held whatever competitors charge | the Stabilizing Firm's rules (the authors' prompt: minimum price unit cost plus overhead, do not follow competitors down, stable prices) |
| myopic | the profit-maximising price on its own demand estimate: a constant-elasticity fit ln q = a - b ln p over its last ``window`` days with sales; p* = c b / (b - 1) if b > 1, else the highest price ``cap`` x c; explores around the starting price until it has data | a myopic profit maximiser |
| random | U(``lo``, ``hi``) x unit cost, supply U(0, ``max_units``) | noise |

The scripted stabilizer does not reflect: it holds one price, so its best past days would all
point at that price; the LLM harness ``stabilizing`` reflects (``agents/harnesses/stabilizing.py``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.crash.observations import FirmAction, FirmObservation


class FirmParams(Strict):
    start_markup: float = Field(
        default=1.0, ge=0, le=1000, description="day-1 price = c x (1 + this)"
    )
    initial_supply: float = Field(default=40.0, ge=0, le=1e7, description="units held on day 1")
    min_supply: float = Field(
        default=5.0, ge=0, le=1e7, description="units held at least (a probe)"
    )
    buffer: float = Field(
        default=1.2, ge=0, le=100, description="target stock = recent sales x buffer"
    )
    growth: float = Field(
        default=1.3, ge=1, le=100, description="after selling out: supply x growth"
    )
    max_cash_share: float = Field(
        default=0.5, gt=0, le=1, description="at most this share of cash on supply"
    )


class ScriptedFirm(ScriptedAgent):
    Params: ClassVar[type[FirmParams]] = FirmParams

    def decide(self, obs: FirmObservation, decision: Decision) -> FirmAction:
        price = max(self.price(obs), 1e-6)
        return FirmAction(price=price, supply=self.supply(obs))

    def price(self, obs: FirmObservation) -> float:
        raise NotImplementedError

    def supply(self, obs: FirmObservation) -> float:
        pr = self.params
        last = obs.history[-1] if obs.history else None
        if last is None:
            want = pr.initial_supply
        else:
            want = float(np.mean([h.units_sold for h in obs.history[-3:]])) * pr.buffer
            if last.supply > 0 and last.units_sold >= last.supply * (1 - 1e-9):
                want = max(want, last.supply * pr.growth)
        want = max(pr.min_supply, want) - obs.stock
        budget = pr.max_cash_share * max(obs.cash, 0.0) / obs.unit_cost
        return float(max(0.0, min(want, budget)))

    def own_last_price(self, obs: FirmObservation) -> float:
        return (
            obs.history[-1].price if obs.history else obs.unit_cost * (1 + self.params.start_markup)
        )


class UndercutParams(FirmParams):
    step: float = Field(
        default=0.05, gt=0, le=1e6, description="undercut the cheapest rival by this much"
    )
    floor: float = Field(default=0.5, ge=0, le=1000, description="never below floor x unit cost")


class Undercut(ScriptedFirm):
    strategy, Params = "undercut", UndercutParams

    def price(self, obs):
        if not obs.competitor_prices:
            return self.own_last_price(obs)
        return max(self.params.floor * obs.unit_cost, min(obs.competitor_prices) - self.params.step)


class MarkupParams(FirmParams):
    markup: float = Field(default=0.5, ge=-0.99, le=1000, description="price = c x (1 + markup)")


class Markup(ScriptedFirm):
    strategy, Params = "markup", MarkupParams

    def price(self, obs):
        return obs.unit_cost * (1 + self.params.markup)


class StabilizerParams(FirmParams):
    margin: float = Field(
        default=0.2,
        ge=0,
        le=1000,
        description="price = unit cost x (1 + margin) + overhead / initial_supply",
    )


class Stabilizer(ScriptedFirm):
    """The Stabilizing Firm's rules (the prompt of appendix A, after the authors' code) without an
    LLM: a target price modestly above unit cost plus overhead per unit, held whatever the
    competitors do."""

    strategy, Params = "stabilizer", StabilizerParams

    def price(self, obs):
        return obs.unit_cost * (1 + self.params.margin) + obs.overhead / max(
            self.params.initial_supply, 1.0
        )


class MyopicParams(FirmParams):
    window: int = Field(
        default=20, ge=3, le=10_000, description="days of own sales in the demand fit"
    )
    explore: float = Field(
        default=0.1, ge=0, le=1, description="relative price noise while exploring"
    )
    cap: float = Field(default=8.0, gt=1, le=1000, description="highest price, in unit costs")


class Myopic(ScriptedFirm):
    strategy, Params = "myopic", MyopicParams

    def reset(self, rng):
        super().reset(rng)
        self.seen: list[tuple[float, float]] = []

    def price(self, obs):
        pr = self.params
        if obs.history and obs.history[-1].units_sold > 0:
            self.seen.append((obs.history[-1].price, obs.history[-1].units_sold))
        data = self.seen[-pr.window :]
        base = self.own_last_price(obs)
        if len(data) < 3 or len({round(p, 6) for p, _ in data}) < 2:
            return base * (1 + pr.explore * float(self.rng.uniform(-1, 1)))
        x = np.log([p for p, _ in data])
        y = np.log([q for _, q in data])
        slope = float(np.polyfit(x, y, 1)[0])
        b = -slope
        best = obs.unit_cost * b / (b - 1) if b > 1 else pr.cap * obs.unit_cost
        best = min(max(best, obs.unit_cost * 1.01), pr.cap * obs.unit_cost)
        return best * (1 + 0.2 * pr.explore * float(self.rng.uniform(-1, 1)))


class RandomParams(FirmParams):
    lo: float = Field(default=0.5, gt=0, le=1000)
    hi: float = Field(default=3.0, gt=0, le=1000)
    max_units: float = Field(default=60.0, ge=0, le=1e7)


class RandomFirm(ScriptedFirm):
    strategy, Params = "random", RandomParams

    def price(self, obs):
        return obs.unit_cost * float(self.rng.uniform(self.params.lo, self.params.hi))

    def supply(self, obs):
        return float(
            min(self.rng.uniform(0, self.params.max_units), max(obs.cash, 0) / obs.unit_cost)
        )


STRATEGIES = StrategyTable(
    "crash", {cls.strategy: cls for cls in (Undercut, Markup, Stabilizer, Myopic, RandomFirm)}
)
