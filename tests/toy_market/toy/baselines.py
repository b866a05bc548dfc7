"""Scripted sellers: ``fixed`` posts its ``price`` every round; ``undercut`` posts one below the
lowest price of the last round (``value`` at the first), never below ``floor``."""

from __future__ import annotations

from pydantic import BaseModel, Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable


class Price(BaseModel):
    price: int


class Fixed(ScriptedAgent):
    strategy = "fixed"

    class Params(Strict):
        price: int = Field(default=5, ge=0, le=1_000)

    def decide(self, observation, decision):
        return Price(price=self.params.price)


class Undercut(ScriptedAgent):
    strategy = "undercut"

    class Params(Strict):
        floor: int = Field(default=2, ge=0, le=1_000)

    def decide(self, observation, decision):
        last = observation["last_lowest"]
        return Price(
            price=observation["value"] if last is None else max(self.params.floor, last - 1)
        )


STRATEGIES = StrategyTable("toy", {"fixed": Fixed, "undercut": Undercut})
