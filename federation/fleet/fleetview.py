"""The registered cells and projects as the management-mode controllers see them: the
clusters a provider engaged, told apart by their role label, with a cell's city code and
reachability and a project's encoded upstream cluster name. Read-only over the Manager;
the federator, the workload controller and the projector all ask here, so they agree on
which cells exist."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from federation.api.constants import (
    CELL_ROLE,
    CITY_LABEL,
    CLUSTER_ROLE_LABEL,
    FEDERATOR_FINALIZER,
    PROJECT_ROLE,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    ClusterRole,
    Label,
)
from federation.api.resources import LOCATIONS, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.downstream import upstream_identity
from federation.fleet.locations import KnownLocation, known_location
from federation.fleet.placement import CellInfo, city_key
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.controller import Controller
from mcruntime.errors import ClusterNotReadyError
from mcruntime.fields import get_mapping
from mcruntime.informer import Informer
from mcruntime.manager import Manager
from mcruntime.source import LOCAL, ClusterFilter, engaged

CELLS: ClusterFilter = engaged(f"{Label.CLUSTER_ROLE}={ClusterRole.CELL}")
PROJECTS: ClusterFilter = engaged(f"{Label.CLUSTER_ROLE}={ClusterRole.PROJECT}")

# The cache views of cell objects the management-mode controllers share (one view per
# resource and cluster): federated copies, their namespaces, and the Instances in them.
CELL_COPIES_SELECTOR = UPSTREAM_NAMESPACE_LABEL  # present
CELL_NAMESPACES_SELECTOR = UPSTREAM_CLUSTER_LABEL  # present
UPSTREAM_INDEX = "upstream"  # downstream namespaces by "<project>/<project namespace>"

# With --sharding, each shard's caches hold only the project WDs and Workloads, cell copies
# and cell Instances labelled for it (`ShardingOptions.cache_selectors`); the sharder (on the
# elected replica) reads the rest of the project WDs and Workloads, those not labelled for
# its own shard, through views of this alias. Unsharded, it is the one view.
FLEET = "fleet"


CITY_INDEX = "city"  # project WDs by spec.cityCode, and by spec.locationRef.name (LOCATION_INDEX)
LOCATION_INDEX = "location"


def city_of_wd(wd: dict[str, Any]) -> list[str]:
    """Index: a WD's written city, as `city_key` (case-insensitive; query with `city_key`
    too). A WD placed by location has none here: its city is its Location's, found
    through LOCATION_INDEX (`Routes.wds_of_city`)."""
    city = get_mapping(wd, "spec").get("cityCode")
    return [city_key(city)] if isinstance(city, str) and city else []


def location_of_wd(wd: dict[str, Any]) -> list[str]:
    """Index: the Location a WD names (`spec.locationRef.name`), if any."""
    ref = get_mapping(wd, "spec").get("locationRef")
    name = ref.get("name") if isinstance(ref, dict) else None
    return [name] if isinstance(name, str) and name else []


WD_INDEXERS = {CITY_INDEX: city_of_wd, LOCATION_INDEX: location_of_wd}


def read_locations(ctrl: Controller) -> None:
    """Declare the view `known_locations` reads: every Location of the management cluster."""
    ctrl.reads(LOCATIONS, clusters=LOCAL)


def known_locations(mgr: Manager) -> list[KnownLocation]:
    """The Locations of the management cluster, as placement reads them. Raises
    ClusterNotReadyError until their view has listed once (an empty list before then would
    read as "every location is unknown")."""
    return [known_location(obj) for obj in _listed_locations(mgr).store.list()]


def _listed_locations(mgr: Manager) -> Informer:
    """The management cluster's Locations view, once it has listed (ClusterNotReadyError before)."""
    informer = mgr.local.cache.informer_of(LOCATIONS)
    if not informer.has_synced:
        raise ClusterNotReadyError(mgr.local.name, "syncing", "its Locations view has not listed yet")
    return informer


