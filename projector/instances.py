"""Instance projector (management mode): every Instance a cell runs for a project WD has a
read-only projection of the same name in the project namespace.

Request key: (project cluster, project namespace, Instance name): one Instance, so a status
change in a cell costs one lookup per cell and at most two writes.
Reads (caches): project WDs and Instance projections; in the cells, the WD copies,
downstream namespaces and Instances (views shared with the federator; `fleet.fleetview`).
Writes, and alone writes: project Instances controlled by a project WD (metadata and spec
with field manager `projector`, status through the status subresource).
Never writes: anything in a cell, the project WD, an Instance it does not control.

DESIGN §3 Projector (Instance projections; the choice among same-named Instances is
`fleet.projection`), pinned by tests/projector/test_projector.py:
test_instances_and_status_reach_the_project, test_a_crash_in_one_cell_is_named,
test_projections_follow_scale_down_and_deletion,
test_an_instance_moving_between_cells_keeps_its_projection,
test_an_instance_without_upstream_labels_is_not_projected,
test_an_instance_whose_project_wd_is_missing_is_not_projected; zero writes at steady state
(tests/chaos; tests/federation/test_steady_state.py)."""

from __future__ import annotations

import logging
from typing import NoReturn

from federation.api.constants import Label
from federation.api.resources import INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.downstream import UPSTREAM_UID_ANNOTATION
from federation.fleet.fleetview import (
    CELLS,
    FLEET,
    PROJECTS,
    UPSTREAM_INDEX,
    cell_clusters,
    cell_fresh,
    cell_synced,
    read_cell_copies,
    upstream_key,
)
from federation.fleet.options import ManagementOptions
from federation.fleet.projection import Source, choose, holds_ordinal, projection, projection_status
from federation.fleet.routing import (
    INSTANCES_OF_COPY_INDEX,
    PROJECTED_FROM_INDEX,
    Routes,
    deployment_of_instance,
    instances_of_copy,
    projected_from,
)
from mcruntime import controllerutil
from mcruntime.cluster import Cluster
from mcruntime.errors import APIError, is_not_found
from mcruntime.fields import get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.predicates import not_status_only
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request

log = logging.getLogger(__name__)

FIELD_MANAGER = "projector"
UPSTREAM_LABELS = (str(Label.UPSTREAM_CLUSTER_NAME), str(Label.UPSTREAM_NAMESPACE))


class InstanceProjector:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, FIELD_MANAGER)

    async def reconcile(self, project: Cluster, projection: Obj) -> Result:
        """A projection in the project (`ForObject`): kept, corrected or removed."""
        req = Request(project.name, get_str(projection, "metadata.namespace"), get_str(projection, "metadata.name"))
        return await self._sync(project, req, projection)

    async def gone(self, project: Cluster, req: Request) -> Result:
        """No projection of that name (`ForObject`): made if a cell has the Instance."""
        return await self._sync(project, req, None)

    async def _sync(self, project: Cluster, req: Request, current: Obj | None) -> Result:
        # 1-2. the project and its cached projection, if any (`ForObject`: a cluster not
        # engaged is dropped); the cell Instances of that name
        sources, complete = await self._sources(req, project)
        # 3. early exits: a projection someone else controls is not ours to touch
        if current is not None and controllerutil.controller_of(current) is None:
            return Result()
        # 4. desired state: the best source (the cell whose share holds the ordinal)
        source = choose(sources)
        # 5. write only the difference
        if source is not None:
            if current is not None and not controllerutil.is_controlled_by(current, source.wd):
                await self._remove(project, current)  # a projection of an earlier WD of the same name
                return Result()
            await self._project(project, source, current)
            await self._project_status(project, source, current)
        elif current is not None and complete and not is_deleting(current):
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
                namespace = get_str(ns, "metadata.name")
                inst = cell.cache.informer_of(INSTANCES).get(req.name, namespace=namespace)
                wd_name = deployment_of_instance(inst) if inst is not None else None
                if inst is None or wd_name is None:
                    continue
                labels = get_str_map(inst, "metadata.labels") or {}
                if any(not labels.get(k) for k in UPSTREAM_LABELS):
                    await self.events.event(cell.name, inst, "Warning", "InstanceLabelsMissing",
                                      f"Instance {req.name} lacks the upstream labels {', '.join(UPSTREAM_LABELS)}; it "
                                      "is not projected until the cell WD controller stamps them")  # fmt: skip
                    raise TemporaryError(f"cell {cell.name}: Instance {namespace}/{req.name} lacks its upstream labels")
                copy = cell.cache.informer_of(WORKLOAD_DEPLOYMENTS, FLEET).get(wd_name, namespace=namespace)
                wd = await project.client.get_or_none(
                    WORKLOAD_DEPLOYMENTS, wd_name, namespace=req.namespace, alias=FLEET
                )
                if copy is None or is_deleting(copy) or is_deleting(inst) or (wd is not None and is_deleting(wd)):
                    # the copy (accepted for deletion: the project WD may already be gone) or
                    # its WD is going, and so are its Instances: nothing to project or report
                    continue
                if wd is None:
                    await self._upstream_missing(project, cell, inst, req, wd_name)
                if get_str_map(copy, "metadata.annotations").get(UPSTREAM_UID_ANNOTATION) != get_str(
                    wd, "metadata.uid", required=False
                ):
                    continue  # an Instance of an earlier WD of the same name
                sources.append(Source(cell.name, inst, wd, holds_ordinal(copy, inst)))
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
        await controllerutil.delete_exact(project.client, INSTANCES, stale)

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
            await self.events.event(cell.name, inst, "Warning", "UpstreamDeploymentMissing",
                              f"Instance {req.name}: its project WorkloadDeployment {where} does not exist; not "
                              "projected (the federator sweeps the orphaned copy)")  # fmt: skip
            raise TemporaryError(f"cell {cell.name}: Instance {req.name}: project WD {where} does not exist") from exc
        raise TemporaryError(f"cell {cell.name}: Instance {req.name}: project WD {where} not cached yet")


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: projections, project WDs, every cell Instance (mapped to its
    projection), cell registrations."""
    projector = InstanceProjector(mgr)
    routes = Routes(mgr)
    ctrl = mgr.new_controller("instance-projector", ForObject(mgr, INSTANCES, projector), workers=options.workers)
    ctrl.for_(
        INSTANCES, clusters=PROJECTS, label_selector=str(Label.WORKLOAD_DEPLOYMENT_NAME),
        indexers={CONTROLLER_UID: controller_uid, PROJECTED_FROM_INDEX: projected_from},
    )  # fmt: skip
    # a project WD's status changes all the time (the status projector writes it) and no
    # projection depends on it: only its coming, going and metadata re-project (one WD event
    # finds its cell Instances through the instances-of-copy index and decodes none)
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        EnqueueRequestsFromMapFunc(routes.projections_of_wd, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=PROJECTS,
        predicates=[not_status_only],
        alias=FLEET,
    )
    # every cell Instance, so one that lacks its upstream labels is seen (and reported)
    ctrl.watch(
        INSTANCES,
        EnqueueRequestsFromMapFunc(routes.projection_of_instance, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        indexers={INSTANCES_OF_COPY_INDEX: instances_of_copy},
    )
    ctrl.watch_clusters(routes.projections_of_cell, clusters=CELLS)
    read_cell_copies(ctrl, alias=FLEET)
