"""The run context: what the functions of a simulate run read, resolved once.

:meth:`RunContext.of` looks the instance's rules and params up once
(``core.registry.rules_for``) and fixes the run's folders; every function of this package takes
the context in place of the instance name, params, rules, folders and flags it used to be handed
one by one. A process that plays episodes (the main one, each worker, each Ray task) adds what it
alone holds with :func:`dataclasses.replace`: the market's loaded inputs, its LLM runtime, its
progress counters, its parent's pid.

Crossing into a worker (pickled: a process pool's call, a Ray task) a context keeps its run's
fields and drops what belongs to one process (inputs, LLM runtime, counters, the tests' in-process
endpoint); the receiving process resolves the rules again (:meth:`RunContext.__setstate__`), so
it plays with its own market's rules, not a copy of the sender's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from marketarena.core import run_logs
from marketarena.core.registry import market_kind, register, registered, rules_for

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.agents.llm_agent import LLMRuntime
    from marketarena.config import Params
    from marketarena.core.params import MarketParams
    from marketarena.core.rules import MarketRules
    from marketarena.progress import Counters

#: the fields a context keeps when it crosses into another process (the rest are that process's)
SENT = (
    "instance",
    "params",
    "data_dir",
    "out_dir",
    "run_dir",
    "progress",
    "unit_lines",
    "units_to_play",
)


@dataclass(frozen=True)
class RunContext:
    """One simulate run of one instance.

    ``rules`` and ``market`` are ``rules_for(params, instance)``; ``out_dir``: the episodes
    folder, ``run_dir``: its run log (``core.logs``); ``progress``: whether the run says anything;
    ``openai_factory``: a fake endpoint in this process (tests), which keeps the run in one process.

    Set by the part of the run that plays (``dispatch.play_part``) and by each worker:
    ``unit_lines``: a plain line per unit finished (where no live line is drawn);
    ``units_to_play``: the units of this part (a line's "k/n"); ``resources``: the market's loaded
    inputs; ``llm``: this process's LLM runtime; ``counters``: where it counts its progress
    (``progress.Counters``, its slot) when a live line is drawn; ``parent_pid``: in a local worker,
    the run's main process (the worker ends if it is gone)."""

    instance: str
    params: Params
    rules: MarketRules
    market: MarketParams
    data_dir: Path
    out_dir: Path
    run_dir: Path
    progress: bool = True
    openai_factory: Callable[..., Any] | None = None
    unit_lines: bool = False
    units_to_play: int = 0
    resources: Any = None
    llm: LLMRuntime | None = None
    counters: tuple[Counters, int] | None = None
    parent_pid: int | None = None

    @classmethod
    def of(
        cls,
        instance: str,
        params: Params,
        data_dir: Path | str = "data",
        out_dir: Path | str | None = None,
        run_dir: Path | str | None = None,
        *,
        progress: bool = True,
        openai_factory: Callable[..., Any] | None = None,
    ) -> RunContext:
        """The context of a run of ``instance`` with ``params``: episodes in ``out_dir`` (default
        ``<data_dir>/episodes/<instance>``), run log in ``run_dir`` (default
        ``core.run_logs.run_dir_for``). ``data_dir`` defaults to ``data`` below the working folder,
        the project's own, for the callers that read no input (``check_seating``, ``build``)."""
        rules, market = rules_for(params, instance)
        data_dir = Path(data_dir)
        out_dir = Path(out_dir or data_dir / "episodes" / instance)
        return cls(
            instance,
            params,
            rules,
            market,
            data_dir,
            out_dir,
            Path(run_dir or run_logs.run_dir_for(out_dir)),
            progress,
            openai_factory,
        )

    @property
    def uses(self) -> tuple[str, ...]:
        """The global params sections the market's episodes read (``MarketKind.uses``)."""
        return market_kind(self.market.market).uses

    @cached_property
    def llm_aliases(self) -> frozenset[str]:
        """The model aliases of the instance's LLM seats (empty: a scripted run)."""
        return frozenset(e.model for e in self.market.roster if e.kind == "llm")

    def with_params(self, params: Params) -> RunContext:
        """The same run with other params of the same instance (a worker's share of the
        endpoints: ``limits.worker_share``)."""
        return replace(self, params=params, market=params.markets[self.instance])

    def resolved(self) -> RunContext:
        """The same run with absolute folders: what workers, which may run elsewhere, are sent."""
        return replace(
            self,
            data_dir=self.data_dir.resolve(),
            out_dir=self.out_dir.resolve(),
            run_dir=self.run_dir.resolve(),
        )

    def __getstate__(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in SENT}
        state["registered"] = registered(self.market.market)  # a market from outside the package
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        declared = state.pop("registered", None)
        if declared is not None and registered(declared.kind) is None:
            register(declared)
        rules, market = rules_for(state["params"], state["instance"])
        values = {**state, "rules": rules, "market": market}
        for field in fields(self):  # what belongs to one process starts at its default here
            object.__setattr__(self, field.name, values.get(field.name, field.default))
