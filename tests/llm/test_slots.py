"""An endpoint's slots (``llm.slots``): the least advanced episode's request first, cancellations
that take no slot, and one count shared by processes."""

from __future__ import annotations

import asyncio
import multiprocessing

from marketarena.llm.slots import SharedSlots, Slots


async def queued(slots, priorities: list[tuple], order: list[int]) -> list[asyncio.Task]:
    """One task per priority, queued in list order, each noting its index once it holds a slot."""

    async def request(i: int, priority: tuple) -> None:
        await slots.acquire(priority)
        order.append(i)

    tasks = []
    for i, priority in enumerate(priorities):
        tasks.append(asyncio.create_task(request(i, priority)))
        await asyncio.sleep(0)  # queued in this order
    return tasks


def test_the_least_advanced_episodes_request_gets_the_next_slot():
    async def main():
        slots, order = Slots(1), []
        await slots.acquire((0, 0))  # held
        tasks = await queued(slots, [(5, 0), (1, 1), (3, 0), (1, 0), (1, 1)], order)
        for _ in tasks:
            slots.release()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return order

    # (step, round) first, then arrival: step 1 round 0, step 1 round 1 (twice, in arrival order),
    # step 3, step 5
    assert asyncio.run(main()) == [3, 1, 4, 2, 0]


def test_a_request_cancelled_while_waiting_takes_no_slot():
    async def main():
        slots, order = Slots(2), []
        await slots.acquire()
        await slots.acquire()
        tasks = await queued(slots, [(0,), (1,), (2,)], order)
        tasks[0].cancel()  # still waiting: leaves the queue
        slots.release()  # handed to request 1 ...
        tasks[1].cancel()  # ... which is cancelled before it could run: passed on to request 2
        await asyncio.gather(*tasks, return_exceptions=True)
        assert order == [2] and [t.cancelled() for t in tasks] == [True, True, False]
        slots.release()
        slots.release()  # every slot back: two taken at once, the third waits
        await slots.acquire()
        await slots.acquire()
        third = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0.05)
        assert not third.done()
        slots.release()
        await asyncio.wait_for(third, 5)

    asyncio.run(main())


def _hold_both(semaphore, held, go) -> None:
    """In another process: take both slots, say so, give them back one at a time when told."""
    semaphore.acquire()
    semaphore.acquire()
    held.set()
    go.wait(30)
    semaphore.release()
    go.clear()
    semaphore.release()


def test_slots_are_one_count_for_every_process_of_a_run():
    context = multiprocessing.get_context("fork")  # the child only touches the semaphore
    semaphore, held, go = context.BoundedSemaphore(2), context.Event(), context.Event()
    child = context.Process(target=_hold_both, args=(semaphore, held, go))
    child.start()
    try:
        assert held.wait(30)

        async def main():
            slots = SharedSlots(semaphore, 2)
            first = asyncio.create_task(slots.acquire((0,)))
            second = asyncio.create_task(slots.acquire((1,)))
            await asyncio.sleep(0.2)
            assert not first.done() and not second.done()  # the other process holds both
            go.set()  # it gives them back: both reach this process's requests
            await asyncio.wait_for(asyncio.gather(first, second), 30)
            assert not semaphore.acquire(False)  # both slots are this process's now
            slots.release()
            slots.release()

        asyncio.run(main())
        child.join(30)
        assert (
            semaphore.acquire(False) and semaphore.acquire(False) and not semaphore.acquire(False)
        )
    finally:
        if child.is_alive():
            child.kill()


def test_a_freed_slot_goes_to_the_least_advanced_request_of_any_process(monkeypatch):
    """The board: a slot freed while two processes wait goes to the less advanced request, not
    to whichever process's waiting thread the semaphore wakes (here the one that waited longer,
    at step 9, against a request at step 1 of the process that freed it). Two event loops in two
    threads stand for the two processes; giving way is not capped, so the order is certain."""
    import math
    import threading

    from marketarena.llm import slots as slots_module

    monkeypatch.setattr(slots_module, "_GIVE_WAY", 10_000)
    context = multiprocessing.get_context("fork")
    semaphore = context.BoundedSemaphore(1)
    board = context.Array("d", [math.inf] * 4, lock=False)
    served: list[str] = []

    def other_process() -> None:
        async def main():
            slots = SharedSlots(semaphore, 1, board, seat=1)
            await slots.acquire((9, 0))
            served.append("step 9")
            slots.release()

        asyncio.run(main())

    async def main():
        slots = SharedSlots(semaphore, 1, board, seat=0)
        await slots.acquire((0, 0))  # the only slot
        other = threading.Thread(target=other_process)
        other.start()
        while board[2] != 9:  # the other process waits at step 9
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.1)  # its waiting thread blocks on the semaphore
        mine = asyncio.create_task(slots.acquire((1, 0)))
        await asyncio.sleep(0.05)
        assert (board[0], board[1]) == (1.0, 0.0) and not mine.done()
        slots.release()
        await asyncio.wait_for(mine, 10)
        served.append("step 1")
        slots.release()
        await asyncio.to_thread(other.join, 10)

    asyncio.run(main())
    assert served == ["step 1", "step 9"]
    assert list(board) == [math.inf] * 4  # nobody waits any more
