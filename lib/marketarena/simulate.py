"""Play a market instance's planned episodes into ``data/episodes/<instance>/``, resuming.

Planning (``MarketPlugin.plan``): each episode has an id, a run index, a seed and its seats. By
default episode ``r`` is ``ep-<r:04d>`` with seed ``SeedSequence([seed, r]).generate_state(1)[0]``,
so adding runs never changes earlier ones.

Fingerprint: a finished episode is reused only if it would be reproduced exactly. Its fingerprint
hashes the instance's params (all but ``runs``, ``roster`` and the post-processing keys: see
``MarketParams.episode_params``), the global sections the market ``uses``, the simulator's code, the
content of every input file, and, per episode, its id, run, seed, the roster entries it seats and
the resolved model specs behind its LLM seats (everything that changes an answer or its logged
cost: model name, endpoint, sampling, schema mode, re-asks, prices; not timeouts, concurrency or
retries). So raising ``runs`` only adds episodes, editing a roster entry replays only the episodes
it sits in, and changing the model behind an alias replays that alias's episodes.

Order of work: every input file is read whole and the market's resources are loaded first (a
truncated embeddings file fails there), the plan is checked (``core/seating.py``: every roster entry
seated, in roles it can play), and only then is the episodes folder touched, under the locks of
:func:`episodes_lock` that keep a second concurrent run of the same instance out.

Units (``core.logs``): with ``shard_episodes: null`` each episode is a unit, written the moment it
finishes, so an interruption loses at most the episodes in flight; with ``shard_episodes: n`` a
unit is a shard of up to n episodes (10 with LLM seats), written when its last episode ends, so an
interruption loses at most the shards in flight (LLM answers already given come back from the
response cache).

Episodes side by side: in a run without LLM seats a worker plays its units one after the other
(nothing to wait for: an event loop would only add overhead); in an LLM run it plays them side by
side in one event loop (:func:`_play_side_by_side`), the units with LLM seats first
(:func:`_numbered`), ``execution.episodes_in_flight`` episodes at a time (auto: twice its share of
the endpoints' ``max_concurrency``), so the endpoint, not the simulation, sets the pace. The limit
on requests in flight is the client's semaphore per endpoint (``llm/transport.py``): every episode
of a worker shares it. An episode's logs depend on its seed
and its answers only (answers are keyed by the request and the episode's run index, never by
arrival order), so they are byte-identical whatever ran beside them.

Workers (``execution.workers``, default one per core): worker processes (:func:`start_method`:
``fork`` on Linux, so a worker starts with everything the main process has imported, else
``spawn``) pull the units to play, with their episode specs, from one queue; each loads the
inputs itself, plays its units in one event loop (one LLM client per worker) and writes each unit
the moment it finishes, so logs are byte-identical to a one-worker run. Never more workers than help
(:func:`worker_count`): one per unit to play, one per core (workers follow the CPU work; waiting
on an endpoint is the event loop's job), and for LLM instances the run as a whole keeps each
endpoint's ``max_concurrency`` (no more workers than the smallest of them, each worker gets its
share); the spend ledger (``llm/budget.py``) is a locked file all workers charge, so
``llm.max_cost_usd`` holds for the run. With an in-process fake endpoint (tests'
``openai_factory``) the run stays in one process.

Workers end with their run, however it ends (:func:`episodes_lock`, :func:`_worker_init`): the
kernel kills a worker when the main process dies (``PR_SET_PDEATHSIG`` set by ``core/lifetime.py``,
even on kill -9), a worker also checks its parent between units, Ctrl-C or a bug in the main
process kills the pool, and a worker's death (the OOM killer) stops the others and ends the run
with one line. Every process of a run holds the instance's liveness lock, so a resume started
while anything of an earlier run lives refuses, naming the pids.

Stopping rule (``markets.<instance>.stop``; off by default, and then nothing here changes): the
LLM players' games (double_auction's entrants, english_auction's challengers, elsewhere the
episodes that seat an LLM player: ``MarketPlugin.stop_players``) are held back; every other unit
(their field) is played first,
then the players' games in rounds of ``batch`` each, looking at every player after each round
and stopping it once its rank interval among the field is as narrow as the rule asks, or at the
cap (``stopping.Batches``). A resumed run replays the looks from the logs and takes the same
decisions; units past a player's stop left by an earlier run are removed at the end. The
episodes' ids, seeds and logs are those of the plan whatever the rule decides.

Run information (wall time, LLM cost, latency, retries, cache hits) is not part of the episode
logs: it goes to the run log (``run_dir``, default ``data/run_logs/<instance>/``; ``core.logs``
documents its files), which DVC does not track, so re-simulating identical episodes changes no
hash.

Ray (``execution.ray_address``): the same workers run as Ray tasks on an existing cluster (one CPU
each; ``workers: auto`` = the cluster's CPUs), writing the same logs into the same folder, which
must therefore be on a file system every node shares. Ray is an extra: ``marketarena[ray]``.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import gc
import itertools
import json
import math
import os
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

import marketarena
from marketarena import progress as progress_line
from marketarena.config import Params, available_cores
from marketarena.core import logs
from marketarena.core.lifetime import die_with_parent, stop_pool
from marketarena.core.plugin import EpisodeSpec, MarketPlugin
from marketarena.core.registry import plugin_for
from marketarena.core.runner import run_episode
from marketarena.core.types import InputError, RunAborted, as_columns

PACKAGE_ROOT = Path(__file__).resolve().parent
#: the code every episode depends on besides its market's folder: change it and episodes replay
SIMULATOR_CODE = ("core", "agents", "llm", "config.py", "embeddings.py", "personas.py",
                  "simulate.py", "importing.py", "markets/_shared")
#: model-spec fields that cannot change an answer or what is logged about it
NON_ANSWER_FIELDS = frozenset({"alias", "timeout_s", "max_concurrency", "max_retries", "api_key_env"})


@functools.cache  # a metadata lookup: once per process, not once per episode
def package_version() -> str:
    try:
        return version("marketarena")
    except PackageNotFoundError:
        return "0+unknown"


def code_paths(kind: str) -> list[Path]:
    paths = [PACKAGE_ROOT / p for p in SIMULATOR_CODE] + [PACKAGE_ROOT / "markets" / kind]
    return [p for p in paths if p.exists()]


def code_hash(kind: str) -> str:
    return logs.hash_files(code_paths(kind))


def shared_sections(plugin: MarketPlugin, params: Params) -> dict:
    """The global params (dotted keys of ``plugin.uses``) as JSON, for the fingerprint."""
    out = {}
    for key in plugin.uses:
        value = params
        for part in key.split("."):
            value = getattr(value, part)
        out[key] = value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value
    return out


def model_fingerprint(params: Params, alias: str) -> dict:
    spec = params.models[alias].model_dump(mode="json")
    return {k: v for k, v in spec.items() if k not in NON_ANSWER_FIELDS}


def plan(instance: str, params: Params, inputs: list[Path]) -> list[tuple[EpisodeSpec, logs.PlannedEpisode]]:
    """Every planned episode of ``instance`` with its fingerprint."""
    plugin, mp = plugin_for(params, instance)
    common = logs.sha256_text(logs.canonical_json({
        "market": mp.market, "params": mp.episode_params(),
        "shared": shared_sections(plugin, params), "code": code_hash(mp.market),
        "inputs": logs.hash_files(inputs) if inputs else "",
    }))
    planned = []
    for spec in plugin.plan(mp):
        seats = [{"agent_id": s.agent_id, "role": s.role, "actor": s.actor_id,
                  "harness": plugin.harness_of(s.entry),
                  "entry": s.entry.model_dump(mode="json", exclude={"player"})} for s in spec.seats]
        aliases = sorted({s.entry.model for s in spec.seats if s.entry.kind == "llm"})
        fp = logs.sha256_text(logs.canonical_json({
            "common": common, "episode": spec.episode_id, "run": spec.run, "seed": spec.seed,
            "seats": seats, "setting": [list(kv) for kv in spec.setting],
            "models": {a: model_fingerprint(params, a) for a in aliases}}))
        planned.append((spec, logs.PlannedEpisode(spec.episode_id, spec.run, spec.seed, fp,
                                                  llm=bool(aliases))))
    return planned


def check_seating(instance: str, params: Params, specs: list[EpisodeSpec] | None = None,
                  source: str = ""):
    """Every roster entry seated, in roles it can play (``core/seating.py``), or ``ParamsError``
    naming the key (after ``source``, the params file, when given). ``specs``: the planned episodes
    when at hand (``simulate``), else the seating is computed from the plan
    (``seating.of_plan``). Returns the :class:`~marketarena.core.seating.Seating`."""
    from marketarena.agents.harnesses import harness_class
    from marketarena.config import ParamsError
    from marketarena.core import seating

    plugin, mp = plugin_for(params, instance)
    try:
        found = seating.of_plan(plugin, mp) if specs is None else seating.seating(mp, specs)
        return seating.check(plugin, mp, found, lambda name: harness_class(name).roles)
    except ValueError as exc:
        raise ParamsError(f"{source + ': ' if source else ''}markets.{instance}.{exc}") from None


def build(instance: str, params: Params, run: int = 0, resources=None, llm=None):
    """Episode ``run`` of ``instance`` built exactly as :func:`simulate` builds it: (market,
    agents, agents table, its ``EpisodeSpec``). ``resources``: what ``load_resources`` returns
    (tests and ``marketarena play`` pass their own)."""
    plugin, mp = plugin_for(params, instance)
    spec = plugin.episode(mp, run)
    market, agents, table = plugin.build_episode(mp, resources, spec, llm=llm)
    return market, agents, table, spec


def spend_ledger_path(data_dir: Path, instance: str) -> Path:
    """Where an instance's LLM spend is summed over every run (``llm.max_cost_usd`` caps it)."""
    return Path(data_dir) / "llm_spend" / f"{instance}.jsonl"


