"""The locks that keep one run of an instance at a time: files beside its episodes folder.

The episodes folder is touched only under :func:`episodes_lock`, after the inputs, plan and seating
have been checked. Every process of a run holds the instance's liveness lock (the main process and
each local worker: ``workers._worker_init``), so a resume started while anything of an earlier run
lives refuses, naming the pids (:func:`lock_holders`). Ray tasks take no lock (a lock on another
node's file system is not reliable); Ray ends them with their driver.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from marketarena.core.types import RunAborted


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


def _holders_said(path: Path) -> str:
    """`` (pid 12, 34)`` for the holders of ``path``'s lock, or nothing when none are known."""
    pids = lock_holders(path)
    return f" (pid {', '.join(map(str, pids))})" if pids else ""


@contextmanager
def episodes_lock(out_dir: Path) -> Iterator[Path]:
    """The locks of a run of one instance (files beside its episodes folder):

    - ``.<instance>.lock``, held exclusively by the run's main process: a second run fails fast;
    - ``.<instance>.live``, held shared by *every* process of the run (the main one and each
      worker, ``workers._worker_init``). A new run must get it exclusively, so a resume started
      while anything of an earlier run still lives (a worker whose parent was killed) refuses,
      naming the pids, instead of writing beside it.

    Yields the path of the liveness lock, which workers take."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    path = out_dir.parent / f".{out_dir.name}.lock"
    live = out_dir.parent / f".{out_dir.name}.live"
    with open(path, "a+") as fh, open(live, "a+") as lh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunAborted(
                f"{out_dir} is in use by another simulate run{_holders_said(path)} "
                f"(lock {path}); wait for it to finish"
            ) from None
        try:
            try:
                fcntl.flock(lh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunAborted(
                    f"{out_dir}: processes of an earlier simulate run are still alive"
                    f"{_holders_said(live)} (they hold {live}); wait for them to end "
                    "or stop them (kill <pid>), then run again"
                ) from None
            fcntl.flock(lh, fcntl.LOCK_SH)  # from now on shared with this run's workers
            yield live
        finally:
            fcntl.flock(lh, fcntl.LOCK_UN)
            fcntl.flock(fh, fcntl.LOCK_UN)


def hold_live_lock(live: Path) -> object | None:
    """Take the run's liveness lock ``live`` (shared) for as long as this process lives: the open
    file, to be kept; ``None`` when a new run holds it exclusively (this run is over)."""
    handle = open(live, "a+")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle
