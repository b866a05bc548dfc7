"""The run's dollar budget: the guard that reserves a request's cost before it is sent.

What is guaranteed (``llm.max_cost_usd``; README "The budget"), in the ledger's own terms:

- **The ledger never passes the limit.** Before every request that is sent (uncached), the guard
  *reserves* an upper bound of its cost and refuses (``BudgetExceeded``) if what is spent, plus what
  is reserved by requests in flight, plus this bound would pass the limit. So at every moment
  spent + reserved <= ``max_cost_usd``, and every way a reservation ends keeps it so: a reservation
  is only ever replaced by a charge of at most its own amount.
- **The bound, and how a call is charged** (at most its bound; an endpoint that claims more trips
  the guard): ``cost.py``.
- **Kills.** With a spend ledger (``ledger.py``) the state is a file shared by worker processes and
  by the runs that resume the instance; the reservations of a process killed with requests in
  flight are settled at their bound, so kill-and-resume cycles never pass the limit either.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from marketarena.core.owners import owner as process_owner
from marketarena.llm.cost import Charge
from marketarena.llm.errors import BudgetExceeded
from marketarena.llm.ledger import SpendLedger, reserved_amount


@dataclass
class Reservation:
    """A request's reserved dollars, held until the call is settled or released."""

    id: str
    amount: float
    alias: str


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

    def __init__(
        self, max_cost_usd: float | None = None, ledger: SpendLedger | None = None
    ) -> None:
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
            return float(sum(reserved_amount(v) for v in s["reserved"].values()))

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
        ops = [
            lambda s, rid=uuid.uuid4().hex, amount=amount, alias=alias: self._reserve(
                s, rid, amount, alias
            )
            for amount, alias in asked
        ]
        outcomes = []
        for queued in self._commit_all(ops):
            if queued.error is not None and not isinstance(queued.error, BudgetExceeded):
                raise queued.error
            outcomes.append(queued.error or queued.result)
        return outcomes

    def _reserve(self, s: dict[str, Any], rid: str, amount: float, alias: str) -> Reservation:
        if self.max_cost_usd is not None:
            if isinstance(s["tripped"], str):  # an overrun
                raise BudgetExceeded(
                    f"the run is stopping: {s['tripped']}",
                    spent_usd=s["spent_usd"],
                    limit_usd=self.max_cost_usd,
                )
            reserved = sum(reserved_amount(v) for v in s["reserved"].values())
            projected = s["spent_usd"] + reserved + amount
            if s["tripped"] or projected > self.max_cost_usd:
                s["tripped"] = True
                raise BudgetExceeded(
                    f"budget max_cost_usd={self.max_cost_usd:.4f} reached: spent "
                    f"{s['spent_usd']:.4f} USD, {reserved:.4f} in flight, and the next call "
                    f"to {alias!r} may cost up to {amount:.4f}; stopping before exceeding it "
                    "(raise llm.max_cost_usd to go on)",
                    spent_usd=s["spent_usd"],
                    limit_usd=self.max_cost_usd,
                )
        s["reserved"][rid] = amount if self.ledger is None else [amount, process_owner()]
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
            s["tripped"] = (
                f"model {reservation.alias!r} reported more tokens than the "
                f"request's upper bound (it claimed {charge.claimed_usd:.4f} USD, "
                f"the bound is {reservation.amount:.4f}); the call was charged the "
                "bound. Check the endpoint's usage and the model's prices"
            )
            s["overruns"].append(
                {
                    "alias": reservation.alias,
                    "reserved_usd": reservation.amount,
                    "charged_usd": usd,
                    "claimed_usd": charge.claimed_usd,
                    "at": time.time(),
                }
            )

    def release(self, reservation: Reservation) -> None:
        self._commit(lambda s: s["reserved"].pop(reservation.id, None))


@dataclass
class _Queued:
    """An operation waiting for its transaction, then its outcome."""

    op: Any
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class _MemoryState:
    """A guard's state without a ledger: its own fields, under its lock."""

    def __init__(self, guard: CostGuard):
        self.guard = guard

    def __enter__(self) -> dict[str, Any]:
        guard = self.guard
        guard._lock.acquire()
        self.state = {
            "spent_usd": guard._spent,
            "reserved": dict(guard._reserved),
            "tripped": guard._tripped,
            "overruns": [],
        }
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
