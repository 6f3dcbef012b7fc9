"""The gate a shard's controllers pass before each reconcile and before each write.

- No reconcile and no write while the shard's Lease is not fresh: a shard paused past its
  lease duration (or whose renewals fail) may have been declared dead and its objects
  given to another shard, so it stops before it writes again: every write a gated
  reconcile makes, in any cluster, passes `fence` first (`transport.WRITE_FENCE`); the
  Lease elector's loss then stops the manager.
- No reconcile of an object the shard does not own (`owns`: the caller's check, e.g. the
  object is in the shard's label-selected cache and carries no drain label). A drained
  object is acknowledged only once no reconcile of it is in flight (`wait_quiet`), so
  no object is ever reconciled by two shards at once."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from ..transport import WRITE_FENCE

if TYPE_CHECKING:
    from ..request import Request

Owner = Callable[["Request"], Hashable | None]
"""The key of the sharded object a request reconciles when this shard owns it, else None."""


class ShardLeaseNotHeld(Exception):
    """A write refused because this shard's Lease is not fresh (it may be another's now)."""


class ShardGate:
    def __init__(self, shard: str, lease_fresh: Callable[[], bool]) -> None:
        self.shard = shard
        self.lease_fresh = lease_fresh
        self.refused_writes = 0
        self._in_flight: dict[Hashable, int] = {}
        self._quiet: dict[Hashable, anyio.Event] = {}

    def fence(self) -> None:
        """Raise unless this shard's Lease is fresh (called before every write)."""
        if not self.lease_fresh():
            self.refused_writes += 1
            raise ShardLeaseNotHeld(f"shard {self.shard}: its Lease is not fresh; refusing to write")

    def in_flight(self, key: Hashable) -> int:
        return self._in_flight.get(key, 0)

    @contextmanager
    def reconciling(self, key: Hashable) -> Iterator[None]:
        """Count a reconcile of `key` in flight for its duration; its writes are fenced."""
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        token = WRITE_FENCE.set(self.fence)
        try:
            yield
        finally:
            WRITE_FENCE.reset(token)
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]
                event = self._quiet.pop(key, None)
                if event is not None:
                    event.set()

    async def wait_quiet(self, key: Hashable) -> None:
        """Return once no reconcile of `key` is in flight."""
        while self._in_flight.get(key):
            event = self._quiet.setdefault(key, anyio.Event())
            await event.wait()
