"""Reconcilers that receive the cluster and the cached object (controller-runtime's
`ObjectReconciler`, kopf's handlers that receive the body), so the rules every
controller would otherwise repeat have one home here:

- a request whose cluster is not engaged (or has no name) never reaches the reconciler:
  `Manager.get_cluster` raises `ClusterNotEngagedError`, and the controller drops it;
- an object that is gone from the cache gets no `reconcile` call: there is nothing to act
  on (what it owned goes with it through owner references and finalizers). A reconciler
  that must still act then (an orphan sweep across clusters, forgetting what it held for
  the object, creating what the object's name stands for elsewhere) also has
  `gone(cluster, request)`, called instead (`HandlesGone`);
- the reconciler gets the `Cluster` itself, so a single-cluster controller never handles
  a cluster name.

`ForObject(mgr, resource, reconciler)` adapts one to the request reconciler a controller
runs (`mgr.new_controller(name, ForObject(...))`)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .cluster import Cluster
from .reconciler import Result
from .request import Request
from .resources import Resource


class ObjectReconciler(Protocol):
    async def reconcile(self, cluster: Cluster, obj: dict[str, Any]) -> Result: ...


@runtime_checkable
class HandlesGone(Protocol):
    """An object reconciler that acts on an object gone from the cache too."""

    async def reconcile(self, cluster: Cluster, obj: dict[str, Any]) -> Result: ...

    async def gone(self, cluster: Cluster, request: Request) -> Result: ...


class _Clusters(Protocol):
    def get_cluster(self, name: str) -> Cluster: ...


class ForObject:
    """The request reconciler that fetches `resource` named by the request from the
    request's cluster's cache and hands both to `inner`; when it is gone, `inner.gone`
    (a `HandlesGone`) or nothing."""

    def __init__(self, mgr: _Clusters, resource: Resource, inner: ObjectReconciler) -> None:
        self.mgr = mgr
        self.resource = resource
        self.inner = inner

    async def reconcile(self, request: Request) -> Result:
        cluster = self.mgr.get_cluster(request.cluster)  # not engaged: ClusterNotEngagedError, dropped
        obj = await cluster.client.get_or_none(self.resource, request.name, namespace=request.namespace or None)
        if obj is None:
            return await self.inner.gone(cluster, request) if isinstance(self.inner, HandlesGone) else Result()
        return await self.inner.reconcile(cluster, obj)
