"""Play a market instance's planned episodes into ``data/episodes/<instance>/``, resuming.

One module per job:

- ``context.py``: the run context (:class:`RunContext`): the instance's rules and params resolved
  once, the run's folders and flags, passed down in place of long signatures;
- ``planning.py``: inputs, the plan and each episode's fingerprint, the seating check;
- ``complete.py``: a run that would play nothing, recognised without planning (the record a
  complete run leaves in its run log);
- ``locks.py``: the locks that keep one run of an instance at a time;
- ``limits.py``: workers, endpoints' ``max_concurrency`` and the spend ledger;
- ``dispatch.py``: where a part of the run plays (this process, local workers, Ray);
- ``schedule.py``: playing units in one process (one after the other, or side by side in one
  event loop) and writing each one;
- ``workers.py``: the local worker processes; ``ray.py``: the Ray backend;
- ``collector.py``: the cyclic garbage collector kept off long-lived objects;
- ``preflight.py``: the estimate of what the LLM seats left to play will cost, printed before
  the first call, and the stop when it passes ``llm.max_cost_usd``.

Order of work (:func:`simulate`): every input file is read whole and the market's resources are
loaded first (a truncated embeddings file fails there), the plan is checked (``core/seating.py``:
every roster entry seated, in roles it can play), and only then is the episodes folder touched,
under the locks of :func:`~marketarena.simulate.locks.episodes_lock` that keep a second concurrent
run of the same instance out. A run with nothing left to play ends there, having imported none of
the machinery that plays (``dispatch.py`` and what it imports).

Stopping rule (``markets.<instance>.stop``; off by default, and then nothing here changes): the
LLM players' games (double_auction's entrants, english_auction's challengers, elsewhere the
episodes that seat an LLM player: ``MarketRules.stop_players``) are held back; every other unit
(their field) is played first, then the players' games in rounds of ``batch`` each, looking at
every player after each round and stopping it once the rule's question is answered (its rank
interval among the field narrow enough, or within or beyond the top k), or at the cap (``stopping.Batches``). A resumed run replays the looks
from the logs and takes the same decisions; units past a player's stop left by an earlier run are
removed at the end. The episodes' ids, seeds and logs are those of the plan whatever the rule
decides.

Run information (wall time, LLM cost, latency, retries, cache hits) is not part of the episode
logs: it goes to the run log (``run_dir``, default ``data/run_logs/<instance>/``; ``core.logs``
documents its files), which DVC does not track, so re-simulating identical episodes changes no
hash.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import marketarena
from marketarena.config import Params, check_market
from marketarena.core import logs, run_logs
from marketarena.core.registry import market_kind
from marketarena.simulate import complete, preflight
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import (
    endpoint_limits,
    in_flight,
    ledger_spent,
    llm_aliases,
    shared_slots,
    spend_ledger_path,
    worker_count,
)
from marketarena.simulate.locks import episodes_lock, lock_holders
from marketarena.simulate.planning import (
    NON_ANSWER_FIELDS,
    PACKAGE_ROOT,
    SIMULATOR_CODE,
    build,
    check_input,
    check_seating,
    checked_seating,
    code_hash,
    code_paths,
    load_inputs,
    model_fingerprint,
    package_version,
    plan,
    read_inputs,
    shared_sections,
)

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.simulate.stopping import Batches

__all__ = [
    "NON_ANSWER_FIELDS",
    "PACKAGE_ROOT",
    "SIMULATOR_CODE",
    "RunContext",
    "build",
    "check_input",
    "check_seating",
    "checked_seating",
    "code_hash",
    "code_paths",
    "endpoint_limits",
    "episodes_lock",
    "in_flight",
    "ledger_spent",
    "llm_aliases",
    "load_inputs",
    "lock_holders",
    "model_fingerprint",
    "package_version",
    "plan",
    "read_inputs",
    "shared_sections",
    "shared_slots",
    "simulate",
    "spend_ledger_path",
    "worker_count",
]


def simulate(
    instance: str,
    params: Params,
    data_dir: Path,
    out_dir: Path | None = None,
    progress: bool = True,
    openai_factory: Callable[..., Any] | None = None,
    run_dir: Path | None = None,
    keep: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Run every planned episode of ``instance`` not already finished; returns a small summary.
    ``keep``: names in ``out_dir`` that are not this run's and stay (a joint instance's imported
    games and their ``import.json``, ``simulate/importing.py``); anything else unplanned is swept.

    With LLM seats, one :class:`~marketarena.agents.llm_agent.LLMRuntime` serves the whole run
    (``openai_factory`` plugs in a fake endpoint for tests). A :class:`RunAborted` (endpoint
    unreachable, budget spent, replay cache miss) ends the run after closing the client; every
    episode finished before it is on disk and the next run resumes from there.

    ``run_dir``: where the run log goes; by default ``data_dir/run_logs/<instance>`` for
    episodes in ``data_dir/episodes/<instance>``, else ``<out_dir>.runs`` beside them
    (``core.run_logs.run_dir_for``).
    """
    marketarena.check_numpy_pinned()  # the same bytes on every machine (``marketarena``)
    out_dir = Path(out_dir or Path(data_dir) / "episodes" / instance)
    run_dir = Path(run_dir or run_logs.run_dir_for(out_dir))
    done = None
    if complete.recorded(run_dir):  # a run in progress is refused here too, not read half-written
        with episodes_lock(out_dir):
            done = complete.nothing_to_play(instance, params, out_dir, run_dir)
    if done is not None:  # its last run left it whole and nothing changed (``complete.py``)
        return done
    check_market(params.markets[instance], params.source)  # before any episode
    run = RunContext.of(
        instance,
        params,
        data_dir,
        out_dir,
        run_dir,
        progress=progress,
        openai_factory=openai_factory,
    )
    inputs, resources = read_inputs(run)
    run = replace(run, resources=resources)
    planned = plan(run, inputs)
    checked_seating(run, [spec for spec, _ in planned])  # before any episode
    units = logs.plan_units([p for _, p in planned], run.market.shard_episodes)
    with episodes_lock(run.out_dir) as live:
        specs = {p.episode_id: spec for spec, p in planned}
        todo = [
            (u, [specs[e.episode_id] for e in u.episodes])
            for u in logs.prepare_units(run.out_dir, units, keep)
        ]
        run_logs.prune_run_logs(
            run.run_dir, _units_on_disk(run.out_dir) - keep | {preflight.ESTIMATE}
        )
        to_play = sum(len(u.episodes) for u, _ in todo)
        summary = {
            "market": instance,
            "planned": len(planned),
            "skipped": len(planned) - to_play,
            "played": 0,
            "wall_time_s": 0.0,
        }
        stop = None
        if run.market.stop is not None:
            from marketarena.simulate.stopping import Batches

            stop = Batches(
                market_kind(run.market.market), run.market, units, run.out_dir, run.data_dir
            )
        # the estimate of what is left, said before the first call; over the cap: stop here
        estimate = preflight.check(run, todo)
        if estimate is not None:
            summary["estimate"] = estimate
        if not todo and stop is None:
            complete.record(
                run.run_dir,
                complete.run_key(instance, params, inputs),
                inputs,
                run.out_dir,
                len(planned),
            )
            return summary
        summary = _played(run, todo, stop, live, summary)
        if stop is None:
            complete.record(
                run.run_dir,
                complete.run_key(instance, params, inputs),
                inputs,
                run.out_dir,
                len(planned),
            )
        return summary


