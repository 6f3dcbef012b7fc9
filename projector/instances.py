"""Instance projector (management mode): every Instance a cell runs for a project WD has a
read-only projection of the same name in the project namespace.

Request key: (project cluster, project namespace, Instance name): one Instance, so a status change in a cell costs one
lookup per cell and at most two writes. With `--sharding` it runs on every shard, gated by the WD its Instances name
(`owned_by`); a projection carries its WD's shard label, which the shard's project caches select, and a WD handed to
the shard has its projections read once live, then relabelled or removed (`handed_over`, `adopting`).
Reads (caches): project WDs and Instance projections; in the cells, the WD copies, downstream namespaces (watched)
and Instances (views shared with the federator; `fleet.fleetview`).
Writes, and alone writes: project Instances controlled by a project WD (metadata and spec with field manager
`projector`, status through the status subresource). Never: anything in a cell, the project WD, another's Instance.

DESIGN §3 Projector (the choice among same-named Instances is `fleet.projection`), pinned by
tests/projector/test_projector.py: test_instances_and_status_reach_the_project, test_a_crash_in_one_cell_is_named,
test_projections_follow_scale_down_and_deletion, test_an_instance_moving_between_cells_keeps_its_projection,
test_an_instance_without_upstream_labels_is_not_projected, test_the_own_projection_write_coming_back_costs_no_reconcile,
test_an_instance_whose_project_wd_is_missing_is_not_projected,
test_an_instance_seen_before_its_cell_namespace_is_projected_when_the_namespace_arrives; DESIGN §5 by test_sharding.py
test_instance_projections_are_made_by_the_owning_shard_and_follow_a_hand_over,
test_a_projection_whose_instance_went_during_a_hand_over_is_removed_by_the_new_owner; idle: no writes (tests/chaos)."""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import NoReturn

from federation.api.constants import UPSTREAM_UID_ANNOTATION, Label
from federation.api.resources import INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.downstream import upstream_identity
from federation.fleet.fleetview import (
    CELL_COPIES_SELECTOR,
    CELL_NAMESPACES_SELECTOR,
    CELLS,
    PROJECTS,
    UPSTREAM_INDEX,
    cell_clusters,
    cell_fresh,
    cell_synced,
    namespace_upstream,
    read_cell_copies,
    upstream_key,
)
from federation.fleet.options import ManagementOptions
from federation.fleet.projection import (
    CELL_ANNOTATION,
    Source,
    choose,
    holds_ordinal,
    projection,
    projection_status,
)
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
from mcruntime.errors import APIError, TransportError, is_not_found
from mcruntime.fields import get_mapping, get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc, MapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.informer import EventType
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.ownwrites import EnqueueUnlessOwnWrite, OwnWrites
from mcruntime.predicates import event_types, not_status_only
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.sharding.gate import Owner

log = logging.getLogger(__name__)

NAME = "instance-projector"
FIELD_MANAGER = "projector"
WD_NAME_LABEL = str(Label.WORKLOAD_DEPLOYMENT_NAME)
UPSTREAM_LABELS = (str(Label.UPSTREAM_CLUSTER_NAME), str(Label.UPSTREAM_NAMESPACE))


