"""An event recorder that posts core/v1 Events about objects, deduplicated the way
client-go's EventCorrelator does: a repeat of the same (object, type, reason, message)
patches the existing Event's count and lastTimestamp instead of creating a new one, and
a per-object token bucket keeps a hot loop from flooding the API. Recording is best
effort: a failure is logged, never raised into the reconciler."""

from __future__ import annotations

import datetime
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from .client import Client
from .errors import APIError, TransportError, is_not_found
from .objects import meta
from .resources import EVENTS

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
MAX_MESSAGE = 1024


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: str


class _Bucket:
    __slots__ = ("last", "tokens")

    def __init__(self, tokens: float, last: float) -> None:
        self.tokens = tokens
        self.last = last


def _timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(
        self,
        client: Client,
        component: str,
        *,
        instance: str = "",
        cache_size: int = 4096,
        burst: int = 25,
        refill_seconds: float = 300.0,
        timeout: float = 5.0,
    ) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name")
        self.client = client
        self.component = component
        self.instance = instance or component
        self.cache_size = cache_size
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.timeout = timeout
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()
        self.posted = 0
        self.aggregated = 0
        self.throttled = 0

    def _allow(self, key: tuple[str, ...]) -> bool:
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            if len(self._buckets) > self.cache_size:
                self._buckets.popitem(last=False)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) / self.refill_seconds)
        bucket.last = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    async def event(
        self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str, *, action: str = ""
    ) -> None:
        """Record an Event about `obj` (needs apiVersion, kind, metadata.name)."""
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        if not reason:
            raise ValueError("an event needs a reason")
        m = meta(obj)
        if not m.get("name") or not obj.get("kind"):
            raise ValueError("events need an object with kind and metadata.name")
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj["kind"],
            "name": m["name"],
            "namespace": m.get("namespace", ""),
            "uid": m.get("uid", ""),
        }
        namespace = str(m.get("namespace") or "default")
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
        object_key = (involved["kind"], namespace, involved["name"], str(involved["uid"]))
        if not self._allow(object_key):
            self.throttled += 1
            log.debug("event %s for %s/%s throttled", reason, namespace, involved["name"])
            return
        key = (*object_key, type_, reason, message)
        now = _timestamp()
        try:
            with anyio.fail_after(self.timeout):
                await self._post(key, involved, namespace, type_, reason, message, action, now)
        except (APIError, TransportError, TimeoutError) as exc:
            log.warning("could not record event %s %s for %s/%s: %s", type_, reason, namespace, involved["name"], exc)

    async def _post(
        self,
        key: tuple[str, ...],
        involved: dict[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        action: str,
        now: str,
    ) -> None:
        seen = self._seen.get(key)
        if seen is not None:
            try:
                await self.client.patch(
                    EVENTS,
                    seen.name,
                    {"count": seen.count + 1, "lastTimestamp": now},
                    namespace=seen.namespace,
                )
                seen.count += 1
                self._seen.move_to_end(key)
                self.aggregated += 1
                return
            except APIError as exc:
                if not is_not_found(exc):
                    raise
                del self._seen[key]  # the Event expired (TTL); post a new one
        name = f"{involved['name']}.{time.time_ns():x}"
        body = {
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "type": type_,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
        if action:
            body["action"] = action
        await self.client.create(EVENTS, body)
        self.posted += 1
        self._seen[key] = _Seen(name, namespace, 1, now)
        if len(self._seen) > self.cache_size:
            self._seen.popitem(last=False)
