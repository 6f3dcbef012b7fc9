"""Federator (management mode): a project WorkloadDeployment's spec flows down to every
cell of its city (its `spec.cityCode`, or its `spec.locationRef` Location's), replicas divided.

Request key: (project cluster = the bare project name, project namespace, WD name). Reads (caches only): project
WDs and namespaces; Locations; in every cell, the WD copies and downstream namespaces (`fleet.fleetview`); cluster
states. Writes, and alone writes: the `federator` finalizer with the `federation-namespace` annotation (one write)
and Events on the project WD; downstream namespaces and WD copies in cells (managers `federator`,
`federator-initial-replicas`). Never writes: the project WD's spec or status, another project's downstream namespace.

DESIGN §3 Federator 1-9, pinned by tests/federation/test_federator.py:
1, 7 test_downstream_events_map_back_to_the_bare_project_name, test_a_copy_edited_or_deleted_by_hand_is_restored;
2-5 test_fan_out_divides_replicas_over_the_city, test_autoscaled_replicas_are_left_to_the_cell,
test_zero_writes_when_converged, test_location_placement.py, test_a_pass_converges_one_write_per_action,
a cell namespace once per burst (`NamespaceWrites`) test_a_burst_of_wds_writes_each_cell_namespace_once;
6 (`deletion.next_step`, test_deletion.py) test_deletion_and_the_orphan_sweep, test_deletion_without_operator.py,
test_a_cell_that_never_synced_holds_a_deletion_for_the_grace; finalizer beside copies (`_claim_and_place`):
test_one_wds_copies_are_written_concurrently, test_a_wd_deleted_before_its_finalizer_leaves_no_copy; its own
writes' events wake nothing (`UnlessOwnWrite`) test_own_write_echoes_cost_no_reconcile; 8 test_tenant_isolation.py,
test_forged_labels_and_colliding_names_stay_in_their_project, test_a_registration_naming_another_project_writes_nothing;
9 test_the_federator_never_writes_project_status."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import orjson
from opentelemetry import trace

from federation.api.constants import (
    FEDERATION_NAMESPACE_ANNOTATION,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_UID_ANNOTATION,
    Finalizer,
)
from federation.api.resources import LOCATIONS, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.controllers import copyplacement
from federation.controllers.deletion import (
    AwaitGrace,
    AwaitSync,
    CellState,
    DeletionCell,
    RemoveCopies,
    next_step,
)
from federation.fleet.changetrace import carried, change_of, copy_with_trace, stage_attributes, with_traceparent
from federation.fleet.downstream import (
    UnresolvedLocation,
    cell_owns_replicas,
    downstream_copy,
    downstream_namespace,
    planned_shares,
    target_city,
    upstream_identity,
)
from federation.fleet.fleetview import (
    CELL_COPIES_SELECTOR,
    CELL_NAMESPACES_SELECTOR,
    CELLS,
    PROJECTS,
    UPSTREAM_INDEX,
    WD_INDEXERS,
    KnownLocations,
    cell_clusters,
    cell_synced,
    find_copies,
    known_locations,
    namespace_upstream,
    registered_cells,
)
from federation.fleet.locations import CityTarget
from federation.fleet.options import ManagementOptions
from federation.fleet.placement import PlacementError, Share, same_city
from federation.fleet.propagation import clock_of
from federation.fleet.references import Referenced, referenced
from federation.fleet.routing import Routes
from mcruntime import controllerutil
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.controllerutil import Operation
from mcruntime.errors import APIError, ClusterNotReadyError, TransportError
from mcruntime.fields import get_int, get_mapping, get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.informer import ObjectEvent
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj, split_key
from mcruntime.ownwrites import EnqueueUnlessOwnWrite, OwnWrites, UnlessOwnWrite, request_key, version_of
from mcruntime.predicates import not_status_only, not_status_or_finalizers_only
from mcruntime.reconciler import PermanentError, Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.source import LOCAL
from mcruntime.tracing import stage_span, tracer_for

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
        return get_str(self.obj, "metadata.uid", required=False)

    @property
    def upstream_uid(self) -> str:
        return str(get_str_map(self.obj, "metadata.annotations").get(UPSTREAM_UID_ANNOTATION) or "")


@dataclass
class Outcome:
    """What one reconcile did and could not do, for Events and the retry decision."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class Comparisons:
    """`_namespace_state` and `_copy_state` remembered per cached object version and
    intent: the WDs of one project namespace (hundreds) all compare the same intent with
    the same cached cell namespace, and a reconcile that finds its copies as it left them
    (their own events, the WD's finalizer) compares each with the same intent again. Only
    a new version (or another intent) needs the comparison again: an object of one uid and
    resourceVersion never changes, so the answer is the same. Bounded: the oldest goes first."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._memo: dict[
            tuple[str, str, str, str, str, bytes], copyplacement.NamespaceState | copyplacement.CopyState
        ] = {}

    def _key(
        self, what: str, cell: str, cached: Obj | None, desired: Obj, project: str
    ) -> tuple[str, str, str, str, str, bytes] | None:
        uid = get_str(cached, "metadata.uid", required=False) if cached is not None else ""
        version = get_str(cached, "metadata.resourceVersion", required=False) if cached is not None else ""
        if not uid or not version:
            return None
        return (what, cell, uid, version, project, orjson.dumps(desired, option=orjson.OPT_SORT_KEYS))

    def _remember(
        self, key: tuple[str, str, str, str, str, bytes], state: copyplacement.NamespaceState | copyplacement.CopyState
    ) -> None:
        self._memo[key] = state
        if len(self._memo) > self._size:
            del self._memo[next(iter(self._memo))]

    def namespace(self, cell: str, cached: Obj | None, desired: Obj, project: str) -> copyplacement.NamespaceState:
        key = self._key("namespace", cell, cached, desired, project)
        found = self._memo.get(key) if key is not None else None
        if isinstance(found, copyplacement.NamespaceState):
            return found
        state = _namespace_state(cached, desired, project)
        if key is not None:
            self._remember(key, state)
        return state

    def copy(self, cell: str, cached: Obj | None, desired: Obj) -> copyplacement.CopyState:
        key = self._key("copy", cell, cached, desired, "")
        found = self._memo.get(key) if key is not None else None
        if isinstance(found, copyplacement.CopyState):
            return found
        state = _copy_state(cached, desired)
        if key is not None:
            self._remember(key, state)
        return state

    def __len__(self) -> int:
        return len(self._memo)


@dataclass
class _Seen:
    """One cell's downstream namespace and copy as last seen (cache, then each write's
    answer) beside their apply intents, and whether this pass created the copy:
    `copyplacement`'s observation. Each comparison is made once per object seen (the
    decision looks again after every write, and only what the write returned is new)."""

    project: str
    ns: Obj  # the namespace's apply intent
    desired: Obj  # the copy's
    autoscaled: bool
    namespace: Obj | None
    copy: Obj | None
    created: bool = False
    cell: str = ""
    compare: Comparisons = field(default_factory=Comparisons)  # the federator's, shared by its reconciles
    _namespace_seen: tuple[Obj | None, copyplacement.NamespaceState] | None = None
    _copy_seen: tuple[Obj | None, copyplacement.CopyState] | None = None

    def _namespace(self) -> copyplacement.NamespaceState:
        if self._namespace_seen is None or self._namespace_seen[0] is not self.namespace:
            state = self.compare.namespace(self.cell, self.namespace, self.ns, self.project)
            self._namespace_seen = (self.namespace, state)
        return self._namespace_seen[1]

    def _copy(self) -> copyplacement.CopyState:
        if self._copy_seen is None or self._copy_seen[0] is not self.copy:
            self._copy_seen = (self.copy, self.compare.copy(self.cell, self.copy, self.desired))
        return self._copy_seen[1]

    def observe(self) -> copyplacement.Observed:
        return copyplacement.Observed(
            namespace=self._namespace(),
            copy=self._copy(),
            autoscaled=self.autoscaled,
            created=self.created,
            replicas_set=self.copy is not None and "replicas" in get_mapping(self.copy, "spec"),
        )


NamespaceKey = tuple[str, str]  # (cell, downstream namespace name)


@dataclass
class _Flight:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    users: int = 0  # holding or waiting: the entry goes when the last one leaves
    failed: str = ""  # why a write in this flight failed: its waiters fail with it, not one after another


class NamespaceWrites:
    """One write of a cell namespace in flight at a time, and the answer of the last one
    until the cell's cache moves on: the reconciles of a burst of WDs of one project
    namespace all find its cell namespace missing in the cache (their writes are faster
    than its watch), and without this each would write it. Bounded: a lock lives while a
    reconcile holds or awaits it; an answer while the cache shows the state it showed
    before the write: the namespace's next event (the write's own, or newer), a look that
    finds the cache moved on, or a failure in that cell drops it."""

    def __init__(self) -> None:
        self._flights: dict[NamespaceKey, _Flight] = {}
        self._answers: OwnWrites[NamespaceKey] = OwnWrites()

    @asynccontextmanager
    async def one_at_a_time(self, key: NamespaceKey) -> AsyncIterator[_Flight]:
        flight = self._flights.setdefault(key, _Flight())
        flight.users += 1
        try:
            async with flight.lock:
                yield flight
        finally:
            flight.users -= 1
            if not flight.users:
                del self._flights[key]

    def latest(self, key: NamespaceKey, cached: Obj | None) -> Obj | None:
        """The namespace as last known: the answer of the last write while the cache still
        shows what it showed before that write, else the cache (and the answer is dropped)."""
        return self._answers.latest(key, cached)

    def remember(self, key: NamespaceKey, before: Obj | None, answer: Obj, cached: Obj | None) -> None:
        """The server answered a write made while the cache showed `before`; kept only while
        the cache still shows that (else its event, which forgets, has come already)."""
        if version_of(cached) == version_of(before):
            self._answers.remember(key, before, answer)

    def forget(self, key: NamespaceKey) -> None:
        self._answers.forget(key)

    @property
    def answers(self) -> OwnWrites[NamespaceKey]:
        """The answers, for the namespace watch to tell a write's own event (`UnlessOwnWrite`)."""
        return self._answers

    def held(self) -> tuple[int, int]:
        """How many locks and answers are held (bounded: tests read it)."""
        return len(self._flights), len(self._answers)


