"""Child processes that end with the process that started them, however it ends.

Guarantee (Linux): a child started by :func:`popen`, or a pool worker whose initializer calls
:func:`die_with_parent`, is killed (SIGKILL) by the kernel as soon as the process that started it
ends, whatever ends it: a return, an exception, Ctrl-C, SIGTERM, or a SIGKILL that leaves no code
of ours a chance to run. ``docs/reliability.md`` lists every process the project starts, what ends
it, and the test that shows it.

How:
- :func:`die_with_parent` runs in the child: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` asks the kernel
  for the signal when the parent dies. The setting survives ``exec`` (the kernel clears it only
  on exec of a set-user-ID, set-group-ID or file-capability binary), so :func:`popen` sets it
  between fork and exec (``preexec_fn``) and it holds for the program run, e.g.
  ``python -m llama_cpp.server``. The ``prctl`` function is looked up before the fork: the
  child between fork and exec only calls it.
- A parent that dies between the fork and the ``prctl`` sends no signal (the child has already
  been handed to init or a subreaper), so after the ``prctl`` the child compares ``getppid()``
  with the parent's pid it was given and exits at once if they differ.
- The kernel ties the signal to the *thread* that forked, not to its process: a child forked by a
  short-lived thread would be killed when that thread ends. :func:`popen` therefore forks in the
  main thread, or, called from any other thread, in one daemon thread of this module, which ends
  only with the process. Pool workers (``simulate``, the double auction's reference) are started
  by the thread that submits their work, which waits for it.
- Elsewhere (macOS, Windows) there is no such signal: :func:`die_with_parent` only checks the
  parent once, and children end on the paths that run our code (Ctrl-C, SIGTERM under
  :func:`terminate_as_interrupt`, exceptions, the interpreter's exit), not on SIGKILL.

Also here, so that every launcher stops its children the same way: :func:`pool_map` (a function
mapped over items by a pool of such workers, in order), :func:`stop` (a signal, SIGINT
by default, so that a server shuts down cleanly; SIGKILL after a timeout or a second interrupt;
reaped), :func:`stop_pool` (a process pool's queued work cancelled, its workers killed and reaped)
and :func:`terminate_as_interrupt` (SIGTERM and SIGHUP raise ``KeyboardInterrupt`` in the main
thread, so the ``finally`` blocks Ctrl-C runs run on them too; the previous handlers come back
afterwards).
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(parent: int) -> None:
    """In a child of process ``parent``: have the kernel SIGKILL this process when ``parent`` dies
    (Linux), and end it now if ``parent`` is already gone."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # died before the line above took effect
        os._exit(1)


def popen(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(cmd, **kwargs)`` whose child dies with this process (module docstring)
    and hears SIGINT, the signal :func:`stop` ends it with, even where this process ignores it
    (a program started in the background by a shell script inherits SIGINT ignored, and its
    children with it: every clean stop would become a SIGKILL ``timeout`` s later)."""
    _prctl()  # looked up here, before the fork
    child_init = functools.partial(_child_init, os.getpid())
    return _in_lasting_thread(lambda: subprocess.Popen(cmd, preexec_fn=child_init, **kwargs))


def _child_init(parent: int) -> None:
    """Between fork and exec: SIGINT back to its default action, then :func:`die_with_parent`."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with_parent(parent)


_spawner: tuple[threading.Thread, queue.SimpleQueue] | None = None
_spawner_lock = threading.Lock()


def _in_lasting_thread(fn: Callable[[], T]) -> T:
    """``fn()`` run in a thread that lives as long as the process: this one if it is the main
    thread, else the module's spawner thread (started at the first such call)."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return fn()
    with _spawner_lock:
        if _spawner is None or not _spawner[0].is_alive():  # not yet, or a forked copy of us
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(
                target=_run_jobs, args=(jobs,), daemon=True, name="marketarena-spawner"
            )
            thread.start()
            _spawner = (thread, jobs)
    done: Future[T] = Future()
    _spawner[1].put((fn, done))
    return done.result()


def _run_jobs(jobs: queue.SimpleQueue) -> None:
    while True:
        fn, done = jobs.get()
        try:
            done.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            done.set_exception(exc)


def stop(process: subprocess.Popen[Any], timeout: float = 10.0, sig: int = signal.SIGINT) -> int:
    """End ``process``: ``sig``, then SIGKILL if it still runs ``timeout`` s later or if the
    wait is interrupted (a second Ctrl-C); reaped either way. Its exit code."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
        except BaseException:  # a second Ctrl-C: no more waiting
            process.kill()
            process.wait()
            raise
    return process.wait()


def stop_pool(pool: Any) -> None:
    """Stop a ``concurrent.futures.ProcessPoolExecutor`` now: queued work cancelled, every worker
    killed and reaped."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(10)


def pool_map(
    fn: Callable[..., T], *iterables: Sequence[Any], workers: int, start_method: str = "spawn"
) -> list[T]:
    """``[fn(*args) for args in zip(*iterables)]``, in that order, run by ``workers`` processes
    that end with this call however it ends: killed on an exception or Ctrl-C (:func:`stop_pool`),
    and by the kernel if this process dies (:func:`die_with_parent`). One worker or one item: in
    this process. ``fn`` must be a module-level function (it is pickled)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    items = list(zip(*iterables))
    if workers <= 1 or len(items) <= 1:
        return [fn(*args) for args in items]
    pool = ProcessPoolExecutor(
        min(workers, len(items)),
        mp_context=multiprocessing.get_context(start_method),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        out = list(pool.map(fn, *zip(*items)))
    except BaseException:  # Ctrl-C, a bug: no worker may outlive the call
        stop_pool(pool)
        raise
    pool.shutdown()
    return out


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM (what a process manager, CI or a terminal multiplexer sends to
    stop a program) and SIGHUP (its terminal closed) raise ``KeyboardInterrupt`` as Ctrl-C does,
    so the same ``finally`` blocks run. In the main thread only (Python lets no other set a
    handler); elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {sig: signal.signal(sig, interrupt) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
