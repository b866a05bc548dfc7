"""Scripted agents: one base class and one strategy table for every market.

A market's baselines subclass :class:`ScriptedAgent`, name themselves (``strategy``), declare a
pydantic ``Params`` model (a roster entry's ``params``; unknown keys are errors), the ``roles`` they
can play when not every role (a seller strategy cannot buy), and implement
:meth:`ScriptedAgent.decide`. ``context`` carries what the market gives a scripted seat at build
time (its cost row, the reference solution, ...). Randomness comes only from the generator handed
to :meth:`reset` at the start of every episode (``core.seeding``).

:class:`StrategyTable` is a market's ``strategy name -> class`` table: it validates a roster entry
(errors name the roster position and key, e.g. ``roster.3.params.markup: Input should be a valid
number``) and builds the agent for a seat.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ValidationError

from marketarena.core.params import RosterEntry, Strict
from marketarena.core.types import Decision, Retry


class NoParams(Strict):
    """A strategy without parameters."""


class ScriptedAgent:
    strategy: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = NoParams
    #: the seat roles this strategy can play (``Seat.role``); None: any. Checked against every
    #: planned seat before a run (``core/seating.py``)
    roles: ClassVar[frozenset[str] | None] = None

    def __init__(self, agent_id: str, params: BaseModel | dict | None = None, context: Any = None):
        self.agent_id = agent_id
        self.params = self.Params.model_validate({} if params is None else params)
        self.context = context
        self.rng = np.random.default_rng(0)
        self.setup()

    def setup(self) -> None:
        """Build what the strategy needs from ``params`` and ``context`` (once per agent)."""

    def reset(self, rng: np.random.Generator) -> None:
        """Start of an episode: the agent's own seeded generator."""
        self.rng = rng

    async def act(self, observation: Any, decision: Decision, retry: Retry | None = None):
        return (
            self.decide(observation, decision)
            if retry is None
            else self.revise(observation, decision, retry)
        )

    def decide(self, observation: Any, decision: Decision) -> BaseModel | dict | None:
        raise NotImplementedError

    def revise(self, observation: Any, decision: Decision, retry: Retry) -> BaseModel | dict | None:
        """A new answer after the market rejected the last one (``retry.error`` says why);
        by default the same decision again."""
        return self.decide(observation, decision)

    @classmethod
    def check_params(cls, params: BaseModel, table: "StrategyTable") -> None:
        """Checks of ``params`` beyond their model (e.g. a wrapped inner strategy must exist);
        raise ``ValueError("<key>: <problem>")``."""


class StrategyTable(Mapping[str, type[ScriptedAgent]]):
    """A market's scripted strategies by name."""

    def __init__(self, market: str, strategies: Mapping[str, type[ScriptedAgent]]):
        self.market = market
        self._by_name = dict(strategies)

    def __getitem__(self, name: str) -> type[ScriptedAgent]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def validate(self, entry: RosterEntry, where: str) -> BaseModel:
        """The validated params of a baseline entry; ``ValueError`` naming ``where`` and the key."""
        cls = self._by_name.get(entry.strategy or "")
        if cls is None:
            raise ValueError(
                f"{where}.strategy: unknown {self.market} strategy {entry.strategy!r} "
                f"(known: {', '.join(sorted(self._by_name))})"
            )
        try:
            params = cls.Params.model_validate(entry.params)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(map(str, err["loc"]))
            raise ValueError(f"{where}.params{'.' + loc if loc else ''}: {err['msg']}") from None
        try:
            cls.check_params(params, self)
        except ValueError as exc:
            raise ValueError(f"{where}.params.{exc}") from None
        return params

    def make(self, agent_id: str, entry: RosterEntry, context: Any = None) -> ScriptedAgent:
        return self._by_name[entry.strategy](agent_id, entry.params, context)
