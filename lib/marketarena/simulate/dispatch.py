"""Where a part of a run plays: in this process, in local worker processes (``workers.py``) or as
Ray tasks (``ray.py``), with the run's LLM runtime checked, its progress shown and its spend
ledger settled however the part ends.

Imported only by a run that has units to play: a run whose episodes are all on disk loads none of
the machinery below (the event loop's scheduler, the pool, the progress line, the LLM client).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

from marketarena import progress as progress_line
from marketarena.simulate.collector import heap_frozen
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import (
    charge_leftover_reservations,
    ledger_spent,
    llm_runtime,
    worker_count,
)
from marketarena.simulate.ray import play_on_ray
from marketarena.simulate.schedule import _numbered, play_all
from marketarena.simulate.workers import play_in_workers


def play_part(
    run: RunContext, todo: list[tuple[Any, list[Any]]], live: Path
) -> tuple[int, int, str]:
    """Play the units of ``todo`` ((unit, its episode specs)): in this process or in workers
    (or Ray tasks; ``live``: the run's liveness lock, which local workers hold), with the run's
    LLM runtime, progress line and spend ledger. Returns (episodes played, workers, backend)."""
    ray_address = run.params.execution.ray_address if run.openai_factory is None else None
    backend = "ray" if ray_address is not None else "local"
    if not todo:
        return 0, 0, backend
    llm = None
    if run.llm_aliases:
        # under the run lock: every reservation left in the ledger is a dead run's, charged now
        llm = llm_runtime(run, exclusive_ledger=True)
        if not run.params.llm.cache_only:
            llm.check_keys(set(run.llm_aliases))  # a missing key variable stops before any episode
    workers = (
        1 if run.openai_factory is not None else worker_count(run.params, run.instance, len(todo))
    )
    counters = progress_line.Counters(workers) if run.progress and progress_line.live() else None
    run = replace(
        run,
        unit_lines=run.progress and counters is None,  # where no live line is drawn
        units_to_play=len(todo),
        counters=(counters, 0) if counters is not None else None,
    )
    shown = functools.partial(
        progress_line.display,
        run.instance,
        sum(len(u.episodes) for u, _ in todo),
        counters,
        bool(run.llm_aliases),
        counters is not None,
        _budget(run),
    )
    try:
        with heap_frozen():
            if ray_address is not None or workers > 1:
                if llm is not None:  # the parent only checked the keys; each worker has its own
                    asyncio.run(llm.aclose())
                if ray_address is not None:
                    played, workers = play_on_ray(run.resolved(), todo, shown)
                else:
                    played, workers = play_in_workers(run.resolved(), todo, workers, live, shown)
            else:
                with shown():
                    played = asyncio.run(play_all(replace(run, llm=llm), _numbered(todo)))
    finally:
        if run.llm_aliases and ray_address is None:
            charge_leftover_reservations(run.data_dir, run.instance)
    return played, workers, backend


def _budget(run: RunContext) -> tuple[float, float] | None:
    """(dollars the instance's ledger held when the part started, ``llm.max_cost_usd``) for the
    progress line, when the run has LLM seats and a limit."""
    limit = run.params.llm.max_cost_usd if run.llm_aliases else None
    return None if limit is None else (ledger_spent(run.data_dir, run.instance), limit)
