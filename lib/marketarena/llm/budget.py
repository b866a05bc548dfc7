"""Money: upper bounds of a request's cost, the budget guard, and a ledger that survives the run.

What is guaranteed (``llm.max_cost_usd``, README "Cost, progress and faults"):

- Before every uncached request the guard *reserves* an upper bound of its cost and refuses
  (``BudgetExceeded``) if what is spent, plus what is reserved by requests in flight, plus this
  bound would pass the limit. The bound: prompt tokens at most the UTF-8 bytes of the request's
  messages and response format plus ``MESSAGE_OVERHEAD_TOKENS`` per message (every token of a
  byte-level tokenizer covers at least one byte; the overhead covers the chat template's special
  tokens), completion tokens at most the cap the request sends (``max_tokens``, or
  ``max_completion_tokens`` for OpenAI, which also bounds reasoning tokens).
- After the answer the reservation is replaced by the cost of the ``usage`` the endpoint reports.
  Usage that is missing, negative, not an integer or absurd (above ``ABSURD_FACTOR`` times the bound)
  is not trusted: the call is charged its reserved bound. Usage above the bound but not absurd is
  charged as reported, recorded as an *overrun*, and the guard stops every later call: the budget
  can then be passed by at most what the calls already in flight report beyond their bounds.
- With a :class:`SpendLedger` (``data/llm_spend/<instance>.json``, written by ``simulate``) every
  reservation and every settled cost go through one JSON file under an OS file lock, so worker
  processes share one budget and a resumed run starts from what earlier runs spent, aborted
  episodes included. Delete the file to start counting afresh.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketarena.llm.errors import BudgetExceeded
from marketarena.llm.spec import ModelSpec

MESSAGE_OVERHEAD_TOKENS = 8  # role and separator tokens a chat template adds per message
REQUEST_OVERHEAD_TOKENS = 16  # the assistant prefix and the like, once per request
ABSURD_FACTOR = 10  # reported usage above this multiple of the bound is not trusted


def prompt_token_bound(messages: list[dict[str, Any]], response_format: Any = None) -> int:
    """An upper bound of the prompt tokens of a request (see the module docstring)."""
    text_bytes = sum(len(str(m.get("content") or "").encode("utf-8")) + len(str(m.get("role", "")))
                     for m in messages)
    schema_bytes = 0 if response_format is None else len(
        json.dumps(response_format, separators=(",", ":")).encode("utf-8"))
    return text_bytes + schema_bytes + MESSAGE_OVERHEAD_TOKENS * len(messages) + REQUEST_OVERHEAD_TOKENS


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
    """What a settled call is charged: tokens, dollars, and whether the endpoint's usage was used
    (``trusted``) and exceeded the bound (``overrun_usd`` > 0)."""

    prompt_tokens: int
    completion_tokens: int
    usd: float
    trusted: bool
    overrun_usd: float = 0.0


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def charge_for(spec: ModelSpec, usage: Any, bound: Bound) -> Charge:
    """The charge of a call whose endpoint reported ``usage`` (the response's ``usage`` field)."""
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    absurd = (prompt is not None and prompt > ABSURD_FACTOR * bound.prompt_tokens) or (
        completion is not None and completion > ABSURD_FACTOR * bound.completion_tokens)
    if prompt is None or completion is None or absurd:
        return Charge(bound.prompt_tokens, bound.completion_tokens, bound.usd, trusted=False)
    usd = spec.cost_usd(prompt, completion)
    return Charge(prompt, completion, usd, trusted=True, overrun_usd=max(0.0, usd - bound.usd))


@dataclass
class Reservation:
    id: str
    amount: float
    alias: str


class SpendLedger:
    """The run's spend in a JSON file, shared by processes through ``fcntl.flock``.

    Content: ``spent_usd`` (settled, over every run), ``reserved`` (id -> [amount, pid] of requests
    in flight), ``overruns`` (calls that reported more than their bound) and ``tripped``.
    Reservations of processes that no longer exist are dropped when the ledger is opened.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked() as state:
            state["reserved"] = {k: v for k, v in state["reserved"].items() if _alive(v[1])}
            state["tripped"] = False  # a new run may spend what the limit still allows

    def _locked(self):
        ledger = self

        class _Ctx:
            def __enter__(self):
                # the lock is a file of its own: the ledger itself is replaced on every write, and
                # a lock on a replaced file's old inode would not exclude anyone
                self.fh = open(ledger.path.with_name(ledger.path.name + ".lock"), "a+")
                fcntl.flock(self.fh, fcntl.LOCK_EX)
                try:
                    text = ledger.path.read_text(encoding="utf-8")
                except FileNotFoundError:
                    text = ""
                try:
                    self.state = json.loads(text) if text.strip() else {}
                except ValueError:
                    raise RuntimeError(f"{ledger.path}: the spend ledger is not valid JSON; "
                                       "fix or delete it") from None
                self.state.setdefault("spent_usd", 0.0)
                self.state.setdefault("reserved", {})
                self.state.setdefault("overruns", [])
                self.state.setdefault("tripped", False)
                return self.state

            def __exit__(self, *exc):
                try:  # written even when a refusal raises: it may have tripped the guard
                    tmp = ledger.path.with_name(f".{ledger.path.name}.{os.getpid()}.tmp")
                    tmp.write_text(json.dumps(self.state, indent=1, sort_keys=True), encoding="utf-8")
                    os.replace(tmp, ledger.path)
                finally:
                    fcntl.flock(self.fh, fcntl.LOCK_UN)
                    self.fh.close()

        return _Ctx()

    def read(self) -> dict[str, Any]:
        with self._locked() as state:
            return json.loads(json.dumps(state))


def _alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    return True


class CostGuard:
    """The run's dollar budget, shared by all calls (asyncio- and thread-safe; process-safe with a
    :class:`SpendLedger`). See the module docstring for what it guarantees.

    ``reserve`` refuses with ``BudgetExceeded`` when spent + reserved + the request's bound would
    pass ``max_cost_usd``; once it refused, or once a call overran its bound, it refuses every later
    uncached request (``tripped``), so that concurrent agents cannot slip past a stopping run.
    ``settle`` replaces a reservation by the call's charge; ``release`` drops it (failed request).
    """

    def __init__(self, max_cost_usd: float | None = None, ledger: SpendLedger | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.ledger = ledger
        self._spent = 0.0
        self._reserved: dict[str, float] = {}
        self._tripped = False
        self._lock = threading.Lock()

    # -- state, in memory or in the ledger --------------------------------------------------------
    def _state(self):
        guard = self

        class _Memory:
            def __enter__(self):
                guard._lock.acquire()
                self.state = {"spent_usd": guard._spent, "reserved": dict(guard._reserved),
                              "tripped": guard._tripped, "overruns": []}
                return self.state

            def __exit__(self, *exc):
                guard._spent = self.state["spent_usd"]
                guard._reserved = {k: v for k, v in self.state["reserved"].items()}
                guard._tripped = self.state["tripped"]
                guard._lock.release()

        return _Memory() if self.ledger is None else _LedgerState(self)

    @property
    def spent_usd(self) -> float:
        with self._state() as s:
            return float(s["spent_usd"])

    @property
    def reserved_usd(self) -> float:
        with self._state() as s:
            return float(sum(_amount(v) for v in s["reserved"].values()))

    @property
    def tripped(self) -> bool:
        with self._state() as s:
            return bool(s["tripped"])

    @property
    def remaining_usd(self) -> float | None:
        return None if self.max_cost_usd is None else self.max_cost_usd - self.spent_usd

    # -- the three operations ---------------------------------------------------------------------
    def reserve(self, amount: float, alias: str) -> Reservation:
        rid = uuid.uuid4().hex
        with self._state() as s:
            if self.max_cost_usd is not None:
                reserved = sum(_amount(v) for v in s["reserved"].values())
                projected = s["spent_usd"] + reserved + amount
                if s["tripped"] or projected > self.max_cost_usd:
                    s["tripped"] = True
                    raise BudgetExceeded(
                        f"budget max_cost_usd={self.max_cost_usd:.4f} reached: spent "
                        f"{s['spent_usd']:.4f} USD, {reserved:.4f} in flight, and the next call "
                        f"to {alias!r} may cost up to {amount:.4f}; stopping before exceeding it",
                        spent_usd=s["spent_usd"], limit_usd=self.max_cost_usd)
            s["reserved"][rid] = amount if self.ledger is None else [amount, os.getpid()]
        return Reservation(rid, amount, alias)

    def settle(self, reservation: Reservation, charge: Charge | float) -> None:
        usd = charge.usd if isinstance(charge, Charge) else float(charge)
        with self._state() as s:
            s["reserved"].pop(reservation.id, None)
            s["spent_usd"] += usd
            if isinstance(charge, Charge) and charge.overrun_usd > 0:
                s["tripped"] = True
                s["overruns"].append({"alias": reservation.alias, "reserved_usd": reservation.amount,
                                      "charged_usd": usd, "at": time.time()})

    def release(self, reservation: Reservation) -> None:
        with self._state() as s:
            s["reserved"].pop(reservation.id, None)


def _amount(value: Any) -> float:
    return float(value[0] if isinstance(value, list) else value)


class _LedgerState:
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
