"""Playing units in one process: one after the other, or side by side in one event loop; writing
each unit the moment its last episode ends.

Units (``core.logs``): with ``shard_episodes: null`` each episode is a unit, written the moment it
finishes, so an interruption loses at most the episodes in flight; with ``shard_episodes: n`` a
unit is a shard of up to n episodes (10 with LLM seats), written when its last episode ends, so an
interruption loses at most the shards in flight (LLM answers already given come back from the
response cache).

Episodes side by side: in a run without LLM seats a process plays its units one after the other
(nothing to wait for: an event loop would only add overhead); in an LLM run it plays them side by
side in one event loop (:func:`_play_side_by_side`), the units with LLM seats first
(:func:`_numbered`), ``execution.episodes_in_flight`` episodes at a time (auto: twice its share of
the endpoints' ``max_concurrency``: ``limits.in_flight``), so the endpoint, not the simulation,
sets the pace. The limit on requests in flight is the client's semaphore per endpoint
(``llm/transport.py``): every episode of a process shares it. An episode's logs depend on its
seed and its answers only (answers are keyed by the request and the episode's run index, never by
arrival order), so they are byte-identical whatever ran beside them.

Run information (wall time, LLM cost and usage per model: :func:`usage_by_model`) goes to the
run log, never into the episode's own files.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from marketarena import progress as progress_line
from marketarena.core import logs
from marketarena.core.rules import EpisodeSpec
from marketarena.core.runner import run_episode
from marketarena.core.types import as_columns
from marketarena.simulate.collector import collector_paused
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import in_flight
from marketarena.simulate.planning import package_version

#: a unit still playing this long after its start has its folders made while it waits
#: (``logs.make_room``): its first requests have left by then, and the writer is idle
ROOM_AFTER_S = 0.5

#: a unit to play as a process is handed it: (its index among the units to play, the unit, its
#: episodes' specs); a process needs no plan of its own
Numbered = tuple[int, logs.Unit, list[EpisodeSpec]]
#: an episode as played: (its tables, its meta, its run info), as ``core.logs`` writes them
Played = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def _numbered(todo: Sequence[tuple[logs.Unit, list[EpisodeSpec]]]) -> list[Numbered]:
    """The units to play, numbered: what a process is handed. Units with LLM seats come first,
    each kind in plan order: their episodes wait on the endpoint, so started first they keep it
    busy from the start, and the scripted ones fill the waits later (crash's LLM benchmark, whose
    grid seats the LLM firm in 60 of 96 episodes, reached its 30th request 0.1-0.3 s sooner and
    ended about 0.1 s sooner in three pairs of four). Where a unit plays changes nothing in its
    logs."""
    numbered = [(k, unit, specs) for k, (unit, specs) in enumerate(todo)]
    return sorted(numbered, key=lambda item: not item[1].episodes[0].llm)  # a unit is of one kind


async def play_all(run: RunContext, todo: Iterable[Numbered]) -> int:
    """Play ``todo`` (taken one at a time) in this process with its LLM runtime ``run.llm``,
    closed at the end; while they play, the runtime's totals are copied to this process's
    progress counters (``run.counters``), once more at the end. Returns the episodes played."""
    publishing = (
        asyncio.ensure_future(progress_line.publish(*run.counters, run.llm))
        if run.counters is not None and run.llm is not None
        else None
    )
    try:
        return await _play_units(run, todo)
    finally:
        if publishing is not None:
            publishing.cancel()
            counters, slot = run.counters
            counters.set(slot, progress_line.totals_of(run.llm.client))  # the last frame
        if run.llm is not None:
            await run.llm.aclose()


async def _play_units(run: RunContext, todo: Iterable[Numbered]) -> int:
    """Play ``todo``, writing each unit the moment its last episode ends; returns the episodes
    played. Scripted units play one after the other, synchronously in effect (no episode awaits
    anything); with LLM seats, :func:`_play_side_by_side`."""
    if run.llm is not None:
        return await _play_side_by_side(run, todo, in_flight(run.params, run.instance))
    played = 0
    for k, unit, specs in todo:
        _check_parent(run)
        t0 = time.perf_counter()
        with collector_paused(unit.shard):
            episodes = [
                await _play_one(run, spec, ep.seed) for spec, ep in zip(specs, unit.episodes)
            ]
        _finish_unit(run, k, unit, episodes, time.perf_counter() - t0)
        played += len(unit.episodes)
    return played


async def _play_side_by_side(run: RunContext, todo: Iterable[Numbered], window: int) -> int:
    """Episodes of ``todo``'s units started in its order, at most ``window`` at a time, in one
    event loop: the endpoint's waits of one episode are the others' time to play. The next unit
    is taken from ``todo`` (the run's queue) only once there is room to start it, so that a unit
    never waits in a full worker while another has room. Each episode started runs to its first
    request before the next is started, so requests leave from the first moment rather than
    after the whole window's first steps, and gives way between steps that await nothing
    (``run_episode``'s ``share_loop``, ``core.runner.give_way``). A unit is written
    (atomically, as ever) once its last episode has ended, by one writer thread: writing an
    episode's tables takes 10-30 ms of CPU, during which the event loop would send no request
    (the writer lets it run between its own steps); it is committed once its answers are in the
    response cache (the client's ``store_answers``, stored meanwhile). A unit still playing
    ``ROOM_AFTER_S`` after its start has its folders made by the writer while it waits
    (``logs.make_room``): episodes that end together (BAZAAR's games, 30 rounds each) are
    written one after another at the end of the run, and a file's creation was the costliest
    part of their writes. Units may finish out of
    order; each episode's logs depend on its seed and its answers only, never on what ran beside
    it. The first failure (a ``RunAborted``: endpoint down, budget spent) cancels the episodes in
    flight and is raised; every unit finished before it is on disk (a write under way
    completes). Returns the episodes played."""
    from concurrent.futures import ThreadPoolExecutor

    slots = asyncio.Semaphore(window)
    loop = asyncio.get_running_loop()
    llm = run.llm

    async def episode(spec: EpisodeSpec, seed: int) -> Played:
        try:
            return await _play_one(run, spec, seed)
        finally:
            slots.release()

    async def unit_done(k: int, unit: logs.Unit, episodes: list[asyncio.Task], t0: float) -> int:
        _, playing = await asyncio.wait(episodes, timeout=ROOM_AFTER_S)
        if playing:  # waiting on the endpoint: its folders are made meanwhile (logs.make_room)
            writer.submit(logs.make_room, run.out_dir, unit, run.run_dir)
        played = [await task for task in episodes]
        stored = llm and llm.client.store_answers()  # waited for before the unit is committed
        await loop.run_in_executor(
            writer, _finish_unit, run, k, unit, played, time.perf_counter() - t0, stored
        )
        return len(unit.episodes)

    writer = ThreadPoolExecutor(1, thread_name_prefix="marketarena-writer")
    finishing: list[asyncio.Task] = []
    try:
        async with asyncio.TaskGroup() as group:
            units = iter(todo)
            while True:
                await slots.acquire()  # room first: a unit taken is a unit started
                item = next(units, None)
                if item is None:
                    slots.release()
                    break
                k, unit, specs = item
                _check_parent(run)
                t0, episodes = time.perf_counter(), []
                for i, (spec, ep) in enumerate(zip(specs, unit.episodes)):
                    if i:
                        await slots.acquire()
                    episodes.append(group.create_task(episode(spec, ep.seed)))
                    await asyncio.sleep(0)  # let it play to its first request
                finishing.append(group.create_task(unit_done(k, unit, episodes, t0)))
    except BaseExceptionGroup as failed:  # the first failure, as a one-at-a-time run raises it
        raise _first_error(failed) from None
    finally:
        writer.shutdown(wait=True)
    return sum(task.result() for task in finishing)


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """The first error of a task group that is not a cancellation (itself, if a group)."""
    errors = [e for e in group.exceptions if not isinstance(e, asyncio.CancelledError)]
    first = (errors or list(group.exceptions))[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first


def _check_parent(run: RunContext) -> None:
    """In a local worker: end at once if the run's main process is gone (on Linux the kernel
    has already killed it: ``workers._worker_init``; this check serves elsewhere)."""
    if run.parent_pid is not None and os.getppid() != run.parent_pid:
        os._exit(1)


def _finish_unit(
    run: RunContext,
    k: int,
    unit: logs.Unit,
    played: list[Played],
    wall: float,
    before_commit: Any = None,
) -> None:
    """Write unit ``k`` (of the ``run.units_to_play``) whose episodes have all been ``played``
    in ``wall`` seconds (``before_commit``: called before it is renamed into place), and say so:
    on the progress counters, or a plain line (``run.unit_lines``)."""
    if unit.shard:
        logs.write_shard(
            run.out_dir,
            unit,
            played,
            {"wall_time_s": round(wall, 3)},
            run.run_dir,
            before_commit=before_commit,
        )
    else:
        logs.write_episode(
            run.out_dir,
            unit.episodes[0],
            *played[0],
            run_dir=run.run_dir,
            before_commit=before_commit,
        )
    if run.counters is not None:
        counters, slot = run.counters
        counters.add(slot, progress_line.EPISODES, len(unit.episodes))
    if run.unit_lines:
        usage = f"; LLM {run.llm.progress()}" if run.llm is not None else ""
        what = (
            f"shard {unit.name} ({len(unit.episodes)} episodes)"
            if unit.shard
            else f"episode {unit.name}"
        )
        print(
            f"[{run.instance}] {what} done in {wall:.2f}s ({k + 1}/{run.units_to_play} to "
            f"play){usage}",
            file=sys.stderr,
            flush=True,
        )


async def _play_one(run: RunContext, spec: EpisodeSpec, seed: int) -> Played:
    """One episode: (its tables, its meta, its run info), as ``logs`` writes them (the run
    tables and run info to the run log)."""
    t0 = time.perf_counter()
    market_obj, agents, agents_table = run.rules.build_episode(
        run.market, run.resources, spec, llm=run.llm
    )
    result = await run_episode(market_obj, agents, seed, share_loop=run.llm is not None)
    tables = {"agents": agents_table, **result.raw}  # Rows stay rows until written
    meta = {
        "market": run.market.market,
        "instance": run.instance,
        "lineup": agents_table["name"].tolist(),
        "setting": dict(spec.setting),
        "package_version": package_version(),
    }
    calls = result.raw["llm_calls"]
    usage = usage_by_model(calls, result.raw["llm_costs"]) if len(calls) else {}
    run_info = {
        "wall_time_s": round(time.perf_counter() - t0, 3),
        "cost_usd": math.fsum(u["cost_usd"] for u in usage.values()),
        "llm": usage,
    }
    return tables, meta, run_info


def usage_by_model(llm_calls: Any, llm_costs: Any) -> dict[str, dict[str, float | int]]:
    """An episode's LLM usage summed per model alias (its run log's ``llm``), in the fields
    of the client's run totals (``UsageTotals``). From the tables as produced (``Rows`` or
    DataFrames, the same calls in the same order): two DataFrames per episode, built only for
    these sums, cost more than the sums."""
    calls, costs = as_columns(llm_calls), as_columns(llm_costs)
    out: dict[str, dict[str, float | int]] = {}
    usd: dict[str, list[float]] = {}
    for i, model in enumerate(calls["model"]):
        key = str(model)
        totals = out.setdefault(
            key,
            {
                "calls": 0,
                "cached_calls": 0,
                "invalid_calls": 0,
                "attempts": 0,
                "retries": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cached_prompt_tokens": 0,
                "cost_usd": 0.0,
            },
        )
        totals["calls"] += 1
        totals["cached_calls"] += int(bool(costs["cached"][i]))
        totals["invalid_calls"] += int(not bool(calls["valid"][i]))
        totals["attempts"] += int(calls["attempts"][i])
        totals["retries"] += int(costs["retries"][i])
        totals["prompt_tokens"] += int(calls["prompt_tokens"][i])
        totals["completion_tokens"] += int(calls["completion_tokens"][i])
        totals["cached_prompt_tokens"] += int(calls["cached_prompt_tokens"][i] or 0)
        usd.setdefault(key, []).append(float(costs["cost_usd"][i]))
    for key, amounts in usd.items():
        out[key]["cost_usd"] = math.fsum(amounts)
    return dict(sorted(out.items()))
