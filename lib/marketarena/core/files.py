"""A file replaced whole or not at all: written aside in its own folder, then renamed over it.

``replaced(target)`` gives a fresh temporary path beside ``target`` (``.<name>.<random>.tmp``);
when the block ends without an error the temporary file becomes ``target`` (``os.replace``, atomic
within one filesystem), and when anything is raised, a kill's ``KeyboardInterrupt`` included, it
is removed and ``target`` is left as it was. ``write_atomic(target, data)`` is the common case:
bytes, or text as UTF-8.

Who uses it: the response cache's entries (``llm.response_cache``), the spend ledger's compaction
(``llm.ledger``), the bundled model's assembled weights and chat template (``llm.local_server``).
A reader in another process (a worker, a resumed run) sees the old file or the new one, never
half of one. No fsync: a killed process loses nothing that was renamed, and these files can be
made again (a cache entry is fetched again, a ledger's reservations were on disk before). A
``SIGKILL`` between the write and the rename leaves at most a stray ``.tmp`` file, which nothing
reads. An episode's folder of tables is renamed into place the same way, as a folder
(``core.logs``).

A folder replaced whole: ``folder_replaced(dest)`` gives a new empty folder beside ``dest``
(``.<name>.<owner>.<random>.tmp``, on the same filesystem) to build in. When the block ends
without an error, ``dest`` (if any) is renamed aside, the new folder renamed to ``dest`` and the
old one removed; when anything is raised, the new folder is removed and ``dest`` is left exactly
as it was, and an ``OSError`` naming a path inside the temporary folder is made to name the same path under
``dest`` (what the user knows, e.g. ``reports/site/index.html``). Who uses it: the results site
(``report.site``), the importers of published games (``simulate/importing.py``, ``import-bazaar``'s
``--out``). A kill while the block runs leaves a stray ``.<name>.*.tmp`` folder beside
``dest``; a kill between the two renames (microseconds) leaves ``dest`` missing and the earlier
folder as ``.<name>.*.old`` beside it.

Stray folders are swept: the temporary folder's name records its owner (:func:`owner_tag`:
``<pid>-<start>-<boot>-<host>``, the process id, its start time in clock ticks since boot, the
first 8 hex digits of the boot id and 8 of the host name's sha256), and the next
``folder_replaced`` of the same ``dest`` removes every ``.<name>.<owner>.<random>.tmp`` beside it
whose owner is certainly gone (:func:`owner_gone`: another boot of this host, no such process, or
a process of that id started at another time, i.e. the id reused). A live owner's folder (a
concurrent import) is never removed, nor one of another host (a shared filesystem), nor a folder
of another name or of the older naming without an owner (``.<name>.<random>.tmp``: remove those
by hand), nor an ``.old`` folder (it may be the only copy of ``dest``).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from marketarena.core import owners


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
def folder_replaced(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """A new empty folder beside ``dest`` to build in, swapped in as ``dest`` if the block ends
    without an error and removed otherwise, ``dest`` then untouched (see the module docstring).

        with folder_replaced("reports/site") as tmp:
            (tmp / "index.html").write_text(page)
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(dest)
    tmp = _new_folder(dest)
    try:
        yield tmp
        old = None
        if dest.exists() or dest.is_symlink():
            old = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.old"
            os.rename(dest, old)
        try:
            os.rename(tmp, dest)
        except BaseException:
            if old is not None:
                os.rename(old, dest)
            raise
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _name_under(exc, tmp, dest)
        raise
    if old is not None and old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    elif old is not None:
        old.unlink(missing_ok=True)


def _host() -> str:
    return hashlib.sha256(owners.host().encode("utf-8", "replace")).hexdigest()[:8]


#: an owner tag: pid, start time (may be unknown), boot id (may be unknown), host
_TAG = re.compile(r"^([1-9][0-9]{0,9})-([0-9]*)-([0-9a-f]{0,8})-([0-9a-f]{8})$")


def owner_tag(pid: int | None = None) -> str:
    """The process ``pid`` (default: this one) as the owner of a temporary folder (module
    docstring; ``core.owners``)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{owners.start_time(pid)}-{owners.boot_id().replace('-', '')[:8]}-{_host()}"


def owner_gone(tag: str) -> bool:
    """Whether the process an :func:`owner_tag` names certainly no longer exists (an unreadable
    tag or another host's process: assumed alive)."""
    m = _TAG.match(tag)
    if m is None:
        return False
    return owners.gone(int(m.group(1)), m.group(2), m.group(3), same_host=m.group(4) == _host())


def sweep_stale(dest: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary folders of :func:`folder_replaced` beside ``dest`` whose owner is
    gone (module docstring); the ones removed."""
    dest = Path(dest)
    prefix = f".{dest.name}."
    removed = []
    try:
        names = os.listdir(dest.parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        parts = name[len(prefix) : -len(".tmp")].split(".")
        path = dest.parent / name
        if len(parts) == 2 and owner_gone(parts[0]) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _new_folder(dest: Path) -> Path:
    """A new empty folder ``.<name>.<owner>.<random>.tmp`` beside ``dest`` (made with ``mkdir``,
    so with the umask's mode, as ``dest`` would have been; ``mkdtemp`` would make it private)."""
    owner = owner_tag()
    while True:
        path = dest.parent / f".{dest.name}.{owner}.{secrets.token_hex(4)}.tmp"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def _name_under(exc: BaseException, tmp: Path, dest: Path) -> None:
    """Make the ``OSError``s in ``exc``'s chain that name a path inside ``tmp`` name it under
    ``dest`` instead (the temporary folder is gone by the time the message is read)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            for attr in ("filename", "filename2"):
                name = getattr(exc, attr, None)
                if isinstance(name, (str, os.PathLike)):
                    try:
                        rel = Path(name).relative_to(tmp)
                    except ValueError:
                        continue
                    setattr(exc, attr, str(dest / rel))
        exc = exc.__cause__ or exc.__context__
