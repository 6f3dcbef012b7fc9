"""Where cell events go upstream: a cell Instance, a downstream copy or a cell's
lifecycle event maps to the project WorkloadDeployment(s) it concerns, the project
cluster computed here (from the cell namespace's labels) and preserved by the handler.

Identity comes from where the object lives: the downstream namespace's labels name the
project and its namespace; an Instance names its WorkloadDeployment through its
controller owner reference (the copy, which has the project WD's name). Objects without
that, or for a project this manager does not serve, map to nothing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from federation.api.constants import Kind, Label
from federation.api.resources import NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.downstream import UpstreamRef, upstream_identity
from federation.fleetview import CITY_INDEX, project_clusters
from federation.placement import city_key
from mcruntime import controllerutil
from mcruntime.manager import Manager
from mcruntime.objects import meta
from mcruntime.request import Request
from mcruntime.source import ClusterEvent


def _namespace(mgr: Manager, cell_name: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    cell = mgr.clusters.get(cell_name)
    if cell is None or cell.cache.view_of(NAMESPACES) is None:
        return None
    return cell.cache.informer_of(NAMESPACES).get(str(meta(obj).get("namespace") or ""))


def upstream_of(mgr: Manager, cell_name: str, obj: dict[str, Any]) -> UpstreamRef | None:
    """The project and project namespace a cell object serves (from its namespace's labels),
    if this manager serves that project."""
    ref = upstream_identity(None, _namespace(mgr, cell_name, obj))
    return ref if ref is not None and ref.project in mgr.clusters else None


def deployment_of_instance(instance: dict[str, Any]) -> str | None:
    """The WorkloadDeployment an Instance belongs to: its controller, if that is a WD."""
    ref = controllerutil.controller_of(instance)
    if ref is not None and ref.get("kind") == Kind.WORKLOAD_DEPLOYMENT and ref.get("name"):
        return str(ref["name"])
    return None


class Routes:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    def _served(self, project: str) -> bool:
        return project in self.mgr.clusters

    async def wd_of_copy(self, cell_name: str, copy: dict[str, Any]) -> list[Request]:
        ref = upstream_identity(copy, _namespace(self.mgr, cell_name, copy))
        if ref is None or not self._served(ref.project):
            return []
        return [Request(ref.project, ref.namespace, ref.name)]

    def wds_of_cell(self, event: ClusterEvent) -> Iterable[Request]:
        """A cell changed state (engaged, ready, unreachable, removed): the WDs of its city
        re-aggregate (an unreachable cell's numbers must turn stale on time)."""
        city = event.labels.get(Label.TOPOLOGY_CITY_CODE)
        if not city:
            return []
        requests: list[Request] = []
        for project in project_clusters(self.mgr):
            for wd in project.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.by_index(CITY_INDEX, city_key(city)):
                requests.append(Request(project.name, str(meta(wd).get("namespace")), str(meta(wd).get("name"))))
        return requests