class InstanceProjector:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, FIELD_MANAGER)
        # per projection: the last write's answer until its own watch event arrives, which
        # then wakes nothing (`EnqueueUnlessOwnWrite`): a cell's status change costs one
        # reconcile, not a second one that finds its own write
        self.own_writes: OwnWrites[Request] = OwnWrites()
        # sharded: projections of a WD handed to this shard, read live while still labelled
        # for its previous shard (outside this shard's cache), until reconciled once
        self.adopting: dict[Request, Obj] = {}

    async def reconcile(self, project: Cluster, projection: Obj) -> Result:
        """A projection in the project (`ForObject`): kept, corrected or removed."""
        req = Request(project.name, get_str(projection, "metadata.namespace"), get_str(projection, "metadata.name"))
        return await self._sync(project, req, projection)

    async def gone(self, project: Cluster, req: Request) -> Result:
        """No projection of that name (`ForObject`): made if a cell has the Instance."""
        return await self._sync(project, req, None)

    async def _sync(self, project: Cluster, req: Request, current: Obj | None) -> Result:
        # 1-2. the project and its cached projection, if any (`ForObject`: a cluster not
        # engaged is dropped), or this projector's last write's answer while the cache does not
        # show it yet; the cell Instances of that name
        current = self.own_writes.latest(req, current) or self.adopting.get(req)
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
            written = await self._project(project, source, current)
            if written is not None:
                self.own_writes.remember(req, current, written)
            await self._project_status(project, req, source, written or current)
        elif current is not None and complete and not is_deleting(current):
            if await self._beyond_share(project, req, current):
                # its relabel for this shard brings it back; adopted, so does its copy's next
                # change (`adopted_of_copy`: the cell may delete it before relabelling it)
                return Result()
            await self._remove(project, current)
        self.adopting.pop(req, None)  # relabelled or removed: from now on in this shard's cache, or gone
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
                copy = cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).get(wd_name, namespace=namespace)
                wd = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, wd_name, namespace=req.namespace)
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

    async def _beyond_share(self, project: Cluster, req: Request, stale: Obj) -> bool:
        """With `--sharding`, a shard caches only the cell Instances labelled for it: one
        not found may still be labelled for the WD's previous shard (the cell relabels it
        after its copy, after a hand-over). Absence is confirmed with one uncached read of
        the Instance in the cell the projection mirrors (only a removal pays it): True
        while it is there and not going."""
        cell = self.mgr.clusters.get(get_str_map(stale, "metadata.annotations").get(CELL_ANNOTATION, ""))
        if cell is None or not cell.cache.narrows(INSTANCES):
            return False
        key = upstream_key(project.name, req.namespace)
        for ns in cell.cache.informer_of(NAMESPACES).store.by_index(UPSTREAM_INDEX, key):
            live = await cell.client.get_live_or_none(INSTANCES, req.name, namespace=get_str(ns, "metadata.name"))
            if live is not None and not is_deleting(live):
                return True
        return False

    # ------------------------------------------------------------------ writes (one each)
    async def _project(self, project: Cluster, source: Source, cached: Obj | None) -> Obj | None:
        """The projection's metadata and spec; the server's answer when a write was made."""
        result = await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection(source), cached=cached, field_manager=FIELD_MANAGER
        )
        return result.obj if result.changed else None

    async def _project_status(self, project: Cluster, req: Request, source: Source, cached: Obj | None) -> None:
        """The projection's status, compared with `cached` (what the metadata write left, or
        the cache); the answer is remembered for its watch event."""
        result = await controllerutil.apply_if_differs(
            project.client, INSTANCES, projection_status(source), cached=cached, field_manager=FIELD_MANAGER,
            subresource="status",
        )  # fmt: skip
        if result.changed:
            self.own_writes.remember(req, cached, result.obj)

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


def projections_of_namespace(mgr: Manager) -> MapFunc:
    """A downstream namespace arrived or changed: the projections of the Instances in it
    (an Instance event that came before its namespace mapped to nothing)."""

    async def mapped(cell_name: str, ns: Obj) -> list[Request]:
        cell, ref = mgr.clusters.get(cell_name), upstream_identity(None, ns)
        if cell is None or ref is None or ref.project not in mgr.clusters or cell.cache.view_of(INSTANCES) is None:
            return []
        instances = cell.cache.informer_of(INSTANCES).store.list(get_str(ns, "metadata.name"))
        return [Request(ref.project, ref.namespace, get_str(i, "metadata.name")) for i in instances]

    return mapped


def handed_over(mgr: Manager, projector: InstanceProjector) -> MapFunc:
    """Sharded: a project WD arriving in this shard's cache with a status (so federated
    before: handed over from another shard, not new) and none of its projections cached.
    Its projections, still labelled for the previous shard, are read with one live LIST
    and reconciled (`adopting`): relabelled, or removed when their Instance went during
    the hand-over (nothing else would bring those back). Not read: a WD arriving before
    the shard's projections are listed (a start would read them once per WD); a failed
    read is logged. Either way the Instances still running come back by their relabel."""

    async def mapped(project_name: str, wd: Obj) -> list[Request]:
        project = mgr.clusters.get(project_name)
        uid = get_str(wd, "metadata.uid", required=False)
        if project is None or not project.cache.narrows(INSTANCES) or not get_mapping(wd, "status") or not uid:
            return []
        projections = project.cache.informer_of(INSTANCES)
        if not projections.has_synced or projections.store.index_keys(CONTROLLER_UID, uid):
            # its projections are this shard's already; or a (re)start, which would read
            # them once per WD: only WDs arriving once the shard's projections are listed
            return []
        namespace, name = get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name")
        try:
            found = await project.client.list_live(
                INSTANCES, namespace=namespace, label_selector=f"{WD_NAME_LABEL}={name}"
            )
        except (APIError, TransportError) as exc:
            log.warning("project %s: projections of WD %s/%s not read after its hand-over: %s",
                        project_name, namespace, name, exc)  # fmt: skip
            return []
        requests = []
        for found_projection in found:
            if controller_uid(found_projection) == [uid]:
                req = Request(project_name, namespace, get_str(found_projection, "metadata.name"))
                projector.adopting[req] = found_projection
                requests.append(req)
        return requests

    return mapped


def adopted_of_copy(mgr: Manager, projector: InstanceProjector) -> MapFunc:
    """Sharded: a cell copy changed (the cell reports on it after relabelling or removing
    its Instances): the projections of its WD adopted and not yet settled, again."""

    async def mapped(cell_name: str, copy: Obj) -> list[Request]:
        cell = mgr.clusters.get(cell_name)
        ns = cell.cache.informer_of(NAMESPACES).get(get_str(copy, "metadata.namespace")) if cell else None
        ref = upstream_identity(copy, ns)
        if ref is None:
            return []
        for req in [r for r, adopted in projector.adopting.items() if not _wd_cached(mgr, r, adopted)]:
            del projector.adopting[req]  # its WD left this shard (or went) before it was settled: not ours
        return [
            req
            for req, adopted in list(projector.adopting.items())
            if (req.cluster, req.namespace) == (ref.project, ref.namespace) and _wd_name(adopted) == ref.name
        ]

    return mapped