def llm_aliases(params: Params, instance: str) -> set[str]:
    return {e.model for e in params.markets[instance].roster if e.kind == "llm"}


def check_input(path: Path) -> None:
    """Read an input file whole, so a truncated or corrupt one fails here (Parquet, JSON)."""
    if path.suffix == ".parquet":
        pq.read_table(path)
    elif path.suffix == ".json":
        json.loads(path.read_text(encoding="utf-8"))
    else:
        path.read_bytes()


def load_inputs(instance: str, params: Params, data_dir: Path):
    """Check and load what the instance's episodes read; ``InputError`` before anything is touched."""
    plugin, mp = plugin_for(params, instance)
    inputs = plugin.input_files(mp, data_dir)
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise InputError(f"{instance}: missing input files {missing}; run the stages that write "
                         "them first (dvc repro)")
    shared = {key.split(".")[0]: getattr(params, key.split(".")[0]) for key in plugin.uses}
    try:
        for path in inputs:
            check_input(path)
        resources = plugin.load_resources(mp, data_dir, shared)
    except Exception as exc:
        raise InputError(f"{instance}: cannot load its input files "
                         f"({', '.join(map(str, inputs)) or 'none'}): {type(exc).__name__}: {exc}; "
                         "no episode was touched") from exc
    return inputs, resources


