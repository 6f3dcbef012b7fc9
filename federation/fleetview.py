"""The registered cells and projects as the management-mode controllers see them: the
clusters a provider engaged, told apart by their role label, with a cell's city code and
reachability and a project's encoded upstream cluster name. Read-only over the Manager;
the federator, the workload controller and the projector all ask here, so they agree on
which cells exist."""

from __future__ import annotations

from collections.abc import Iterator

from mcruntime.cluster import Cluster, ClusterState
from mcruntime.manager import Manager
from mcruntime.source import ClusterFilter, engaged

from .api.constants import ClusterRole, Label
from .placement import CellInfo

CELLS: ClusterFilter = engaged(f"{Label.CLUSTER_ROLE}={ClusterRole.CELL}")
PROJECTS: ClusterFilter = engaged(f"{Label.CLUSTER_ROLE}={ClusterRole.PROJECT}")


def is_cell(cluster: Cluster) -> bool:
    return cluster.labels.get(Label.CLUSTER_ROLE) == ClusterRole.CELL


def is_project(cluster: Cluster) -> bool:
    return cluster.labels.get(Label.CLUSTER_ROLE) == ClusterRole.PROJECT


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
        city_code=cluster.labels.get(Label.TOPOLOGY_CITY_CODE, ""),
        reachable=cluster.state is not ClusterState.UNREACHABLE,
    )


def registered_cells(mgr: Manager) -> list[CellInfo]:
    """Every engaged cell with a city code (a cell registered without one serves no city)."""
    return [info for info in map(cell_info, cell_clusters(mgr)) if info.city_code]
