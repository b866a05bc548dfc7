"""Money: upper bounds of a request's cost, the budget guard, and a ledger that survives the run.

What is guaranteed (``llm.max_cost_usd``; README "The budget"), in the ledger's own terms:

- **The ledger never passes the limit.** Before every request that is sent (uncached), the guard
  *reserves* an upper bound of its cost and refuses (``BudgetExceeded``) if what is spent, plus what
  is reserved by requests in flight, plus this bound would pass the limit. So at every moment
  spent + reserved <= ``max_cost_usd``, and every way a reservation ends keeps it so: a reservation
  is only ever replaced by a charge of at most its own amount.
- **The bound.** Prompt tokens at most the UTF-8 bytes of the request's messages and response format
  plus ``MESSAGE_OVERHEAD_TOKENS`` per message (every token of a byte-level tokenizer covers at least
  one byte; the overhead covers the chat template's special tokens); completion tokens at most the
  cap the request sends (``max_tokens``, or ``max_completion_tokens`` for OpenAI, which also bounds
  reasoning tokens); priced at the model's prices, every prompt token at the input price (none
  is assumed to come from the provider's prompt cache).
- **How a request is charged.** An answer is charged the cost of the ``usage`` the endpoint reports.
  Usage that is missing, negative or not an integer is charged the bound. Usage that would cost
  more than the bound is never charged beyond it: the call is charged the bound, recorded as an
  *overrun* (in the ledger's ``overruns``, with what the endpoint claimed) and the guard *trips*:
  with a limit set, every later request of the run is refused and the run stops. So an endpoint that over-reports cannot carry the ledger
  past the limit; what it bills beyond the bound (if its tokenizer really exceeds the bound, or its
  prices are not the configured ones) is outside the ledger, and the overrun record says how much it
  claimed. A request that failed with an HTTP error status (429, 5xx, 4xx) was refused by the
  endpoint and is not charged; one that may have been served but whose answer never came back (a
  timeout, a connection lost after sending, a malformed answer, a call cancelled while in flight) is
  charged its bound.
- **Kills.** With a :class:`SpendLedger` (``data/llm_spend/<instance>.jsonl``, written by
  ``simulate``) every reservation and every charge go through one journal file under an OS file
  lock (each transaction appends the whole state as a line), so worker processes share one budget
  and a resumed run starts from what earlier runs spent, aborted episodes included. A process killed with requests in flight (kill -9, the OOM killer, a CI
  timeout) leaves its reservations in the file; they are *settled at their bound* when the ledger is
  next opened: by any process once the owner is gone (the reservation names its host, boot and the
  process's start time, so a reused pid is not mistaken for the owner), and all of them when the
  opener holds the instance's run lock (``simulate`` does: no process of an earlier run can be
  alive then). A settled reservation is counted in ``spent_usd`` and listed in
  ``settled_in_flight``. So repeated kill-and-resume cycles never spend more than the limit in the
  ledger, and in-flight calls are never forgotten. Delete the file to start counting afresh.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketarena.core.files import write_atomic
from marketarena.llm.caching import cached_tokens
from marketarena.llm.errors import BudgetExceeded, LedgerError
from marketarena.llm.schema import SharedFormat, compact_json_size
from marketarena.llm.spec import ModelSpec

log = logging.getLogger("marketarena.llm")

MESSAGE_OVERHEAD_TOKENS = 8  # role and separator tokens a chat template adds per message
REQUEST_OVERHEAD_TOKENS = 16  # the assistant prefix and the like, once per request


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))  # ASCII: no copy


def prompt_token_bound(messages: list[dict[str, Any]], response_format: Any = None) -> int:
    """An upper bound of the prompt tokens of a request (see the module docstring)."""
    text_bytes = sum(_utf8_len(str(m.get("content") or "")) + len(str(m.get("role", "")))
                     for m in messages)
    return (text_bytes + _schema_bytes(response_format) + MESSAGE_OVERHEAD_TOKENS * len(messages)
            + REQUEST_OVERHEAD_TOKENS)


def _schema_bytes(response_format: Any) -> int:
    """The compact JSON size of ``response_format``, kept with the client's shared ones
    (``schema.SharedFormat``: encoding one took 20 us a request)."""
    if response_format is None:
        return 0
    if isinstance(response_format, SharedFormat):
        return response_format.size
    return compact_json_size(response_format)


@dataclass(frozen=True)
class Bound:
    """The most a request may cost: token bounds and their price."""

    prompt_tokens: int
    completion_tokens: int
    usd: float

    @classmethod
    def of(cls, spec: ModelSpec, messages: list[dict[str, Any]], response_format: Any) -> "Bound":
        prompt, completion = prompt_token_bound(messages, response_format), spec.max_tokens
        return cls(prompt, completion, spec.cost_usd(prompt, completion))


@dataclass(frozen=True)
class Charge:
    """What a settled call is charged: tokens and dollars, whether the endpoint's usage was used as
    reported (``trusted``), and whether it claimed more tokens than the bound (``over_bound``: the
    call is charged the bound, ``claimed_usd`` is what the claim would have cost, and the guard
    trips)."""

    prompt_tokens: int
    completion_tokens: int
    usd: float
    trusted: bool
    over_bound: bool = False
    claimed_usd: float = 0.0
    cached_tokens: int = 0  # of the prompt tokens, served from the provider's prompt cache

    @classmethod
    def bound(cls, bound: Bound) -> "Charge":
        return cls(bound.prompt_tokens, bound.completion_tokens, bound.usd, trusted=False)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def charge_for(spec: ModelSpec, usage: Any, bound: Bound) -> Charge:
    """The charge of a call whose endpoint reported ``usage`` (the response's ``usage`` field): its
    cost as reported, at most the bound's (a claim above it is ``over_bound``); the bound when the
    usage is missing or malformed. The tokens are the reported ones (the bound's when unusable);
    the prompt tokens it says the provider served from its prompt cache (``llm/caching.py``) are
    priced at the model's cached-input price (the bound prices every prompt token in full)."""
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return Charge.bound(bound)
    cached = cached_tokens(usage, prompt)
    claimed = spec.cost_usd(prompt, completion, cached)
    if claimed > bound.usd:
        return Charge(prompt, completion, bound.usd, trusted=False, over_bound=True,
                      claimed_usd=claimed, cached_tokens=cached)
    return Charge(prompt, completion, claimed, trusted=True, cached_tokens=cached)


@dataclass
class Reservation:
    id: str
    amount: float
    alias: str


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
            orphans = {k: v for k, v in state["reserved"].items()
                       if exclusive or _gone(v[1] if isinstance(v, list) else None)}
            if orphans:
                usd = sum(_amount(v) for v in orphans.values())
                state["spent_usd"] += usd
                done = state["settled_in_flight"]
                done["calls"] += len(orphans)
                done["usd"] += usd
                state["reserved"] = {k: v for k, v in state["reserved"].items() if k not in orphans}
                log.warning("%s: %d LLM request(s) were in flight when their run ended; charged at "
                            "their bound, %.4f USD (spent now %.4f USD)", self.path, len(orphans),
                            usd, state["spent_usd"])
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
                raise LedgerError(f"{self.path}: the spend ledger ends with {size - complete} "
                                  "bytes that are not a line of it; fix it, or delete the file to "
                                  "start counting afresh")
            log.warning("%s: dropped %d bytes of a spend ledger line cut short (its process was "
                        "killed while writing it)", self.path, size - complete)
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
        state = _state_of(legacy.read_bytes(), f"{legacy}: the spend ledger is not valid JSON; fix "
                          "it, or delete it to start counting afresh")
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
                view = view[os.write(self._file.fileno(), view):]
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
        state = _state_of(data[begin:end], f"{path}: the spend ledger's last line is not valid "
                          "JSON; fix it, or delete the file to start counting afresh")
        return state, data[begin:end + 1], start + end + 1


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


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), "" if
    unknown: with the pid, it identifies a process even after its pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


_OWNER: tuple[int, list] = (0, [])


def _owner() -> list:
    """This process as a reservation's owner: [host, boot id, pid, start time] (cached per pid)."""
    global _OWNER
    pid = os.getpid()
    if _OWNER[0] != pid:
        _OWNER = (pid, [socket.gethostname(), _boot_id(), pid, _start_time(pid)])
    return _OWNER[1]


def _gone(owner: Any) -> bool:
    """Whether the process that made a reservation certainly no longer exists (a process on
    another host is assumed alive)."""
    if isinstance(owner, int):  # a ledger written before owners were recorded: a bare pid
        owner = [socket.gethostname(), "", owner, ""]
    if not isinstance(owner, list) or len(owner) != 4:
        return True
    host, boot, pid, started = owner
    if host != socket.gethostname():
        return False
    if boot and boot != _boot_id():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, OverflowError):
        pass  # it exists (another user's) or the pid is nonsense
    return bool(started) and _start_time(int(pid)) not in ("", started)


