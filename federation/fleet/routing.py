"""Where events go, for every management-mode controller (federator, workload
controller, status and Instance projectors): one home for each map function. A cell
Instance, a downstream copy or namespace, or a cell's lifecycle event maps to the project
objects it concerns, the project cluster computed here (from the cell namespace's labels)
and preserved by the handler; a project WD maps to the Instance projections it feeds.

Identity comes from where the object lives: the downstream namespace's labels name the
project and its namespace; an Instance names its WorkloadDeployment through its
controller owner reference (the copy, which has the project WD's name). Objects without
that, or for a project this manager does not serve, map to nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from federation.api.constants import Kind, Label
from federation.api.resources import INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.fleet.downstream import UpstreamRef, copy_upstream, upstream_identity
from federation.fleet.fleetview import (
    CITY_INDEX,
    LOCATION_INDEX,
    UPSTREAM_INDEX,
    cell_clusters,
    cell_synced,
    known_locations,
    project_clusters,
    upstream_key,
    upstream_of_key,
)
from federation.fleet.locations import known_location
from federation.fleet.placement import city_key, same_city
from federation.fleet.projection import CELL_ANNOTATION
from federation.fleet.references import SOURCE_RESOURCES, referencing
from mcruntime import controllerutil
from mcruntime.errors import ClusterNotReadyError
from mcruntime.fields import get_list, get_str, get_str_map, is_object
from mcruntime.indexers import CONTROLLER_UID
from mcruntime.manager import Manager
from mcruntime.objects import Obj
from mcruntime.request import Request
from mcruntime.resources import Resource
from mcruntime.source import ClusterEvent, ClusterEventType

PLACEMENT_CITY_INDEX = "placement-city"  # Workloads by every city code their placements name
PROJECTED_FROM_INDEX = "projected-from"  # Instance projections by the cell they mirror
INSTANCES_OF_COPY_INDEX = "instances-of-copy"  # cell Instances by "<cell namespace>/<WD name>"
PLACES_BY_LOCATION_INDEX = "places-by-location"  # Workloads with a placement naming or selecting Locations
BY_LOCATION = "yes"


def placement_cities(workload: dict[str, Any]) -> list[str]:
    """Index: every city code a Workload's placements name."""
    cities = [city_key(str(c)) for p in get_list(workload, "spec.placements")
              for c in p.get("cityCodes") or []]  # fmt: skip
    return sorted(set(cities))


def places_by_location(workload: dict[str, Any]) -> list[str]:
    """Index: `BY_LOCATION` for a Workload with a placement by `locations` or `locationSelector`."""
    found = any(isinstance(p, dict) and (p.get("locations") is not None or p.get("locationSelector") is not None)
                for p in get_list(workload, "spec.placements"))  # fmt: skip
    return [BY_LOCATION] if found else []


WORKLOAD_INDEXERS = {PLACEMENT_CITY_INDEX: placement_cities, PLACES_BY_LOCATION_INDEX: places_by_location}


def projected_from(projection: Obj) -> list[str]:
    """Index: the cell a projection mirrors."""
    cell = get_str_map(projection, "metadata.annotations").get(CELL_ANNOTATION)
    return [str(cell)] if cell else []


def instances_of_copy(instance: Obj) -> list[str]:
    """Index: the copy (cell namespace and WD name) an Instance belongs to, so one WD's
    Instances are found without decoding the rest of the namespace."""
    wd_name = deployment_of_instance(instance)
    return [f"{get_str(instance, 'metadata.namespace', required=False)}/{wd_name}"] if wd_name else []


def _served_by_namespace(mgr: Manager, cell_name: str, obj: dict[str, Any]) -> UpstreamRef | None:
    """What the cell namespace `obj` lives in serves (`upstream_identity(None, namespace)`:
    the project and project namespace its labels name), read from the namespaces'
    `UPSTREAM_INDEX`, which holds exactly that: nothing is decoded (every copy and Instance
    event passes here, an update's old state too). From the namespace itself when its view
    keeps no such index."""
    cell = mgr.clusters.get(cell_name)
    if cell is None or cell.cache.view_of(NAMESPACES) is None:
        return None
    store = cell.cache.informer_of(NAMESPACES).store
    namespace = get_str(obj, "metadata.namespace", required=False)
    if UPSTREAM_INDEX not in store.index_names:
        return upstream_identity(None, store.get(namespace))
    values = store.values_of(UPSTREAM_INDEX, namespace)
    if not values:
        return None  # not there, or its labels name no project
    return UpstreamRef(*upstream_of_key(values[0]), "", "")