class KnownLocations:
    """`known_locations`, decoded again only when a Location moved: the same list object
    for as long as the view holds the same Locations (their raw bytes compared, none
    decoded), so a caller can key what it derives from them on that object
    (`projector.placementmemo`). Raises ClusterNotReadyError as `known_locations` does."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self._raw: tuple[bytes, ...] | None = None
        self._decoded: list[KnownLocation] = []

    def __call__(self) -> list[KnownLocation]:
        raw = tuple(value for _key, value in _listed_locations(self.mgr).store.items_raw())
        if raw != self._raw:
            self._raw, self._decoded = raw, [known_location(orjson.loads(value)) for value in raw]
        return self._decoded


def upstream_key(project: str, namespace: str) -> str:
    return f"{project}/{namespace}"


def upstream_of_key(key: str) -> tuple[str, str]:
    """(project, project namespace) of an `upstream_key` (a namespace name holds no "/")."""
    project, _, namespace = key.rpartition("/")
    return project, namespace


def namespace_upstream(ns: dict[str, Any]) -> list[str]:
    """Index: the project (bare name) and project namespace a downstream namespace serves."""
    ref = upstream_identity(None, ns)
    return [upstream_key(ref.project, ref.namespace)] if ref is not None else []


def is_cell(cluster: Cluster) -> bool:
    return cluster.labels.get(CLUSTER_ROLE_LABEL) == CELL_ROLE


def is_project(cluster: Cluster) -> bool:
    return cluster.labels.get(CLUSTER_ROLE_LABEL) == PROJECT_ROLE


def cell_clusters(mgr: Manager) -> Iterator[Cluster]:
    for _name, cluster in sorted(mgr.clusters.items()):
        if is_cell(cluster):
            yield cluster


def project_clusters(mgr: Manager) -> Iterator[Cluster]:
    for _name, cluster in sorted(mgr.clusters.items()):
        if is_project(cluster):
            yield cluster


def cell_info(cluster: Cluster) -> CellInfo:
    return CellInfo(
        name=cluster.name,
        city_code=cluster.labels.get(CITY_LABEL, ""),
        reachable=cluster.state is not ClusterState.UNREACHABLE,
    )


def registered_cells(mgr: Manager) -> list[CellInfo]:
    """Every engaged cell with a city code (a cell registered without one serves no city)."""
    return [info for info in map(cell_info, cell_clusters(mgr)) if info.city_code]


def cell_synced(cell: Cluster) -> bool:
    """Every view of the cell (federated namespaces, copies, Instances) has completed its
    first LIST. Not just the namespaces': a reader that finds a namespace synced but the
    Instances in it not yet listed would take "not cached" for "not there" (a manager
    restart once deleted and recreated Instance projections that way)."""
    return cell.cache.view_of(NAMESPACES) is not None and cell.cache.has_synced


def cell_fresh(cell: Cluster) -> bool:
    """The cell's views are synced and not re-syncing (the cluster is not `syncing`, as
    after an outage until every watch follows the server again): only then does an
    object missing from them mean it is missing in the cell. An unreachable cell's views
    stay as last seen (the caller decides what staleness means for it)."""
    return cell_synced(cell) and cell.state is not ClusterState.SYNCING


async def find_copies(
    mgr: Manager, project: str, namespace: str, name: str, *, alias: str = ""
) -> list[tuple[Cluster, dict[str, Any]]]:
    """Every downstream copy of the project WD (project, namespace, name) in the cells
    whose caches are synced, found through the downstream namespaces' labels (so a copy
    outlives a project namespace that was deleted and recreated under the same name).

    A shard's copies view holds only the copies labelled for it: one its WD's former shard
    labelled (a hand-over) is not there until this shard's next write relabels it, so a
    copy missing from a shard's cache is read live (a GET; the new owner must see what
    the cells hold, or it would take an autoscaled copy for a new one) — unless the cached
    WD was never claimed (no federator finalizer: no copy of it was ever written)."""
    found: list[tuple[Cluster, dict[str, Any]]] = []
    # decided on first need only (a narrowed view missing the copy): it decodes the project WD
    maybe_elsewhere: bool | None = None
    for cell in cell_clusters(mgr):
        if not cell_synced(cell):
            continue
        partial = not alias and cell.cache.narrows(WORKLOAD_DEPLOYMENTS)
        # the namespaces' keys (their names: cluster-scoped) through the index, none decoded
        for cell_namespace in cell.cache.informer_of(NAMESPACES).store.index_keys(
            UPSTREAM_INDEX, upstream_key(project, namespace)
        ):
            try:
                obj = await cell.client.get_or_none(WORKLOAD_DEPLOYMENTS, name, namespace=cell_namespace, alias=alias)
                if obj is None and partial and maybe_elsewhere is None:
                    maybe_elsewhere = _claimed_or_gone(mgr, project, namespace, name)
                if obj is None and partial and maybe_elsewhere:
                    obj = await cell.client.get_live_or_none(WORKLOAD_DEPLOYMENTS, name, namespace=cell_namespace)
            except ClusterNotReadyError:
                continue  # the copies' view is still syncing: the cell's READY event comes back here
            if obj is not None:
                found.append((cell, obj))
    return found


def _claimed_or_gone(mgr: Manager, project: str, namespace: str, name: str) -> bool:
    """The project WD carries the federator's finalizer (written before any copy of it),
    or is not in the project's cache (gone, or never seen)."""
    cluster = mgr.clusters.get(project)
    if cluster is None or cluster.cache.view_of(WORKLOAD_DEPLOYMENTS) is None:
        return True
    wd = cluster.cache.informer_of(WORKLOAD_DEPLOYMENTS).get(name, namespace=namespace)
    return wd is None or FEDERATOR_FINALIZER in (get_mapping(wd, "metadata").get("finalizers") or [])


def read_cell_copies(ctrl: Controller, *, alias: str = "") -> None:
    """Declare the cell views `find_copies` reads (the same views the federator watches)."""
    ctrl.reads(WORKLOAD_DEPLOYMENTS, clusters=CELLS, label_selector=CELL_COPIES_SELECTOR, alias=alias)
    ctrl.reads(NAMESPACES, clusters=CELLS, label_selector=CELL_NAMESPACES_SELECTOR,
               indexers={UPSTREAM_INDEX: namespace_upstream})  # fmt: skip
