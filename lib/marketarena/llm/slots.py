"""An endpoint's ``max_concurrency``: slots taken by requests, least-advanced episode first, shared
by the worker processes of one run.

**Who goes first.** When more requests wait than the endpoint takes, the next free slot goes to
the request of the least-advanced episode (the smallest (step, round) of its decision point;
first come, first served among equals): the episodes that ask most do not wait behind ones
about to end. crash's LLM firm is asked up to 30 times an episode, how many unknown in advance;
its default grid's 60 LLM episodes (1,490 requests, 200 ms endpoint, 32 slots, 9.31 s at best),
replayed from their logged requests with no time of ours and every episode started at once
(``benchmarks/bench_llm_speed.py``'s scheduling bound), end after 10.2 s least advanced first,
10.2 s in arrival order, 12.2-12.4 s the most advanced or plan order first (by how ties are
broken), 10.0 s knowing the lengths (longest first). Measured in the run, arrival order took
12.4-14.1 s against 12.3-12.8 s, the most advanced first 14.2-15.0 s against 12.7-13.6 s.
Ordering never changes an episode's logs.

**Shared by processes.** A run's local workers (``simulate._play_in_workers``) once split every
endpoint's ``max_concurrency`` between them, a fixed share each; near the end of a run one worker
held more episodes than its share of slots while the other's idled (one crash run ended 2.3 s
after its other worker). Now the slots are one count for the whole run, a ``multiprocessing``
semaphore created by the main process and handed to each worker when it starts. A slot is taken
at once when one is free; otherwise the request waits in its process's queue and one thread per
process, only while requests wait, blocks on the semaphore and hands each slot it gets to the
first of them. A worker killed while holding slots does not give them back, but its run ends
with it (the main process stops every worker when one dies). Ray tasks, on other machines,
cannot share a semaphore: they keep a fixed share each (:class:`Slots` of their share).

**Least advanced first across processes.** A semaphore knows no order: freed slots went to the
workers' waiting threads in turn, so a worker holding more episodes than the other moved them on
more slowly, and the run ended when its last episode did (crash's benchmark: one worker with 32
LLM episodes, the other with 28, finished 0.4 s apart). Each process therefore posts the
(step, round) of its least advanced waiting request on a shared board (``board``: two numbers per
process, ``inf`` when none waits; this process's place is ``seat``); a process whose waiting
request is further on than another's lets a slot it took go back to the semaphore for the other
(at most :data:`_GIVE_WAY` times in a row, so that a board read a moment late never idles a slot
for more than a few milliseconds), and takes a free slot at once only when no other process waits
with a less advanced request.

A request cancelled while waiting leaves the queue; a slot handed to it too late is passed on.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import time
from typing import Any

#: how long the waiting thread blocks at a time before it looks whether anyone still waits
_POLL_S = 0.05
#: a slot handed back for a less advanced request of another process: how long this process's
#: waiting thread then lets the other take it, and how many times in a row it does so at most
_GIVE_WAY_S = 0.001
_GIVE_WAY = 3
_NOBODY = (math.inf, math.inf)


class Slots:
    """``size`` slots in one event loop: ``await acquire(priority)``, ``release()``; the waiting
    request with the smallest ``priority`` (then the earliest) gets the next free slot."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._waiters: list[tuple[Any, int, asyncio.Future[None]]] = []  # a heap
        self._arrivals = itertools.count()

    async def acquire(self, priority: Any = ()) -> None:
        if not self._waiters and self._take_now(priority):
            return
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrivals), waiter))
        self._queue_changed()
        self._waiting()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot as it was cancelled
                self.release()
            else:  # still queued: leaves the queue
                self._waiters = [w for w in self._waiters if w[2] is not waiter]
                heapq.heapify(self._waiters)
                self._queue_changed()
            raise

    def release(self) -> None:
        if not self._give_to_waiter():
            self._free += 1

    def _take_now(self, priority: Any = ()) -> bool:
        if self._free > 0:
            self._free -= 1
            return True
        return False

    def _waiting(self) -> None:
        """A request joined the queue (the shared kind starts its waiting thread)."""

    def _queue_changed(self) -> None:
        """The queue changed (the shared kind posts its least advanced request)."""

    def _give_to_waiter(self) -> bool:
        """The slot to the first request still waiting; False if none waits."""
        while self._waiters:
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                self._queue_changed()
                waiter.set_result(None)
                return True
        self._queue_changed()
        return False


