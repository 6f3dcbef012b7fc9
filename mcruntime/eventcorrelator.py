"""Which Events to write, the way Kubernetes' own recorders decide (pure; no I/O).

- Correlation (client-go's events.k8s.io recorder, `tools/events`): Events about the same
  object with the same type, reason, action and reporting component are one *series*. While
  a series recurs within `window` of its last occurrence (client-go: 6 minutes) a repeat is
  counted on the existing Event (core/v1 `count` and `lastTimestamp`, message updated to the
  latest) instead of becoming a new Event; the message is not part of the key, so "cell
  dfw-1 unreachable" then "cell dfw-2 unreachable" is one Event counted twice. After a quiet
  window the next occurrence starts a new Event.
- Spam filter (client-go's `EventSourceObjectSpamFilter`): a token bucket per (component,
  object), `burst` Events then one per `refill_seconds` (client-go: 25, then one per 5 min),
  so a hot loop cannot flood the API; counted repeats spend tokens too, as in client-go.
- Both caches are LRUs of `cache_size` keys (client-go: 4096), so memory stays bounded.

The recorder (`events.py`) asks `correlate` what to do, performs the one write it is told,
and reports back with `recorded` (or `forget` when the Event it meant to count is gone)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_SECONDS = 360.0  # client-go tools/events: a series is kept while it recurs within 6 minutes
CACHE_SIZE = 4096
BURST = 25
REFILL_SECONDS = 300.0


# slots: up to `cache_size` of each are kept per recorder
@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """What makes two Events one series (the message is deliberately not part of it)."""

    regarding: ObjectRef
    type: str
    reason: str
    action: str
    component: str


@dataclass(frozen=True)
class Create:
    """Write a new Event (count 1)."""


@dataclass(frozen=True)
class Count:
    """Patch the existing Event `name` to `count`, with the new message and time."""

    name: str
    namespace: str
    count: int


@dataclass(frozen=True)
class Throttled:
    """Drop it: the object's token bucket is empty."""


Decision = Create | Count | Throttled


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    count: int
    last: float  # clock time of the latest occurrence


class _Bucket:
    __slots__ = ("last", "tokens")

    def __init__(self, tokens: float, last: float) -> None:
        self.tokens = tokens
        self.last = last


class EventCorrelator:
    def __init__(
        self,
        *,
        window: float = WINDOW_SECONDS,
        cache_size: int = CACHE_SIZE,
        burst: int = BURST,
        refill_seconds: float = REFILL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if window <= 0 or cache_size < 1 or burst < 1 or refill_seconds <= 0:
            raise ValueError("an event correlator needs window > 0, cache_size >= 1, burst >= 1, refill_seconds > 0")
        self.window = window
        self.cache_size = cache_size
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.clock = clock
        self._series: OrderedDict[SeriesKey, _Series] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ObjectRef], _Bucket] = OrderedDict()

    def correlate(self, key: SeriesKey) -> Decision:
        now = self.clock()
        if not self._allow((key.component, key.regarding), now):
            return Throttled()
        series = self._series.get(key)
        if series is None or now - series.last > self.window:
            return Create()
        return Count(series.name, series.namespace, series.count + 1)

    def recorded(self, key: SeriesKey, name: str, namespace: str, count: int) -> None:
        """The Event `name` now carries `count` occurrences of this series."""
        self._series[key] = _Series(name, namespace, count, self.clock())
        self._series.move_to_end(key)
        if len(self._series) > self.cache_size:
            self._series.popitem(last=False)

    def forget(self, key: SeriesKey) -> None:
        """The series' Event is gone (expired by its TTL, deleted): the next one is new."""
        self._series.pop(key, None)

    def _allow(self, key: tuple[str, ObjectRef], now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            if len(self._buckets) > self.cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) / self.refill_seconds)
        bucket.last = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True
