"""The limits a run keeps: how many workers help, each endpoint's ``max_concurrency`` (for the
run, per worker, per event loop) and the dollar budget's spend ledger.

Never more workers than help (:func:`worker_count`): one per unit to play, one per core (workers
follow the CPU work; waiting on an endpoint is the event loop's job), and for LLM instances the run
as a whole keeps each endpoint's ``max_concurrency`` (no more workers than the smallest of them,
each worker gets its share: :func:`worker_share`). Local workers take their requests' places from
slots the run shares (:func:`shared_slots`, ``llm/slots.py``); the spend ledger
(``llm/ledger.py``) is a locked file every worker charges, so ``llm.max_cost_usd`` holds for the
run and across its resumed runs (:func:`spend_ledger_path`).

Light on purpose: nothing of the LLM layer is imported until a run plays LLM seats.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marketarena.config import Params, available_cores

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.agents.llm_agent import LLMRuntime
    from marketarena.simulate.context import RunContext


def llm_aliases(params: Params, instance: str) -> set[str]:
    """The model aliases of ``instance``'s LLM seats (empty: a scripted instance)."""
    return {e.model for e in params.markets[instance].roster if e.kind == "llm"}


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


def shared_slots(
    params: Params, instance: str, context: Any, workers: int
) -> dict[str | None, tuple[Any, int, Any]]:
    """{endpoint: (a ``context`` semaphore of its ``max_concurrency`` slots, that size, the board
    where each of the ``workers`` posts its least advanced waiting request)}: the slots every
    local worker of the run takes its requests' from (``llm.slots``). ``context``: the
    workers' ``multiprocessing`` context."""
    return {
        key: (
            context.BoundedSemaphore(size),
            size,
            context.Array("d", [math.inf] * (2 * workers), lock=False),
        )
        for key, size in endpoint_limits(params, instance).items()
    }


def in_flight(params: Params, instance: str) -> int:
    """Episodes with LLM seats a worker plays side by side: ``execution.episodes_in_flight``, or
    (``auto``) twice the requests its endpoints take at once (the sum of their
    ``max_concurrency``, a worker's share of them): an episode between two calls (the market's
    step, its other seats) leaves its place on the endpoint to another."""
    setting = params.execution.episodes_in_flight
    if setting != "auto":
        return setting
    return 2 * sum(endpoint_limits(params, instance).values())


def even_window(params: Params, instance: str, workers: int, episodes: int) -> Params:
    """``params`` with each of ``workers`` local workers' window (:func:`in_flight`) at most its
    even share of the ``episodes`` to play. Workers pull units from one queue whenever they have
    room; when the windows hold every episode at once, the first worker to start took as many
    as it could before the other had built its first prompt: BAZAAR's 40 entrant games split 36
    to 4, 25 to 15 or 20 to 20 from one run to the next, and the busier worker's games (their
    answers read one after another each round, their logs written one after another at the end)
    set the run's length (1.083x the endpoint's bound at 36 to 4, 1.051-1.068x at 20 to 20).
    Capped, every episode still starts at once, half in each worker; with more episodes than the
    windows hold, the cap is above the window and changes nothing."""
    cap = max(1, math.ceil(episodes / max(workers, 1)))
    window = min(in_flight(params, instance), cap)
    execution = params.execution.model_copy(update={"episodes_in_flight": window})
    return params.model_copy(update={"execution": execution})


def worker_count(params: Params, instance: str, units: int, cores: int | None = None) -> int:
    """Worker processes for ``units`` units to play (episodes, or shards): ``execution.workers``
    (``auto``: ``cores``, by default this machine's), capped at what helps: one per unit, one per
    core (the endpoint's waits are filled by episodes side by side in each worker's event loop,
    not by more processes: workers follow the CPU work), and with LLM seats the smallest
    ``max_concurrency`` of the instance's endpoints (each worker gets its share)."""
    cores = cores or available_cores()
    n = cores if params.execution.workers == "auto" else params.execution.workers
    n = min(n, cores, max(units, 1))
    for alias in llm_aliases(params, instance):
        n = min(n, params.models[alias].max_concurrency)
    return max(n, 1)


def worker_share(params: Params, instance: str, workers: int) -> Params:
    """Each worker's share of every endpoint's ``max_concurrency``: the limit of a Ray task's
    requests (their sum stays within it); a local worker's slots are the run's, shared
    (:func:`shared_slots`), and its share only sizes its window of episodes (:func:`in_flight`)."""
    aliases = llm_aliases(params, instance)
    models = {
        alias: (
            spec.model_copy(update={"max_concurrency": max(1, spec.max_concurrency // workers)})
            if alias in aliases
            else spec
        )
        for alias, spec in params.models.items()
    }
    return params.model_copy(update={"models": models})


def spend_ledger_path(data_dir: Path, instance: str) -> Path:
    """Where an instance's LLM spend is summed over every run (``llm.max_cost_usd`` caps it)."""
    return Path(data_dir) / "llm_spend" / f"{instance}.jsonl"


def ledger_spent(data_dir: Path, instance: str, reserved: bool = False) -> float:
    """Dollars the instance's spend ledger holds (every run of it so far); with ``reserved``,
    plus what a dead run left reserved (the next run charges it at its bound before its first
    call)."""
    from marketarena.llm.ledger import read_ledger, reserved_amount

    state = read_ledger(spend_ledger_path(data_dir, instance))
    held = (
        sum(reserved_amount(v) for v in (state.get("reserved") or {}).values()) if reserved else 0
    )
    return float(state.get("spent_usd", 0.0)) + held


def charge_leftover_reservations(data_dir: Path, instance: str) -> None:
    """Charge the bound of every reservation still in the instance's ledger, once every process
    of the run has ended (workers joined or killed): each is a request that may have been served
    (an episode cancelled mid-call when another one stopped the run), charged now as the next run
    would charge it (opening the ledger exclusively does it)."""
    from marketarena.llm.ledger import SpendLedger

    SpendLedger(spend_ledger_path(data_dir, instance), exclusive=True)


def llm_runtime(
    run: RunContext,
    exclusive_ledger: bool = False,
    shared: dict[str | None, tuple[Any, ...]] | None = None,
) -> LLMRuntime:
    """This process's LLM runtime for ``run``: charging the instance's spend ledger
    (``exclusive_ledger``: in the main process, which holds the run's lock: a reservation left in
    the ledger is a dead run's, charged now), with the run's endpoint ``shared`` slots (a local
    worker's) and its own share of each endpoint (:func:`endpoint_limits` of its params)."""
    from marketarena.agents.llm_agent import LLMRuntime

    return LLMRuntime(
        run.params,
        openai_factory=run.openai_factory,
        ledger_path=spend_ledger_path(run.data_dir, run.instance),
        exclusive_ledger=exclusive_ledger,
        shared_slots=shared,
        slot_sizes=endpoint_limits(run.params, run.instance),
    )
