"""Worker processes on this machine: how they start, what each holds, how the run ends them.

Workers (``execution.workers``, default one per core; ``limits.worker_count``): worker processes
(:func:`start_method`: ``fork`` on Linux, so a worker starts with everything the main process has
imported, else ``spawn``) pull the units to play, with their episode specs, from one queue; each
loads the inputs itself, plays its units in one event loop (one LLM client per worker:
``schedule``) and writes each unit the moment it finishes, so logs are byte-identical to a
one-worker run. With an in-process fake endpoint (tests' ``openai_factory``) the run stays in one
process.

Workers end with their run, however it ends (:func:`_worker_init`): the kernel kills a worker when
the main process dies (``PR_SET_PDEATHSIG`` set by ``core/lifetime.py``, even on kill -9), a worker
also checks its parent between units, Ctrl-C or a bug in the main process kills the pool, and a
worker's death (the OOM killer) stops the others and ends the run with one line. Each worker holds
the run's liveness lock (``locks.episodes_lock``) for as long as it lives.

:func:`_worker` is also what a Ray task runs (``ray.py``), there without a start of its own.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import marketarena
from marketarena import progress as progress_line
from marketarena.core.lifetime import die_with_parent, stop_pool
from marketarena.core.types import RunAborted
from marketarena.simulate.collector import heap_frozen
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import (
    even_window,
    llm_runtime,
    shared_slots,
    worker_share,
)
from marketarena.simulate.locks import hold_live_lock
from marketarena.simulate.planning import read_inputs
from marketarena.simulate.schedule import Numbered, _numbered, play_all


def start_method() -> str:
    """How local workers start: ``fork`` on Linux when the main process runs no other thread of
    Python's and has not loaded torch (whose OpenMP threads a forked child may deadlock on: the
    embedding model's markets spawn), else ``spawn``. A forked worker starts with every module and
    object the main process holds, in a few hundredths of a second; a spawned one re-imports
    pandas, pyarrow, pydantic and the market first, 0.6-0.7 s (measured: the first request of
    crash's LLM benchmark left at 0.17 s instead of 0.72 s). The workers are started before any
    thread of the run (the progress line's, the units queue's), so a run from the command line
    forks; a caller running threads of its own (a notebook's kernel) gets ``spawn``. A forked
    worker inherits the run's lock files and dies with the main process (:func:`_worker_init`),
    so they never outlive the run."""
    if (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and "torch" not in sys.modules
    ):
        return "fork"
    return "spawn"


@dataclass(frozen=True)
class WorkerStart:
    """What a local worker is handed as its process starts (:func:`_worker_init`): shared memory,
    semaphores and queues cross into a process only then. ``live_lock``: the run's liveness lock,
    open and held (shared) until the process ends; ``counters_array``: the run's progress
    counters (``progress.Counters``' shared memory; ``None`` when no line is drawn); ``units``:
    the run's queue of units to play; ``slots``: the endpoints' slots every worker of the run
    shares (``limits.shared_slots``)."""

    parent_pid: int
    live_lock: Any
    counters_array: Any
    units: Any
    slots: dict[str | None, tuple[Any, ...]] | None


#: in a local worker: what it was handed as it started (None in the main process and in Ray tasks)
_started: WorkerStart | None = None


def _worker_init(
    parent_pid: int,
    live: str,
    counters_array: Any = None,
    units: Any = None,
    slots: dict[str | None, tuple[Any, ...]] | None = None,
) -> None:
    """A worker's start: die with the run's main process (``core/lifetime.py``: on Linux the kernel
    sends SIGKILL when it dies, however it dies; elsewhere ``schedule._check_parent`` between
    units) and hold the run's liveness lock (shared) for as long as the worker lives."""
    global _started
    die_with_parent(parent_pid)  # core/lifetime.py: also exits if the parent is already gone
    live_lock = hold_live_lock(Path(live))
    if live_lock is None:  # a new run holds it exclusively: this run is over
        os._exit(1)
    _started = WorkerStart(parent_pid, live_lock, counters_array, units, slots)


def _worker(run: RunContext, share: list[Numbered] | None = None, slot: int = 0) -> int:
    """One worker process (or Ray task): play the units ``share`` holds or (``share`` None) the
    ones it pulls from the run's queue, counting its progress in ``slot`` of the run's counters
    (when the main process draws a line). Returns the episodes played."""
    marketarena.check_numpy_pinned()  # a Ray worker's numpy may have been loaded before us
    started = _started
    if started is not None:
        run = replace(run, parent_pid=started.parent_pid)
        if started.counters_array is not None:
            slots = len(started.counters_array) // len(progress_line.FIELDS)
            run = replace(
                run, counters=(progress_line.Counters(slots, started.counters_array), slot)
            )
    _, resources = read_inputs(run)
    llm = None
    if run.llm_aliases:
        shared = started and started.slots
        llm = llm_runtime(run, shared=shared and {k: (*v, slot) for k, v in shared.items()})
    run = replace(run, resources=resources, llm=llm)
    try:
        with heap_frozen():
            return asyncio.run(play_all(run, _pulled(started.units) if share is None else share))
    except RunAborted as exc:  # crosses the process boundary as a plain RunAborted with its text
        raise RunAborted(str(exc)) from None  # alone, as one worker's run says it


def _pulled(units: Any) -> Iterator[Numbered]:
    """The units of the run's queue ``units``, one at a time, as this worker has room for them,
    until its end mark."""
    while (item := units.get()) is not None:
        yield item


def _drain(units: Any) -> None:
    """Take every unit still queued (the workers then find only their end marks)."""
    import queue

    while True:
        try:
            item = units.get(timeout=0.1)
        except queue.Empty:
            return
        if item is None:  # an end mark: put back for the worker it belongs to
            units.put(None)
            return


def play_in_workers(
    run: RunContext,
    todo: list[tuple[Any, list[Any]]],
    workers: int,
    live: Path,
    shown: Callable[[], AbstractContextManager[None]],
) -> tuple[int, int]:
    """The units of ``todo`` played by ``workers`` worker processes, each pulling the next unit
    from one queue when it has room for it (units differ in work: crash's episodes with an LLM firm
    ask from 3 to 30 times, so a fixed deal left one worker with 946 requests and the other with
    544, idle for the last 40% of the run), at most its even share of them at once
    (``limits.even_window``). The progress line (``shown``) is drawn once they are
    started (:func:`start_method`). They end with the run however it ends: each holds the run's
    liveness lock ``live`` and dies with the main process (:func:`_worker_init`); on an interrupt
    or a worker's death the others are stopped at once; after a worker's ``RunAborted`` the queue
    is emptied, the others finish the units they hold, and the first error is raised. Returns
    (episodes played, workers)."""
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    episodes = sum(len(unit.episodes) for unit, _ in todo)
    share = worker_share(run.params, run.instance, workers)
    workers_run = run.with_params(even_window(share, run.instance, workers, episodes))
    counters = run.counters[0] if run.counters is not None else None
    played, error = 0, None
    context = multiprocessing.get_context(start_method())
    slots = shared_slots(run.params, run.instance, context, workers)
    units = context.Queue()
    pool = ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_worker_init,
        initargs=(os.getpid(), str(live), counters and counters.array, units, slots),
    )
    try:
        # the first submit starts every worker (forked ones before the pool's own thread)
        pending = {pool.submit(_worker, workers_run, None, w) for w in range(workers)}
        for item in _numbered(todo):  # the queue's feeder thread starts here, after the fork
            units.put(item)
        for _ in range(workers):
            units.put(None)  # one end mark per worker
        with shown():
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    try:
                        played += future.result()
                    except RunAborted as exc:  # the others finish the units they hold
                        error = error or exc
                        _drain(units)
    except BrokenProcessPool:
        stop_pool(pool)
        raise RunAborted(
            "a worker process died (killed from outside: the out-of-memory killer, "
            "kill -9, ...); every finished unit is kept; run again to resume, with "
            "fewer execution.workers if memory is short"
        ) from None
    except BaseException:  # Ctrl-C, a bug: no worker may outlive the run
        stop_pool(pool)
        raise
    finally:
        units.cancel_join_thread()  # nothing left to deliver: exit without waiting on the pipe
        units.close()
    pool.shutdown(wait=True)
    if error is not None:
        raise error
    return played, workers
