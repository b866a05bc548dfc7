"""Figures rendered beside the code that builds the next one (issue 57).

A figures stage spends about as long in matplotlib's rendering (the tight layout, Agg's pixels,
the PNG) as in building its figures, and DVC runs one stage at a time: one core drew while the
other idled. Inside :func:`rendering_aside`, :func:`marketarena.plots.style.save` hands each
finished figure to a forked child process, which writes it (and its drawn data) and exits, while
the parent closes its copy and builds the next figure. At most ``workers`` children run at once;
the block waits for every child at its end and fails, naming the figures, if one failed (its
traceback is on stderr).

Fork, not a pool of workers: the child is the parent at the moment the figure is finished (the
same figure, rcParams, fonts and seeds), so it writes the bytes the parent would have written.
The figures stage renders aside with ``execution.workers`` (auto: one per core); ``workers: 1``,
or a platform without ``fork``, renders in process. `tests/plots/test_aside.py` checks the bytes
are the same either way, and the e2e twin (``workers: 1``) checks it for every figure of the
pipeline through dvc.lock.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path


class _Children:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.running: dict[int, Path] = {}  # pid -> the figure it writes, oldest first
        self.failed: list[Path] = []

    def wait_oldest(self) -> None:
        pid, path = next(iter(self.running.items()))
        _, status = os.waitpid(pid, 0)
        del self.running[pid]
        if os.waitstatus_to_exitcode(status) != 0:
            self.failed.append(path)

    def start(self, render: Callable[[], None], path: Path) -> None:
        while len(self.running) >= self.workers:
            self.wait_oldest()
        sys.stdout.flush()  # what is buffered now is written once, by the parent
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: write the figure, then leave without the parent's exit hooks
            code = 1  # until written: an interrupt is a failure too
            try:
                render()
                code = 0
            except Exception:  # noqa: BLE001 - any error: its traceback, then exit 1
                traceback.print_exc()
                print(f"rendering {path} failed", file=sys.stderr)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.running[pid] = path


#: the innermost active :func:`rendering_aside` block's children (empty: render in process)
_ACTIVE: list[_Children] = []


@contextlib.contextmanager
def rendering_aside(workers: int):
    """While in this block, :func:`render` runs each rendering in a forked child, at most
    ``workers`` at once; the block ends when all have, and raises ``RuntimeError`` naming the
    figures whose child failed. ``workers`` 1 or less (or no ``os.fork``): in process."""
    if workers <= 1 or not hasattr(os, "fork"):
        yield
        return
    children = _Children(workers)
    _ACTIVE.append(children)
    try:
        yield
    finally:
        _ACTIVE.pop()
        while children.running:
            children.wait_oldest()
    if children.failed:
        names = ", ".join(str(p) for p in children.failed)
        raise RuntimeError(f"writing these figures failed (tracebacks above): {names}")


def render(write: Callable[[], None], path: Path) -> None:
    """Call ``write`` (which writes ``path``) in a child process inside a
    :func:`rendering_aside` block, in this process otherwise."""
    if _ACTIVE:
        _ACTIVE[-1].start(write, path)
    else:
        write()