def _played(
    run: RunContext,
    todo: list[tuple[logs.Unit, list[Any]]],
    stop: Batches | None,
    live: Path,
    summary: dict[str, Any],
) -> dict[str, Any]:
    """``summary`` once ``todo`` is played (with a stopping rule ``stop``: the field, then round
    after round of batches), under the run's liveness lock ``live``; says so when
    ``run.progress``."""
    from marketarena import progress as progress_line
    from marketarena.simulate.dispatch import play_part

    started = time.perf_counter()
    parts = [todo] if stop is None else itertools.chain([stop.first(todo)], stop.rounds(todo))
    summary["workers"] = 0
    for part in parts:
        played, workers, backend = play_part(run, part, live)
        summary["played"] += played
        summary["workers"] = max(summary["workers"], workers)
    summary["backend"] = backend
    summary["wall_time_s"] = round(time.perf_counter() - started, 3)
    if stop is not None:
        summary["stopped"] = dict(stop.stopped)
        summary["stop_lines"] = stop.lines()
        summary["pruned"] = stop.prune()
        run_logs.prune_run_logs(run.run_dir, _units_on_disk(run.out_dir) | {preflight.ESTIMATE})
    if run.llm_aliases:
        summary["llm"] = progress_line.run_totals(run.run_dir, {u.name for u, _ in todo})
        limit = run.params.llm.max_cost_usd
        if limit is not None:
            summary["budget"] = (ledger_spent(run.data_dir, run.instance), limit)
    if run.progress:
        print("\n".join(progress_line.summary_lines(summary)), file=sys.stderr, flush=True)
    return summary


def _units_on_disk(out_dir: Path) -> set[str]:
    """The names of the units (episode folders, shards) in the episodes folder ``out_dir``."""
    return {p.name for p in out_dir.iterdir() if p.is_dir()}
