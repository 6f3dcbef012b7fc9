"""Federator (management mode): a project WorkloadDeployment's spec flows down to every
cell of its city, its replicas divided between them.

Request key: (project cluster = the bare project name, project namespace, WD name).
Reads (caches only): project WDs and namespaces; in every cell, the WD copies (view:
label `meta.datumapis.com/upstream-namespace` present) and the downstream namespaces
(view: label `meta.datumapis.com/upstream-cluster-name` present); cluster states.
Writes, and alone writes: the `compute.datumapis.com/federator` finalizer and Events on
the project WD; downstream namespaces and WD copies in cells (field manager `federator`,
plus `federator-initial-replicas` for the replicas of an autoscaled copy at creation).
Never writes: the project WD's spec or status (status is the projector's), anything in
a downstream namespace of another project, anything in the management cluster.

DESIGN §3 Federator, and the tests that pin each rule (tests/federation/test_federator.py):
1. an empty cluster name is dropped; nothing falls back to another cluster
   (test_downstream_events_map_back_to_the_bare_project_name);
2. finalizer on first sighting; 3-4. copies exactly in the planned cells with the planned
   shares, namespace and copy labels/annotations exact (test_fan_out_divides_replicas_over_the_city);
   a cell joining or leaving re-divides moving the fewest ordinals (test_fan_out_divides_replicas_over_the_city);
   with autoscaling the cell owns `spec.replicas` (test_autoscaled_replicas_are_left_to_the_cell);
   a write only when the cache differs, and a field removed upstream leaves the copies
   (test_zero_writes_when_converged, test_fan_out_divides_replicas_over_the_city);
5. cells that stop matching lose their copy (test_fan_out_divides_replicas_over_the_city);
6. deletion removes every copy before the finalizer; an unreachable cell past the grace
   releases it with an Event and the orphan is swept when the cell returns; a cell of the
   city that never synced is held to the same grace, since it may hold a copy nobody has
   seen (test_deletion_and_the_orphan_sweep, test_a_cell_that_never_synced_holds_a_deletion_for_the_grace);
7. downstream events map back with the computed cluster name preserved; foreign or
   unlabelled objects and projects not engaged produce no request; a copy edited or
   deleted by hand is restored (test_downstream_events_map_back_to_the_bare_project_name,
   test_a_copy_edited_or_deleted_by_hand_is_restored);
8. identity comes from where an object lives, never from tenant-writable labels; a
   registration whose encoded name is another project's writes nothing
   (test_forged_labels_and_colliding_names_stay_in_their_project,
   test_a_registration_naming_another_project_writes_nothing, tests/federation/test_tenant_isolation.py);
9. the project WD's status is the projector's: only the finalizer and Events are written
   there (the `federator` field manager owns no status field: test_the_federator_never_writes_project_status).
The whole stack at rest sends no write: tests/chaos (every scenario ends on an idle window)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcruntime import controllerutil
from mcruntime.client import Preconditions
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.errors import APIError, ClusterNotReadyError, TransportError
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.manager import Manager
from mcruntime.objects import Obj, meta
from mcruntime.predicates import not_status_only
from mcruntime.reconciler import PermanentError, Result, TemporaryError
from mcruntime.request import Request
from mcruntime.source import ClusterEvent, ClusterEventType

from .api.constants import Finalizer, Label
from .api.resources import NAMESPACES, WORKLOAD_DEPLOYMENTS
from .downstream import (
    UPSTREAM_UID_ANNOTATION,
    cell_owns_replicas,
    copy_ordinals,
    downstream_copy,
    downstream_namespace,
    upstream_identity,
)
from .fleetview import (
    CELL_COPIES_SELECTOR,
    CELL_NAMESPACES_SELECTOR,
    CELLS,
    CITY_INDEX,
    PROJECTS,
    UPSTREAM_INDEX,
    cell_clusters,
    cell_synced,
    city_of_wd,
    find_copies,
    namespace_upstream,
    project_clusters,
    registered_cells,
)
from .placement import PlacementError, Share, city_code, city_key, plan, same_city
from .settings import ManagerSettings

log = logging.getLogger(__name__)

FIELD_MANAGER = "federator"
INITIAL_REPLICAS_MANAGER = "federator-initial-replicas"


@dataclass
class Copy:
    """One downstream copy of a project WD, as a cell's cache shows it."""

    cell: Cluster
    obj: Obj

    @property
    def uid(self) -> str:
        return str(meta(self.obj).get("uid") or "")

    @property
    def upstream_uid(self) -> str:
        return str((meta(self.obj).get("annotations") or {}).get(UPSTREAM_UID_ANNOTATION) or "")

    @property
    def ordinals(self) -> range | None:
        return copy_ordinals(self.obj)


