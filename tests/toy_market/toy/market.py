"""The toy market (``__init__.py`` says its rules) and ``ToyRules``, what the pipeline plays it
by: every roster entry a seller in every episode."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

from marketarena.core.prompts import chat_messages, template_env
from marketarena.core.rules import MarketRules, Seat
from marketarena.core.types import Checked, Decision, Rows

from .baselines import STRATEGIES, Price
from .params import ToyParams


class ToyMarket:
    name = "toy"

    def __init__(self, mp: ToyParams, sellers: list[str]):
        self.mp, self.sellers = mp, sellers

    def _decision(self) -> Decision:
        obs = {
            s: {
                "round": self.t + 1,
                "value": self.mp.value,
                "cost": self.mp.cost,
                "last_lowest": self.last,
            }
            for s in self.sellers
        }
        return Decision("price", self.t, 0, obs, Price)

    def reset(self, seed: int) -> Decision:
        self.rng, self.t, self.last, self.rows = np.random.default_rng(seed), 0, None, []
        return self._decision()

    def check(self, agent_id: str, action: BaseModel, decision: Decision) -> Checked:
        if not 0 <= action.price <= self.mp.value:
            return Checked(None, f"price {action.price} is outside [0, {self.mp.value}]")
        return Checked(action)

    def fallback(self, agent_id: str, decision: Decision) -> Any:
        return Price(price=self.mp.value)

    def step(self, actions: dict[str, Any]) -> Decision | None:
        prices = {s: actions[s].price for s in self.sellers}
        low = min(prices.values())
        cheapest = [s for s in self.sellers if prices[s] == low]
        winner = cheapest[int(self.rng.integers(len(cheapest)))]
        for s in self.sellers:
            sold = s == winner and low <= self.mp.value
            self.rows.append(
                (self.t, s, prices[s], int(sold), float(prices[s] - self.mp.cost) if sold else 0.0)
            )
        self.t, self.last = self.t + 1, low
        return None if self.t == self.mp.rounds else self._decision()

    def tables(self) -> dict[str, Rows]:
        return {"sales": Rows(["step", "agent_id", "price", "sold", "profit"], self.rows)}


class ToyRules(MarketRules):
    kind = "toy"
    params_model = ToyParams
    strategies = STRATEGIES

    def seats(self, mp: ToyParams, run: int) -> list[Seat]:
        return [Seat(f"S{i + 1}", e, "seller") for i, e in enumerate(mp.roster)]

    def build_market(self, mp: ToyParams, resources: Any, episode) -> ToyMarket:
        return ToyMarket(mp, [s.agent_id for s in episode.seats])

    def render_messages(self, observation: Any, **extras: Any) -> list[dict[str, str]]:
        env = template_env(__name__.rpartition(".")[0])
        return chat_messages(env, "system.j2", "user.j2", obs=observation, **extras)
