"""An event recorder that posts core/v1 Events about objects, correlated the way Kubernetes'
own recorders do (`eventcorrelator.py`): a repeat of the same type and reason (and action)
on the same object within the correlation window patches the existing Event's count,
lastTimestamp and message instead of creating a new one, and a per-object token bucket
keeps a hot loop from flooding the API. Recording is best effort: a failure is logged,
never raised into the reconciler."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any, Literal

import anyio

from .client import Client
from .errors import APIError, TransportError, is_not_found
from .eventcorrelator import (
    BURST,
    CACHE_SIZE,
    REFILL_SECONDS,
    WINDOW_SECONDS,
    Count,
    EventCorrelator,
    ObjectRef,
    SeriesKey,
    Throttled,
)
from .fields import get_str
from .resources import EVENTS

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
MAX_MESSAGE = 1024


def _timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(
        self,
        client: Client,
        component: str,
        *,
        instance: str = "",
        cache_size: int = CACHE_SIZE,
        burst: int = BURST,
        refill_seconds: float = REFILL_SECONDS,
        window: float = WINDOW_SECONDS,
        timeout: float = 5.0,
        correlator: EventCorrelator | None = None,
    ) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name")
        self.client = client
        self.component = component
        self.instance = instance or component
        self.timeout = timeout
        self.correlator = correlator or EventCorrelator(
            window=window, cache_size=cache_size, burst=burst, refill_seconds=refill_seconds
        )
        self.posted = 0
        self.aggregated = 0
        self.throttled = 0

    async def event(
        self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str, *, action: str = ""
    ) -> None:
        """Record an Event about `obj` (needs apiVersion, kind, metadata.name)."""
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        if not reason:
            raise ValueError("an event needs a reason")
        name = get_str(obj, "metadata.name", required=False)
        if not name or not obj.get("kind"):
            raise ValueError("events need an object with kind and metadata.name")
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj["kind"],
            "name": name,
            "namespace": get_str(obj, "metadata.namespace", required=False),
            "uid": get_str(obj, "metadata.uid", required=False),
        }
        namespace = involved["namespace"] or "default"
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
        regarding = ObjectRef(str(involved["kind"]), namespace, str(involved["name"]), str(involved["uid"]))
        key = SeriesKey(regarding, type_, reason, action, self.component)
        decision = self.correlator.correlate(key)
        if isinstance(decision, Throttled):
            self.throttled += 1
            log.debug("event %s for %s/%s throttled", reason, namespace, involved["name"])
            return
        now = _timestamp()
        try:
            with anyio.fail_after(self.timeout):
                if isinstance(decision, Count) and await self._count(key, decision, message, now):
                    return
                await self._create(key, involved, namespace, type_, reason, message, action, now)
        except (APIError, TransportError, TimeoutError) as exc:
            log.warning("could not record event %s %s for %s/%s: %s", type_, reason, namespace, involved["name"], exc)

    async def _count(self, key: SeriesKey, decision: Count, message: str, now: str) -> bool:
        """Count a repeat on the series' Event; False when that Event is gone (its TTL)."""
        try:
            await self.client.patch(
                EVENTS,
                decision.name,
                {"count": decision.count, "lastTimestamp": now, "message": message},
                namespace=decision.namespace,
            )
        except APIError as exc:
            if not is_not_found(exc):
                raise
            self.correlator.forget(key)
            return False
        self.correlator.recorded(key, decision.name, decision.namespace, decision.count)
        self.aggregated += 1
        return True

    async def _create(
        self,
        key: SeriesKey,
        involved: dict[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        action: str,
        now: str,
    ) -> None:
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
        self.correlator.recorded(key, name, namespace, 1)
