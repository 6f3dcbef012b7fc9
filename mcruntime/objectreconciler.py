"""Reconcilers that receive the cluster and the cached object (controller-runtime's
`ObjectReconciler`, kopf's handlers that receive the body), so the rules every
controller would otherwise repeat have one home here:

- a request whose cluster is not engaged (or has no name) never reaches the reconciler:
  `Manager.get_cluster` raises `ClusterNotEngagedError`, and the controller drops it;
- an object that is gone from the cache gets no call: there is nothing to act on (what it
  owned goes with it through owner references and finalizers);
- the reconciler gets the `Cluster` itself, so a single-cluster controller never handles
  a cluster name.

`ForObject(mgr, resource, reconciler)` adapts one to the request reconciler a controller
runs (`mgr.new_controller(name, ForObject(...))`)."""

from __future__ import annotations

from typing import Any, Protocol

from .cluster import Cluster
from .reconciler import Result
from .request import Request
from .resources import Resource


class ObjectReconciler(Protocol):
    async def reconcile(self, cluster: Cluster, obj: dict[str, Any]) -> Result: ...


class _Clusters(Protocol):
    def get_cluster(self, name: str) -> Cluster: ...


class ForObject:
    """The request reconciler that fetches `resource` named by the request from the
    request's cluster's cache and hands both to `inner` (no call when it is gone)."""

    def __init__(self, mgr: _Clusters, resource: Resource, inner: ObjectReconciler) -> None:
        self.mgr = mgr
        self.resource = resource
        self.inner = inner

    async def reconcile(self, request: Request) -> Result:
        cluster = self.mgr.get_cluster(request.cluster)  # not engaged: ClusterNotEngagedError, dropped
        obj = await cluster.client.get_or_none(self.resource, request.name, namespace=request.namespace or None)
        if obj is None:
            return Result()
        return await self.inner.reconcile(cluster, obj)