def lock_holders(path: Path) -> list[int]:
    """Pids holding a ``flock`` on ``path`` (from ``/proc/locks``; empty where unavailable)."""
    try:
        inode = path.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        parts = line.split()
        if "FLOCK" in parts and len(parts) >= 6:
            i = parts.index("FLOCK")
            if parts[i + 4].rsplit(":", 1)[-1] == str(inode) and parts[i + 3].isdigit():
                pids.append(int(parts[i + 3]))
    return sorted(set(pids))


def _pids(path: Path) -> str:
    pids = lock_holders(path)
    return f" (pid {', '.join(map(str, pids))})" if pids else ""


@contextmanager
def episodes_lock(out_dir: Path):
    """The locks of a run of one instance (files beside its episodes folder):

    - ``.<instance>.lock``, held exclusively by the run's main process: a second run fails fast;
    - ``.<instance>.live``, held shared by *every* process of the run (the main one and each
      worker, :func:`_worker_init`). A new run must get it exclusively, so a resume started while
      anything of an earlier run still lives (a worker whose parent was killed) refuses, naming
      the pids, instead of writing beside it.

    Yields the path of the liveness lock, which workers take."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    path = out_dir.parent / f".{out_dir.name}.lock"
    live = out_dir.parent / f".{out_dir.name}.live"
    with open(path, "a+") as fh, open(live, "a+") as lh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunAborted(f"{out_dir} is in use by another simulate run{_pids(path)} (lock "
                             f"{path}); wait for it to finish") from None
        try:
            try:
                fcntl.flock(lh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunAborted(f"{out_dir}: processes of an earlier simulate run are still alive"
                                 f"{_pids(live)} (they hold {live}); wait for them to end or stop "
                                 "them (kill <pid>), then run again") from None
            fcntl.flock(lh, fcntl.LOCK_SH)  # from now on shared with this run's workers
            yield live
        finally:
            fcntl.flock(lh, fcntl.LOCK_UN)
            fcntl.flock(fh, fcntl.LOCK_UN)


def simulate(instance: str, params: Params, data_dir: Path, out_dir: Path | None = None,
             progress: bool = True, openai_factory=None, run_dir: Path | None = None) -> dict:
    """Run every planned episode of ``instance`` not already finished; returns a small summary.

    With LLM seats, one :class:`~marketarena.agents.llm_agent.LLMRuntime` serves the whole run
    (``openai_factory`` plugs in a fake endpoint for tests). A :class:`RunAborted` (endpoint
    unreachable, budget spent, replay cache miss) ends the run after closing the client; every
    episode finished before it is on disk and the next run resumes from there.

    ``run_dir``: where the run log goes; by default ``data_dir/run_logs/<instance>`` for
    episodes in ``data_dir/episodes/<instance>``, else ``<out_dir>.runs`` beside them
    (``core.logs.run_dir_for``).
    """
    marketarena.check_numpy_pinned()  # the same bytes on every machine (``marketarena``)
    data_dir = Path(data_dir)
    out_dir = Path(out_dir or data_dir / "episodes" / instance)
    run_dir = Path(run_dir or logs.run_dir_for(out_dir))
    inputs, resources = load_inputs(instance, params, data_dir)
    planned = plan(instance, params, inputs)
    check_seating(instance, params, [spec for spec, _ in planned])  # before any episode
    units = logs.plan_units([p for _, p in planned], params.markets[instance].shard_episodes)
    with episodes_lock(out_dir) as live:
        specs = {p.episode_id: spec for spec, p in planned}
        todo = [(u, [specs[e.episode_id] for e in u.episodes])
                for u in logs.prepare_units(out_dir, units)]
        logs.prune_run_logs(run_dir, {p.name for p in out_dir.iterdir() if p.is_dir()})
        to_play = sum(len(u.episodes) for u, _ in todo)
        summary = {"market": instance, "planned": len(planned), "skipped": len(planned) - to_play,
                   "played": 0, "wall_time_s": 0.0}
        mp = params.markets[instance]
        stop = None
        if mp.stop is not None:
            from marketarena.stopping import Batches

            stop = Batches(plugin_for(params, instance)[0], mp, units, out_dir, data_dir)
        if not todo and stop is None:
            return summary
        aliases = llm_aliases(params, instance)
        limit = params.llm.max_cost_usd if aliases else None
        started = time.perf_counter()
        parts = [todo] if stop is None else itertools.chain([stop.first(todo)], stop.rounds(todo))
        summary["workers"] = 0
        for part in parts:  # with a stopping rule: the field, then round after round of batches
            played, workers, backend = _play_part(instance, params, data_dir, resources, out_dir,
                                                  run_dir, live, part, progress, openai_factory)
            summary["played"] += played
            summary["workers"] = max(summary["workers"], workers)
        summary["backend"] = backend
        summary["wall_time_s"] = round(time.perf_counter() - started, 3)
        if stop is not None:
            summary["stopped"] = dict(stop.stopped)
            summary["stop_lines"] = stop.lines()
            summary["pruned"] = stop.prune()
            logs.prune_run_logs(run_dir, {p.name for p in out_dir.iterdir() if p.is_dir()})
        if aliases:
            summary["llm"] = progress_line.run_totals(run_dir, {u.name for u, _ in todo})
            if limit is not None:
                summary["budget"] = (ledger_spent(data_dir, instance), limit)
        if progress:
            print("\n".join(progress_line.summary_lines(summary)), file=sys.stderr, flush=True)
        return summary


def _play_part(instance, params, data_dir, resources, out_dir, run_dir, live, todo, progress,
               openai_factory) -> tuple[int, int, str]:
    """Play the units of ``todo`` ((unit, its episode specs)): in this process or in workers
    (or Ray tasks), with the run's LLM runtime, progress line and spend ledger. Returns
    (episodes played, workers, backend)."""
    ray_address = params.execution.ray_address if openai_factory is None else None
    backend = "ray" if ray_address is not None else "local"
    if not todo:
        return 0, 0, backend
    llm = None
    aliases = llm_aliases(params, instance)
    if aliases:
        from marketarena.agents.llm_agent import LLMRuntime

        llm = LLMRuntime(params, openai_factory=openai_factory,  # under the run lock: every
                         ledger_path=spend_ledger_path(data_dir, instance),  # reservation
                         exclusive_ledger=True,  # left is a dead run's, charged now
                         slot_sizes=endpoint_limits(params, instance))
        if not params.llm.cache_only:
            llm.check_keys(aliases)  # a missing key variable stops before any episode
    to_play = sum(len(u.episodes) for u, _ in todo)
    summary = {"played": 0}
    workers = 1 if openai_factory is not None else worker_count(params, instance, len(todo))
    counters = progress_line.Counters(workers) if progress and progress_line.live() else None
    lines = progress and counters is None  # a plain line per unit where no live line is drawn
    limit = params.llm.max_cost_usd if aliases else None
    budget = None if limit is None else (ledger_spent(data_dir, instance), limit)
    shown = functools.partial(progress_line.display, instance, to_play, counters,
                              bool(aliases), counters is not None, budget)
    try:
        with heap_frozen():
            if ray_address is not None or workers > 1:
                if llm is not None:  # the parent only checked the keys; each worker has its own
                    asyncio.run(llm.aclose())
                play = _play_on_ray if ray_address is not None else _play_in_workers
                summary["played"], workers = play(instance, params, data_dir.resolve(),
                                                  (out_dir.resolve(), run_dir.resolve()),
                                                  len(todo), todo, lines, workers, live,
                                                  counters, shown)
            else:
                _set_counters(counters, 0)
                try:
                    with shown():
                        asyncio.run(_play_all(instance, params, resources, (out_dir, run_dir),
                                              len(todo), _numbered(todo), summary, lines, llm))
                finally:
                    _set_counters(None, 0)
    finally:
        if aliases and ray_address is None:
            # every process of the run has ended (workers are joined or killed): a reservation
            # still in the ledger is a request that may have been served (an episode cancelled
            # mid-call when another one stopped the run), charged its bound now, as the next
            # run would charge it
            from marketarena.llm.budget import SpendLedger

            SpendLedger(spend_ledger_path(data_dir, instance), exclusive=True)
    return summary["played"], workers, backend


def ledger_spent(data_dir: Path, instance: str) -> float:
    """Dollars the instance's spend ledger holds (every run of it so far)."""
    from marketarena.llm.budget import read_ledger

    return float(read_ledger(spend_ledger_path(data_dir, instance)).get("spent_usd", 0.0))