def _copy_state(cached: Obj | None, desired: Obj) -> copyplacement.CopyState:
    if cached is None:
        return copyplacement.CopyState.MISSING
    kept = with_traceparent(desired, carried(cached))  # the trace a copy carries is no difference of its own
    return (
        copyplacement.CopyState.DIFFERS
        if controllerutil.would_apply(kept, cached, FIELD_MANAGER)
        else copyplacement.CopyState.CURRENT
    )


def _namespace_state(cached: Obj | None, desired: Obj, project: str) -> copyplacement.NamespaceState:
    if cached is None:
        return copyplacement.NamespaceState.MISSING
    owner = upstream_identity(None, cached)
    if owner is None or owner.project != project:
        return copyplacement.NamespaceState.FOREIGN
    if is_deleting(cached):
        return copyplacement.NamespaceState.DELETING
    if controllerutil.would_apply(desired, cached, FIELD_MANAGER):
        return copyplacement.NamespaceState.DIFFERS
    return copyplacement.NamespaceState.CURRENT


class Federator:
    def __init__(self, mgr: Manager, *, unreachable_grace: float) -> None:
        self.mgr = mgr
        self.unreachable_grace = unreachable_grace
        self.events = ControllerEvents(mgr, FIELD_MANAGER)
        self.tracer = tracer_for(mgr.tracer_provider)
        self.clock = clock_of(mgr)
        self.namespace_writes = NamespaceWrites()
        self.comparisons = Comparisons()
        self.routes = Routes(mgr)
        self.locations = KnownLocations(mgr)  # decoded once per change of the Locations
        # the last write's answer per project WD (the claim) and per copy (its cell, namespace
        # and name) until the cache shows it: that write's own watch event wakes nothing
        # (`UnlessOwnWrite`), and a reconcile before it decides on the answer, not the cache
        self.claims: OwnWrites[Request] = OwnWrites()
        self.copy_writes: OwnWrites[Request] = OwnWrites()

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self, project: Cluster, wd: Obj) -> Result:
        """`_reconcile` in the `federate` span of the WD generation's trace (one trace per change)."""
        key = (project.name, get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name"))
        wd = self.claims.latest(Request(*key), wd) or wd  # its claim's answer until the cache shows it
        if is_deleting(wd):
            self.clock.forget(key)
            return await self._reconcile(project, wd)
        generation = get_int(wd, "metadata.generation") or 0
        self.clock.seen(key, generation)
        with stage_span(self.tracer, "federate", change_of(wd), stage_attributes(project.name, wd)):
            result = await self._reconcile(project, wd)
        self.clock.copies_written(key, generation)  # every target cell written (a failed one raised)
        return result

    async def namespace_event(self, cell_name: str, ns: Obj) -> list[Request]:
        """A cell namespace's event: the cache now shows the last write's answer or newer, so
        the answer goes (`NamespaceWrites`); the WDs of its copies look again."""
        self.namespace_writes.forget((cell_name, get_str(ns, "metadata.name", required=False)))
        return await self.routes.wds_of_namespace(cell_name, ns)

    async def gone(self, project: Cluster, req: Request) -> Result:
        """The project WD is gone (`ForObject`): the orphan sweep removes its copies left
        in the cells (a deletion that bypassed the finalizer, or one made while a cell was away).

        A shard's cache holds only the WDs labelled for it, and a WD that leaves that
        selection (handed over) is DELETED from it just like a deleted one — with its last
        state, still labelled for this shard, as kube-apiserver sends it — so gone from a
        shard's cache is confirmed by a live GET: only a 404 sweeps."""
        self.clock.forget((project.name, req.namespace, req.name))
        if project.cache.narrows(WORKLOAD_DEPLOYMENTS):
            live = await project.client.get_live_or_none(WORKLOAD_DEPLOYMENTS, req.name, namespace=req.namespace)
            if live is not None:
                return Result()  # handed over, not deleted: its copies are its new shard's
        await self._remove(await self._copies(project.name, req.namespace, req.name), Outcome())
        return Result()

    async def _reconcile(self, project: Cluster, wd: Obj) -> Result:
        # 1-2. the project and the cached WD (`ForObject`: a cluster not engaged is dropped,
        # a WD gone is `gone`); its copies in the cells (caches)
        copies = await self._copies(project.name, get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name"))
        # 3. early exit: deleting
        if is_deleting(wd):
            return await self._finalize(project, wd, copies)
        # 4. desired state from the pure placement function
        uid = get_str(wd, "metadata.uid", required=False)
        target, shares = await self._plan(project, wd, copies)
        namespace = await self._downstream_namespace(project, wd)
        # 5. write only the difference: the copies of cells that stop matching go; then, at
        # once, every target cell's copy and (first sighting) the finalizer with the cell
        # namespace of the copies (`_claim`, one write): a new WD costs one round trip
        outcome = Outcome()
        targets = {share.cell for share in shares}
        stale = [c for c in copies if c.cell.name not in targets or c.upstream_uid != uid]
        await self._remove(stale, outcome)
        by_cell = {c.cell.name: c for c in copies if c not in stale}
        await self._claim_and_place(project, namespace, wd, target, shares, by_cell, outcome)
        # 6. tell the user, retry what failed
        await self._report(project.name, wd, shares, outcome, first=not by_cell)
        if outcome.failed:
            raise TemporaryError("; ".join(f"cell {cell}: {why}" for cell, why in sorted(outcome.failed.items())))
        return Result()

    # ------------------------------------------------------------------ claiming
    async def _claim_and_place(
        self,
        project: Cluster,
        ns: Obj,
        wd: Obj,
        target: CityTarget | None,
        shares: list[Share],
        by_cell: dict[str, Copy],
        outcome: Outcome,
    ) -> None:
        """The finalizer (`_claim`) and every cell's copy (`_place`), written concurrently.
        Not finalizer first: a copy written before the finalizer lands is safe, because a
        WD deleted without the finalizer (before it landed, or with the claim failing on
        the WD gone) is `gone`, and every copy's own event maps back to it, so the orphan
        sweep removes each copy once its cell's cache shows it; the claim is made only
        while the cached WD is not deleting, and its apply carries the WD's uid, so it never
        creates a WD that is gone (a 409: retried, then `gone`). Pinned by
        test_one_wds_copies_are_written_concurrently and
        test_a_wd_deleted_before_its_finalizer_leaves_no_copy."""
        known = referenced(wd)  # the template's references, walked once for every cell's copy
        cell_namespace = get_str(ns, "metadata.name")
        writes: list[controllerutil.Call] = []
        if controllerutil.finalizer_wanted(wd, Finalizer.FEDERATOR, annotations=_claim_annotations(cell_namespace)):
            writes.append(functools.partial(self._claim, project, wd, cell_namespace))
        if target is not None:
            writes.extend(
                functools.partial(self._place, project, ns, wd, target, share, known, by_cell.get(share.cell), outcome)
                for share in shares
            )
        await controllerutil.concurrently(writes)

    async def _claim(self, project: Cluster, wd: Obj, cell_namespace: str) -> Obj:
        """The federator's finalizer and the `federation-namespace` annotation (the cell
        namespace its copies live in, `ns-<project namespace UID>`: the name of the
        reconcile's `_downstream_namespace` intent) in one write; none when both are there.
        The answer is remembered for its watch event (`claims`) when it differs from `wd`
        by the claim alone: a state with anyone else's change in it is reconciled."""
        claim = _claim_annotations(cell_namespace)
        answer = await controllerutil.add_finalizer(
            project.client, WORKLOAD_DEPLOYMENTS, wd, Finalizer.FEDERATOR, annotations=claim
        )
        if version_of(answer) != version_of(wd) and claimed_only(wd, answer):
            req = Request(project.name, get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name"))
            self.claims.remember(req, wd, answer)
        return answer

    # ------------------------------------------------------------------ reading
    async def _plan(self, project: Cluster, wd: Obj, copies: list[Copy]) -> tuple[CityTarget | None, list[Share]]:
        """The WD's target city and its shares (`planned_shares`). A Location no cell serves
        places nowhere (no target): the projector says NoMatchingLocation, with an Event, and
        a change of the Location re-plans (`Routes.wds_of_location`). A bad spec is an Event."""
        try:
            locations = self.locations()
        except ClusterNotReadyError as exc:
            raise TemporaryError(str(exc)) from exc
        try:
            target = target_city(wd, locations)
            pairs = ((c.cell.name, c.obj) for c in copies)
            return target, planned_shares(wd, registered_cells(self.mgr), pairs, locations, target=target)
        except UnresolvedLocation:
            return None, []
        except PlacementError as exc:
            await self.events.event(project.name, wd, "Warning", "InvalidPlacement", str(exc))
            raise PermanentError(str(exc)) from exc

    async def _downstream_namespace(self, project: Cluster, wd: Obj) -> Obj:
        """The cell namespace the WD's copies go to (an apply intent), from the project
        namespace and the project's registration; a registration that cannot name it is
        reported on the WD and not retried."""
        namespace = get_str(wd, "metadata.namespace")
        project_ns = await project.client.get_or_none(NAMESPACES, namespace)
        if project_ns is None:
            raise TemporaryError(f"project namespace {namespace} is not cached yet")
        upstream_label = project.labels.get(UPSTREAM_CLUSTER_LABEL, "")
        if upstream_label:
            try:
                return downstream_namespace(project.name, upstream_label, project_ns)
            except ValueError as exc:  # the registration's encoded name is not this project's
                why = str(exc)
        else:
            why = f"project {project.name} is registered without the {UPSTREAM_CLUSTER_LABEL} label"
        await self.events.event(project.name, wd, "Warning", "ProjectRegistrationIncomplete", why)
        raise PermanentError(why)

    async def _copies(self, project: str, namespace: str, name: str) -> list[Copy]:
        """Every copy of the project WD in the cells whose caches are synced."""
        return [Copy(cell, obj) for cell, obj in await find_copies(self.mgr, project, namespace, name)]

    # ------------------------------------------------------------------ writing (one write per helper)
    async def _place(
        self,
        project: Cluster,
        ns: Obj,
        wd: Obj,
        target: CityTarget,
        share: Share,
        known: Referenced,
        existing: Copy | None,
        outcome: Outcome,
    ) -> None:
        """One cell's copy: the pure decision (`copyplacement.next_action`) names one action,
        `_act` makes its one write, and the decision looks again at what the write returned,
        until `Done` (recorded as created / updated) or `Blocked` (the cell's failure). An
        action never repeats within a pass (a write the server did not take as intended
        waits for its watch event, never a hot loop)."""
        cell = self.mgr.clusters.get(share.cell)
        if cell is None:
            return
        if cell.state is not ClusterState.READY:
            outcome.failed[share.cell] = f"{cell.state} ({cell.describe()})"
            return
        autoscaled = cell_owns_replicas(wd)
        name = get_str(ns, "metadata.name")
        desired = downstream_copy(project.name, wd, share, name, include_replicas=not autoscaled, target=target,
                                  referenced=known)  # fmt: skip
        done: list[copyplacement.Action] = []
        # the copy as last written while the cache does not show that write yet (`copy_writes`)
        written = self.copy_writes.latest(_copy_request(cell, desired), existing.obj if existing else None)
        try:
            cached = self.namespace_writes.latest((cell.name, name), await cell.client.get_or_none(NAMESPACES, name))
            seen = _Seen(project.name, ns, desired, autoscaled, cached, written, cell=cell.name,
                         compare=self.comparisons)  # fmt: skip
            while (action := copyplacement.next_action(seen.observe())) not in done:
                if isinstance(action, copyplacement.Blocked):
                    outcome.failed[share.cell] = f"namespace {name} {action.reason}"
                    return
                if isinstance(action, copyplacement.Done):
                    break
                await self._act(action, cell, seen, wd, share)
                done.append(action)
        except (APIError, TransportError, ClusterNotReadyError) as exc:
            # recorded per cell: the healthy cells are still written, the reconcile retries after
            # (on the cache's view of the namespace, not on an answer that may be why it failed)
            self.namespace_writes.forget((cell.name, name))
            outcome.failed[share.cell] = f"{type(exc).__name__}: {exc}"
            return
        if copyplacement.CreateCopy() in done:
            outcome.created.append(share.cell)
        elif copyplacement.UpdateCopy() in done:
            outcome.updated.append(share.cell)

    async def _act(self, action: copyplacement.Action, cell: Cluster, seen: _Seen, wd: Obj, share: Share) -> None:
        """One write for one action; `seen` takes what the server returned, and a copy's
        answer is remembered for its own watch event (`copy_writes`)."""
        before = seen.copy
        if isinstance(action, copyplacement.ApplyNamespace):
            await self._apply_namespace(cell, seen)
        elif isinstance(action, copyplacement.CreateCopy | copyplacement.UpdateCopy):
            body = copy_with_trace(seen.desired, wd, seen.copy, writes=True)  # the change's trace rides on a spec write
            # the decision compared the copy already (`_copy_state`): it is missing or differs
            applied = await controllerutil.apply_decided(
                cell.client, WORKLOAD_DEPLOYMENTS, body, cached=seen.copy, field_manager=FIELD_MANAGER
            )
            seen.copy, seen.created = applied.obj, applied.operation is Operation.CREATED
            self.copy_writes.remember(_copy_request(cell, seen.desired), before, applied.obj)
        elif isinstance(action, copyplacement.SetInitialReplicas):
            seen.copy = await self._initial_replicas(cell, seen.desired, share)
            self.copy_writes.remember(_copy_request(cell, seen.desired), before, seen.copy)

    async def _apply_namespace(self, cell: Cluster, seen: _Seen) -> None:
        """The cell namespace, one write in flight per (cell, namespace) (`NamespaceWrites`):
        a reconcile that waited for another's write decides again on what that write got
        (or the cache, if newer) and writes only if the decision still says so — so a burst
        of WDs of one project namespace writes it once per cell. A write that failed fails
        its waiters too (each retries later), so a dark cell's timeouts are not served in turn."""
        name = get_str(seen.ns, "metadata.name")
        key = (cell.name, name)
        async with self.namespace_writes.one_at_a_time(key) as flight:
            if flight.failed:
                raise TransportError(f"namespace {name} not written: the write waited for failed ({flight.failed})")
            cached = await cell.client.get_or_none(NAMESPACES, name)
            seen.namespace = self.namespace_writes.latest(key, cached)
            if copyplacement.next_action(seen.observe()) != copyplacement.ApplyNamespace():
                return  # written (or changed) while this one waited: the placement goes on from there
            try:
                applied = await controllerutil.apply_if_differs(
                    cell.client, NAMESPACES, seen.ns, cached=seen.namespace, field_manager=FIELD_MANAGER
                )
            except (APIError, TransportError) as exc:
                flight.failed = f"{type(exc).__name__}: {exc}"
                raise
            self.namespace_writes.remember(key, cached, applied.obj, await cell.client.get_or_none(NAMESPACES, name))
            seen.namespace = applied.obj

    async def _initial_replicas(self, cell: Cluster, desired: Obj, share: Share) -> Obj:
        """An autoscaled copy gets its first replica count from a field manager that never
        writes again, so the cell's HPA (through the scale subresource) owns it after."""
        body = {
            "apiVersion": desired["apiVersion"],
            "kind": desired["kind"],
            "metadata": {
                "name": get_str(desired, "metadata.name"),
                "namespace": get_str(desired, "metadata.namespace"),
            },
            "spec": {"replicas": share.replicas},
        }
        return await cell.client.apply(WORKLOAD_DEPLOYMENTS, body, field_manager=INITIAL_REPLICAS_MANAGER, force=True)

    async def _remove(self, copies: Iterable[Copy], outcome: Outcome) -> None:
        for copy in copies:
            if is_deleting(copy.obj):
                continue
            if copy.cell.state is not ClusterState.READY:
                outcome.failed[copy.cell.name] = f"cannot remove the copy: cell {copy.cell.describe()}"
                continue
            await controllerutil.delete_exact(copy.cell.client, WORKLOAD_DEPLOYMENTS, copy.obj)
            outcome.removed.append(copy.cell.name)

    # ------------------------------------------------------------------ deletion
    async def _finalize(self, project: Cluster, wd: Obj, copies: list[Copy]) -> Result:
        """Deletion, one step at a time (`deletion.next_step`): delete every copy, wait until
        each is gone or accepted for deletion by its (ready) cell — never for the cell's
        operator to finalize it — then release the finalizer; a cell unreachable past the
        grace does not hold it (a Warning names it, its copy is swept when it is back)."""
        step = next_step(self._deletion_cells(wd, copies), self.unreachable_grace)
        if isinstance(step, RemoveCopies):
            await self._remove([c for c in copies if c.cell.name in step.cells], Outcome())
            # the copies' events (deletionTimestamp set, or gone) bring the WD back; the retry backs that up
            raise TemporaryError(f"waiting for the copies in {', '.join(step.cells)} to be accepted for deletion")
        if isinstance(step, AwaitSync):
            raise TemporaryError(f"waiting for {', '.join(step.cells)} to sync: it may hold a copy")
        if isinstance(step, AwaitGrace):
            return Result(requeue_after=step.after)
        for cell, dark in step.overdue:
            await self.events.event(project.name, wd, "Warning", "CellUnreachable",
                                    f"cell {cell} has been unreachable for {dark:.0f}s (grace "
                                    f"{self.unreachable_grace:.0f}s); deletion completes without it and its copy is "
                                    "removed when it is back")  # fmt: skip
        await controllerutil.remove_finalizer(project.client, WORKLOAD_DEPLOYMENTS, wd, Finalizer.FEDERATOR)
        return Result()

    def _deletion_cells(self, wd: Obj, copies: list[Copy]) -> list[DeletionCell]:
        """The cells that matter to a deletion: those known to hold a copy, and the cells of
        the city whose cache never synced (they may hold a copy nobody has seen)."""
        held: dict[str, list[Copy]] = {}
        for c in copies:
            held.setdefault(c.cell.name, []).append(c)
        cells = [DeletionCell(name, _cell_state(found[0].cell), found[0].cell.unreachable_for(), copy=True,
                              copy_deleting=all(is_deleting(c.obj) for c in found))
                 for name, found in held.items()]  # fmt: skip
        unseen = self._unsynced_cells_of_city(wd, set(held))
        return cells + [DeletionCell(c.name, _cell_state(c), c.unreachable_for(), unsynced=True) for c in unseen]

    def _unsynced_cells_of_city(self, wd: Obj, known: set[str]) -> list[Cluster]:
        """The engaged cells serving the WD's city whose copies' cache has not synced (and
        that are not already known to hold a copy)."""
        try:
            city = target_city(wd, known_locations(self.mgr)).city_code
        except (PlacementError, ClusterNotReadyError):
            return []  # no valid city (or its Location is gone): no cell ever got a copy of it
        serving = {info.name for info in registered_cells(self.mgr) if same_city(info.city_code, city)}
        return [cell for cell in cell_clusters(self.mgr)
                if cell.name in serving and cell.name not in known and not cell_synced(cell)]  # fmt: skip

    # ------------------------------------------------------------------ events
    async def _report(self, project: str, wd: Obj, shares: list[Share], outcome: Outcome, *, first: bool) -> None:
        """Events only for what a user acts on or would otherwise miss (DESIGN §5 Events),
        so a converged WD costs no request and a plain create or spec change costs none:
        the status says those. `Federated` when the cells of a placed WD change (a cell
        joined or left, the city moved); `CopyRestored` when a copy edited by hand in a
        cell was put back (the cells had observed this very spec, so the difference is
        drift, not the user's own change on its way down)."""
        _trace_outcome(shares, outcome)
        if (outcome.created and not first) or outcome.removed:
            placed = ", ".join(f"{s.cell} ({s.replicas} from ordinal {s.ordinal_start})" for s in shares)
            await self.events.event(
                project, wd, "Normal", "Federated", f"federated to {len(shares)} cells: {placed or '-'}"
            )
        status = wd.get("status") or {}
        if outcome.updated and status.get("observedGeneration") == get_int(wd, "metadata.generation"):
            await self.events.event(
                project,
                wd,
                "Normal",
                "CopyRestored",
                f"copy restored after drift in {', '.join(sorted(outcome.updated))}",
            )


def _trace_outcome(shares: list[Share], outcome: Outcome) -> None:
    """The cells and what was done in each, on the current `federate` span; a failed cell
    is an event (the reconcile retries it)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute("cells", sorted(s.cell for s in shares))
    for what, cells in (("created", outcome.created), ("updated", outcome.updated), ("removed", outcome.removed)):
        if cells:
            span.set_attribute(f"cells.{what}", sorted(cells))
    for cell, why in sorted(outcome.failed.items()):
        span.add_event("retry", {"k8s.cluster.name": cell, "reason": why})


def _copy_request(cell: Cluster, desired: Obj) -> Request:
    """A copy's key in `copy_writes`: its cell, namespace and name (its watch event's)."""
    return Request(cell.name, get_str(desired, "metadata.namespace"), get_str(desired, "metadata.name"))


def _claim_annotations(cell_namespace: str) -> dict[str, str]:
    """What the claim writes beside the finalizer: the cell namespace of the WD's copies."""
    return {FEDERATION_NAMESPACE_ANNOTATION: cell_namespace}


def _namespace_key(cell_name: str, event: ObjectEvent) -> NamespaceKey:
    return cell_name, split_key(event.key)[1]


def claimed_only(before: Obj, answer: Obj) -> bool:
    """Whether the claim's `answer` differs from the WD it was made over (`before`) only by
    what the claim writes (the finalizer, the `federation-namespace` annotation) and what
    the server keeps (resourceVersion, managedFields, the status): its watch event then
    needs no reconcile. A change of spec (its generation), labels, other annotations or
    deletion meanwhile does."""
    ours = FEDERATION_NAMESPACE_ANNOTATION
    before_annotations, answer_annotations = (
        get_str_map(before, "metadata.annotations"),
        get_str_map(answer, "metadata.annotations"),
    )
    return (
        get_int(before, "metadata.generation") == get_int(answer, "metadata.generation")
        and not is_deleting(answer)
        and get_str_map(before, "metadata.labels") == get_str_map(answer, "metadata.labels")
        and len(answer_annotations) - len(before_annotations) == (ours not in before_annotations)
        and all(answer_annotations.get(k) == v for k, v in before_annotations.items() if k != ours)
    )


def _cell_state(cell: Cluster) -> CellState:
    if cell.state is ClusterState.READY:
        return CellState.READY
    return CellState.UNREACHABLE if cell.state is ClusterState.UNREACHABLE else CellState.SYNCING


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: project WDs, their namespaces (read), the copies and downstream
    namespaces in every cell, and cell registrations."""
    federator = Federator(mgr, unreachable_grace=options.cell_unreachable_grace)
    routes = federator.routes
    ctrl = mgr.new_controller("federator", ForObject(mgr, WORKLOAD_DEPLOYMENTS, federator), workers=options.workers)
    # the project WD's status is the projector's (and changes on every cell report): nothing
    # the federator writes follows from it, so a status-only change costs no reconcile; nor
    # does its own claim coming back (and likewise below, its own copy and namespace writes)
    ctrl.watch(WORKLOAD_DEPLOYMENTS, EnqueueUnlessOwnWrite(federator.claims), clusters=PROJECTS,
               indexers=WD_INDEXERS, predicates=[not_status_only])  # fmt: skip
    ctrl.reads(NAMESPACES, clusters=PROJECTS)
    # the management cluster's Locations: a WD placed by location re-plans when its Location changes
    ctrl.watch(
        LOCATIONS,
        EnqueueRequestsFromMapFunc(routes.wds_of_location, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=LOCAL,
    )
    # a copy's status is the cell's to write (often), and so is its finalizer (the cell WD
    # controller's, added once per copy): only its spec, labels and annotations are ours
    to_wd = EnqueueRequestsFromMapFunc(routes.wd_of_copy, cluster_name=ClusterName.PRESERVE_MAPPED)
    ctrl.watch(
        WORKLOAD_DEPLOYMENTS,
        UnlessOwnWrite(federator.copy_writes, to_wd, request_key),
        clusters=CELLS,
        label_selector=CELL_COPIES_SELECTOR,
        predicates=[not_status_or_finalizers_only],
    )
    to_wds = EnqueueRequestsFromMapFunc(federator.namespace_event, cluster_name=ClusterName.PRESERVE_MAPPED)
    ctrl.watch(
        NAMESPACES,
        UnlessOwnWrite(federator.namespace_writes.answers, to_wds, _namespace_key),
        clusters=CELLS,
        label_selector=CELL_NAMESPACES_SELECTOR,
        indexers={UPSTREAM_INDEX: namespace_upstream},
    )
    ctrl.watch_clusters(routes.wds_to_replan, clusters=CELLS)
