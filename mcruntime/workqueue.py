"""A work queue with client-go's semantics:

- an item queued several times is stored once (dirty set);
- an item is handed to one worker at a time (processing set); added again while it is
  processed, it is queued once more when that worker calls `done`;
- `add_after` delays an add (the earliest pending time wins); `add_rate_limited` delays
  by the rate limiter (per-item exponential backoff plus an overall bucket); `forget`
  resets the item's backoff;
- `shutdown` refuses new items and wakes every `get`, which keeps handing out what is
  already queued and then raises `QueueShutDown`; `shutdown_with_drain` also waits until
  in-flight items are done.

Delays are served without a timer task: `get` sleeps until the earliest delayed item is
due or something changes, so there is nothing to leak when the queue is dropped.

A queue may also wait its turn `behind` another (a priority between controllers, which
client-go leaves to the caller): it hands out nothing until the other has handed out what
was ready in it when the wait began, or `within` seconds have passed. Counted in items, so
a stream of new work in the other never starves this one; bounded in time, so neither do
the other's workers stuck on a server that does not answer."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import anyio

from .metrics import RuntimeMetrics, default_metrics
from .ratelimiter import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """`get` on a queue that is shut down and empty."""


class WorkQueue(Generic[T]):
    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter[T] | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter[T] = rate_limiter or default_controller_rate_limiter()
        self.metrics = metrics or default_metrics()
        self._attrs = {"name": name}
        # the per-item instruments, bound to this queue's attributes once (see `Tally.bound`)
        self._count_add = self.metrics.queue_adds.bound(self._attrs)
        self._depth = self.metrics.queue_depth.bound(self._attrs)
        self._waited = self.metrics.queue_wait.bound(self._attrs)
        self._worked = self.metrics.queue_work.bound(self._attrs)
        self._clock = clock
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._queued_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._waiting: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        # one future per waiting getter, woken one per change (client-go's cond.Signal), not
        # every idle worker per add; made only when a getter is about to wait, so a burst of
        # adds while every worker is busy (a cold start's LIST) creates none per add. Its
        # result: True when woken, False when the getter's own time ran out (see `_wait`)
        self._getters: deque[asyncio.Future[bool]] = deque()
        # the getters waiting with a timer, and when (queue clock) it fires: see `_timed_by`
        self._deadlines: dict[asyncio.Future[bool], float] = {}
        self._shutting_down = False
        self._drained = anyio.Event()
        # how many items `get` has handed out, and the queues waiting behind this one: (the
        # count at which a waiter's turn comes, tie-breaker, its future), earliest first.
        # Bare futures, as the getters': a worker behind another queue waits once per item
        self._handed_out = 0
        self._turns: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._behind: set[asyncio.Future[bool]] = set()  # this queue's own waits, woken by its shutdown

    # ------------------------------------------------------------------ state
    def __len__(self) -> int:
        self._promote()
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> frozenset[T]:
        return frozenset(self._processing)

    @property
    def waiting(self) -> int:
        """Items whose delayed add is not due yet."""
        return len(self._ready_at)

    def _notify(self) -> None:
        """Wake one waiting getter: it takes what changed, or decides again when to look.
        (A getter whose time ran out, or that was cancelled, is done already: the next one.)"""
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(True)
                return

    def _notify_all(self) -> None:
        getters, self._getters = self._getters, deque()
        for getter in getters:
            if not getter.done():
                getter.set_result(True)

    # ------------------------------------------------------------------ adding
    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._count_add(1)
        self._dirty.add(item)
        if item in self._processing:
            return  # queued again by `done`
        self._enqueue(item)

    def _enqueue(self, item: T) -> None:
        self._queue.append(item)
        self._queued_at.setdefault(item, self._clock())
        self._depth(1)
        self._notify()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready = self._clock() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready:
            return
        self._ready_at[item] = ready
        heapq.heappush(self._waiting, (ready, next(self._seq), item))
        if not self._timed_by(ready):
            self._notify()  # a getter may need to wake earlier than it planned

    def _timed_by(self, ready: float) -> bool:
        """Whether a getter still waiting (not woken, not timed out) has a timer that fires
        by `ready`: then it looks again by then, as a getter woken now would have planned
        to, and the delayed add needs no wake-up. A batching controller delays every event,
        and waking a worker for each, only for it to find nothing due and wait again, cost
        a task switch and a timer per event."""
        return any(deadline <= ready and not getter.done() for getter, deadline in self._deadlines.items())

    def add_rate_limited(self, item: T) -> None:
        self.metrics.queue_retries.add(1, self._attrs)
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    def _promote(self) -> None:
        waiting = self._waiting
        if not waiting:
            return
        now = self._clock()
        while waiting and waiting[0][0] <= now:
            ready, _seq, item = heapq.heappop(waiting)
            if self._ready_at.get(item) == ready:
                del self._ready_at[item]
                self.add(item)

    def _next_due(self) -> float | None:
        waiting = self._waiting
        while waiting and self._ready_at.get(waiting[0][2]) != waiting[0][0]:
            heapq.heappop(waiting)  # superseded by an earlier add_after
        return waiting[0][0] - self._clock() if waiting else None

    # ------------------------------------------------------------------ taking
    async def get(self, *, behind: WorkQueue[Any] | None = None, within: float | None = None) -> T:
        """The next item, marked as being processed; the caller must call `done(item)`.
        `behind`: once an item is ready here, wait the turn behind that queue first (once,
        for at most `within` seconds)."""
        while True:
            self._promote()
            if self._queue and behind is not None:
                await self.behind(behind, within)
                behind = None
                continue
            if self._queue:
                item = self._queue.popleft()
                self._handed_out += 1
                turns = self._turns
                while turns and turns[0][0] <= self._handed_out:
                    _wake(heapq.heappop(turns)[2])
                self._dirty.discard(item)
                self._processing.add(item)
                now = self._clock()
                queued = self._queued_at.pop(item, now)
                self._started_at[item] = now
                self._depth(-1)
                self._waited(now - queued)
                return item
            if self._shutting_down:
                raise QueueShutDown(self.name)
            await self._wait(self._next_due())

    async def _wait(self, due: float | None) -> None:
        """Until this getter is woken (`_notify`) or the earliest delayed item is due. A
        getter cancelled after its wake-up passes it on, so no change waits for a getter
        that is gone.

        An asyncio future and a loop timer, not an anyio Event in a `move_on_after` scope:
        every wait of every worker made both (~1% of the management manager's CPU), and the
        queue runs on asyncio only (uvloop in `run`). anyio's cancel scopes cancel the
        awaited future, as they cancelled the Event's wait."""
        loop = asyncio.get_running_loop()
        getter: asyncio.Future[bool] = loop.create_future()
        self._getters.append(getter)
        timer = None
        if due is not None:
            timer = loop.call_later(max(due, 0.0), _time_up, getter)
            self._deadlines[getter] = self._clock() + max(due, 0.0)
        try:
            woken = await getter
        except BaseException:
            if getter.done() and not getter.cancelled() and getter.result():
                self._notify()  # woken, then cancelled before it ran: the wake-up goes on
            elif getter in self._getters:
                self._getters.remove(getter)
            raise
        finally:
            if timer is not None:
                timer.cancel()
                del self._deadlines[getter]
        if not woken and getter in self._getters:
            self._getters.remove(getter)  # its time ran out: no longer waiting

    async def behind(self, other: WorkQueue[Any], within: float | None = None) -> None:
        """Until `other` has handed out every item ready in it now (at once when none is),
        `within` seconds have passed, or either queue shuts down.

        A bare future and a loop timer, as in `_wait`: a worker waits here once per item
        while the other queue has a backlog, and an anyio Event and `move_on_after` scope
        each looked up the async library (~1% of the management manager's CPU)."""
        turn = other._handed_out + len(other)
        if turn <= other._handed_out or self._shutting_down or other._shutting_down:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        heapq.heappush(other._turns, (turn, next(self._seq), waiter))
        self._behind.add(waiter)
        timer = None if within is None else loop.call_later(max(within, 0.0), _time_up, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._behind.discard(waiter)
            if not (waiter.done() and not waiter.cancelled() and waiter.result()):
                # out of time or cancelled: no longer a turn to give
                other._turns = [t for t in other._turns if t[2] is not waiter]
                heapq.heapify(other._turns)

    def done(self, item: T) -> None:
        if item not in self._processing:
            return
        self._processing.discard(item)
        started = self._started_at.pop(item, None)
        if started is not None:
            self._worked(self._clock() - started)
        if item in self._dirty:
            self._enqueue(item)
        if self._shutting_down and not self._processing:
            self._drained.set()

    # ------------------------------------------------------------------ stopping
    def shutdown(self) -> None:
        if self._shutting_down:
            return
        self._shutting_down = True
        self._waiting.clear()
        self._ready_at.clear()
        if not self._processing:
            self._drained.set()
        self._notify_all()
        # whoever waits behind this queue, and this queue's own waits behind another
        for *_, waiter in self._turns:
            _wake(waiter)
        self._turns.clear()
        for waiter in self._behind:
            _wake(waiter)

    async def shutdown_with_drain(self, within: float | None = None) -> bool:
        """Shut down and wait until no item is being processed; False if `within` ran out."""
        self.shutdown()
        with anyio.move_on_after(within):
            await self._drained.wait()
        return not self._processing


def _wake(waiter: asyncio.Future[bool]) -> None:
    """A turn has come (unless its wait ended already)."""
    if not waiter.done():
        waiter.set_result(True)


def _time_up(getter: asyncio.Future[bool]) -> None:
    """A waiting getter's delay is over (unless it was woken first)."""
    if not getter.done():
        getter.set_result(False)
