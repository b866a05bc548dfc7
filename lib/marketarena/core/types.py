"""The shapes every market and agent share (DESIGN.md section 3).

A market is a sequence of *decision points*. At each, a set of agents act simultaneously: the
market hands out one observation per acting agent and names the pydantic model each answer must
validate against (one model for all, or one per agent: buyers and sellers, a principal and its
buyers). The runner (``core.runner``) gathers the answers, validates them, re-asks an agent whose
answer broke a market rule (when the decision allows it), applies the market's fallback to what is
still invalid and feeds the result back through ``Market.step``.

Time in every market's logs: ``step`` is the index of the market's own time unit (a day, a step, a
round of a repeated game, an item of an auction), ``round`` the index of a sub-round inside it
(bidding rounds; 0 where a market has none). Both are 0-based in every table; prompts count from 1.

Agents are asynchronous so that LLM calls of one decision point run concurrently; scripted agents
implement the same protocol and simply return at once.

Importing this module imports neither numpy nor pandas (numpy is named in annotations only; the
helpers that build or read a DataFrame import pandas when called): the LLM layer's errors derive
from :class:`RunAborted`, and ``marketarena.config`` imports them, so a stage that only reads its
params does not pay for pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

AgentId = str
M = TypeVar("M", bound=BaseModel)


class RunAborted(Exception):
    """An error that must stop the whole run, not just replace one answer with the fallback:
    an unreachable endpoint, an exhausted budget, a replay that misses the cache. The runner
    re-raises it; episodes already written are kept."""


class InputError(RunAborted):
    """An input file of the simulation (personas, embeddings, a reference table) is missing or
    cannot be loaded; raised before any episode on disk is touched."""


@dataclass
class Decision:
    """Who must act now, what each of them sees, and what shape their answer has.

    ``action_schema`` is one pydantic model for every acting agent, or a mapping agent -> model.
    ``max_attempts`` > 1 lets the runner re-ask an agent whose schema-valid answer broke a market
    rule (``Market.check``), telling it why, up to that many attempts in all; each attempt is logged
    and the fallback applies after the last one.
    """

    phase: str
    step: int
    round: int
    observations: dict[AgentId, Any]
    action_schema: type[BaseModel] | Mapping[AgentId, type[BaseModel]]
    max_attempts: int = 1

    def schema_for(self, agent_id: AgentId) -> type[BaseModel]:
        schema = self.action_schema
        return schema if isinstance(schema, type) else schema[agent_id]


@dataclass(frozen=True)
class Retry:
    """Why an agent is asked again within one decision point: its previous (schema-valid) answer
    broke a market rule. ``attempt`` is the number of the attempt being asked for (2, 3, ...)."""

    attempt: int
    previous: Any
    error: str


@dataclass
class Reply:
    """What an agent hands back: its raw action plus, for LLM agents, the calls it made.

    ``action`` may be a pydantic instance, a plain dict (validated by the runner) or ``None``
    (no usable answer: the market's fallback applies). ``error`` explains a ``None``, and
    ``failure`` says its kind where the agent knows it (``"rule"``: a harness that read an answer
    breaking a market rule and plays its engine's fallback itself); by default a ``None`` is a
    ``"format"`` failure (the runner's ``decisions.failure``, ``core/runner.py``).
    """

    action: BaseModel | dict | None
    calls: list[dict] = field(default_factory=list)
    error: str | None = None
    failure: Literal["format", "rule"] | None = None


@dataclass
class Checked:
    """A market's verdict on one validated action: the action to apply, or an error.

    ``notes`` are non-fatal adjustments (a dropped bid, a truncated slogan) that are logged but
    leave the decision valid. With an ``error``, ``action`` may name what the market applies for
    that particular break (default: its ``fallback``).
    """

    action: BaseModel | None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    agent_id: AgentId

    def reset(self, rng: np.random.Generator) -> None:
        """Called once at the start of each episode with the agent's own seeded generator."""

    async def act(
        self, observation: Any, decision: Decision, retry: Retry | None = None
    ) -> Reply | BaseModel | dict | None:
        """Answer one decision point (again, with ``retry`` saying why the last answer was
        rejected)."""


@runtime_checkable
class Market(Protocol):
    name: str

    def reset(self, seed: int) -> Decision:
        """Start an episode; returns the first decision point."""

    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        """Judge a schema-valid action by the market's rules. Pure: it may be called several
        times per agent and decision point and must not change the market's state; what
        ``step`` needs from it travels in ``Checked.action``."""

    def fallback(self, agent_id: AgentId, decision: Decision) -> Any:
        """The documented action applied when an agent's answer is invalid or missing (the same
        type ``check`` returns in ``Checked.action``). A market may also define ``absurd(agent_id,
        observation, decision)``: a valid extreme answer (or None), which the contract's absurd
        seat plays (``testing/contract_seats.py``)."""

    def step(self, actions: dict[AgentId, Any]) -> Decision | None:
        """Apply the actions of the current decision point; ``None`` when the episode ends."""

    def tables(self) -> dict[str, "pd.DataFrame | Rows"]:
        """The market-specific log tables of the finished episode (states, trades, ...), each a
        DataFrame or, cheaper for short episodes, :class:`Rows`."""


@dataclass
class Event:
    """Something that happened to a seat mid-episode (``retired``, ``joined``), logged in the
    episode's ``events`` table."""

    step: int
    round: int
    agent_id: AgentId
    event: str
    detail: str = ""


class EventLog:
    """Mixin for markets whose seats come and go: ``self.log_event(...)`` records an event and
    ``retire(agent_id)`` marks a seat as gone for good; the runner checks that a retired seat never
    acts again and writes ``events.parquet``. A market declares every seat it may ever use up
    front (its agents table), including identities that only join later."""

    events: list[Event]
    retired: set[AgentId]

    def start_events(self) -> None:
        self.events, self.retired = [], set()

    def log_event(
        self, step: int, round: int, agent_id: AgentId, event: str, detail: str = ""
    ) -> None:
        self.events.append(Event(step, round, agent_id, event, detail))

    def retire(self, step: int, round: int, agent_id: AgentId, detail: str = "") -> None:
        if agent_id not in self.retired:
            self.retired.add(agent_id)
            self.log_event(step, round, agent_id, "retired", detail)


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of the pydantic model ``cls`` holding ``values`` as they are: for objects a
    market builds thousands of times per episode from values it has already checked (every field
    given, right types). What ``model_construct`` does for complete values, without its per-field
    default and alias lookups (about 8x faster). ``tests/core/test_types.py`` checks the result
    equals the validated model on every pydantic release we install."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


@dataclass(repr=False)
class Rows:
    """A log table as row tuples in ``columns`` order, made a DataFrame only when read.

    A game of a large tournament is short; building its handful of DataFrames cost as much as
    playing it. Written, rows go to Parquet without a frame (``core.logs.write_table``; a shard's
    episodes' rows joined first); a reader of ``EpisodeResult.tables`` gets :meth:`frame`.
    ``dtypes`` are casts applied to the built frame (e.g. ``int64`` for a column an empty table
    would leave ``object``)."""

    columns: list[str]
    rows: list[tuple]
    dtypes: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame, with the casts."""
        import pandas as pd

        df = pd.DataFrame(self.rows, columns=self.columns)
        for column, dtype in self.dtypes.items():
            df[column] = df[column].astype(dtype)
        return df


def as_frame(table: "pd.DataFrame | Rows") -> pd.DataFrame:
    return table.frame() if isinstance(table, Rows) else table


def as_columns(table: "pd.DataFrame | Rows") -> dict[str, list]:
    """A log table's columns as lists, without building a DataFrame from ``Rows``."""
    if not isinstance(table, Rows):  # a DataFrame
        return {column: table[column].tolist() for column in table.columns}
    values = list(zip(*table.rows)) if table.rows else [()] * len(table.columns)
    return {column: list(v) for column, v in zip(table.columns, values)}
