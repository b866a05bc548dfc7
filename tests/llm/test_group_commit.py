"""The budget's group commit (``CostGuard._commit``): operations queued while another thread holds
the ledger go to disk together, each one applied in order and answered on its own."""

from __future__ import annotations

import threading
import time

import pytest

from marketarena.llm.budget import CostGuard
from marketarena.llm.errors import BudgetExceeded
from marketarena.llm.ledger import SpendLedger


def queued_behind_a_transaction(guard: CostGuard, target, n: int) -> None:
    """``n`` threads running ``target``, started while another transaction holds the guard's
    lock, so that all ``n`` operations are queued before any commits; joined."""
    with guard._lock:
        threads = [threading.Thread(target=target) for _ in range(n)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while len(guard._queued) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(guard._queued) == n
    for t in threads:
        t.join()


def test_operations_queued_meanwhile_share_one_transaction(tmp_path):
    guard = CostGuard(10.0, SpendLedger(tmp_path / "spend.json"))
    transactions = []
    state = guard._state

    def counted():
        transactions.append(1)
        return state()

    guard._state = counted
    results, errors = [], []

    def reserve():
        try:
            results.append(guard.reserve(1.0, "m"))
        except BudgetExceeded as err:
            errors.append(err)

    queued_behind_a_transaction(guard, reserve, 5)
    assert len(transactions) == 1 and len(results) == 5 and not errors
    guard._state = state
    ledger = SpendLedger(tmp_path / "spend.json").read()
    assert sorted(ledger["reserved"]) == sorted(r.id for r in results)


@pytest.mark.parametrize("threads", [8, 32])
def test_concurrent_reservations_never_pass_the_limit_and_every_charge_counts(tmp_path, threads):
    """Each call charged its whole bound of 1.0: at most seven fit under 7.5, whatever the
    batching; the rest are refused and every charge is in the ledger."""
    guard = CostGuard(7.5, SpendLedger(tmp_path / "spend.json"))
    granted, refused = [], []
    lock = threading.Lock()

    def one():
        try:
            reservation = guard.reserve(1.0, "m")
        except BudgetExceeded:
            with lock:
                refused.append(1)
            return
        with lock:
            granted.append(reservation)
        guard.settle(reservation, 1.0)

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    guard.flush()  # the settles queued after the last transaction (a client's close does this)
    ledger = SpendLedger(tmp_path / "spend.json").read()
    # a refusal trips the guard, so later ones are refused even after settles free the room
    assert len(granted) == 7 and len(refused) == threads - 7
    assert ledger["reserved"] == {} and ledger["spent_usd"] == pytest.approx(7.0)


def test_a_failed_transaction_fails_every_operation_it_held(tmp_path):
    """No operation of a transaction that failed (a full disk, say) returns as if it were on
    disk, even when the next transaction would succeed."""
    guard = CostGuard(10.0, SpendLedger(tmp_path / "spend.json"))
    state, calls = guard._state, []

    def failing_once():
        calls.append(1)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return state()

    guard._state = failing_once
    outcomes = []

    def reserve():
        try:
            outcomes.append(guard.reserve(1.0, "m"))
        except OSError as err:
            outcomes.append(err)

    queued_behind_a_transaction(guard, reserve, 3)
    assert len(outcomes) == 3 and all(isinstance(o, OSError) for o in outcomes), outcomes
    assert len(calls) == 1  # one transaction, failed for all three


def test_two_ledgers_on_one_file_in_one_process_lose_no_charge(tmp_path):
    """Each ledger keeps its lock file open for its life: two of them on one file (two guards of
    one process, as the main process and a worker's runtime may be) must still exclude each
    other, and the threads of one must not slip past each other on a lock they share."""
    guards = [CostGuard(None, SpendLedger(tmp_path / "spend.json")) for _ in range(2)]

    def spend(guard):
        for _ in range(50):
            guard.settle(guard.reserve(0.25, "m"), 0.125)

    threads = [threading.Thread(target=spend, args=(g,)) for g in guards for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in guards:
        g.flush()
    ledger = SpendLedger(tmp_path / "spend.json").read()
    assert ledger["spent_usd"] == 2 * 4 * 50 * 0.125 and ledger["reserved"] == {}


def test_a_settle_is_written_by_the_next_transaction_and_its_reservation_stands_until_then(
    tmp_path,
):
    """With a ledger, a settle costs no transaction of its own: until the next one writes it, the
    reservation (at least the charge) stands for it, so the ledger never shows less than was
    spent; the next reservation, a read of the guard or ``flush`` writes it."""
    path = tmp_path / "spend.json"
    guard = CostGuard(10.0, SpendLedger(path))
    first = guard.reserve(1.0, "m")
    guard.settle(first, 0.25)
    on_disk = SpendLedger(path).read()
    assert on_disk["spent_usd"] == 0.0 and list(on_disk["reserved"]) == [first.id]
    second = guard.reserve(2.0, "m")  # its transaction applies the queued settle first
    on_disk = SpendLedger(path).read()
    assert on_disk["spent_usd"] == pytest.approx(0.25) and list(on_disk["reserved"]) == [second.id]
    guard.settle(second, 0.5)
    assert guard.spent_usd == pytest.approx(0.75)  # a read writes what is queued
    assert SpendLedger(path).read()["reserved"] == {}


def counting(guard: CostGuard) -> list[int]:
    """The guard's transactions, counted as they open."""
    transactions, state = [], guard._state

    def counted():
        transactions.append(1)
        return state()

    guard._state = counted
    return transactions


def test_reserve_all_is_one_transaction_each_answered_in_order(tmp_path):
    guard = CostGuard(2.5, SpendLedger(tmp_path / "spend.json"))
    transactions = counting(guard)
    outcomes = guard.reserve_all([(1.0, "a"), (1.0, "b"), (1.0, "c"), (0.1, "d")])
    assert len(transactions) == 1
    assert [type(o).__name__ for o in outcomes] == [
        "Reservation",
        "Reservation",
        "BudgetExceeded",
        "BudgetExceeded",
    ]
    assert [o.alias for o in outcomes[:2]] == ["a", "b"]  # the refusal trips the guard: d too
    on_disk = SpendLedger(tmp_path / "spend.json").read()
    assert sorted(on_disk["reserved"]) == sorted(o.id for o in outcomes[:2])


def test_reserve_all_raises_what_the_ledger_raises(tmp_path):
    guard = CostGuard(10.0, SpendLedger(tmp_path / "spend.json"))

    def broken():
        raise OSError(28, "No space left on device")

    guard._state = broken
    with pytest.raises(OSError):
        guard.reserve_all([(1.0, "a"), (1.0, "b")])


def test_the_requests_of_one_loop_turn_reserve_in_one_transaction(tmp_path):
    """``transport._Reservations``: the requests that ask in one turn of the event loop share a
    transaction, made in the loop at the turn's end; one cancelled before its turn ended leaves
    nothing reserved."""
    import asyncio

    from marketarena.llm.transport import _Reservations

    guard = CostGuard(10.0, SpendLedger(tmp_path / "spend.json"))
    transactions = counting(guard)
    batch = _Reservations(guard)

    async def main():
        first = await asyncio.gather(*(batch.reserve(0.5, f"m{i}") for i in range(5)))
        assert len(transactions) == 1 and len({r.id for r in first}) == 5
        kept = asyncio.ensure_future(batch.reserve(0.5, "kept"))
        dropped = asyncio.ensure_future(batch.reserve(0.5, "dropped"))
        await asyncio.sleep(0)  # both asked: the turn's commit is scheduled
        dropped.cancel()
        await asyncio.sleep(0)
        return first, await kept

    first, kept = asyncio.run(main())
    assert len(transactions) == 3  # the second turn's, and the release of the cancelled one
    reserved = SpendLedger(tmp_path / "spend.json").read()["reserved"]
    assert sorted(reserved) == sorted([r.id for r in first] + [kept.id])
