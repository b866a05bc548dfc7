"""The shapes every market and agent share (DESIGN.md section 3).

A market is a sequence of *decision points*. At each, a set of agents act simultaneously: the
market hands out one observation per acting agent and names the pydantic model their answer must
validate against. The runner (``core.runner``) gathers the answers, validates them, applies the
market's fallback to invalid ones and feeds the result back through ``Market.step``.

Agents are asynchronous so that LLM calls of one decision point run concurrently; scripted agents
implement the same protocol and simply return at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from pydantic import BaseModel

AgentId = str


class RunAborted(Exception):
    """An error that must stop the whole run, not just replace one answer with the fallback:
    an unreachable endpoint, an exhausted budget, a replay that misses the cache. The runner
    re-raises it; episodes already written are kept."""


class InputError(RunAborted):
    """An input file of the simulation (personas, embeddings, a reference table) is missing or
    cannot be loaded; raised before any episode on disk is touched."""


@dataclass
class Decision:
    """Who must act now, what each of them sees, and what shape their answer has."""

    phase: str
    step: int
    round: int
    observations: dict[AgentId, Any]
    action_schema: type[BaseModel]


@dataclass
class Reply:
    """What an agent hands back: its raw action plus, for LLM agents, the calls it made.

    ``action`` may be a pydantic instance, a plain dict (validated by the runner) or ``None``
    (no usable answer: the market's fallback applies). ``error`` explains a ``None``.
    """

    action: BaseModel | dict | None
    calls: list[dict] = field(default_factory=list)
    error: str | None = None


@dataclass
class Checked:
    """A market's verdict on one validated action: the action to apply, or an error.

    ``notes`` are non-fatal adjustments (a dropped bid, a truncated slogan) that are logged but
    leave the decision valid.
    """

    action: BaseModel | None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    agent_id: AgentId

    def reset(self, rng: np.random.Generator) -> None:
        """Called once at the start of each episode with the agent's own seeded generator."""

    async def act(self, observation: Any, decision: Decision) -> Reply | BaseModel | dict | None:
        """Answer one decision point."""


@runtime_checkable
class Market(Protocol):
    name: str

    def reset(self, seed: int) -> Decision:
        """Start an episode; returns the first decision point."""

    def check(self, agent_id: AgentId, action: BaseModel) -> Checked:
        """Apply the market's rules to a schema-valid action."""

    def fallback(self, agent_id: AgentId, phase: str) -> BaseModel:
        """The documented action applied when an agent's answer is invalid or missing."""

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        """Apply the actions of the current decision point; ``None`` when the episode ends."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """The market-specific log tables of the finished episode (states, trades, ...)."""