def upstream_of(mgr: Manager, cell_name: str, obj: dict[str, Any]) -> UpstreamRef | None:
    """The project and project namespace a cell object serves (from its namespace's labels),
    if this manager serves that project."""
    ref = _served_by_namespace(mgr, cell_name, obj)
    return ref if ref is not None and ref.project in mgr.clusters else None


def deployment_of_instance(instance: dict[str, Any]) -> str | None:
    """The WorkloadDeployment an Instance belongs to: its controller, if that is a WD."""
    ref = controllerutil.controller_of(instance)
    if ref is not None and ref.get("kind") == Kind.WORKLOAD_DEPLOYMENT and ref.get("name"):
        return str(ref["name"])
    return None


class Routes:
    """The map functions of the management-mode controllers over one Manager's clusters."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    def _served(self, project: str) -> bool:
        return project in self.mgr.clusters

    def _in_projects(self, resource: Resource, index: str, value: str) -> list[Request]:
        """A request for every object of `resource` in every project whose `index` is `value`."""
        return [
            Request(
                project.name,
                get_str(obj, "metadata.namespace", required=False),
                get_str(obj, "metadata.name", required=False),
            )
            for project in project_clusters(self.mgr)
            for obj in project.cache.informer_of(resource).store.by_index(index, value)
        ]

    # ------------------------------------------------------------------ cell objects → project WDs
    @staticmethod
    def same_wd_of_copy(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Whether `wd_of_copy` maps both states of an updated copy to the same WD: all it
        reads of a copy (namespace, name, labels, annotations) is the same in both (a
        status update's two states: the old one needs no mapping of its own)."""
        before, after = old.get("metadata"), new.get("metadata")
        return (
            is_object(before)
            and is_object(after)
            and all(before.get(k) == after.get(k) for k in ("namespace", "name", "labels", "annotations"))
        )

    async def wd_of_copy(self, cell_name: str, copy: dict[str, Any]) -> list[Request]:
        """A downstream copy → its project WD (unlabelled, foreign or unserved: nothing)."""
        served = _served_by_namespace(self.mgr, cell_name, copy)
        ref = copy_upstream(copy, served) if served is not None else None
        if ref is None or not self._served(ref.project):
            return []
        return [Request(ref.project, ref.namespace, ref.name)]

    async def wds_of_namespace(self, cell_name: str, ns: dict[str, Any]) -> list[Request]:
        """A downstream namespace changed (deleted by hand, relabelled): its copies' WDs."""
        cell = self.mgr.clusters.get(cell_name)
        ref = upstream_identity(None, ns)
        if cell is None or ref is None or not self._served(ref.project):
            return []
        copies = cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.list(get_str(ns, "metadata.name", required=False))
        return [Request(ref.project, ref.namespace, get_str(c, "metadata.name", required=False)) for c in copies]

    def wds_of_city(self, city: str) -> list[Request]:
        """Every project WD placed in `city`: by `spec.cityCode`, or by a Location whose
        topology names that city (Locations not listed yet: only the former; the WDs of
        Locations re-plan when their view lists them, `wds_of_location`)."""
        if not city:
            return []
        found = dict.fromkeys(self._in_projects(WORKLOAD_DEPLOYMENTS, CITY_INDEX, city_key(city)))
        try:
            locations = known_locations(self.mgr)
        except ClusterNotReadyError:
            locations = []
        for loc in locations:
            if loc.city_code and same_city(loc.city_code, city):
                found.update(dict.fromkeys(self._in_projects(WORKLOAD_DEPLOYMENTS, LOCATION_INDEX, loc.name)))
        return list(found)

    async def wds_of_location(self, _cluster: str, location: dict[str, Any]) -> list[Request]:
        """A Location changed (created, its city changed, deleted): the WDs naming it re-plan."""
        name = known_location(location).name
        return self._in_projects(WORKLOAD_DEPLOYMENTS, LOCATION_INDEX, name) if name else []

    async def wds_referencing(self, project: str, source: dict[str, Any]) -> list[Request]:
        """A project ConfigMap or Secret appeared, changed or went: the WDs of its namespace
        that reference an object of that name re-aggregate ReferencedDataReady (the cached
        view holds no kind; one of the other kind with the same name costs a reconcile only)."""
        cluster = self.mgr.clusters.get(project)
        namespace = get_str(source, "metadata.namespace", required=False)
        if cluster is None or not namespace:
            return []
        wds = cluster.cache.informer_of(WORKLOAD_DEPLOYMENTS).list(namespace=namespace)
        name = get_str(source, "metadata.name", required=False)
        return [
            Request(project, namespace, get_str(wd, "metadata.name"))
            for kind in SOURCE_RESOURCES
            for wd in referencing(wds, kind, name)
        ]

    # ------------------------------------------------------------------ cell lifecycle
    def wds_of_cell(self, event: ClusterEvent) -> Iterable[Request]:
        """A cell changed state (engaged, ready, unreachable, removed): the WDs of its city
        re-aggregate (an unreachable cell's numbers must turn stale on time)."""
        return self.wds_of_city(event.labels.get(Label.TOPOLOGY_CITY_CODE, ""))

    def wds_to_replan(self, event: ClusterEvent) -> list[Request]:
        """A cell engaged, ready again, relabelled or removed: the WDs of its city re-plan,
        and (when it is ready) every copy it holds is checked against its upstream WD —
        the orphan sweep that removes copies whose WD was deleted while the cell was away."""
        if event.type is ClusterEventType.UNREACHABLE:
            return []  # an unreachable cell keeps its share; nothing to re-plan
        requests = dict.fromkeys(self.wds_of_city(event.labels.get(Label.TOPOLOGY_CITY_CODE, "")))
        cell = self.mgr.clusters.get(event.cluster)
        if event.type is ClusterEventType.READY and cell is not None:
            namespaces = cell.cache.informer_of(NAMESPACES)
            for copy in cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.list():
                ref = upstream_identity(copy, namespaces.get(get_str(copy, "metadata.namespace", required=False)))
                if ref is not None and self._served(ref.project):
                    requests[Request(ref.project, ref.namespace, ref.name)] = None
        return list(requests)

    def workloads_of_cell(self, event: ClusterEvent) -> Iterable[Request]:
        """A cell engaged, relabelled or removed: every Workload placing into its city."""
        if event.type not in (ClusterEventType.ENGAGED, ClusterEventType.DISENGAGED):
            return []
        city = event.labels.get(Label.TOPOLOGY_CITY_CODE)
        if not city:
            return []
        # a placement by location may resolve to this city: those Workloads look again too
        by_location = self._in_projects(WORKLOADS, PLACES_BY_LOCATION_INDEX, BY_LOCATION)
        return list(dict.fromkeys(self._in_projects(WORKLOADS, PLACEMENT_CITY_INDEX, city_key(city)) + by_location))

    async def workloads_of_location(self, _cluster: str, _location: dict[str, Any]) -> list[Request]:
        """A Location changed: every Workload placing by location (a selector may now match it)."""
        return self._in_projects(WORKLOADS, PLACES_BY_LOCATION_INDEX, BY_LOCATION)

    def projections_of_cell(self, event: ClusterEvent) -> Iterable[Request]:
        """A cell removed or ready again: the projections it fed are checked."""
        if event.type not in (ClusterEventType.DISENGAGED, ClusterEventType.READY):
            return []
        return self._in_projects(INSTANCES, PROJECTED_FROM_INDEX, event.cluster)

    # ------------------------------------------------------------------ Instances → projections
    async def projection_of_instance(self, cell_name: str, instance: Obj) -> list[Request]:
        """A cell Instance → the projection of that name in its project namespace."""
        ref = upstream_of(self.mgr, cell_name, instance)
        if ref is None:
            return []
        return [Request(ref.project, ref.namespace, get_str(instance, "metadata.name", required=False))]

    async def projections_of_wd(self, project_name: str, wd: Obj) -> list[Request]:
        """A project WD changed (created, deleted, moved): its projections and the cell
        Instances of its copies re-project."""
        project = self.mgr.clusters.get(project_name)
        if project is None:
            return []
        namespace = get_str(wd, "metadata.namespace", required=False)
        projections = project.cache.informer_of(INSTANCES).store
        # index keys only ("<namespace>/<name>"): a name is all a request needs, nothing is decoded
        names = {
            k.rpartition("/")[2]
            for k in projections.index_keys(CONTROLLER_UID, get_str(wd, "metadata.uid", required=False))
        }
        key = upstream_key(project_name, namespace)
        wd_name = get_str(wd, "metadata.name", required=False)
        for cell in cell_clusters(self.mgr):
            if cell.cache.view_of(INSTANCES) is None or not cell_synced(cell):
                continue
            instances = cell.cache.informer_of(INSTANCES).store
            for ns_name in cell.cache.informer_of(NAMESPACES).store.index_keys(UPSTREAM_INDEX, key):
                for inst_key in instances.index_keys(INSTANCES_OF_COPY_INDEX, f"{ns_name}/{wd_name}"):
                    names.add(inst_key.rpartition("/")[2])
        return [Request(project_name, namespace, name) for name in sorted(names)]
