"""Status projector (management mode): the project WorkloadDeployment's `status`,
aggregated from its copies in the cells `plan()` names, with honest freshness.

Request key: (project cluster, project namespace, project WD name). Reads (caches): the project WD, its namespace, which
ConfigMaps/Secrets exist there (names only); Locations; the copies and downstream namespaces in the cells; each cell's
state. Writes, and alone writes: the project WD's `status` (status subresource, field manager `projector`), only when
the aggregate differs from what is cached. Never writes: the project WD's metadata or spec, anything in a cell.

DESIGN §3 Projector, pinned by tests/projector/test_projector.py: counters summed, observedGeneration only when every
target cell observed the spec, worst reason wins naming the cell (test_instances_and_status_reach_the_project,
test_a_roll_holds_observed_generation_back, tests/federation/test_version_skew.py); NoMatchingLocation
(test_no_cell_for_the_city); a dark cell Unknown (test_a_dark_cell_turns_unknown_and_recovers); one status write once
the cells observed a spec, else AwaitingPropagation after a delay
(test_a_wd_whose_cells_observe_it_costs_the_ideal_writes, test_copies_written_late_cost_one_status_write,
test_a_slow_cell_shows_awaiting_propagation, test_a_copy_event_before_the_own_write_is_cached_writes_nothing_more);
Suspended (tests/e2e/test_suspension.py); no needless wake-up (test_the_own_status_write_coming_back_costs_no_reconcile,
test_a_copy_version_already_read_wakes_nothing, test_finalizers_alone_wake_nothing_a_cell_change_does,
test_a_wd_being_deleted_is_forgotten_once_its_copies_wake_nothing); SourceNotFound
(test_a_missing_source_is_named_on_the_project_wd); idle: no writes (tests/federation/test_steady_state.py); its turn
behind the federator's backlog (DESIGN §4 "Spec before status", tests/federation/test_wiring.py)."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any

from federation.api.conditionjson import find_condition_json
from federation.api.constants import UPSTREAM_UID_ANNOTATION, Annotation
from federation.api.resources import LOCATIONS, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.aggregate import (
    AVAILABLE,
    NO_MATCHING_LOCATION,
    CellReport,
    WrittenSpecs,
    aggregate,
    copies_written,
)
from federation.fleet.changetrace import change_of, stage_attributes
from federation.fleet.downstream import UnresolvedLocation, cell_owns_replicas, copy_spec, current_ordinals, own_copies
from federation.fleet.fleetview import (
    CELL_COPIES_SELECTOR,
    CELL_NAMESPACES_SELECTOR,
    CELLS,
    PROJECTS,
    UPSTREAM_INDEX,
    WD_INDEXERS,
    KnownLocations,
    find_copies,
    namespace_upstream,
    registered_cells,
)
from federation.fleet.locations import CityTarget
from federation.fleet.options import ManagementOptions
from federation.fleet.placement import PlacementError, Share
from federation.fleet.propagation import clock_of
from federation.fleet.references import SOURCE_RESOURCES, missing_sources, source_identity
from federation.fleet.routing import Routes
from mcruntime import controllerutil
from mcruntime.cluster import Cluster
from mcruntime.errors import ClusterNotReadyError
from mcruntime.fields import get_int, get_mapping, get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc, EventHandler, RequestSink
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.ownwrites import EnqueueUnlessOwnWrite, OwnWrites, request_key, version_of
from mcruntime.predicates import Predicate, changed_beyond
from mcruntime.reconciler import PermanentError, Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.source import LOCAL
from mcruntime.tracing import stage_span, tracer_for
from projector.placementmemo import PlacementMemo

log = logging.getLogger(__name__)

FIELD_MANAGER = "projector"

# Updates of a project WD that change only its finalizers and the federator's
# `federation-namespace` annotation (the federator's claim, once per WD, while its copies
# are being written): nothing the status is computed from (spec, status, labels, deletion,
# the copies) moved, so the reconcile would find what the last one found.
NOT_CLAIM_ONLY: Predicate = changed_beyond(finalizers=True, annotations=[str(Annotation.FEDERATION_NAMESPACE)])
# Updates of a copy that change only its finalizers (the cell WD controller's, added once
# per copy): the aggregate reads a copy's spec, annotations, status and deletion, never them.
NOT_FINALIZERS_ONLY: Predicate = changed_beyond(finalizers=True)


class StatusProjector:
    def __init__(self, mgr: Manager, *, stale_after: float, awaiting_after: float = 1.0) -> None:
        self.mgr = mgr
        self.stale_after = stale_after
        self.awaiting_after = awaiting_after
        # per WD: (uid, generation, copies written) a status was first held back for, and
        # when (monotonic)
        self._awaiting: dict[Request, tuple[tuple[str, object, bool], float]] = {}
        # per WD: the last status write's answer until the cache shows it; see `_with_own_write`
        self.own_writes: OwnWrites[Request] = OwnWrites()
        self.events = ControllerEvents(mgr, FIELD_MANAGER)
        self.tracer = tracer_for(mgr.tracer_provider)
        self.clock = clock_of(mgr)
        self.written = WrittenSpecs()  # whether a copy carries its desired spec, per copy and spec version
        # per WD: each copy (cell, uid) its last reconcile read, at the resourceVersion it read
        # (`CopyEvents`: an event of that very version brings nothing that reconcile missed)
        self.copies_read: dict[Request, dict[tuple[str, str], str]] = {}
        # per WD: its target city and shares, made once per spec, Locations, cells and
        # ordinals, and its template's references, once per spec
        self.placements: PlacementMemo[Request] = PlacementMemo()
        self.locations = KnownLocations(mgr)  # decoded once per change of the Locations
        # per WD being deleted: its uid, once a reconcile saw the deletion and forgot the WD
        # (`_forget`); its copies' events and its own DELETED cannot change that outcome
        # (`CopyEvents`, `WdEvents`)
        self.deleting: dict[Request, str] = {}

    async def reconcile(self, project: Cluster, wd: Obj) -> Result:
        # 1-2. the project and the cached WD (`ForObject`: a cluster not engaged is dropped,
        # a WD gone is `gone`); 3. early exit: deleting
        req = Request(project.name, get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name"))
        if is_deleting(wd):
            result = self._forget(req)
            if uid := get_str(wd, "metadata.uid", required=False):
                self.deleting[req] = uid
            return result
        self.deleting.pop(req, None)  # a WD of this name that is not being deleted (recreated)
        wd = self._with_own_write(req, wd)
        if await project.client.get_or_none(NAMESPACES, req.namespace) is None:
            raise TemporaryError(f"project namespace {req.namespace} is not cached yet")
        # 4. desired status from the pure functions (plan, aggregate)
        found = [(cell.name, copy) for cell, copy in await find_copies(self.mgr, req.cluster, req.namespace, req.name)]
        if read := _versions(found):
            self.copies_read[req] = read
        else:  # nothing read: no entry (an unplaced WD would keep an empty one for its lifetime)
            self.copies_read.pop(req, None)
        copies = own_copies(wd, found)
        target, shares, unplaced = self._placement(req, wd, found)
        reports, deadline = self._reports(wd, target, shares, copies)
        city = target.city_code if target is not None else None
        now = datetime.datetime.now(datetime.UTC)
        known = self.placements.referenced(req, wd)  # the template's references, once per spec
        missing = missing_sources(wd, lambda kind, name: _source_exists(project, kind, name, req.namespace),
                                  known=known)  # fmt: skip
        status = aggregate(wd, reports, now=now, city=city, unplaced=unplaced, missing_sources=missing,
                           referenced=known)  # fmt: skip
        # 5. write only the difference, once the cells observed this spec (or after a while)
        if (hold := self._hold(req, wd, status, copies_written(wd, reports))) is not None:
            return Result(requeue_after=hold if deadline is None else min(hold, deadline))
        written = status != (wd.get("status") or {})
        if written:
            await self._write(req, project, wd, status)
            await self._say_unplaced(project, wd, status)
        self.clock.projected(copies, written=written)
        return Result(requeue_after=deadline)

    def _placement(
        self, req: Request, wd: Obj, found: list[tuple[str, Obj]]
    ) -> tuple[CityTarget | None, list[Share], str | None]:
        """(target city, shares of `plan`, the message of a location that resolves to no
        city): `downstream.planned_shares`, remembered per WD (`PlacementMemo`)."""
        try:
            locations = self.locations()
        except ClusterNotReadyError as exc:
            raise TemporaryError(str(exc)) from exc
        try:
            target = self.placements.target(req, wd, locations)
            current = current_ordinals(wd, found)
            shares = self.placements.shares(req, wd, registered_cells(self.mgr), current, target.city_code)
            return target, shares, None
        except UnresolvedLocation as exc:
            # a Location missing or without a city: NoMatchingLocation naming it (and its
            # Event, `_say_unplaced`); the Location's next change re-aggregates
            return None, [], str(exc)
        except PlacementError as exc:
            raise PermanentError(str(exc)) from exc  # the federator reports it on the WD as an Event

    async def gone(self, _project: Cluster, req: Request) -> Result:
        """The WD is gone (`ForObject`): nothing to write, what was held for it is forgotten."""
        self.deleting.pop(req, None)
        return self._forget(req)

    def _forget(self, req: Request) -> Result:
        """A WD gone or going: nothing to hold back for it any more."""
        self._awaiting.pop(req, None)
        self.own_writes.forget(req)
        self.copies_read.pop(req, None)
        self.placements.forget(req)
        return Result()

    def _with_own_write(self, req: Request, wd: Obj) -> Obj:
        """The cached WD, with the status this projector last wrote when the cache has not
        seen that write yet (still the version it was made over). A copy event arriving
        before the write's own event would otherwise aggregate again from the older status,
        and the conditions' lastTransitionTime alone (a second later) would cost another
        write of the same status. Once the cache holds any other version, it is the truth."""
        return self.own_writes.latest(req, wd) or wd

    def _hold(self, req: Request, wd: Obj, status: Obj, written: bool) -> float | None:
        """Seconds to hold back a status that awaits the cells' observation of the WD's
        current generation (None: write it now). The copies' status changes bring the WD
        back the moment they observe it, so a fast cell costs one status write; the delayed
        requeue makes a slow cell show AwaitingPropagation `awaiting_after` after its copy
        was written. The delay starts when every copy carries the current spec (`written`):
        until then the wait is the federator's own backlog, not a cell's, and the status
        waits for the copies' writes (their events bring the WD back), for at most
        `stale_after` (a cell that takes no copy). In memory: a restart only starts the
        wait again."""
        generation = get_int(wd, "metadata.generation")
        if status.get("observedGeneration") == generation or status == (wd.get("status") or {}):
            self._awaiting.pop(req, None)
            return None
        pending = (get_str(wd, "metadata.uid", required=False), generation, written)
        now = time.monotonic()
        seen = self._awaiting.get(req)
        if seen is None or seen[0] != pending:
            seen = self._awaiting[req] = (pending, now)
        allowance = self.awaiting_after if written else max(self.awaiting_after, self.stale_after)
        remaining = allowance - (now - seen[1])
        return remaining if remaining > 0 else None

    def _reports(
        self,
        wd: Obj,
        target: CityTarget | None,
        shares: list[Share],
        copies: Mapping[str, Mapping[str, Any]],
    ) -> tuple[list[CellReport], float | None]:
        """One report per target cell, and the seconds until an unreachable cell's numbers
        turn stale (None when no cell is on its way to stale)."""
        include_replicas = not cell_owns_replicas(wd)
        reports: list[CellReport] = []
        deadline: float | None = None
        clusters = self.mgr.clusters  # one read per reconcile, not per share
        for share in shares:
            if target is None:
                continue
            copy = copies.get(share.cell)

            def desired(share: Share = share) -> Mapping[str, Any]:
                return copy_spec(wd, share, include_replicas=include_replicas)  # downstream_copy's spec

            # the desired spec is made and compared once per copy version and spec, not per event
            written = self.written(wd, share, copy, desired) if copy is not None else False
            cell = clusters.get(share.cell)
            stale_since = None
            # unreachable, or re-syncing after it was: not fresh until its views follow it again
            if cell is not None and cell.unreachable_since is not None:
                dark = cell.unreachable_for()
                if dark >= self.stale_after:
                    stale_since = cell.unreachable_since
                else:
                    remaining = self.stale_after - dark
                    deadline = remaining if deadline is None else min(deadline, remaining)
            reports.append(CellReport(share, copy, {}, stale_since, _last_seen(cell), spec_written=written))
        return reports, (deadline + 0.05 if deadline is not None else None)

    async def _write(self, req: Request, project: Cluster, wd: Obj, status: Obj) -> None:
        generation = get_int(wd, "metadata.generation")
        claims = status.get("observedGeneration") == generation != get_mapping(wd, "status").get("observedGeneration")
        if not claims:
            stored = await controllerutil.write_status(project.client, WORKLOAD_DEPLOYMENTS, wd, status,
                                                       field_manager=FIELD_MANAGER)  # fmt: skip
        else:
            # every target cell observed the generation; the write that claims it ends that change's trace
            key = (
                project.name,
                get_str(wd, "metadata.namespace", required=False),
                get_str(wd, "metadata.name", required=False),
            )
            self.clock.cells_observed(key, int(generation or 0))
            attributes = stage_attributes(project.name, wd)
            with stage_span(self.tracer, "project", change_of(wd), attributes):
                stored = await controllerutil.write_status(project.client, WORKLOAD_DEPLOYMENTS, wd, status,
                                                           field_manager=FIELD_MANAGER)  # fmt: skip
            self.clock.status_claimed(key, int(generation or 0))
        # the answer's own metadata (its resourceVersion) tells the write's watch event apart
        self.own_writes.remember(req, wd, {**wd, **stored, "status": stored.get("status") or dict(status)})

    async def _say_unplaced(self, project: Cluster, wd: Obj, status: Obj) -> None:
        """A Warning Event when the WD newly has no cell for its city (as the Workload
        controller says of a placement): with the status write that says it, never again."""

        def reason(s: Mapping[str, Any]) -> Any:
            found = find_condition_json(s.get("conditions") or [], AVAILABLE)
            return found.get("reason") if found is not None else None

        if reason(status) == NO_MATCHING_LOCATION and reason(wd.get("status") or {}) != NO_MATCHING_LOCATION:
            message = str((find_condition_json(status["conditions"], AVAILABLE) or {}).get("message") or "")
            await self.events.event(project, wd, "Warning", str(NO_MATCHING_LOCATION), message)


def _versions(found: list[tuple[str, Obj]]) -> dict[tuple[str, str], str]:
    """(cell, uid) → resourceVersion of each copy found."""
    read: dict[tuple[str, str], str] = {}
    for cell, copy in found:
        if (version := version_of(copy)) is not None:
            read[cell, version[0]] = version[1]
    return read


def _last_seen(cell: Cluster | None) -> datetime.datetime | None:
    return cell.last_contact if cell is not None else None


def _source_exists(project: Cluster, kind: str, name: str, namespace: str) -> bool:
    return project.cache.informer_of(SOURCE_RESOURCES[kind]).get(name, namespace=namespace) is not None


class CopyEvents(EventHandler):
    """A copy's event → its project WD (`Routes.wd_of_copy`; an update's old state too, so
    a WD that lost the copy hears of it), but not a WD whose last reconcile already read
    this very version of the copy. A cell's cache holds the new version before its event
    reaches this handler, so a reconcile running in between (woken by the WD's other copy,
    say) reads it; its event coming after that would only wake a reconcile that finds what
    the last one found and decided on (it wrote, held with a requeue, or failed and
    retries). A deletion goes through (its version is not one read) — unless, like any
    event, it is of a copy of a WD whose deletion a reconcile already saw (the WD's uid in
    `StatusProjector.deleting`): that reconcile forgot the WD, and so would every next one
    until it is gone (the federator deleting its copies costs no reconcile each)."""

    def __init__(self, projector: StatusProjector, routes: Routes) -> None:
        self.projector = projector
        self.routes = routes
        self.clock = projector.clock

    def _of_deleting(self, request: Request, copy: Obj) -> bool:
        uid = self.projector.deleting.get(request)
        return uid is not None and get_str_map(copy, "metadata.annotations").get(UPSTREAM_UID_ANNOTATION) == uid

    def _read(self, request: Request, cell: str, copy: Obj) -> bool:
        version = version_of(copy)
        return version is not None and self.projector.copies_read.get(request, {}).get((cell, version[0])) == version[1]

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        self.clock.copy_changed(event.obj)  # the cell write -> projection clock starts as its event arrives
        requests = await self.routes.wd_of_copy(source_cluster, event.obj)
        if event.type is EventType.MODIFIED and event.old is not None:
            self.clock.copy_changed(event.old)
            if not self.routes.same_wd_of_copy(event.old, event.obj):
                requests += await self.routes.wd_of_copy(source_cluster, event.old)
        for request in dict.fromkeys(requests):
            if event.type is not EventType.DELETED and self._read(request, source_cluster, event.obj):
                continue
            if self._of_deleting(request, event.obj):
                continue
            sink.enqueue(request)


class WdEvents(EventHandler):
    """The project WD's own events (`EnqueueUnlessOwnWrite`: not its own status write
    coming back), but not the DELETED of a WD whose deletion a reconcile already saw (its
    uid in `StatusProjector.deleting`): that reconcile forgot everything held for it, and
    `gone` would only forget it again. (A WD of the same name made afresh has another uid:
    its events go through.)"""

    def __init__(self, projector: StatusProjector) -> None:
        self.projector = projector
        self.inner = EnqueueUnlessOwnWrite(projector.own_writes)

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        if event.type is EventType.DELETED:
            request = request_key(source_cluster, event)
            uid = self.projector.deleting.get(request)
            if uid is not None and uid == get_str(event.obj, "metadata.uid", required=False):
                del self.projector.deleting[request]
                self.projector.own_writes.forget(request)
                return
        await self.inner.handle(source_cluster, event, sink)


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: project WDs; their copies and downstream namespaces in every cell
    (mapped back); cell states."""
    projector = StatusProjector(
        mgr, stale_after=options.cell_status_stale_after, awaiting_after=options.awaiting_propagation_after
    )
    routes = Routes(mgr)
    ctrl = mgr.new_controller(
        "status-projector",
        ForObject(mgr, WORKLOAD_DEPLOYMENTS, projector),
        workers=options.workers,
        batch_period=options.status_batch_period,
    )
    # the WD itself, but not its own status write coming back: that state is what the write
    # was computed to be, and a second reconcile of it would find nothing to do; nor the
    # federator's claim (`NOT_CLAIM_ONLY`); nor the DELETED of a WD already forgotten (`WdEvents`)
    ctrl.watch(WORKLOAD_DEPLOYMENTS, WdEvents(projector), clusters=PROJECTS,
               indexers=WD_INDEXERS, predicates=[NOT_CLAIM_ONLY])  # fmt: skip
    ctrl.reads(NAMESPACES, clusters=PROJECTS)
    ctrl.watch(
        LOCATIONS,
        EnqueueRequestsFromMapFunc(routes.wds_of_location, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=LOCAL,
    )
    for resource in SOURCE_RESOURCES.values():  # which referenced sources exist (no data)
        ctrl.watch(resource, EnqueueRequestsFromMapFunc(routes.wds_referencing, cluster_name=ClusterName.INJECT_SOURCE),
                   clusters=PROJECTS, transform=source_identity)  # fmt: skip
    # the downstream namespaces are watched, not only read: a copy event that arrives before
    # its namespace maps to no WD (the namespace names the project) and `find_copies` finds
    # nothing through it, so the namespace's own arrival must bring the WD back
    ctrl.watch(
        NAMESPACES,
        EnqueueRequestsFromMapFunc(routes.wds_of_namespace, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=CELLS,
        label_selector=CELL_NAMESPACES_SELECTOR,
        indexers={UPSTREAM_INDEX: namespace_upstream},
    )
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        CopyEvents(projector, routes),
        clusters=CELLS,
        label_selector=CELL_COPIES_SELECTOR,
        predicates=[NOT_FINALIZERS_ONLY],
    )
    ctrl.watch_clusters(routes.wds_of_cell, clusters=CELLS)