def _wd_name(projection: Obj) -> str:
    """The project WD a projection (or a cell Instance) names in its labels ("" for none)."""
    return get_str_map(projection, "metadata.labels").get(WD_NAME_LABEL, "")


def _wd_cached(mgr: Manager, req: Request, projection: Obj) -> bool:
    project, name = mgr.clusters.get(req.cluster), _wd_name(projection)
    return (
        project is not None
        and project.cache.informer_of(WORKLOAD_DEPLOYMENTS).get(name, namespace=req.namespace) is not None
    )


def wd_names(mgr: Manager, req: Request, adopting: Mapping[Request, Obj] | None = None) -> list[str]:
    """The project WDs an Instance request may belong to, as the Instances' labels and
    controllers name them: the cached (or adopted) projection's, then the cell Instances'
    of that name in the project namespace's downstream namespaces."""
    names: dict[str, None] = {}
    project = mgr.get_cluster(req.cluster)
    cached = project.cache.informer_of(INSTANCES).get(req.name, namespace=req.namespace)
    cached = cached or (adopting or {}).get(req)
    labelled = _wd_name(cached) if cached else None
    if labelled:
        names[labelled] = None
    key = upstream_key(req.cluster, req.namespace)
    for cell in cell_clusters(mgr):
        if cell.cache.view_of(INSTANCES) is None or cell.cache.view_of(NAMESPACES) is None:
            continue
        for ns in cell.cache.informer_of(NAMESPACES).store.by_index(UPSTREAM_INDEX, key):
            inst = cell.cache.informer_of(INSTANCES).get(req.name, namespace=get_str(ns, "metadata.name"))
            if inst is not None and (wd_name := deployment_of_instance(inst)) is not None:
                names[wd_name] = None
    return list(names)


def owned_by(mgr: Manager, wd_owner: Owner) -> Owner:
    """The owner function the projector is gated with on a shard (`Controller.shard`): an
    Instance request is this shard's when the project WD its Instances name is (`wd_owner`,
    the federator's); the key is that WD's, so a drain of the WD waits for its projections.
    It also wires the hand-over's watches (`handed_over`, `adopted_of_copy`): sharded only."""
    ctrl = next(c for c in mgr.controllers if c.name == NAME)
    projector = ctrl.reconciler.inner if isinstance(ctrl.reconciler, ForObject) else None
    if not isinstance(projector, InstanceProjector):
        raise TypeError(f"controller {NAME!r} reconciles with {ctrl.reconciler!r}, not an InstanceProjector")
    adopting = projector.adopting
    # a WD handed to this shard brings its projections (still labelled for the old shard)
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        EnqueueRequestsFromMapFunc(handed_over(mgr, projector), cluster_name=ClusterName.INJECT_SOURCE),
        clusters=PROJECTS,
        predicates=[event_types(EventType.ADDED)],
    )
    # while projections are adopted (none at steady state: nothing decoded)
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        EnqueueRequestsFromMapFunc(adopted_of_copy(mgr, projector), cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        label_selector=CELL_COPIES_SELECTOR,
        predicates=[lambda _event: bool(adopting)],
    )

    def owner(req: Request) -> Hashable | None:
        for name in wd_names(mgr, req, adopting):
            key = wd_owner(Request(req.cluster, req.namespace, name))
            if key is not None:
                return key
        return None

    return owner


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: projections, project WDs, every cell Instance (mapped to its
    projection), cell registrations."""
    projector = InstanceProjector(mgr)
    routes = Routes(mgr)
    ctrl = mgr.new_controller(NAME, ForObject(mgr, INSTANCES, projector), workers=options.workers)
    # the projections, but not the projector's own write coming back (`EnqueueUnlessOwnWrite`)
    ctrl.watch(
        INSTANCES, EnqueueUnlessOwnWrite(projector.own_writes), clusters=PROJECTS,
        label_selector=WD_NAME_LABEL,
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
    )
    # every cell Instance, so one that lacks its upstream labels is seen (and reported)
    ctrl.watch(
        INSTANCES,
        EnqueueRequestsFromMapFunc(routes.projection_of_instance, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        indexers={INSTANCES_OF_COPY_INDEX: instances_of_copy},
    )
    # the downstream namespaces are watched, not only read: an Instance event that arrives
    # before its namespace maps to nothing (the namespace names the project)
    ctrl.watch(
        NAMESPACES,
        EnqueueRequestsFromMapFunc(projections_of_namespace(mgr), cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        label_selector=CELL_NAMESPACES_SELECTOR,
        indexers={UPSTREAM_INDEX: namespace_upstream},
    )
    ctrl.watch_clusters(routes.projections_of_cell, clusters=CELLS)
    read_cell_copies(ctrl)
