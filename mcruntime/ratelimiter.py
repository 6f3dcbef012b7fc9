"""Rate limiters for the work queue, as client-go's `workqueue` package defines them:
per-item exponential failure backoff, an overall token bucket, and the max of several."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """How long to wait before this item may be processed again (records a failure)."""

    def forget(self, item: T_contra) -> None:
        """Stop tracking the item (it succeeded)."""

    def num_requeues(self, item: T_contra) -> int:
        """Failures recorded for the item since it was last forgotten."""


class ItemExponentialFailureRateLimiter(Generic[T]):
    """base * 2^failures, capped at `maximum` (client-go: 5 ms doubling to 1000 s)."""

    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        if base <= 0 or maximum < base:
            raise ValueError("need 0 < base <= maximum")
        self.base = base
        self.maximum = maximum
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        if n > 64:  # 2**n would overflow a float long before; the cap applies anyway
            return self.maximum
        return float(min(self.base * (2.0**n), self.maximum))

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket (client-go: 10 qps, burst 100) shared by every item;
    a reservation beyond the burst waits for its token (tokens may go negative)."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: T) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: T) -> None:
        return None

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay any of the limiters asks for."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


class PartitionedRateLimiter(Generic[T]):
    """One limiter per partition of the items (per cluster, for a multicluster
    controller): an overall bucket drained by one failing cluster must not slow the
    retries of every other. Partitions are created on first use and dropped by `discard`."""

    def __init__(self, partition: Callable[[T], Hashable], factory: Callable[[], RateLimiter[T]]) -> None:
        self.partition = partition
        self.factory = factory
        self._limiters: dict[Hashable, RateLimiter[T]] = {}

    def _limiter(self, item: T) -> RateLimiter[T]:
        key = self.partition(item)
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = self.factory()
        return limiter

    def when(self, item: T) -> float:
        return self._limiter(item).when(item)

    def forget(self, item: T) -> None:
        limiter = self._limiters.get(self.partition(item))
        if limiter is not None:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        limiter = self._limiters.get(self.partition(item))
        return limiter.num_requeues(item) if limiter is not None else 0

    def discard(self, partition: Hashable) -> None:
        self._limiters.pop(partition, None)

    @property
    def partitions(self) -> list[Hashable]:
        return list(self._limiters)


def default_controller_rate_limiter(partition: Callable[[T], Hashable] | None = None) -> RateLimiter[T]:
    """controller-runtime's default: exponential 5 ms..1000 s per item, 10 qps / 100 burst
    overall; with `partition`, the overall bucket is kept per partition (per cluster)."""
    bucket: RateLimiter[T] = (
        PartitionedRateLimiter(partition, lambda: BucketRateLimiter(10.0, 100))
        if partition is not None
        else BucketRateLimiter(10.0, 100)
    )
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), bucket)
