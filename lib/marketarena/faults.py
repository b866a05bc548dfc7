"""Faults a user can meet, as one line: what happened and what to do.

The command line (``marketarena ...``) and every DVC stage (``stages/*.py``) run their work through
:func:`one_line_errors`: whatever stops a run ends in a single ``error: <cause>; <remedy>`` line on
stderr and a non-zero exit code, never in a traceback. The data is safe in every case: episodes,
shards, references, the response cache and the results site are written to a temporary name and
renamed when complete, so a run stopped anywhere keeps what it finished and the next run resumes.

What the line says is safe depends on the command, so the caller says it: ``kept`` is the sentence
added to the faults that stop a run midway (a full disk, an interrupt, a killed worker, ...), e.g.
:data:`KEPT` for ``simulate`` ("finished episodes are kept and the next run resumes"), a sentence of
its own for the ``report`` stage (the earlier site is left as it was), or nothing (the default) where
no such sentence is true.

Exit codes: 2 for a params error or a bad published log, 130 for an interrupt (Ctrl-C), 1 for
everything else.
``--debug`` (the ``marketarena`` command) or ``MARKETARENA_DEBUG=1`` (anything, DVC stages
included) prints the traceback as well.

What is recognised, anywhere in the chain of causes: a run that stops cleanly (``RunAborted``: an
endpoint down, the budget spent, a missing input, a lock held by another run), a params error,
a published log an importer cannot use (``core.sources.SourceError``, exit code 2), a worker process killed from outside (``BrokenProcessPool``), a full disk or quota, a read-only or
unwritable folder, a missing file, memory exhausted, an interrupt. Anything else is a bug: it is
named in one line too, with the hint to re-run with the traceback and report it.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import traceback
from contextlib import contextmanager
from typing import Iterator

KEPT = "finished episodes are kept and the next run resumes"

_ERRNO = re.compile(r"\[Errno (\d+)\]|errno[ =:]+(\d+)", re.IGNORECASE)


def debug_enabled(flag: bool = False) -> bool:
    return flag or os.environ.get("MARKETARENA_DEBUG", "").strip().lower() not in (
        "",
        "0",
        "false",
        "no",
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _errno_of(exc: BaseException) -> int | None:
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    if isinstance(exc, OSError):  # pyarrow's IO errors carry it in the text only
        match = _ERRNO.search(str(exc))
        if match:
            return int(match.group(1) or match.group(2))
    return None


def _where(exc: OSError) -> str:
    name = exc.filename if getattr(exc, "filename", None) else None
    return f" ({name})" if name else ""


def describe(exc: BaseException, kept: str | None = None) -> tuple[str, int]:
    """The one line (without ``error:``) and the exit code for ``exc``; ``kept``: what a run
    stopped midway leaves safe, said where it applies (none: nothing said)."""
    from concurrent.futures.process import BrokenProcessPool

    from marketarena.config import ParamsError
    from marketarena.core.sources import SourceError
    from marketarena.core.types import RunAborted

    safe = f"; {kept}" if kept else ""
    for cause in _chain(exc):
        if isinstance(cause, KeyboardInterrupt):
            return f"interrupted{safe} (run the same command again)", 130
        if isinstance(cause, ParamsError):
            return str(cause), 2
        if isinstance(cause, SourceError):  # a published log an importer cannot use
            return f"{cause}; nothing was imported (an earlier import is kept as it was)", 2
        if isinstance(cause, RunAborted):
            return str(cause), 1
        if isinstance(cause, BrokenProcessPool):
            return (
                "a worker process died (killed from outside: the out-of-memory killer, kill -9, "
                f"...){safe}; run again, with fewer execution.workers if memory is short"
            ), 1
        if isinstance(cause, MemoryError):
            return (
                f"out of memory{safe}; lower execution.workers or the market's sizes "
                "(runs, days, consumers, ...)"
            ), 1
        code = _errno_of(cause)
        if code in (errno.ENOSPC, errno.EDQUOT):
            what = "no space left on the device" if code == errno.ENOSPC else "disk quota exceeded"
            return f"{what}{_where(cause)}{safe}; free some space and run again", 1
        if code == errno.EROFS:
            return (
                f"read-only file system{_where(cause)}{safe}; point --root (or the folder) "
                "at a writable place, or remount it read-write"
            ), 1
        if code in (errno.EACCES, errno.EPERM):
            return (
                f"permission denied{_where(cause)}{safe}; make the folder writable for this "
                "user, or choose another with --root"
            ), 1
        if code == errno.ENOENT and isinstance(cause, OSError):
            return (
                f"no such file or folder{_where(cause)}: {cause.strerror or cause}; check the "
                "path, or run the stages that write it first (dvc repro)"
            ), 1
        if code is not None and isinstance(cause, OSError):
            return (
                f"{cause.strerror or cause}{_where(cause)} (errno {code}){safe}; fix the "
                "cause and run again"
            ), 1
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (
        f"unexpected {type(exc).__name__}{': ' + text[:300] if text else ''}{safe}. This is "
        "likely a bug: run again with --debug (or MARKETARENA_DEBUG=1) for the traceback and "
        "report it"
    ), 1


@contextmanager
def one_line_errors(debug: bool = False, prefix: str = "", kept: str | None = None):
    """Run the block; turn any exception into one ``error:`` line on stderr and ``SystemExit``
    with its code (``SystemExit`` itself passes through). With ``debug`` (or
    ``MARKETARENA_DEBUG=1``) the traceback is printed first. ``kept``: what a stop midway leaves
    safe (:data:`KEPT` for simulate; see the module docstring)."""
    from click.exceptions import ClickException, Exit

    try:
        yield
    except (SystemExit, Exit, ClickException):  # an exit already decided (typer's included)
        raise
    except BaseException as exc:  # noqa: BLE001 - every fault ends in one line
        if debug_enabled(debug):
            traceback.print_exc(file=sys.stderr)
        message, code = describe(exc, kept)
        line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
        print(f"error: {prefix}{line}", file=sys.stderr, flush=True)
        raise SystemExit(code) from None
