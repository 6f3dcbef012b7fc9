"""Instance projector (management mode): every Instance a cell runs for a project WD has a
read-only projection of the same name in the project namespace.

Request key: (project cluster, project namespace, Instance name) — one Instance, so a
status change in a cell costs one lookup per cell and at most two writes, whatever the
size of its WorkloadDeployment.
Reads (caches): project WDs and Instance projections; in the cells, the WD copies,
downstream namespaces and Instances (views shared with the federator; `fleetview`).
Writes, and alone writes: project Instances controlled by a project WD (metadata and
spec with field manager `projector`, status through the status subresource).
Never writes: anything in a cell, the project WD, an Instance it does not control.

The rule (docs/operations.md "Instance projections"): a projection exists while an
Instance of that name exists, for this WD (its copy's upstream UID is the WD's), in a cell
whose cache is synced. Its owner reference is the live project WD, so cascade deletion
reclaims the projections with it. The projector removes a projection only when no synced
cell holds the Instance any more (scale down, copy removed) and no engaged cell is still
syncing; an unreachable cell's cached Instances keep theirs. An Instance that moved between
cells of the city keeps one projection, fed by the cell whose share holds the ordinal.

Invariants and tests (tests/projector/test_projector.py):
- projections `<wd>-0..3` for a WD of 4 across two cells, owner reference = the project
  WD, status mirrored (test_instances_and_status_reach_the_project);
- a crashing Instance's Ready=False/InstanceCrashing reaches its projection (test_a_crash_in_one_cell_is_named);
- scale down removes exactly the removed Instances' projections; deleting the WD leaves
  none behind (test_projections_follow_scale_down_and_deletion);
- a moved Instance keeps one projection (test_an_instance_moving_between_cells_keeps_its_projection);
- an Instance whose labels are missing, or whose project WD does not exist, gets an Event
  and a retry with backoff, never an ownerless projection
  (test_an_instance_without_upstream_labels_is_not_projected,
  test_an_instance_whose_project_wd_is_missing_is_not_projected);
- zero writes at steady state, with cell controllers, Pods and projections in place
  (tests/chaos: every scenario ends on an idle window; tests/federation/test_steady_state.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from federation.api.constants import Label
from federation.api.resources import INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.downstream import UPSTREAM_UID_ANNOTATION, copy_ordinals
from federation.fleetview import (
    CELLS,
    PROJECTS,
    UPSTREAM_INDEX,
    cell_clusters,
    cell_fresh,
    cell_synced,
    project_clusters,
    read_cell_copies,
    upstream_key,
)
from federation.settings import ManagerSettings
from mcruntime import controllerutil
from mcruntime.client import Preconditions
from mcruntime.cluster import Cluster
from mcruntime.errors import APIError, is_not_found
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.manager import Manager
from mcruntime.objects import Obj, meta
from mcruntime.predicates import not_status_only
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.request import Request
from mcruntime.source import ClusterEvent, ClusterEventType

from .routing import deployment_of_instance, upstream_of

log = logging.getLogger(__name__)

FIELD_MANAGER = "projector"
CELL_ANNOTATION = "compute.datumapis.com/cell"
CELL_INDEX = "projected-from"  # projections by the cell they mirror
UPSTREAM_LABELS = (str(Label.UPSTREAM_CLUSTER_NAME), str(Label.UPSTREAM_NAMESPACE))


def projected_from(projection: Obj) -> list[str]:
    cell = (meta(projection).get("annotations") or {}).get(CELL_ANNOTATION)
    return [str(cell)] if cell else []


@dataclass(frozen=True)
class Source:
    """One cell Instance that a projection mirrors, with the project WD it belongs to."""

    cell: str
    instance: Obj
    wd: Obj
    in_share: bool  # the cell's copy currently holds this ordinal

    @property
    def rank(self) -> tuple[bool, bool, str]:
        deleting = bool(meta(self.instance).get("deletionTimestamp"))
        return (not self.in_share, deleting, self.cell)


def projection(source: Source) -> Obj:
    """The project Instance for a cell Instance (an apply intent for metadata and spec)."""
    inst, wd = source.instance, source.wd
    labels = {str(k): str(v) for k, v in (meta(inst).get("labels") or {}).items()}
    labels[str(Label.WORKLOAD_DEPLOYMENT_UID)] = str(meta(wd)["uid"])  # the project's WD, not the cell copy
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {
            "name": meta(inst)["name"],
            "namespace": meta(wd)["namespace"],
            "labels": labels,
            "annotations": {CELL_ANNOTATION: source.cell},
            "ownerReferences": [controllerutil.controller_reference(wd)],
        },
        "spec": inst.get("spec") or {},
    }


def projection_status(source: Source) -> Obj:
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {"name": meta(source.instance)["name"], "namespace": meta(source.wd)["namespace"]},
        "status": source.instance.get("status") or {},
    }


def _ordinal(instance: Obj) -> int | None:
    value = (meta(instance).get("labels") or {}).get(str(Label.INSTANCE_INDEX))
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class InstanceProjector:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: Request) -> Result:
        # 1. the project cluster (never a fallback for an empty or unknown name)
        if not req.cluster:
            return Result()
        project = self.mgr.get_cluster(req.cluster)
        # 2. fetch: the projection and the cell Instances of that name
        current = await project.client.get_or_none(INSTANCES, req.name, namespace=req.namespace)
        sources, complete = await self._sources(req, project)
        # 3. early exits: a projection someone else controls is not ours to touch
        if current is not None and controllerutil.controller_of(current) is None:
            return Result()
        # 4. desired state: the best source (the cell whose share holds the ordinal)
        source = min(sources, key=lambda s: s.rank) if sources else None
        # 5. write only the difference
        if source is not None:
            if current is not None and not controllerutil.is_controlled_by(current, source.wd):
                await self._remove(project, current)  # a projection of an earlier WD of the same name
                return Result()
            await self._project(project, source, current)
            await self._project_status(project, source, current)
        elif current is not None and complete and not meta(current).get("deletionTimestamp"):
            await self._remove(project, current)
        return Result()

    async def _sources(self, req: Request, project: Cluster) -> tuple[list[Source], bool]:
        """The cell Instances named `req.name` for this project namespace whose project WD is
        live, and whether every engaged cell was synced (only then is an absence meaningful).
        An Instance without its upstream labels is reported and retried, never projected."""
        sources: list[Source] = []
        key = upstream_key(req.cluster, req.namespace)
        for cell in cell_clusters(self.mgr):
            if not cell_synced(cell):
                continue
            for ns in cell.cache.informer_of(NAMESPACES).store.by_index(UPSTREAM_INDEX, key):
                namespace = str(meta(ns)["name"])
                inst = cell.cache.informer_of(INSTANCES).get(req.name, namespace=namespace)
                wd_name = deployment_of_instance(inst) if inst is not None else None
                if inst is None or wd_name is None:
                    continue
                labels = meta(inst).get("labels") or {}
                if any(not labels.get(k) for k in UPSTREAM_LABELS):
                    await self._event(cell, inst, "InstanceLabelsMissing",
                                      f"Instance {req.name} lacks the upstream labels {', '.join(UPSTREAM_LABELS)}; it "
                                      "is not projected until the cell WD controller stamps them")  # fmt: skip
                    raise TemporaryError(f"cell {cell.name}: Instance {namespace}/{req.name} lacks its upstream labels")
                copy = cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).get(wd_name, namespace=namespace)
                wd = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, wd_name, namespace=req.namespace)
                if copy is None or (wd is not None and meta(wd).get("deletionTimestamp")):
                    continue  # the copy or its WD is going: so are its Instances
                if wd is None:
                    await self._upstream_missing(project, cell, inst, req, wd_name)
                if (meta(copy).get("annotations") or {}).get(UPSTREAM_UID_ANNOTATION) != meta(wd).get("uid"):
                    continue  # an Instance of an earlier WD of the same name
                ordinal = _ordinal(inst)
                share = copy_ordinals(copy) or range(0)
                sources.append(Source(cell.name, inst, wd, ordinal is not None and ordinal in share))
        complete = all(cell_fresh(c) for c in cell_clusters(self.mgr))
        return sources, complete

    # ------------------------------------------------------------------ writes (one each)
    async def _project(self, project: Cluster, source: Source, cached: Obj | None) -> None:
        await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection(source), cached=cached, field_manager=FIELD_MANAGER
        )

    async def _project_status(self, project: Cluster, source: Source, cached: Obj | None) -> None:
        await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection_status(source), cached=cached, field_manager=FIELD_MANAGER,
            subresource="status",
        )  # fmt: skip

    async def _remove(self, project: Cluster, stale: Obj) -> None:
        await project.client.delete(
            INSTANCES,
            str(meta(stale)["name"]),
            namespace=str(meta(stale)["namespace"]),
            preconditions=Preconditions(uid=str(meta(stale)["uid"])),
            ignore_not_found=True,
        )

    async def _upstream_missing(
        self, project: Cluster, cell: Cluster, inst: Obj, req: Request, wd_name: str
    ) -> NoReturn:
        """A cell Instance whose project WD is not there: never projected ownerless. Confirmed
        with one uncached read (the project cache may lag a WD just created) before the
        Event; either way the request is retried with backoff."""
        where = f"{req.cluster}/{req.namespace}/{wd_name}"
        try:
            await project.client.get_live(WORKLOAD_DEPLOYMENTS, wd_name, namespace=req.namespace)
        except APIError as exc:
            if not is_not_found(exc):
                raise
            await self._event(cell, inst, "UpstreamDeploymentMissing",
                              f"Instance {req.name}: its project WorkloadDeployment {where} does not exist; not "
                              "projected (the federator sweeps the orphaned copy)")  # fmt: skip
            raise TemporaryError(f"cell {cell.name}: Instance {req.name}: project WD {where} does not exist") from exc
        raise TemporaryError(f"cell {cell.name}: Instance {req.name}: project WD {where} not cached yet")

    async def _event(self, cell: Cluster, instance: Obj, reason: str, message: str) -> None:
        await self.mgr.event_recorder(cell.name, FIELD_MANAGER).event(instance, "Warning", reason, message)

    # ------------------------------------------------------------------ mapping events to requests
    async def of_cell_instance(self, cell_name: str, instance: Obj) -> list[Request]:
        ref = upstream_of(self.mgr, cell_name, instance)
        if ref is None:
            return []
        return [Request(ref.project, ref.namespace, str(meta(instance).get("name")))]

    async def of_project_wd(self, project_name: str, wd: Obj) -> list[Request]:
        """A project WD changed (created, deleted, moved): its projections and the cell
        Instances of its copies re-project."""
        project = self.mgr.clusters.get(project_name)
        if project is None:
            return []
        namespace = str(meta(wd).get("namespace") or "")
        names = {str(meta(p).get("name")) for p in project.cache.informer_of(INSTANCES).store.by_index(
            CONTROLLER_UID, str(meta(wd).get("uid") or ""))}  # fmt: skip
        key = upstream_key(project_name, namespace)
        for cell in cell_clusters(self.mgr):
            if cell.cache.view_of(INSTANCES) is None or not cell_synced(cell):
                continue
            for ns in cell.cache.informer_of(NAMESPACES).store.by_index(UPSTREAM_INDEX, key):
                for inst in cell.cache.informer_of(INSTANCES).store.list(str(meta(ns)["name"])):
                    if deployment_of_instance(inst) == meta(wd).get("name"):
                        names.add(str(meta(inst).get("name")))
        return [Request(project_name, namespace, name) for name in sorted(names)]

    def of_cell_event(self, event: ClusterEvent) -> Iterable[Request]:
        """A cell removed or ready again: the projections it fed are checked."""
        if event.type not in (ClusterEventType.DISENGAGED, ClusterEventType.READY):
            return []
        requests = []
        for project in project_clusters(self.mgr):
            for p in project.cache.informer_of(INSTANCES).store.by_index(CELL_INDEX, event.cluster):
                requests.append(Request(project.name, str(meta(p).get("namespace")), str(meta(p).get("name"))))
        return requests


def register(mgr: Manager, settings: ManagerSettings) -> None:
    """Wire the watches: projections, project WDs, every cell Instance (mapped to its
    projection), cell registrations."""
    projector = InstanceProjector(mgr)
    ctrl = mgr.new_controller("instance-projector", projector, workers=settings.controllers.workers)
    ctrl.for_(
        INSTANCES, clusters=PROJECTS, label_selector=str(Label.WORKLOAD_DEPLOYMENT_NAME),
        indexers={CONTROLLER_UID: controller_uid, CELL_INDEX: projected_from},
    )  # fmt: skip
    # a project WD's status changes all the time (the status projector writes it) and no
    # projection depends on it: only its coming, going and metadata re-project (mapping one
    # WD event to its projections reads a whole namespace of cell Instances)
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        EnqueueRequestsFromMapFunc(projector.of_project_wd, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=PROJECTS,
        predicates=[not_status_only],
    )
    # every cell Instance, so one that lacks its upstream labels is seen (and reported)
    ctrl.watch(
        INSTANCES,
        EnqueueRequestsFromMapFunc(projector.of_cell_instance, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
    )
    ctrl.watch_clusters(projector.of_cell_event, clusters=CELLS)
    read_cell_copies(ctrl)
