"""The spend ledger: the run's spend in a file that outlives the process, shared by processes.

With a :class:`SpendLedger` (``data/llm_spend/<instance>.jsonl``, written by ``simulate``) every
reservation and every charge of the budget guard (``budget.py``) go through one journal file under
an OS file lock (each transaction appends the whole state as a line), so worker processes share one
budget and a resumed run starts from what earlier runs spent, aborted episodes included.

Kills: a process killed with requests in flight (kill -9, the OOM killer, a CI timeout) leaves its
reservations in the file; they are *settled at their bound* when the ledger is next opened: by any
process once the owner is gone (the reservation names its host, boot and the process's start time,
so a reused pid is not mistaken for the owner: ``core/owners.py``), and all of them when the
opener holds the instance's run lock (``simulate`` does: no process of an earlier run can be alive
then). A settled reservation is counted in ``spent_usd`` and listed in ``settled_in_flight``. So
repeated kill-and-resume cycles never spend more than the limit in the ledger, and in-flight calls
are never forgotten. Delete the file to start counting afresh.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from marketarena.core.files import write_atomic
from marketarena.core.owners import owner_gone
from marketarena.llm.errors import LedgerError

log = logging.getLogger("marketarena.llm")

#: the journal is rewritten to its last line once it would pass this size
COMPACT_AT_BYTES = 1 << 20


class SpendLedger:
    """The run's spend in a journal file, shared by processes through ``fcntl.flock``.

    Content (the state): ``spent_usd`` (charged, over every run), ``reserved`` (id -> [amount,
    owner] of requests in flight; the owner is [host, boot id, pid, process start time]),
    ``overruns`` (calls whose endpoint claimed more than their bound), ``settled_in_flight`` (calls
    and dollars of reservations settled at their bound after their process died) and ``tripped``
    (why the run stopped, or false).

    The file holds JSON lines, each the whole state after one transaction: the state is the last
    complete line (:func:`read_ledger` reads it from outside, without the lock). A transaction,
    under the lock, opens the journal, appends one line and closes it: no file is created and none
    replaced. The file written aside and renamed over the old one, as before, made every
    transaction create a file and replace another: with twenty requests in flight a transaction
    took about 0.5 ms on ext4, 0.14 ms now (``benchmarks/bench_ledger.py``), and in crash's LLM
    benchmark on one worker the creates and renames held the event loop 1.2 s of the run's 11.7 s.

    What was written stays as safe as a rename made it against a killed process (neither is synced
    against a power cut). A line is appended whole or, if its process is killed while writing it,
    cut short, without a newline. The next transaction drops such a tail (truncates it, under the
    lock; a tail that does not begin as every line does, with ``{``, is not ours: refused, not
    dropped) and the state is the line before it. The transaction killed had not returned, so no
    request it reserved for had been sent, and the settles it held still have their reservations
    in the file, charged at their bound once the owner is gone. Past ``COMPACT_AT_BYTES`` the
    journal is rewritten to its last line (a file written aside and renamed over it; every process
    notices the new file at its next transaction). A process keeps the state it last read or wrote
    with its line, and parses the journal again only when the journal no longer ends with that
    line (another process wrote).

    Opening the ledger settles the reservations of processes that are gone at their bound; with
    ``exclusive=True`` (the caller holds the instance's run lock, so no process of an earlier run is
    alive) it settles every reservation left and clears ``tripped`` (a new run may spend what the
    limit still allows). A ledger kept by an earlier version, one JSON document at the same path
    with the suffix ``.json`` (the journal's is ``.jsonl``), is carried over into an empty journal
    and then removed.
    """

    def __init__(self, path: str | os.PathLike[str], exclusive: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._lock_file: tuple[int, Any] | None = None  # (pid, open lock file)
        self._known: tuple[dict[str, Any], bytes] | None = None  # (state, its line) last seen
        self._file: Any = None  # the journal, open during a transaction
        self._size, self._line = 0, b""  # its size and last line once loaded (in a transaction)
        self._legacy: Path | None = None  # an earlier version's ledger being carried over
        self._threads = threading.Lock()  # one transaction of this object at a time
        with self._locked() as state:
            orphans = {
                k: v
                for k, v in state["reserved"].items()
                if exclusive or owner_gone(v[1] if isinstance(v, list) else None)
            }
            if orphans:
                usd = sum(reserved_amount(v) for v in orphans.values())
                state["spent_usd"] += usd
                done = state["settled_in_flight"]
                done["calls"] += len(orphans)
                done["usd"] += usd
                state["reserved"] = {k: v for k, v in state["reserved"].items() if k not in orphans}
                log.warning(
                    "%s: %d LLM request(s) were in flight when their run ended; charged at "
                    "their bound, %.4f USD (spent now %.4f USD)",
                    self.path,
                    len(orphans),
                    usd,
                    state["spent_usd"],
                )
            if exclusive:
                state["tripped"] = False

    def _locked(self) -> "_Transaction":
        """``with ledger._locked() as state``: the state under the lock, appended on the way out."""
        return _Transaction(self)

    def _lock_handle(self):
        """The lock file, opened once per process and kept open (an ``open`` per transaction was a
        quarter of its cost). The lock is a file of its own: the journal is replaced when it is
        compacted, and a lock on a replaced file's old inode would not exclude anyone. Reopened in a
        forked child: a lock on a file description shared with the parent would not exclude it."""
        if self._lock_file is None or self._lock_file[0] != os.getpid():
            fh = open(self._lock_path, "a+")  # noqa: SIM115 - closed with this object
            weakref.finalize(self, fh.close)
            self._lock_file = (os.getpid(), fh)
        return self._lock_file[1]

    def _load(self) -> dict[str, Any]:
        """The state (in a transaction): the one this object last read or wrote if the journal
        still ends with its line, else the journal's last complete line (a tail cut short is
        truncated first). The journal is opened anew by every transaction and closed at its end:
        on NFS an open is what makes the client check what it cached (close-to-open), and the close
        is what sends the line to the server."""
        self._file = f = open(self.path, "a+b", buffering=0)  # noqa: SIM115 - closed by _close
        size = os.fstat(f.fileno()).st_size
        if self._known is not None and _ends_with(f.fileno(), size, self._known[1]):
            self._size, self._line = size, self._known[1]
            return self._known[0]
        self._known = None
        state, line, complete = _last_state(f.fileno(), size, self.path)
        if complete < size:
            if os.pread(f.fileno(), 1, complete) != b"{":
                raise LedgerError(
                    f"{self.path}: the spend ledger ends with {size - complete} "
                    "bytes that are not a line of it; fix it, or delete the file to "
                    "start counting afresh"
                )
            log.warning(
                "%s: dropped %d bytes of a spend ledger line cut short (its process was "
                "killed while writing it)",
                self.path,
                size - complete,
            )
            os.ftruncate(f.fileno(), complete)
        self._size, self._line = complete, line
        if state is None:
            state = self._carried_over()
        else:  # a transaction that changes nothing leaves it as read
            self._known = (state, line)
        state.setdefault("spent_usd", 0.0)
        state.setdefault("reserved", {})
        state.setdefault("overruns", [])
        state.setdefault("settled_in_flight", {"calls": 0, "usd": 0.0})
        state.setdefault("tripped", False)
        return state

    def _close(self) -> None:
        """The transaction's journal closed (on NFS: its line sent to the server)."""
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def _carried_over(self) -> dict[str, Any]:
        """The state of an earlier version's ledger (``<name>.json`` beside a ``.jsonl`` journal),
        or a new one."""
        legacy = self.path.with_suffix(".json")
        if self.path.suffix != ".jsonl" or not legacy.is_file():
            return {}
        state = _state_of(
            legacy.read_bytes(),
            f"{legacy}: the spend ledger is not valid JSON; fix "
            "it, or delete it to start counting afresh",
        )
        self._legacy = legacy
        return state

    def _append(self, state: dict[str, Any]) -> None:
        """``state`` as the journal's new last line (under the lock), unless it is the last line
        already (a transaction that changed nothing: a read)."""
        line = (_dumps(state) + "\n").encode("utf-8")
        if line == self._line and self._legacy is None:
            return
        self._known = None  # until the line is written whole
        if self._size + len(line) > COMPACT_AT_BYTES:
            write_atomic(self.path, line)
        else:
            view = memoryview(line)
            while view:
                view = view[os.write(self._file.fileno(), view) :]
        self._known = (state, line)
        if self._legacy is not None:  # carried over: the journal has it now
            self._legacy.unlink(missing_ok=True)
            self._legacy = None

    def read(self) -> dict[str, Any]:
        with self._locked() as state:
            return json.loads(json.dumps(state))


class _Transaction:
    """One transaction of a :class:`SpendLedger` (its ``_locked()``)."""

    __slots__ = ("ledger", "fh", "state")

    def __init__(self, ledger: SpendLedger):
        self.ledger = ledger

    def __enter__(self) -> dict[str, Any]:
        ledger = self.ledger
        ledger._threads.acquire()  # a flock does not exclude threads sharing its file
        try:
            self.fh = ledger._lock_handle()
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        except BaseException:
            ledger._threads.release()
            raise
        try:
            self.state = ledger._load()
        except BaseException:
            ledger._close()
            self._unlock()
            raise
        return self.state

    def __exit__(self, *exc: Any) -> None:
        try:  # written even when a refusal raises: it may have tripped the guard
            self.ledger._append(self.state)
        finally:
            try:
                self.ledger._close()
            finally:
                self._unlock()

    def _unlock(self) -> None:
        try:
            fcntl.flock(self.fh, fcntl.LOCK_UN)
        finally:
            self.ledger._threads.release()


def read_ledger(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What the spend ledger at ``path`` holds now (its last complete line; ``{}`` for none), read
    without its lock and without settling anything: a look from outside (a line being appended
    meanwhile is not complete yet, so the state before it is read)."""
    try:
        with open(path, "rb") as f:
            state, _, _ = _last_state(f.fileno(), os.fstat(f.fileno()).st_size, Path(path))
    except FileNotFoundError:
        return {}
    return state or {}


def _ends_with(fd: int, size: int, line: bytes) -> bool:
    """The journal (``size`` bytes) ends with ``line`` as a whole line: then its state is the
    state that line holds."""
    if size == len(line):
        return os.pread(fd, size, 0) == line
    return size > len(line) and os.pread(fd, len(line) + 1, size - len(line) - 1) == b"\n" + line


def _last_state(fd: int, size: int, path: Path) -> tuple[dict[str, Any] | None, bytes, int]:
    """(The state on the journal's last complete line, None if it has none; that line with its
    newline; the bytes up to its end), reading back from the end of the file."""
    chunk = 1 << 14
    while True:
        start = max(0, size - chunk)
        data = os.pread(fd, size - start, start)
        end = data.rfind(b"\n")
        begin = data.rfind(b"\n", 0, end) + 1 if end > 0 else 0
        if start > 0 and (end < 0 or begin == 0):  # the last complete line began further back
            chunk *= 4
            continue
        if end < 0:
            return None, b"", 0
        state = _state_of(
            data[begin:end],
            f"{path}: the spend ledger's last line is not valid "
            "JSON; fix it, or delete the file to start counting afresh",
        )
        return state, data[begin : end + 1], start + end + 1


def _state_of(data: bytes, error: str) -> dict[str, Any]:
    """A ledger state (a JSON object) from ``data``; ``LedgerError(error)`` if it is not one."""
    try:
        state = json.loads(data)
    except ValueError:
        state = None
    if not isinstance(state, dict):
        raise LedgerError(error) from None
    return state


def _dumps(state: dict[str, Any]) -> str:
    """One journal line: the state as compact JSON, keys sorted (``json``'s C encoder: with an
    indent it runs the pure-Python one)."""
    return json.dumps(state, sort_keys=True, separators=(",", ":"))


def reserved_amount(value: Any) -> float:
    """The dollars of one entry of a state's ``reserved``: ``[amount, owner]`` in a ledger, a bare
    amount in a guard's memory."""
    return float(value[0] if isinstance(value, list) else value)