class SharedSlots(Slots):
    """The slots of the process-shared ``semaphore`` (a ``multiprocessing`` ``BoundedSemaphore``
    of ``size`` slots), in one event loop of one of the processes. ``board``: the processes'
    least advanced waiting requests (a shared array of two numbers per process, or None: no
    order between processes), ``seat``: this process's place on it."""

    def __init__(self, semaphore: Any, size: int, board: Any = None, seat: int = 0) -> None:
        super().__init__(size)
        self.semaphore = semaphore
        self.board, self.seat = board, seat
        self._lock = threading.Lock()  # guards the two below, shared with the waiting thread
        self._thread_running = False
        self._handing = 0  # slots the thread took whose hand-over has not run yet
        self._given = 0  # slots the thread let go in a row (``_give_way``)
        self._queue_changed()

    def _take_now(self, priority: Any = ()) -> bool:
        return not self._behind(_rank(priority)) and self.semaphore.acquire(False)

    def _queue_changed(self) -> None:
        if self.board is not None:
            self.board[2 * self.seat], self.board[2 * self.seat + 1] = (
                _rank(self._waiters[0][0]) if self._waiters else _NOBODY
            )

    def _posted(self, seat: int) -> tuple[float, float]:
        """The least advanced waiting request ``seat``'s process posts."""
        return self.board[2 * seat], self.board[2 * seat + 1]

    def _behind(self, mine: tuple[float, float]) -> bool:
        """Whether another process posts a waiting request less advanced than ``mine``."""
        if self.board is None:
            return False
        return any(self._posted(j) < mine for j in range(len(self.board) // 2) if j != self.seat)

    def _give_way(self) -> bool:
        """In the waiting thread, holding a slot it just took: hand it back for another process's
        less advanced request (not more than :data:`_GIVE_WAY` times in a row)."""
        if self.board is None or self._given >= _GIVE_WAY:
            self._given = 0
            return False
        if self._behind(self._posted(self.seat)):
            self._given += 1
            return True
        self._given = 0
        return False

    def release(self) -> None:  # back to the run: any process's request may take it
        self.semaphore.release()

    def _waiting(self) -> None:
        with self._lock:
            if not self._thread_running:
                self._thread_running = True
                threading.Thread(
                    target=self._wait_for_slots,
                    args=(asyncio.get_running_loop(),),
                    daemon=True,
                    name="marketarena-slots",
                ).start()

    def _wait_for_slots(self, loop: asyncio.AbstractEventLoop) -> None:
        """The waiting thread: take slots as they free up, one at a time, while more requests of
        this process wait than slots are on their way to them; then end (the next request to wait
        starts another). ``_waiters`` is read here, changed on the loop only."""
        while True:
            with self._lock:
                if len(self._waiters) <= self._handing or loop.is_closed():
                    self._thread_running = False
                    return
            if not self.semaphore.acquire(True, _POLL_S):
                continue
            if self._give_way():
                self.semaphore.release()
                time.sleep(_GIVE_WAY_S)
                continue
            with self._lock:
                self._handing += 1
            try:
                loop.call_soon_threadsafe(self._hand_over)
            except RuntimeError:  # the loop closed meanwhile
                self.semaphore.release()
                with self._lock:
                    self._handing -= 1

    def _hand_over(self) -> None:
        """On the loop: the slot the thread took goes to the first request still waiting, or
        back to the semaphore."""
        with self._lock:
            self._handing -= 1
        if not self._give_to_waiter():
            self.semaphore.release()


def _rank(priority: Any) -> tuple[float, float]:
    """A request's priority (``client.progress_of``: (step, round), or () for none) as the two
    numbers the board holds; no priority ranks first, as it does in the queue."""
    padded = tuple(float(v) for v in priority[:2]) + (-math.inf, -math.inf)
    return padded[0], padded[1]