def worker_count(params: Params, instance: str, units: int, cores: int | None = None) -> int:
    """Worker processes for ``units`` units to play (episodes, or shards): ``execution.workers``
    (``auto``: ``cores``, by default this machine's), capped at what helps: one per unit, one per
    core (the endpoint's waits are filled by episodes side by side in each worker's event loop,
    not by more processes: workers follow the CPU work), and with LLM seats the smallest
    ``max_concurrency`` of the instance's endpoints (each worker gets its share)."""
    cores = cores or available_cores()
    aliases = llm_aliases(params, instance)
    n = cores if params.execution.workers == "auto" else params.execution.workers
    n = min(n, cores, max(units, 1))
    for alias in aliases:
        n = min(n, params.models[alias].max_concurrency)
    return max(n, 1)


def _worker_params(params: Params, instance: str, workers: int) -> Params:
    """Each worker's share of every endpoint's ``max_concurrency``: the limit of a Ray task's
    requests (their sum stays within it); a local worker's slots are the run's, shared
    (:func:`shared_slots`), and its share only sizes its window of episodes (:func:`in_flight`)."""
    models = {alias: (spec.model_copy(update={"max_concurrency": max(1, spec.max_concurrency // workers)})
                      if alias in llm_aliases(params, instance) else spec)
              for alias, spec in params.models.items()}
    return params.model_copy(update={"models": models})


def _numbered(todo) -> list[tuple[int, logs.Unit, list[EpisodeSpec]]]:
    """The units to play as (index among the units to play, unit, its episode specs): what a
    worker is handed (it needs no plan of its own). Units with LLM seats come first, each kind in
    plan order: their episodes wait on the endpoint, so started first they keep it busy from the
    start, and the scripted ones fill the waits later (crash's LLM benchmark, whose grid seats
    the LLM firm in 60 of 96 episodes, reached its 30th request 0.1-0.3 s sooner and ended about
    0.1 s sooner in three pairs of four). Where a unit plays changes nothing in its logs."""
    numbered = [(k, unit, specs) for k, (unit, specs) in enumerate(todo)]
    return sorted(numbered, key=lambda item: not item[1].episodes[0].llm)  # a unit is of one kind


def _shares(todo, workers: int) -> list[list[tuple[int, logs.Unit, list[EpisodeSpec]]]]:
    """The units to play dealt round-robin, per worker (Ray tasks; local workers pull them)."""
    numbered = _numbered(todo)
    return [numbered[w::workers] for w in range(workers)]


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
    if (sys.platform.startswith("linux") and threading.active_count() == 1
            and "torch" not in sys.modules):
        return "fork"
    return "spawn"


def _play_in_workers(instance, params, data_dir, dirs, n_units, todo, progress,
                     workers, live, counters=None, shown=nullcontext) -> tuple[int, int]:
    """The units played by ``workers`` worker processes, each pulling the next unit from one
    queue when it has room for it (units differ in work: crash's episodes with an LLM firm ask
    from 3 to 30 times, so a fixed deal left one worker with 946 requests and the other with 544,
    idle for the last 40% of the run). The progress line (``shown``) is drawn once they are
    started (:func:`start_method`). They end with the run however it ends: each holds the
    run's liveness lock ``live`` and dies with the main process (``_worker_init``); on an
    interrupt or a worker's death the others are stopped at once; after a worker's
    ``RunAborted`` the queue is emptied, the others finish the units they hold, and the first
    error is raised."""
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    wparams = _worker_params(params, instance, workers)
    played, error = 0, None
    context = multiprocessing.get_context(start_method())
    slots = shared_slots(params, instance, context, workers)
    units = context.Queue()
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init,
                               initargs=(os.getpid(), str(live), counters and counters.array, units,
                                         slots))
    try:
        # the first submit starts every worker (forked ones before the pool's own thread)
        pending = {pool.submit(_worker, instance, wparams, data_dir, dirs, n_units, None,
                               progress, w) for w in range(workers)}
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
        raise RunAborted("a worker process died (killed from outside: the out-of-memory killer, "
                         "kill -9, ...); every finished unit is kept; run again to resume, with "
                         "fewer execution.workers if memory is short") from None
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


def _drain(units) -> None:
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


#: the main process of the run a worker belongs to (None in the main process itself)
_PARENT: int | None = None
_LIVE_LOCK = None
#: where this process counts its progress (``progress.Counters``, its slot), when a line is drawn
_COUNTERS: tuple[progress_line.Counters, int] | None = None
_COUNTERS_ARRAY = None
#: in a local worker: the run's queue of units to play (``_play_in_workers``)
_UNITS = None
#: in a local worker: the endpoints' slots, shared by the run's workers (``shared_slots``)
_SLOTS = None


def _set_counters(counters: progress_line.Counters | None, slot: int) -> None:
    global _COUNTERS
    _COUNTERS = (counters, slot) if counters is not None else None


def _worker_init(parent: int, live: str, counters_array=None, units=None, slots=None) -> None:
    """A worker's start: die with the run's main process (``core/lifetime.py``: on Linux the kernel
    sends SIGKILL when it dies, however it dies; elsewhere :func:`_check_parent` between units) and
    hold the run's liveness lock (shared) for as long as the worker lives."""
    global _PARENT, _LIVE_LOCK, _COUNTERS_ARRAY, _UNITS, _SLOTS
    _PARENT = parent
    _COUNTERS_ARRAY = counters_array  # shared memory: handed over when the process starts
    _UNITS, _SLOTS = units, slots
    die_with_parent(parent)  # core/lifetime.py: also exits if the parent is already gone
    _LIVE_LOCK = open(live, "a+")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(_LIVE_LOCK, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:  # a new run holds it exclusively: this run is over
        os._exit(1)


def _check_parent() -> None:
    """In a worker: end at once if the run's main process is gone."""
    if _PARENT is not None and os.getppid() != _PARENT:
        os._exit(1)


def _play_on_ray(instance, params, data_dir, dirs, n_units, todo, progress,
                 workers, live=None, counters=None, shown=nullcontext) -> tuple[int, int]:
    """The same workers as Ray tasks on the cluster at ``execution.ray_address`` (one CPU each;
    ``workers: auto`` = the cluster's CPUs). Every task writes its episodes (and run logs) into
    ``dirs``, which must be on a file system the nodes share. Ray tasks do not take the liveness lock ``live``
    (a lock on another node's file system is not reliable); Ray ends them with their driver."""
    try:
        import ray
    except ImportError:
        raise RunAborted("execution.ray_address is set but Ray is not installed: "
                         "pip install 'marketarena[ray]' (or set ray_address: null)") from None
    address = params.execution.ray_address
    _check_reachable(address)  # ray.init itself retries an absent head for minutes
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=progress)
    except Exception as exc:  # no head at that address, version mismatch, ...
        raise RunAborted(f"execution.ray_address: cannot join the Ray cluster at {address!r}: "
                         f"{type(exc).__name__}: {exc}") from None
    try:
        cores = int(ray.cluster_resources().get("CPU", 1))
        workers = worker_count(params, instance, len(todo), cores=cores)
        task = ray.remote(num_cpus=1, max_retries=0)(_worker)
        wparams = _worker_params(params, instance, workers)
        refs = [task.remote(instance, wparams, data_dir, dirs, n_units, share, progress)
                for share in _shares(todo, workers)]
        played, error = 0, None
        with shown():
            for ref in refs:
                try:
                    played += ray.get(ref)
                except Exception as exc:  # a task's RunAborted arrives wrapped: keep its message
                    error = error or RunAborted(f"a Ray task failed: "
                                                f"{getattr(exc, 'cause', None) or exc}")
        if error is not None:
            raise error
        return played, workers
    finally:
        ray.shutdown()


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A ``host:port`` Ray address must accept a connection (``auto`` and ``ray://`` are Ray's)."""
    import socket

    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as exc:
        raise RunAborted(f"execution.ray_address: no Ray head answers at {address!r} "
                         f"({type(exc).__name__}: {exc}); start one with `ray start --head` or "
                         "set ray_address: null") from None


def _worker(instance, params, data_dir, dirs, n_units, share, progress, slot: int = 0) -> int:
    """One worker process: play the units ``share`` holds ([(index among the units, unit, specs)]),
    or (``share`` None) the ones it pulls from the run's queue, counting its progress in ``slot``
    of the run's counters (when the main process draws a line)."""
    marketarena.check_numpy_pinned()  # a Ray worker's numpy may have been loaded before us
    if _COUNTERS_ARRAY is not None:
        _set_counters(progress_line.Counters(len(_COUNTERS_ARRAY) // len(progress_line.FIELDS),
                                             _COUNTERS_ARRAY), slot)
    _, resources = load_inputs(instance, params, data_dir)
    summary = {"played": 0}
    llm = None
    if llm_aliases(params, instance):
        from marketarena.agents.llm_agent import LLMRuntime

        llm = LLMRuntime(params, ledger_path=spend_ledger_path(data_dir, instance),
                         shared_slots=_SLOTS and {k: (*v, slot) for k, v in _SLOTS.items()},
                         slot_sizes=endpoint_limits(params, instance))
    try:
        with heap_frozen():
            asyncio.run(_play_all(instance, params, resources, dirs, n_units,
                                  _pulled() if share is None else share, summary, progress, llm))
    except RunAborted as exc:  # crosses the process boundary as a plain RunAborted with its text
        raise RunAborted(str(exc)) from None  # alone, as one worker's run says it
    return summary["played"]


def _pulled():
    """The units of the run's queue, one at a time, as this worker has room for them."""
    while (item := _UNITS.get()) is not None:
        yield item


def usage_by_model(llm_calls, llm_costs) -> dict[str, dict[str, float | int]]:
    """An episode's LLM usage summed per model alias (its run log's ``llm``), in the fields
    of the client's run totals (``UsageTotals``). From the tables as produced (``Rows`` or
    DataFrames, the same calls in the same order): two DataFrames per episode, built only for
    these sums, cost more than the sums."""
    calls, costs = as_columns(llm_calls), as_columns(llm_costs)
    out: dict[str, dict[str, float | int]] = {}
    usd: dict[str, list[float]] = {}
    for i, model in enumerate(calls["model"]):
        key = str(model)
        totals = out.setdefault(key, {"calls": 0, "cached_calls": 0, "invalid_calls": 0,
                                      "attempts": 0, "retries": 0, "prompt_tokens": 0,
                                      "completion_tokens": 0, "cached_prompt_tokens": 0,
                                      "cost_usd": 0.0})
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


async def _play_all(instance, params, resources, dirs, n_units, todo, summary, progress,
                    llm) -> None:
    publishing = (asyncio.ensure_future(progress_line.publish(*_COUNTERS, llm))
                  if _COUNTERS is not None and llm is not None else None)
    try:
        await _play_units(instance, params, resources, dirs, n_units, todo, summary, progress, llm)
    finally:
        if publishing is not None:
            publishing.cancel()
            _COUNTERS[0].set(_COUNTERS[1], progress_line.totals_of(llm.client))  # the last frame
        if llm is not None:
            await llm.aclose()


async def _play_units(instance, params, resources, dirs, n_units, todo, summary, progress,
                      llm) -> None:
    """Play ``todo`` ((index among the run's units, unit, its specs), taken one at a time),
    writing each unit the moment its last episode ends. ``dirs``: (episodes folder, run log
    folder). Scripted units play one after the other, synchronously in effect (no episode awaits
    anything); with LLM seats, :func:`_play_side_by_side`."""
    plugin, mp = plugin_for(params, instance)
    out_dir, run_dir = dirs
    if llm is not None:
        await _play_side_by_side(plugin, mp, instance, resources, dirs, n_units, todo, summary,
                                 progress, llm, in_flight(params, instance))
        return
    for k, unit, specs in todo:
        _check_parent()
        t0 = time.perf_counter()
        with collector_paused(unit.shard):
            played = [await _play_one(plugin, mp, instance, resources, spec, ep.seed, llm)
                      for spec, ep in zip(specs, unit.episodes)]
        _finish_unit(instance, dirs, unit, played, time.perf_counter() - t0, summary, progress,
                     k, n_units, llm)


def endpoint_limits(params: Params, instance: str) -> dict[str | None, int]:
    """The ``max_concurrency`` of each endpoint the instance's LLM seats use (``slot_key``; the
    smallest, should two of its models disagree)."""
    from marketarena.llm.transport import slot_key

    limits: dict[str | None, int] = {}
    for alias in llm_aliases(params, instance):
        spec = params.models[alias]
        key = slot_key(spec)
        limits[key] = min(limits.get(key, spec.max_concurrency), spec.max_concurrency)
    return limits


def shared_slots(params: Params, instance: str, context,
                 workers: int) -> dict[str | None, tuple[object, int, object]]:
    """{endpoint: (a ``context`` semaphore of its ``max_concurrency`` slots, that size, the board
    where each of the ``workers`` posts its least advanced waiting request)}: the slots every
    local worker of the run takes its requests' from (``llm.slots``)."""
    return {key: (context.BoundedSemaphore(size), size,
                  context.Array("d", [math.inf] * (2 * workers), lock=False))
            for key, size in endpoint_limits(params, instance).items()}


def in_flight(params: Params, instance: str) -> int:
    """Episodes with LLM seats a worker plays side by side: ``execution.episodes_in_flight``, or
    (``auto``) twice the requests its endpoints take at once (the sum of their
    ``max_concurrency``, a worker's share of them): an episode between two calls (the market's
    step, its other seats) leaves its place on the endpoint to another."""
    setting = params.execution.episodes_in_flight
    if setting != "auto":
        return setting
    return 2 * sum(endpoint_limits(params, instance).values())


async def _play_side_by_side(plugin, mp, instance, resources, dirs, n_units, todo, summary,
                             progress, llm, window: int) -> None:
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
    response cache (the client's ``store_answers``, stored meanwhile). Units may finish out of
    order; each episode's logs depend on its seed and its answers only, never on what ran beside
    it. The first failure (a ``RunAborted``: endpoint down, budget spent) cancels the episodes in
    flight and is raised; every unit finished before it is on disk (a write under way
    completes)."""
    from concurrent.futures import ThreadPoolExecutor

    slots = asyncio.Semaphore(window)
    loop = asyncio.get_running_loop()

    async def episode(spec, seed):
        try:
            return await _play_one(plugin, mp, instance, resources, spec, seed, llm)
        finally:
            slots.release()

    async def unit_done(k, unit, episodes, t0):
        played = [await task for task in episodes]
        stored = llm and llm.client.store_answers()  # waited for before the unit is committed
        await loop.run_in_executor(writer, _finish_unit, instance, dirs, unit, played,
                                   time.perf_counter() - t0, summary, progress, k, n_units, llm,
                                   stored)

    writer = ThreadPoolExecutor(1, thread_name_prefix="marketarena-writer")
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
                _check_parent()
                t0, episodes = time.perf_counter(), []
                for i, (spec, ep) in enumerate(zip(specs, unit.episodes)):
                    if i:
                        await slots.acquire()
                    episodes.append(group.create_task(episode(spec, ep.seed)))
                    await asyncio.sleep(0)  # let it play to its first request
                group.create_task(unit_done(k, unit, episodes, t0))
    except BaseExceptionGroup as failed:  # the first failure, as a one-at-a-time run raises it
        raise _first_error(failed) from None
    finally:
        writer.shutdown(wait=True)


def _first_error(group: BaseExceptionGroup) -> BaseException:
    errors = [e for e in group.exceptions if not isinstance(e, asyncio.CancelledError)]
    first = (errors or list(group.exceptions))[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first


def _finish_unit(instance, dirs, unit, played, wall, summary, progress, k, n_units, llm,
                 before_commit=None) -> None:
    """Write a unit whose episodes have all been played (``before_commit``: called before it is
    renamed into place), and say so."""
    out_dir, run_dir = dirs
    if unit.shard:
        logs.write_shard(out_dir, unit, played, {"wall_time_s": round(wall, 3)}, run_dir,
                         before_commit=before_commit)
    else:
        logs.write_episode(out_dir, unit.episodes[0], *played[0], run_dir=run_dir,
                           before_commit=before_commit)
    summary["played"] += len(unit.episodes)
    if _COUNTERS is not None:
        _COUNTERS[0].add(_COUNTERS[1], progress_line.EPISODES, len(unit.episodes))
    if progress:
        usage = f"; LLM {llm.progress()}" if llm is not None else ""
        what = (f"shard {unit.name} ({len(unit.episodes)} episodes)" if unit.shard
                else f"episode {unit.name}")
        print(f"[{instance}] {what} done in {wall:.2f}s ({k + 1}/{n_units} to play){usage}",
              file=sys.stderr, flush=True)


@contextmanager
def heap_frozen():
    """Every object alive when the episodes start (the modules, the market's inputs,
    supply_chain's embedding model) out of the cyclic collector's sight while they play
    (``gc.freeze``): they live as long as the run, and each full collection walked them all,
    0.2-0.5 s with the embedding model loaded, stalling every episode in flight (0.4 s of an LLM
    supply_chain episode's 1.5 s above its ideal). Given back to the collector afterwards
    (``gc.unfreeze``), so that a process running many simulations (the tests) keeps no garbage."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def collector_paused(pause: bool = True):
    """Python's cyclic garbage collector paused while a shard of scripted games plays: the shard
    keeps its games' log rows (millions of small objects) alive until it is written, and every
    full collection walks them all (a fifth of a tournament's time). The games themselves leave
    almost no cyclic garbage (553 objects in 1,200 games), collected after the shard."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _play_one(plugin, mp, instance, resources, spec, seed, llm):
    """One episode: (its tables, its meta, its run info), as ``logs`` writes them (the run
    tables and run info to the run log)."""
    t0 = time.perf_counter()
    market_obj, agents, agents_table = plugin.build_episode(mp, resources, spec, llm=llm)
    result = await run_episode(market_obj, agents, seed, share_loop=llm is not None)
    tables = {"agents": agents_table, **result.raw}  # Rows stay rows until written
    meta = {"market": mp.market, "instance": instance, "lineup": agents_table["name"].tolist(),
            "setting": dict(spec.setting), "package_version": package_version()}
    calls = result.raw["llm_calls"]
    usage = usage_by_model(calls, result.raw["llm_costs"]) if len(calls) else {}
    run_info = {"wall_time_s": round(time.perf_counter() - t0, 3),
                "cost_usd": math.fsum(u["cost_usd"] for u in usage.values()), "llm": usage}
    return tables, meta, run_info
