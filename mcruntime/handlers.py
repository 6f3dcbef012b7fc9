"""Event handlers turn an object event from some cluster into reconcile requests.

The source cluster is always known (the informer it came from) and is handed to the
handler explicitly. Map-function handlers must say what to do with cluster names:

- `ClusterName.INJECT_SOURCE`: the map function returns requests without a cluster and
  the source cluster is filled in (a request naming another cluster is refused, since
  it contradicts the declared intent);
- `ClusterName.PRESERVE_MAPPED`: the map function decides the target cluster and the
  handler leaves it alone (the federator's downstream watch maps a cell event back to a
  project cluster). A request whose cluster is still empty is dropped, never routed to
  some default cluster.

There is deliberately no default: overwriting the computed cluster with the source's is
the bug that once turned every downstream event into a failing reconcile."""

from __future__ import annotations

import enum
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from .fields import get_objects, get_str
from .informer import EventType, ObjectEvent
from .objects import Obj, group_of, split_key
from .request import Request
from .resources import Resource

log = logging.getLogger(__name__)


class RequestSink(Protocol):
    """Where handlers put requests (a controller's queue) and report what they refused."""

    def enqueue(self, request: Request) -> None: ...

    def drop(self, reason: str, detail: str) -> None: ...


class EventHandler(ABC):
    @abstractmethod
    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        """Enqueue the requests this event calls for."""


class EnqueueRequestForObject(EventHandler):
    """The object itself, in the cluster it came from."""

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        # from the event's key: the object itself is not decoded (a cold start's 100k events)
        namespace, name = split_key(event.key)
        sink.enqueue(Request(source_cluster, namespace, name))


class EnqueueRequestForOwner(EventHandler):
    """The owner named in the object's ownerReferences (the controller owner only, unless
    `only_controller=False`), in the object's cluster. On updates the old owner is
    enqueued too, so an owner that lost a dependent hears about it."""

    def __init__(self, owner: Resource, *, only_controller: bool = True) -> None:
        self.owner = owner
        self.only_controller = only_controller

    def _owners(self, cluster: str, obj: Obj) -> list[Request]:
        out: list[Request] = []
        for ref in get_objects(obj, "metadata.ownerReferences"):
            if ref.get("kind") != self.owner.kind or group_of(str(ref.get("apiVersion") or "")) != self.owner.group:
                continue
            if self.only_controller and not ref.get("controller"):
                continue
            name = ref.get("name")
            if name:
                out.append(
                    Request(
                        cluster,
                        get_str(obj, "metadata.namespace", required=False) if self.owner.namespaced else "",
                        str(name),
                    )
                )
        return out

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        requests = self._owners(source_cluster, event.obj)
        if event.type is EventType.MODIFIED and event.old is not None:
            requests += self._owners(source_cluster, event.old)
        for request in dict.fromkeys(requests):
            sink.enqueue(request)


class ClusterName(enum.Enum):
    INJECT_SOURCE = "inject-source"
    PRESERVE_MAPPED = "preserve-mapped"


MapFunc = Callable[[str, Obj], Iterable[Request] | Awaitable[Iterable[Request]]]


class EnqueueRequestsFromMapFunc(EventHandler):
    """Requests computed by `map_func(source_cluster, obj)`; see the module docstring for
    the required `cluster_name` policy. On updates both the old and new object are mapped."""

    def __init__(self, map_func: MapFunc, *, cluster_name: ClusterName) -> None:
        if not isinstance(cluster_name, ClusterName):
            raise TypeError("cluster_name must be ClusterName.INJECT_SOURCE or ClusterName.PRESERVE_MAPPED")
        self.map_func = map_func
        self.cluster_name = cluster_name

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        # the map function called here, not through a coroutine of its own: most map
        # functions are plain functions, and this runs for every event of every watch
        map_func = self.map_func
        result = map_func(source_cluster, event.obj)
        if inspect.isawaitable(result):
            result = await result
        mapped: list[Any] = list(result or ())
        if event.type is EventType.MODIFIED and (old := event.old) is not None:
            result = map_func(source_cluster, old)
            if inspect.isawaitable(result):
                result = await result
            mapped += result or ()
        for request in dict.fromkeys(mapped):
            if not isinstance(request, Request):
                sink.drop("invalid-request", f"map function returned {request!r}, not a Request")
                continue
            if self.cluster_name is ClusterName.INJECT_SOURCE:
                if request.cluster and request.cluster != source_cluster:
                    sink.drop(
                        "cluster-contradiction",
                        f"map function targeted cluster {request.cluster!r} from source {source_cluster!r} but the "
                        "handler injects the source cluster; use ClusterName.PRESERVE_MAPPED to target other clusters",
                    )
                    continue
                sink.enqueue(Request(source_cluster, request.namespace, request.name))
            else:
                if not request.cluster:
                    sink.drop("empty-cluster", f"map function left the cluster name of {request.key} empty")
                    continue
                sink.enqueue(request)
