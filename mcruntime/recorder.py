"""The Events of one controller, bound once: a controller makes one `ControllerEvents`
with its component name and records through it, instead of asking the manager for the
recorder of (cluster, component) at every call. The manager keeps one recorder per
engaged cluster and component, so deduplication and the spam filter survive from one
reconcile to the next (mcruntime/events.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .cluster import Cluster
from .events import EventRecorder, EventType


class _Recorders(Protocol):
    def event_recorder(self, cluster: str, component: str | None = None) -> EventRecorder: ...


class ControllerEvents:
    def __init__(self, mgr: _Recorders, component: str) -> None:
        if not component:
            raise ValueError("a controller's events need a component name")
        self.mgr = mgr
        self.component = component

    async def event(
        self, cluster: Cluster | str, obj: Mapping[str, Any], type_: EventType, reason: str, message: str
    ) -> None:
        """Record an Event about `obj`, which lives in `cluster` (the cluster or its name)."""
        name = cluster if isinstance(cluster, str) else cluster.name
        await self.mgr.event_recorder(name, self.component).event(obj, type_, reason, message)
