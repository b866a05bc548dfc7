"""A file replaced whole or not at all: written aside in its own folder, then renamed over it.

``replaced(target)`` gives a fresh temporary path beside ``target`` (``.<name>.<random>.tmp``);
when the block ends without an error the temporary file becomes ``target`` (``os.replace``, atomic
within one filesystem), and when anything is raised, a kill's ``KeyboardInterrupt`` included, it
is removed and ``target`` is left as it was. ``write_atomic(target, data)`` is the common case:
bytes, or text as UTF-8.

Who uses it: the response cache's entries (``llm.cache``), the spend ledger's compaction
(``llm.budget``), the bundled model's assembled weights and chat template (``llm.local_server``).
A reader in another process (a worker, a resumed run) sees the old file or the new one, never
half of one. No fsync: a killed process loses nothing that was renamed, and these files can be
made again (a cache entry is fetched again, a ledger's reservations were on disk before). A
``SIGKILL`` between the write and the rename leaves at most a stray ``.tmp`` file, which nothing
reads. An episode's folder of tables is renamed into place the same way, as a folder
(``core.logs``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def replaced(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A new empty temporary file beside ``target`` that becomes ``target`` if the block ends
    without an error, and is removed otherwise (see the module docstring)."""
    with _aside(target) as (fd, tmp):
        os.close(fd)
        yield tmp


def write_atomic(target: str | os.PathLike[str], data: bytes | str) -> None:
    """``target`` replaced by ``data`` (text as UTF-8) whole or not at all."""
    with _aside(target) as (fd, _), open(fd, "wb") as out:  # the file made: not opened again
        out.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def _aside(target: str | os.PathLike[str]) -> Iterator[tuple[int, Path]]:
    """The temporary file beside ``target`` (its open descriptor, for the caller to close, and
    its path), renamed over ``target`` after the block or removed if the block raises."""
    target = Path(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(name)
    try:
        yield fd, tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def folder_replaced(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A new empty folder beside ``target`` (``.<name>.<random>.tmp``), to be filled in the block.

    When the block ends without an error, the new folder takes ``target``'s place whole: the old
    folder (if any) is renamed aside, the new one renamed in, then the old one removed. When the
    block raises (a kill's ``KeyboardInterrupt`` included), the new folder is removed and
    ``target`` is left exactly as it was. A ``SIGKILL`` between the two renames leaves ``target``
    missing and the old folder beside it as ``.<name>.<random>.old``, which the next call does not
    read; every other moment leaves the old folder or the new one in place, never a mix.

    Who uses it: the importers of published games (``core.sources``), which rebuild a whole
    instance folder from a source, and the results site (``report.site``)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / target.name)
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old / target.name, target)
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
