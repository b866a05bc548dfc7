"""The Ray backend: a run's workers as Ray tasks on an existing cluster.

Ray (``execution.ray_address``): the same workers (``workers._worker``) run as Ray tasks on an
existing cluster (one CPU each; ``workers: auto`` = the cluster's CPUs), writing the same logs into
the same folder, which must therefore be on a file system every node shares. Ray is an extra:
``marketarena[ray]``, imported only when a run plays on it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from marketarena.core.types import RunAborted
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import worker_count, worker_share
from marketarena.simulate.schedule import Numbered, _numbered
from marketarena.simulate.workers import _worker


def _shares(todo: list[tuple[Any, list[Any]]], workers: int) -> list[list[Numbered]]:
    """The units to play dealt round-robin, per worker (Ray tasks; local workers pull them)."""
    numbered = _numbered(todo)
    return [numbered[w::workers] for w in range(workers)]


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
        raise RunAborted(
            f"execution.ray_address: no Ray head answers at {address!r} "
            f"({type(exc).__name__}: {exc}); start one with `ray start --head` or "
            "set ray_address: null"
        ) from None


def play_on_ray(
    run: RunContext,
    todo: list[tuple[Any, list[Any]]],
    shown: Callable[[], AbstractContextManager[None]],
) -> tuple[int, int]:
    """The units of ``todo`` played by Ray tasks on the cluster at ``execution.ray_address``
    (one CPU each; ``workers: auto`` = the cluster's CPUs), each dealt its share. Every task
    writes its episodes (and run logs) into the run's folders, which must be on a file system the
    nodes share. Ray tasks do not take the liveness lock (a lock on another node's file system is
    not reliable); Ray ends them with their driver. ``shown``: the progress line, drawn while
    they play. Returns (episodes played, workers)."""
    try:
        import ray
    except ImportError:
        raise RunAborted(
            "execution.ray_address is set but Ray is not installed: "
            "pip install 'marketarena[ray]' (or set ray_address: null)"
        ) from None
    address = run.params.execution.ray_address
    _check_reachable(address)  # ray.init itself retries an absent head for minutes
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=run.unit_lines)
    except Exception as exc:  # noqa: BLE001 - no head at that address, version mismatch, ...
        raise RunAborted(
            f"execution.ray_address: cannot join the Ray cluster at {address!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    try:
        cores = int(ray.cluster_resources().get("CPU", 1))
        workers = worker_count(run.params, run.instance, len(todo), cores=cores)
        task = ray.remote(num_cpus=1, max_retries=0)(_worker)
        workers_run = run.with_params(worker_share(run.params, run.instance, workers))
        refs = [task.remote(workers_run, share) for share in _shares(todo, workers)]
        played, error = 0, None
        with shown():
            for ref in refs:
                try:
                    played += ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a task's RunAborted arrives wrapped: keep its message
                    error = error or RunAborted(
                        f"a Ray task failed: {getattr(exc, 'cause', None) or exc}"
                    )
        if error is not None:
            raise error
        return played, workers
    finally:
        ray.shutdown()
