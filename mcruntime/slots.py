"""A bound on concurrent requests: a count of slots in use and the waiters for one, first
come first served.

anyio's `CapacityLimiter` did this job for the transport, and on every request looked up
the current task twice (it tracks which task borrows each token: ~1.3% of the management
manager's CPU). A slot here belongs to no task: the transport takes one before a request
and gives it back after, in the same `try`/`finally`, so a count is all it needs.

Semantics kept from the limiter: at most `limit` slots in use; a free slot goes to the
longest waiter, handed over when it is given back (a newcomer never takes it first); a
waiter cancelled before its turn leaves the line, and one cancelled after it was handed
a slot hands it on. Asyncio futures directly: the runtime runs on asyncio (uvloop in
`run`), where anyio's cancel scopes cancel a task's awaited future, as here."""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    __slots__ = ("_in_use", "_limit", "_waiters")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a slot limit must be at least 1")
        self._limit = limit
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def in_use(self) -> int:
        return self._in_use

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def try_take(self) -> bool:
        """Take a slot if one is free now (no waiter ahead); no suspension either way."""
        if self._in_use < self._limit and not self._waiters:
            self._in_use += 1
            return True
        return False

    async def take(self) -> None:
        """A slot: at once when one is free, else after every earlier waiter got theirs."""
        if self.try_take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give_back()  # handed a slot, then cancelled before running: the next one's
            elif waiter in self._waiters:  # (a give_back meanwhile may have passed it over already)
                self._waiters.remove(waiter)
            raise

    def give_back(self) -> None:
        """Return a slot taken with `try_take` or `take`: to the longest waiter, if any."""
        if self._in_use <= 0:
            raise RuntimeError("a slot was given back that was not taken")
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on: still in use
                return
        self._in_use -= 1
