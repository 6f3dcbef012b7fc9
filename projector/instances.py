"""Instance projector (management mode): every Instance a cell runs for a project WD has a
read-only projection of the same name in the project namespace.

Request key: (project cluster, project namespace, project WD name).
Reads (caches): the project WD and its projections (project Instances labelled with a
WD name); in the cells, the WD copies, downstream namespaces and Instances (views shared
with the federator; `fleetview`).
Writes, and alone writes: project Instances controlled by a project WD (metadata and
spec with field manager `projector`, status through the status subresource).
Never writes: anything in a cell, the project WD, Instances it does not control.

The rule (docs/api.md "Instance projections"): a projection exists while an Instance of
that name exists, for this WD (its copy's upstream UID is the WD's), in a cell whose cache
is synced. Its owner reference is the live project WD, so cascade deletion reclaims the
projections with it. The projector removes a projection only when no synced cell holds
the Instance any more (scale down, copy removed) and no engaged cell is still syncing; an
unreachable cell's cached Instances keep theirs (their status says so). An Instance that
moved between cells of the city keeps one projection, fed by the cell whose share holds
the ordinal.

Invariants and tests (tests/projector/test_projector.py):
- projections `<wd>-0..3` for a WD of 4 across two cells, owner reference = the project
  WD, status mirrored (test_instances_and_status_reach_the_project);
- a crashing Instance's Ready=False/InstanceCrashing reaches its projection (test_a_crash_in_one_cell_is_named);
- scale down removes exactly the removed Instances' projections; deleting the WD leaves
  none behind (test_projections_follow_scale_down_and_deletion);
- an Instance whose labels are missing gets an Event and a retry, never an ownerless
  projection (test_an_instance_without_upstream_labels_is_not_projected);
- zero writes at steady state (tests/federation/test_steady_state.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from federation.api.constants import Label
from federation.api.resources import INSTANCES, WORKLOAD_DEPLOYMENTS
from federation.downstream import UPSTREAM_UID_ANNOTATION, copy_ordinals
from federation.fleetview import CELLS, PROJECTS, cell_clusters, cell_synced, find_copies, read_cell_copies
from federation.settings import ManagerSettings
from mcruntime import controllerutil
from mcruntime.client import Preconditions
from mcruntime.cluster import Cluster
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.manager import Manager
from mcruntime.objects import Obj, meta
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.request import Request

from .routing import Routes

log = logging.getLogger(__name__)

FIELD_MANAGER = "projector"
CELL_ANNOTATION = "compute.datumapis.com/cell"
UPSTREAM_LABELS = (str(Label.UPSTREAM_CLUSTER_NAME), str(Label.UPSTREAM_NAMESPACE))


@dataclass(frozen=True)
class Source:
    """One cell Instance that a projection mirrors."""

    cell: str
    instance: Obj
    in_share: bool  # the cell's copy currently holds this ordinal

    @property
    def rank(self) -> tuple[bool, bool, str]:
        deleting = bool(meta(self.instance).get("deletionTimestamp"))
        return (not self.in_share, deleting, self.cell)


def projection(wd: Obj, source: Source) -> Obj:
    """The project Instance for a cell Instance (an apply intent for metadata and spec)."""
    inst = source.instance
    labels = {str(k): str(v) for k, v in (meta(inst).get("labels") or {}).items()}
    labels[str(Label.WORKLOAD_DEPLOYMENT_UID)] = str(meta(wd)["uid"])  # the project's WD, not the cell copy
    return {
        "apiVersion": inst.get("apiVersion") or INSTANCES.api_version,
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


def projection_status(wd: Obj, source: Source) -> Obj:
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {"name": meta(source.instance)["name"], "namespace": meta(wd)["namespace"]},
        "status": source.instance.get("status") or {},
    }


class InstanceProjector:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: Request) -> Result:
        # 1. the project cluster (never a fallback for an empty or unknown name)
        if not req.cluster:
            return Result()
        project = self.mgr.get_cluster(req.cluster)
        # 2. fetch; 3. early exits: a WD gone or going takes its projections along (owner references)
        wd = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, req.name, namespace=req.namespace)
        if wd is None or meta(wd).get("deletionTimestamp"):
            return Result()
        uid = str(meta(wd)["uid"])
        projections = {
            str(meta(p)["name"]): p
            for p in await project.client.list(INSTANCES, namespace=req.namespace, index=(CONTROLLER_UID, uid))
        }
        # 4. desired state: the cell Instances of this WD
        sources, unlabelled, complete = await self._sources(req, uid)
        for cell, inst in unlabelled:
            await self._event(cell, inst, "InstanceLabelsMissing",
                              f"Instance {meta(inst)['name']} lacks the upstream labels {', '.join(UPSTREAM_LABELS)}; "
                              "it is not projected until the cell WD controller stamps them")  # fmt: skip
        # 5. write only the difference
        for name, source in sources.items():
            await self._project(project, wd, source, projections.get(name))
            await self._project_status(project, wd, source, projections.get(name))
        if complete:
            for name, stale in projections.items():
                if name not in sources:
                    await self._remove(project, stale)
        if unlabelled:
            raise TemporaryError(f"{len(unlabelled)} cell Instances of {req} lack their upstream labels")
        return Result()

    async def _sources(self, req: Request, uid: str) -> tuple[dict[str, Source], list[tuple[Cluster, Obj]], bool]:
        """The Instances of this WD in the cells, one per name (the cell whose share holds
        the ordinal wins); the ones missing their upstream labels; and whether every
        engaged cell was synced (only then is an absence meaningful)."""
        chosen: dict[str, Source] = {}
        unlabelled: list[tuple[Cluster, Obj]] = []
        for cell, copy in await find_copies(self.mgr, req.cluster, req.namespace, req.name):
            if (meta(copy).get("annotations") or {}).get(UPSTREAM_UID_ANNOTATION) != uid:
                continue  # a copy of an earlier WD of the same name
            share = copy_ordinals(copy) or range(0)
            instances = await cell.client.list(
                INSTANCES, namespace=str(meta(copy)["namespace"]), index=(CONTROLLER_UID, str(meta(copy)["uid"]))
            )
            for inst in instances:
                labels = meta(inst).get("labels") or {}
                if any(not labels.get(key) for key in UPSTREAM_LABELS):
                    unlabelled.append((cell, inst))
                    continue
                ordinal = _ordinal(inst)
                source = Source(cell.name, inst, ordinal is not None and ordinal in share)
                name = str(meta(inst)["name"])
                if name not in chosen or source.rank < chosen[name].rank:
                    chosen[name] = source
        complete = all(cell_synced(c) for c in cell_clusters(self.mgr))
        return chosen, unlabelled, complete

    # ------------------------------------------------------------------ writes (one each)
    async def _project(self, project: Cluster, wd: Obj, source: Source, cached: Obj | None) -> None:
        await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection(wd, source), cached=cached, field_manager=FIELD_MANAGER
        )

    async def _project_status(self, project: Cluster, wd: Obj, source: Source, cached: Obj | None) -> None:
        await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection_status(wd, source), cached=cached, field_manager=FIELD_MANAGER,
            subresource="status",
        )  # fmt: skip

    async def _remove(self, project: Cluster, stale: Obj) -> None:
        if meta(stale).get("deletionTimestamp"):
            return
        await project.client.delete(
            INSTANCES,
            str(meta(stale)["name"]),
            namespace=str(meta(stale)["namespace"]),
            preconditions=Preconditions(uid=str(meta(stale)["uid"])),
            ignore_not_found=True,
        )

    async def _event(self, cell: Cluster, instance: Obj, reason: str, message: str) -> None:
        await self.mgr.event_recorder(cell.name, FIELD_MANAGER).event(instance, "Warning", reason, message)


def _ordinal(instance: Obj) -> int | None:
    value = (meta(instance).get("labels") or {}).get(str(Label.INSTANCE_INDEX))
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def register(mgr: Manager, settings: ManagerSettings) -> None:
    """Wire the watches: project WDs and their projections; cell Instances (mapped to their
    project WD)."""
    projector = InstanceProjector(mgr)
    routes = Routes(mgr)
    ctrl = mgr.new_controller("instance-projector", projector, workers=settings.controllers.workers)
    ctrl.for_(WORKLOAD_DEPLOYMENTS, clusters=PROJECTS)
    ctrl.owns(
        INSTANCES, owner=WORKLOAD_DEPLOYMENTS, clusters=PROJECTS, label_selector=str(Label.WORKLOAD_DEPLOYMENT_NAME),
        indexers={CONTROLLER_UID: controller_uid},
    )  # fmt: skip
    # every cell Instance, so one that lacks its upstream labels is seen (and reported)
    ctrl.watch(
        INSTANCES,
        EnqueueRequestsFromMapFunc(routes.wd_of_instance, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        indexers={CONTROLLER_UID: controller_uid},
    )
    read_cell_copies(ctrl)