class CostGuard:
    """The run's dollar budget, shared by all calls (asyncio- and thread-safe; process-safe with a
    :class:`SpendLedger`). See the module docstring for what it guarantees.

    ``reserve`` refuses with ``BudgetExceeded`` when spent + reserved + the request's bound would
    pass ``max_cost_usd``; once it refused, or once a call claimed more than its bound, it refuses
    every later uncached request (``tripped``), so that concurrent agents cannot slip past a
    stopping run. ``settle`` replaces a reservation by the call's charge, never more than the
    reservation; ``release`` drops it (a request the endpoint refused).

    The three operations are *group-committed*: each is queued, and whichever thread takes the
    guard's lock next applies every operation queued by then, in order, in one transaction (one
    locked read and one write of the ledger). A reservation and a release are on disk before they
    return, as if each had its own transaction; twenty requests of one decision point cost one or
    two ledger writes instead of twenty (their reservations took 18 ms before the last request
    could leave). With a ledger, a *settle* does not wait for a transaction of its own: it is
    queued and applied by the next one (the next reservation's, a read of the guard, or
    :meth:`flush`, which the client calls when the run ends). Until then the reservation, never
    less than the charge, stands for it in the ledger: every check sees at least what was spent,
    and a process killed meanwhile has the reservation charged at its bound, as for a call in
    flight. So an answer costs the event loop no thread hop and no write of its own.
    """

    def __init__(self, max_cost_usd: float | None = None, ledger: SpendLedger | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.ledger = ledger
        self._spent = 0.0
        self._reserved: dict[str, Any] = {}
        self._tripped: str | bool = False
        self._lock = threading.RLock()  # held by a transaction (re-entered by the group commit)
        self._queued: list[_Queued] = []
        self._queue_lock = threading.Lock()

    # -- state, in memory or in the ledger --------------------------------------------------------
    def _state(self) -> "_MemoryState | _LedgerState":
        return _MemoryState(self) if self.ledger is None else _LedgerState(self)

    def flush(self) -> None:
        """Apply the queued settles now (a transaction; nothing to do when none is queued)."""
        if self._queued:
            self._commit(lambda s: None)

    @property
    def spent_usd(self) -> float:
        self.flush()
        with self._state() as s:
            return float(s["spent_usd"])

    @property
    def reserved_usd(self) -> float:
        self.flush()
        with self._state() as s:
            return float(sum(_amount(v) for v in s["reserved"].values()))

    @property
    def tripped(self) -> bool:
        self.flush()
        with self._state() as s:
            return bool(s["tripped"])

    @property
    def remaining_usd(self) -> float | None:
        return None if self.max_cost_usd is None else self.max_cost_usd - self.spent_usd

    # -- the three operations ---------------------------------------------------------------------
    def _commit(self, op: Any) -> Any:
        """``op(state)`` applied in the next transaction, with every operation queued by then
        (see the class docstring); its result, or its exception raised here."""
        [mine] = self._commit_all([op])
        if mine.error is not None:
            raise mine.error
        return mine.result

    def _commit_all(self, ops: list[Any]) -> list[_Queued]:
        """Each of ``ops`` applied in order in the next transaction (one transaction: they are
        queued together); their outcomes."""
        mine = [_Queued(op) for op in ops]
        with self._queue_lock:
            self._queued.extend(mine)
        with self._lock:
            if not mine[-1].done:  # nobody took them yet: this thread commits everything queued
                with self._queue_lock:
                    batch, self._queued = self._queued, []
                try:
                    with self._state() as s:
                        for queued in batch:
                            try:
                                queued.result = queued.op(s)
                            except Exception as err:  # noqa: BLE001 - handed to its own caller
                                queued.error = err
                except BaseException as err:  # the ledger unreadable or unwritable: none is done
                    for queued in batch:
                        queued.error = err
                    raise
                finally:
                    for queued in batch:
                        queued.done = True
        return mine

    def reserve(self, amount: float, alias: str) -> Reservation:
        rid = uuid.uuid4().hex
        return self._commit(lambda s: self._reserve(s, rid, amount, alias))

    def reserve_all(self, asked: list[tuple[float, str]]) -> list[Reservation | BudgetExceeded]:
        """Reservations for several requests ((amount, alias) each) in one transaction: each its
        ``Reservation``, or the ``BudgetExceeded`` that refused it, in order (a budget refuses
        every later one too). A ledger that cannot be read or written raises."""
        ops = [lambda s, rid=uuid.uuid4().hex, amount=amount, alias=alias:
               self._reserve(s, rid, amount, alias) for amount, alias in asked]
        outcomes = []
        for queued in self._commit_all(ops):
            if queued.error is not None and not isinstance(queued.error, BudgetExceeded):
                raise queued.error
            outcomes.append(queued.error or queued.result)
        return outcomes

    def _reserve(self, s: dict[str, Any], rid: str, amount: float, alias: str) -> Reservation:
        if self.max_cost_usd is not None:
            if isinstance(s["tripped"], str):  # an overrun
                raise BudgetExceeded(f"the run is stopping: {s['tripped']}",
                                     spent_usd=s["spent_usd"], limit_usd=self.max_cost_usd)
            reserved = sum(_amount(v) for v in s["reserved"].values())
            projected = s["spent_usd"] + reserved + amount
            if s["tripped"] or projected > self.max_cost_usd:
                s["tripped"] = True
                raise BudgetExceeded(
                    f"budget max_cost_usd={self.max_cost_usd:.4f} reached: spent "
                    f"{s['spent_usd']:.4f} USD, {reserved:.4f} in flight, and the next call "
                    f"to {alias!r} may cost up to {amount:.4f}; stopping before exceeding it "
                    "(raise llm.max_cost_usd to go on)",
                    spent_usd=s["spent_usd"], limit_usd=self.max_cost_usd)
        s["reserved"][rid] = amount if self.ledger is None else [amount, _owner()]
        return Reservation(rid, amount, alias)

    def settle(self, reservation: Reservation, charge: Charge | float) -> None:
        """Replace the reservation by the call's charge, at most the reserved amount: in memory
        now; with a ledger, in its next transaction (see the class docstring)."""
        op = lambda s: self._settle(s, reservation, charge)  # noqa: E731
        if self.ledger is None:
            self._commit(op)
        else:
            with self._queue_lock:
                self._queued.append(_Queued(op))

    @staticmethod
    def _settle(s: dict[str, Any], reservation: Reservation, charge: Charge | float) -> None:
        usd = min(charge.usd if isinstance(charge, Charge) else float(charge), reservation.amount)
        s["reserved"].pop(reservation.id, None)
        s["spent_usd"] += usd
        if isinstance(charge, Charge) and charge.over_bound:
            s["tripped"] = (f"model {reservation.alias!r} reported more tokens than the "
                            f"request's upper bound (it claimed {charge.claimed_usd:.4f} USD, "
                            f"the bound is {reservation.amount:.4f}); the call was charged the "
                            "bound. Check the endpoint's usage and the model's prices")
            s["overruns"].append({"alias": reservation.alias, "reserved_usd": reservation.amount,
                                  "charged_usd": usd, "claimed_usd": charge.claimed_usd,
                                  "at": time.time()})

    def release(self, reservation: Reservation) -> None:
        self._commit(lambda s: s["reserved"].pop(reservation.id, None))


@dataclass
class _Queued:
    """An operation waiting for its transaction, then its outcome."""

    op: Any
    done: bool = False
    result: Any = None
    error: BaseException | None = None


def _amount(value: Any) -> float:
    return float(value[0] if isinstance(value, list) else value)


class _MemoryState:
    """A guard's state without a ledger: its own fields, under its lock."""

    def __init__(self, guard: CostGuard):
        self.guard = guard

    def __enter__(self) -> dict[str, Any]:
        guard = self.guard
        guard._lock.acquire()
        self.state = {"spent_usd": guard._spent, "reserved": dict(guard._reserved),
                      "tripped": guard._tripped, "overruns": []}
        return self.state

    def __exit__(self, *exc: Any) -> None:
        guard = self.guard
        guard._spent = self.state["spent_usd"]
        guard._reserved = dict(self.state["reserved"])
        guard._tripped = self.state["tripped"]
        guard._lock.release()


class _LedgerState:
    """A guard's state in its ledger: a ledger transaction, under the guard's lock."""

    def __init__(self, guard: CostGuard):
        self.guard = guard

    def __enter__(self):
        self.guard._lock.acquire()
        try:
            self.ctx = self.guard.ledger._locked()
            return self.ctx.__enter__()
        except BaseException:
            self.guard._lock.release()
            raise

    def __exit__(self, *exc):
        try:
            self.ctx.__exit__(*exc)
        finally:
            self.guard._lock.release()