@dataclass
class Outcome:
    """What one reconcile did and could not do, for Events and the retry decision."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class Federator:
    def __init__(self, mgr: Manager, *, unreachable_grace: float) -> None:
        self.mgr = mgr
        self.unreachable_grace = unreachable_grace

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self, req: Request) -> Result:
        # 1. a request without a cluster name is dropped, never routed anywhere
        if not req.cluster:
            log.debug("dropping %s: empty cluster name", req)
            return Result()
        project = self.mgr.get_cluster(req.cluster)  # not engaged: the runtime drops the request
        # 2. fetch (caches)
        wd = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, req.name, namespace=req.namespace)
        copies = await self._copies(req)
        # 3. early exits: gone (orphan sweep) and deleting
        if wd is None:
            await self._remove(copies, Outcome())
            return Result()
        if meta(wd).get("deletionTimestamp"):
            return await self._finalize(project, wd, copies)
        # 4. first sighting
        wd = await controllerutil.add_finalizer(project.client, WORKLOAD_DEPLOYMENTS, wd, Finalizer.FEDERATOR)
        # 5. desired state from the pure placement function
        uid = str(meta(wd).get("uid"))
        current = {c.cell.name: r for c in copies if c.upstream_uid == uid and (r := c.ordinals) is not None}
        try:
            shares = plan(wd, registered_cells(self.mgr), current)
        except PlacementError as exc:
            await self._event(project.name, wd, "Warning", "InvalidPlacement", str(exc))
            raise PermanentError(str(exc)) from exc
        project_ns = await project.client.get_or_none(NAMESPACES, req.namespace)
        if project_ns is None:
            raise TemporaryError(f"project namespace {req.namespace} is not cached yet")
        upstream_label = project.labels.get(Label.UPSTREAM_CLUSTER_NAME, "")
        if not upstream_label:
            why = f"project {project.name} is registered without the {Label.UPSTREAM_CLUSTER_NAME} label"
            await self._event(project.name, wd, "Warning", "ProjectRegistrationIncomplete", why)
            raise PermanentError(why)
        try:
            namespace = downstream_namespace(project.name, upstream_label, project_ns)
        except ValueError as exc:  # the registration's encoded name is not this project's
            await self._event(project.name, wd, "Warning", "ProjectRegistrationIncomplete", str(exc))
            raise PermanentError(str(exc)) from exc
        # 6. write only the difference: per target cell, then cells that stop matching
        outcome = Outcome()
        targets = {share.cell for share in shares}
        stale = [c for c in copies if c.cell.name not in targets or c.upstream_uid != uid]
        await self._remove(stale, outcome)
        by_cell = {c.cell.name: c for c in copies if c not in stale}
        for share in shares:
            await self._place(project, namespace, wd, share, by_cell.get(share.cell), outcome)
        # 7. tell the user, retry what failed
        await self._report(project.name, wd, shares, outcome)
        if outcome.failed:
            raise TemporaryError("; ".join(f"cell {cell}: {why}" for cell, why in sorted(outcome.failed.items())))
        return Result()

    # ------------------------------------------------------------------ reading
    async def _copies(self, req: Request) -> list[Copy]:
        """Every copy of the project WD in the cells whose caches are synced."""
        return [Copy(cell, obj) for cell, obj in await find_copies(self.mgr, req.cluster, req.namespace, req.name)]

    # ------------------------------------------------------------------ writing (one write per helper)
    async def _place(
        self,
        project: Cluster,
        ns: Obj,
        wd: Obj,
        share: Share,
        existing: Copy | None,
        outcome: Outcome,
    ) -> None:
        cell = self.mgr.clusters.get(share.cell)
        if cell is None:
            return
        if cell.state is not ClusterState.READY:
            outcome.failed[share.cell] = f"{cell.state} ({cell.describe()})"
            return
        try:
            if not await self._ensure_namespace(cell, ns, project.name, outcome):
                return
            autoscaled = cell_owns_replicas(wd)
            desired = downstream_copy(project.name, wd, share, meta(ns)["name"], include_replicas=not autoscaled)
            result = await controllerutil.apply_if_differs(
                cell.client, WORKLOAD_DEPLOYMENTS, desired, cached=existing.obj if existing else None,
                field_manager=FIELD_MANAGER,
            )  # fmt: skip
            if result.changed and existing is None and autoscaled:
                await self._initial_replicas(cell, desired, share)
        except (APIError, TransportError, ClusterNotReadyError) as exc:
            # recorded per cell: the healthy cells are still written, the reconcile retries after
            outcome.failed[share.cell] = f"{type(exc).__name__}: {exc}"
            return
        if result.changed:
            (outcome.updated if existing is not None else outcome.created).append(share.cell)

    async def _ensure_namespace(self, cell: Cluster, desired: Obj, project: str, outcome: Outcome) -> bool:
        name = meta(desired)["name"]
        cached = await cell.client.get_or_none(NAMESPACES, name)
        if cached is not None:
            owner = upstream_identity(None, cached)
            if owner is None or owner.project != project:
                outcome.failed[cell.name] = f"namespace {name} belongs to another project; nothing written"
                return False
            if meta(cached).get("deletionTimestamp"):
                outcome.failed[cell.name] = f"namespace {name} is being deleted; waiting"
                return False
        await controllerutil.apply_if_differs(
            cell.client, NAMESPACES, desired, cached=cached, field_manager=FIELD_MANAGER
        )
        return True

    async def _initial_replicas(self, cell: Cluster, desired: Obj, share: Share) -> None:
        """An autoscaled copy gets its first replica count from a field manager that never
        writes again, so the cell's HPA (through the scale subresource) owns it after."""
        body = {
            "apiVersion": desired["apiVersion"],
            "kind": desired["kind"],
            "metadata": {"name": meta(desired)["name"], "namespace": meta(desired)["namespace"]},
            "spec": {"replicas": share.replicas},
        }
        await cell.client.apply(WORKLOAD_DEPLOYMENTS, body, field_manager=INITIAL_REPLICAS_MANAGER, force=True)

    async def _remove(self, copies: Iterable[Copy], outcome: Outcome) -> None:
        for copy in copies:
            if meta(copy.obj).get("deletionTimestamp"):
                continue
            if copy.cell.state is not ClusterState.READY:
                outcome.failed[copy.cell.name] = f"cannot remove the copy: cell {copy.cell.describe()}"
                continue
            await copy.cell.client.delete(
                WORKLOAD_DEPLOYMENTS,
                str(meta(copy.obj)["name"]),
                namespace=str(meta(copy.obj)["namespace"]),
                preconditions=Preconditions(uid=copy.uid),
                ignore_not_found=True,
            )
            outcome.removed.append(copy.cell.name)

    # ------------------------------------------------------------------ deletion
    async def _finalize(self, project: Cluster, wd: Obj, copies: list[Copy]) -> Result:
        """Delete every copy, wait until they are gone, then release the finalizer. A cell
        unreachable past the grace does not hold the deletion: the finalizer goes with a
        Warning naming it, and the copy left there is swept when the cell is back."""
        outcome = Outcome()
        await self._remove(copies, outcome)
        waiting = [c.cell.name for c in copies if c.cell.state is ClusterState.READY]
        # a cell of the city whose cache never synced may hold a copy nobody has seen: it is
        # held to the same grace as an unreachable cell with a copy we know of
        unseen = self._unsynced_cells_of_city(wd, {c.cell.name for c in copies})
        syncing = [cell.name for cell in unseen if cell.state is not ClusterState.UNREACHABLE]
        held = [c.cell for c in copies if c.cell.state is not ClusterState.READY]
        held += [cell for cell in unseen if cell.state is ClusterState.UNREACHABLE]
        overdue: list[Cluster] = []
        within: list[Cluster] = []
        for cell in held:
            (overdue if cell.unreachable_for() >= self.unreachable_grace else within).append(cell)
        if waiting:
            raise TemporaryError(f"waiting for copies in {', '.join(sorted(set(waiting)))} to be deleted")
        if syncing:
            raise TemporaryError(f"waiting for {', '.join(sorted(syncing))} to sync: it may hold a copy")
        if within:
            remaining = min(self.unreachable_grace - c.unreachable_for() for c in within)
            return Result(requeue_after=max(remaining, 0.1))
        for cell in overdue:
            await self._event(project.name, wd, "Warning", "CellUnreachable",
                              f"cell {cell.name} has been unreachable for {cell.unreachable_for():.0f}s (grace "
                              f"{self.unreachable_grace:.0f}s); deletion completes without it and its copy is "
                              "removed when it is back")  # fmt: skip
        await controllerutil.remove_finalizer(project.client, WORKLOAD_DEPLOYMENTS, wd, Finalizer.FEDERATOR)
        return Result()

    def _unsynced_cells_of_city(self, wd: Obj, known: set[str]) -> list[Cluster]:
        """The engaged cells serving the WD's city whose copies' cache has not synced (and
        that are not already known to hold a copy)."""
        try:
            city = city_code(wd)
        except PlacementError:
            return []  # no valid city: no cell ever got a copy of it
        serving = {info.name for info in registered_cells(self.mgr) if same_city(info.city_code, city)}
        return [cell for cell in cell_clusters(self.mgr)
                if cell.name in serving and cell.name not in known and not cell_synced(cell)]  # fmt: skip

    # ------------------------------------------------------------------ events
    async def _report(self, project: str, wd: Obj, shares: list[Share], outcome: Outcome) -> None:
        """Events only when something was written, so a converged WD costs no request."""
        if outcome.created or outcome.removed:
            placed = ", ".join(f"{s.cell} ({s.replicas} from ordinal {s.ordinal_start})" for s in shares)
            await self._event(project, wd, "Normal", "Federated", f"federated to {len(shares)} cells: {placed or '-'}")
        if outcome.updated:
            # observedGeneration == generation means every cell had observed this very spec:
            # a difference now is drift (a hand edit), not a spec change on its way down
            status = wd.get("status") or {}
            drift = status.get("observedGeneration") == meta(wd).get("generation")
            reason, what = ("CopyRestored", "restored after drift") if drift else ("CopyUpdated", "updated")
            await self._event(project, wd, "Normal", reason, f"copy {what} in {', '.join(sorted(outcome.updated))}")

    async def _event(self, cluster: str, wd: Obj, type_: str, reason: str, message: str) -> None:
        await self.mgr.event_recorder(cluster, FIELD_MANAGER).event(wd, type_, reason, message)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ mapping events to requests
    async def upstream_of_copy(self, cell_name: str, copy: Obj) -> list[Request]:
        """A downstream copy's event → its project WD, with the project cluster computed
        here (from the namespace's label) and preserved by the handler."""
        cell = self.mgr.clusters.get(cell_name)
        if cell is None:
            return []
        ns = cell.cache.informer_of(NAMESPACES).get(str(meta(copy).get("namespace") or ""))
        ref = upstream_identity(copy, ns)
        if ref is None or ref.project not in self.mgr.clusters:
            return []  # unlabelled, foreign, or for a project this manager does not serve
        return [Request(ref.project, ref.namespace, ref.name)]

    async def upstream_of_namespace(self, cell_name: str, ns: Obj) -> list[Request]:
        """A downstream namespace changed (deleted by hand, relabelled): its copies' WDs."""
        cell = self.mgr.clusters.get(cell_name)
        ref = upstream_identity(None, ns)
        if cell is None or ref is None or ref.project not in self.mgr.clusters:
            return []
        copies = cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.list(str(meta(ns).get("name")))
        return [Request(ref.project, ref.namespace, str(meta(c).get("name"))) for c in copies]

    def wds_of_cell_city(self, event: ClusterEvent) -> list[Request]:
        """A cell engaged, ready again, relabelled or removed: the WDs of its city re-plan,
        and (when it is ready) every copy it holds is checked against its upstream WD —
        the orphan sweep that removes copies whose WD was deleted while the cell was away."""
        if event.type is ClusterEventType.UNREACHABLE:
            return []  # an unreachable cell keeps its share; nothing to re-plan
        requests: dict[Request, None] = {}
        city = event.labels.get(Label.TOPOLOGY_CITY_CODE)
        if city:
            for project in project_clusters(self.mgr):
                informer = project.cache.informer_of(WORKLOAD_DEPLOYMENTS)
                for wd in informer.store.by_index(CITY_INDEX, city_key(city)):
                    requests[Request(project.name, str(meta(wd).get("namespace")), str(meta(wd).get("name")))] = None
        cell = self.mgr.clusters.get(event.cluster)
        if event.type is ClusterEventType.READY and cell is not None:
            namespaces = cell.cache.informer_of(NAMESPACES)
            for copy in cell.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.list():
                ref = upstream_identity(copy, namespaces.get(str(meta(copy).get("namespace") or "")))
                if ref is not None and ref.project in self.mgr.clusters:
                    requests[Request(ref.project, ref.namespace, ref.name)] = None
        return list(requests)


def register(mgr: Manager, settings: ManagerSettings) -> None:
    """Wire the watches: project WDs, their namespaces (read), the copies and downstream
    namespaces in every cell, and cell registrations."""
    federator = Federator(mgr, unreachable_grace=settings.cell_unreachable_grace)
    ctrl = mgr.new_controller("federator", federator, workers=settings.controllers.workers)
    ctrl.for_(WORKLOAD_DEPLOYMENTS, clusters=PROJECTS, indexers={CITY_INDEX: city_of_wd})
    ctrl.reads(NAMESPACES, clusters=PROJECTS)
    # a copy's status is the cell's to write (often); only its spec and metadata are ours
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        EnqueueRequestsFromMapFunc(federator.upstream_of_copy, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        label_selector=CELL_COPIES_SELECTOR,
        predicates=[not_status_only],
    )
    ctrl.watch(
        NAMESPACES,
        EnqueueRequestsFromMapFunc(federator.upstream_of_namespace, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        label_selector=CELL_NAMESPACES_SELECTOR,
        indexers={UPSTREAM_INDEX: namespace_upstream},
    )
    ctrl.watch_clusters(federator.wds_of_cell_city, clusters=CELLS)
