"""Companion controller (management mode): the ConfigMaps and Secrets a project's WDs reference,
copied into the cell namespace of their copies in every cell holding one (DESIGN §3 Companions).

Request key: (project cluster, "", project namespace): a companion is shared by the namespace's WDs.
Reads (caches): project WDs, which ConfigMaps and Secrets exist (`source_identity`: no data), and the cells' copies,
downstream namespaces (`fleet.fleetview`) and companions; live: one GET per referenced source per reconcile (its data,
held for that reconcile only). Writes, and alone writes: companions in the cell namespaces of the request's project
namespace (manager `companions`) and their deletion; Warning Events on a project WD whose source is missing or too
large (once per transition, names only). Never writes: a project object, a copy, a namespace, anything in another
project's namespace; never logs or reports a Secret's data.
Sharded (every shard, DESIGN §5): each shard copies what its WDs reference (manager `companions-<shard>`, its WDs
under `referenced_by_key(shard)`, labelled with that key, which its cell caches select), so shards co-own a companion
and each caches its share; it withdraws from one its WDs no longer reference while another live shard holds it,
deletes it (resourceVersion precondition) once a live LIST finds no copy referencing it, and strips a dead shard's
share (`ShardLeases`): test_workloads_and_companions_follow_the_shards,
test_a_dead_shards_companion_share_is_withdrawn_by_the_survivors. DESIGN §3 Companions 1-5 (tests/federation/
test_companions.py): 1 test_each_reference_form_reaches_every_cell_of_the_copies; 2, 3
test_source_changes_deletion_and_reclaim; 4, 5 test_a_missing_source_is_an_event_and_secret_data_never_leaks; 6
test_companions_never_cross_projects; test_a_cell_joining_later_gets_its_companions_before_its_instances_start;
the cell side tests/cells/test_referenced_data.py."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from federation.api.constants import UPSTREAM_UID_ANNOTATION
from federation.api.resources import NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.downstream import upstream_identity
from federation.fleet.fleetview import (
    CELL_COPIES_SELECTOR,
    CELLS,
    PROJECTS,
    UPSTREAM_INDEX,
    WD_INDEXERS,
    cell_clusters,
    cell_synced,
    find_copies,
    read_cell_copies,
    upstream_key,
)
from federation.fleet.options import ManagementOptions
from federation.fleet.references import (
    MAX_COMPANION_BYTES,
    REFERENCED_DATA_LABEL,
    SOURCE_RESOURCES,
    SourceTooLarge,
    companion_for,
    data_size,
    referenced_by_key,
    references,
    referencing,
    referencing_namespace,
    sharers,
    source_identity,
)
from mcruntime import controllerutil
from mcruntime.client import Preconditions
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.controller import Controller
from mcruntime.errors import APIError, ClusterNotReadyError, TransportError, is_not_found
from mcruntime.fields import get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.manager import Manager
from mcruntime.objects import Obj
from mcruntime.predicates import not_status_only
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.resources import LEASES, Resource
from mcruntime.sharding.gate import Owner
from mcruntime.sharding.states import is_available, shard_state
from mcruntime.source import LOCAL, ClusterEvent, ClusterEventType

log = logging.getLogger(__name__)

NAME = "companions"
FIELD_MANAGER = NAME
RESOURCES = SOURCE_RESOURCES
COMPANIONS_SELECTOR = f"{REFERENCED_DATA_LABEL}=true"
# project WDs that reference a ConfigMap or Secret, by namespace: a reconcile decodes only
# those (the others need no companion), not every WD of the namespace on every event
REFERENCING_INDEX = "referencing-namespace"

CellNamespace = tuple[str, str]  # (cell name, cell namespace)
Key = tuple[str, str]  # (kind, name)


@dataclass
class Desired:
    """Every companion one project namespace needs: per cell namespace, per (kind, name),
    the referencing WDs (`"<namespace>/<name>"`); and what cannot be copied, per WD."""

    companions: dict[CellNamespace, dict[Key, set[str]]] = field(default_factory=lambda: defaultdict(dict))
    sources: dict[Key, Obj | None] = field(default_factory=dict)  # read live, once per reconcile
    problems: dict[str, tuple[Obj, str, str]] = field(default_factory=dict)  # "<wd>/<Kind>/<name>" → (wd, reason, msg)


class Companions:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, NAME)
        # problems already reported (Event keys), so a namespace's unrelated changes do not repeat them
        self.reported: set[tuple[str, str, str]] = set()
        self.shard: str | None = None  # with --sharding (`shard`): this replica's shard
        self.field_manager = FIELD_MANAGER
        self.referenced_by = referenced_by_key(None)
        self.leases: ShardLeases | None = None  # sharded: the shard Leases, to tell a dead shard's share

    def for_shard(self, shard: str, leases: ShardLeases) -> None:
        """Copy what this shard's WDs reference, as a co-owner of each companion."""
        self.shard = shard
        self.field_manager = share_manager(shard)
        self.referenced_by = referenced_by_key(shard)
        self.leases = leases

    async def reconcile(self, req: Request) -> Result:
        # 1. the project (an empty or not engaged cluster name: the runtime drops the request)
        project = self.mgr.get_cluster(req.cluster)
        namespace = req.name
        # 2. fetch (caches): the namespace's WDs that reference anything, and each one's
        # copies in the cells
        wds = await project.client.list(WORKLOAD_DEPLOYMENTS, index=(REFERENCING_INDEX, namespace))
        # 3. desired state: the companions each cell namespace of a copy needs
        desired = await self._desired(project, namespace, wds)
        # 4. compare with the cells' companions and write only the difference
        failed: dict[str, str] = {}
        for cell, cell_namespace in self._cell_namespaces(req.cluster, namespace):
            try:
                wanted = desired.companions.get((cell.name, cell_namespace), {})
                await self._converge_namespace(cell, cell_namespace, namespace, wanted, desired.sources)
            except (APIError, TransportError, ClusterNotReadyError) as exc:
                failed[cell.name] = f"{type(exc).__name__}: {exc}"
        # 5. tell the user what cannot be copied (once per transition)
        await self._report(project, namespace, desired.problems)
        if failed:
            raise TemporaryError("; ".join(f"cell {cell}: {why}" for cell, why in sorted(failed.items())))
        return Result()

    # ------------------------------------------------------------------ desired
    async def _desired(self, project: Cluster, namespace: str, wds: Iterable[Obj]) -> Desired:
        desired = Desired()
        for wd in wds:
            refs = references(wd)
            if not refs or is_deleting(wd):
                continue  # a deleting WD's copies are on their way out: nothing of it is needed
            name, uid = get_str(wd, "metadata.name"), get_str(wd, "metadata.uid", required=False)
            copies = await find_copies(self.mgr, project.name, namespace, name)
            own = [(cell, copy) for cell, copy in copies if _upstream_uid(copy) == uid]
            for ref in refs:
                source = await self._read_source(project, namespace, ref.kind, ref.name, desired.sources)
                if source is None or is_deleting(source):
                    if not ref.optional:
                        why = f'{ref.kind} "{ref.name}" not found in namespace "{namespace}"'
                        desired.problems[f"{name}/{ref.token}"] = (wd, "SourceNotFound", why)
                    continue
                if data_size(source) > MAX_COMPANION_BYTES:
                    why = f'{ref.kind} "{ref.name}" holds more than {MAX_COMPANION_BYTES} bytes of data'
                    desired.problems[f"{name}/{ref.token}"] = (wd, "SourceTooLarge", why)
                    continue
                for cell, copy in own:
                    slot = desired.companions[(cell.name, get_str(copy, "metadata.namespace"))]
                    slot.setdefault((ref.kind, ref.name), set()).add(f"{namespace}/{name}")
        return desired

    @staticmethod
    async def _read_source(
        project: Cluster, namespace: str, kind: str, name: str, read: dict[Key, Obj | None]
    ) -> Obj | None:
        """A referenced source with its data: the cache says whether it exists, one live
        GET per reconcile reads it (kept only for this reconcile, in `read`)."""
        if (kind, name) not in read:
            resource = RESOURCES[kind]
            found = None
            if await project.client.get_or_none(resource, name, namespace=namespace) is not None:
                try:
                    found = {"kind": kind, **await project.client.get_live(resource, name, namespace=namespace)}
                except APIError as exc:
                    if not is_not_found(exc):
                        raise
            read[(kind, name)] = found
        return read[(kind, name)]

    def _cell_namespaces(self, project: str, namespace: str) -> Iterable[tuple[Cluster, str]]:
        """The ready, synced cells' namespaces that belong to this project namespace (found by
        their labels through the upstream index): the only namespaces written."""
        for cell in cell_clusters(self.mgr):
            if cell.state is not ClusterState.READY or not cell_synced(cell):
                continue
            for ns in cell.cache.informer_of(NAMESPACES).store.by_index(
                UPSTREAM_INDEX, upstream_key(project, namespace)
            ):
                if not is_deleting(ns):
                    yield cell, get_str(ns, "metadata.name")

    # ------------------------------------------------------------------ writes (one per helper)
    async def _converge_namespace(
        self, cell: Cluster, cell_namespace: str, namespace: str, wanted: dict[Key, set[str]],
        sources: dict[Key, Obj | None],
    ) -> None:  # fmt: skip
        in_use = InUse(cell, cell_namespace)
        for kind, resource in RESOURCES.items():
            present = {
                get_str(o, "metadata.name"): o for o in await cell.client.list(resource, namespace=cell_namespace)
            }
            for name, obj in list(present.items()):
                present[name] = await self._strip_dead(cell, resource, obj)
            for (want_kind, name), referenced_by in sorted(wanted.items()):
                if want_kind != kind:
                    continue
                source = sources.get((kind, name))
                if source is None:
                    continue  # not read (cannot happen: `_desired` wants only what it read)
                await self._apply(cell, resource, source, cell_namespace, namespace, referenced_by, present.get(name))
            for name, obj in sorted(present.items()):
                if (kind, name) not in wanted and not is_deleting(obj):
                    if self.shard is None:
                        await self._delete(cell, resource, obj)
                    else:
                        await self._release(cell, resource, obj, await in_use.referenced(kind, name))

    async def _apply(
        self,
        cell: Cluster,
        resource: Resource,
        source: Obj,
        cell_namespace: str,
        namespace: str,
        referenced_by: set[str],
        cached: Obj | None,
    ) -> None:
        try:
            desired = companion_for(
                source, cell_namespace, namespace, referenced_by, referenced_by_annotation=self.referenced_by,
                share_label=self.referenced_by if self.shard is not None else None,
            )  # fmt: skip
        except SourceTooLarge:
            return  # grew since `_desired` looked: its event brings the namespace back, and `_report` says it
        result = await controllerutil.apply_if_differs(
            cell.client, resource, desired, cached=cached, field_manager=self.field_manager
        )
        if result.operation is not controllerutil.Operation.UNCHANGED:
            # names only: a companion's data never reaches a log
            name = get_str(desired, "metadata.name")
            log.info("cell %s: %s %s/%s %s", cell.name, resource.kind, cell_namespace, name, result.operation.value)

    async def _delete(self, cell: Cluster, resource: Resource, obj: Obj) -> None:
        await controllerutil.delete_exact(cell.client, resource, obj)
        log.info("cell %s: %s %s/%s reclaimed (no longer referenced)", cell.name, resource.kind,
                 get_str(obj, "metadata.namespace", required=False), get_str(obj, "metadata.name"))  # fmt: skip

    async def _release(self, cell: Cluster, resource: Resource, obj: Obj, referenced: bool) -> None:
        """Sharded: a companion none of this shard's WDs reference. Still referenced by a
        copy (another shard's WD, or one being handed over): withdraw this shard's share
        (label and annotations) while another live shard holds one, else keep it (so it
        stays in a cache that deletes it once unreferenced; the other shard's apply wakes
        this one); unreferenced: delete it, unless it changed since read (a shard writing
        it meanwhile keeps it: the precondition fails and this retries)."""
        name, namespace = get_str(obj, "metadata.name"), get_str(obj, "metadata.namespace", required=False)
        if not referenced:
            preconditions = Preconditions(
                uid=get_str(obj, "metadata.uid"), resource_version=get_str(obj, "metadata.resourceVersion")
            )
            await cell.client.delete(resource, name, namespace=namespace, preconditions=preconditions,
                                     ignore_not_found=True)  # fmt: skip
            log.info("cell %s: %s %s/%s reclaimed (no copy references it)", cell.name, resource.kind, namespace, name)
            return
        assert self.shard is not None and self.leases is not None, "_release is the sharded path"
        holders = sharers(obj) - {self.shard}
        if not holders - self.leases.dead(holders) or self.shard not in sharers(obj):
            return
        await cell.client.patch(resource, name, share_removal(obj, [self.shard]), namespace=namespace,
                                field_manager=self.field_manager)  # fmt: skip

    async def _strip_dead(self, cell: Cluster, resource: Resource, obj: Obj) -> Obj:
        """Sharded: the shares of dead shards (their label and annotations) removed from a
        companion this shard holds, in one patch guarded by its resourceVersion, so a
        companion no live shard references is deleted, not kept by a shard that is gone."""
        if self.leases is None or is_deleting(obj):
            return obj
        dead = sorted(self.leases.dead(sharers(obj) - {self.shard or ""}))
        if not dead:
            return obj
        name, namespace = get_str(obj, "metadata.name"), get_str(obj, "metadata.namespace", required=False)
        log.info("cell %s: %s %s/%s: the share of dead shard(s) %s withdrawn", cell.name, resource.kind, namespace,
                 name, ", ".join(dead))  # fmt: skip
        return await cell.client.patch(resource, name, share_removal(obj, dead), namespace=namespace,
                                       field_manager=self.field_manager)  # fmt: skip

    # ------------------------------------------------------------------ events
    async def _report(self, project: Cluster, namespace: str, problems: dict[str, tuple[Obj, str, str]]) -> None:
        """A Warning on the WD for each source it cannot get (named, never its data), once
        per transition; a resolved problem may be reported again if it comes back."""
        scope = f"{project.name}/{namespace}"
        current = {(scope, key, reason) for key, (_wd, reason, _msg) in problems.items()}
        self.reported = {r for r in self.reported if r[0] != scope or r in current}
        for key, (wd, reason, message) in sorted(problems.items()):
            if (scope, key, reason) in self.reported:
                continue
            await self.events.event(project, _typed(wd), "Warning", reason, message)
            self.reported.add((scope, key, reason))


class InUse:
    """Whether any copy in a cell namespace references a companion: read live, once per
    reconcile and cell namespace, and only when a shard has a companion to release (its
    own cache holds its own copies only)."""

    def __init__(self, cell: Cluster, cell_namespace: str) -> None:
        self.cell, self.cell_namespace = cell, cell_namespace
        self._refs: set[Key] | None = None

    async def referenced(self, kind: str, name: str) -> bool:
        if self._refs is None:
            copies = await self.cell.client.list_live(
                WORKLOAD_DEPLOYMENTS, namespace=self.cell_namespace, label_selector=CELL_COPIES_SELECTOR
            )
            self._refs = {(ref.kind, ref.name) for copy in copies if not is_deleting(copy) for ref in references(copy)}
        return (kind, name) in self._refs


def share_manager(shard: str) -> str:
    """The field manager a shard applies its share of a companion with."""
    return f"{FIELD_MANAGER}-{shard}"


def share_removal(obj: Obj, shards: Iterable[str]) -> dict[str, Any]:
    """A merge patch removing these shards' shares of a companion: each one's label and
    annotation `referenced_by_key(shard)` and its intent annotation; guarded by the
    companion's resourceVersion."""
    keys = [referenced_by_key(shard) for shard in shards]
    intents = [controllerutil.intent_annotation(share_manager(shard)) for shard in shards]
    rv = get_str(obj, "metadata.resourceVersion")
    labels, annotations = dict.fromkeys(keys), dict.fromkeys(keys + intents)
    return {"metadata": {"labels": labels, "annotations": annotations, "resourceVersion": rv}}


class ShardLeases:
    """Sharded: which shards are dead, from the shard Leases this replica caches (the view
    the sharder declares too): a Lease dead or orphaned (DESIGN §5), or gone (the shard
    Lease controller deletes an orphaned one) once the view has synced."""

    def __init__(self, mgr: Manager, namespace: str, selector: str) -> None:
        self.mgr, self.namespace, self.selector = mgr, namespace, selector

    def watch(self, ctrl: Controller, routes: CompanionRoutes) -> None:
        to_namespaces = EnqueueRequestsFromMapFunc(routes.of_dead_shard(self), cluster_name=ClusterName.PRESERVE_MAPPED)
        ctrl.watch(LEASES, to_namespaces, clusters=LOCAL, namespace=self.namespace, label_selector=self.selector)

    def dead(self, shards: Iterable[str]) -> set[str]:
        names = set(shards)
        informer = self.mgr.local.cache.informer_of(LEASES)
        if not names or not informer.has_synced:
            return set()
        now = time.time()
        leases = {name: informer.get(name, namespace=self.namespace) for name in names}
        return {name for name, lease in leases.items() if lease is None or not is_available(shard_state(lease, now))}


def _typed(wd: Obj) -> Obj:
    return {"apiVersion": WORKLOAD_DEPLOYMENTS.api_version, "kind": WORKLOAD_DEPLOYMENTS.kind, **wd}


def _upstream_uid(copy: dict[str, Any]) -> str:
    return get_str_map(copy, "metadata.annotations").get(UPSTREAM_UID_ANNOTATION, "")


class CompanionRoutes:
    """Map functions: everything that changes a project namespace's companions → that namespace."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def of_project_object(self, project: str, obj: Obj) -> list[Request]:
        """A project WD that references a ConfigMap or Secret → its namespace. One that
        references none needs no companion, so its events cost no reconcile (a reference
        removed still maps: on an update the old object is mapped too, and a deleted WD
        is mapped as it was)."""
        namespace = get_str(obj, "metadata.namespace", required=False)
        return [Request(project, "", namespace)] if namespace and references(obj) else []

    def of_source(self, kind: str) -> Callable[[str, Obj], Awaitable[list[Request]]]:
        """A project ConfigMap or Secret (`kind`) → its namespace, only when a WD there
        references it: a project's other objects (tokens, Helm releases...) cost nothing."""

        async def mapped(project: str, obj: Obj) -> list[Request]:
            cluster = self.mgr.clusters.get(project)
            namespace = get_str(obj, "metadata.namespace", required=False)
            name = get_str(obj, "metadata.name", required=False)
            if cluster is None or not namespace:
                return []
            wds = cluster.cache.informer_of(WORKLOAD_DEPLOYMENTS).store.by_index(REFERENCING_INDEX, namespace)
            return [Request(project, "", namespace)] if referencing(wds, kind, name) else []

        return mapped

    async def of_copy(self, cell_name: str, copy: Obj) -> list[Request]:
        """A copy that references a ConfigMap or Secret (its template is its WD's) → the
        project namespace its cell namespace serves; any other copy needs no companion."""
        return await self.of_cell_object(cell_name, copy) if references(copy) else []

    async def of_cell_object(self, cell_name: str, obj: Obj) -> list[Request]:
        """A companion (or a copy) in a cell → the project namespace its cell namespace serves."""
        cell = self.mgr.clusters.get(cell_name)
        if cell is None or cell.cache.view_of(NAMESPACES) is None:
            return []
        ns = cell.cache.informer_of(NAMESPACES).get(get_str(obj, "metadata.namespace", required=False))
        ref = upstream_identity(None, ns)
        if ref is None or ref.project not in self.mgr.clusters:
            return []
        return [Request(ref.project, "", ref.namespace)]

    def of_dead_shard(self, leases: ShardLeases) -> Callable[[str, Obj], Awaitable[list[Request]]]:
        """A shard Lease changed: when its shard is dead, the project namespaces of the
        companions this shard holds with it (its share is to be withdrawn)."""

        async def mapped(_cluster: str, lease: Obj) -> list[Request]:
            shard = get_str(lease, "metadata.name", required=False)
            if not shard or not leases.dead([shard]):
                return []
            found: dict[Request, None] = {}
            for cell in cell_clusters(self.mgr):
                for resource in RESOURCES.values():
                    if cell.cache.view_of(resource) is None:
                        continue
                    for obj in cell.cache.informer_of(resource).store.list():
                        if shard in sharers(obj):
                            found.update(dict.fromkeys(await self.of_cell_object(cell.name, obj)))
            return list(found)

        return mapped

    def of_cell(self, event: ClusterEvent) -> list[Request]:
        """A cell ready (again): every project namespace it holds a namespace of is checked
        (companions written or deleted meanwhile, a source changed while it was away)."""
        cell = self.mgr.clusters.get(event.cluster)
        if event.type is not ClusterEventType.READY or cell is None:
            return []
        found: dict[Request, None] = {}
        for ns in cell.cache.informer_of(NAMESPACES).store.list():
            ref = upstream_identity(None, ns)
            if ref is not None and ref.project in self.mgr.clusters:
                found[Request(ref.project, "", ref.namespace)] = None
        return list(found)


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: project WDs and sources, cell copies and companions, cell readiness."""
    routes = CompanionRoutes(mgr)
    ctrl = mgr.new_controller(NAME, Companions(mgr), workers=options.workers)
    to_namespace = EnqueueRequestsFromMapFunc(routes.of_project_object, cluster_name=ClusterName.INJECT_SOURCE)
    ctrl.watch(WORKLOAD_DEPLOYMENTS, to_namespace, clusters=PROJECTS, predicates=[not_status_only],
               indexers={**WD_INDEXERS, REFERENCING_INDEX: referencing_namespace})  # fmt: skip
    for kind, resource in RESOURCES.items():
        to_referencing = EnqueueRequestsFromMapFunc(routes.of_source(kind), cluster_name=ClusterName.INJECT_SOURCE)
        ctrl.watch(resource, to_referencing, clusters=PROJECTS, transform=source_identity)
    read_cell_copies(ctrl)
    to_project = EnqueueRequestsFromMapFunc(routes.of_cell_object, cluster_name=ClusterName.PRESERVE_MAPPED)
    of_copy = EnqueueRequestsFromMapFunc(routes.of_copy, cluster_name=ClusterName.PRESERVE_MAPPED)
    ctrl.watch(WORKLOAD_DEPLOYMENTS, of_copy, clusters=CELLS, label_selector=CELL_COPIES_SELECTOR,
               predicates=[not_status_only])  # fmt: skip
    for resource in RESOURCES.values():
        ctrl.watch(resource, to_project, clusters=CELLS, label_selector=COMPANIONS_SELECTOR)
    ctrl.watch_clusters(routes.of_cell, clusters=CELLS)


def shard(mgr: Manager, shard_id: str, lease_namespace: str, lease_selector: str) -> Owner:
    """With --sharding: the registered controller copies for this shard's WDs (`for_shard`)
    and watches the shard Leases (a dead shard's share withdrawn); the owner it is gated
    with (every project namespace, as each shard has its own part of it: the gate fences
    its writes on the shard's Lease)."""
    controller = next(c for c in mgr.controllers if c.name == NAME)
    reconciler = controller.reconciler
    if not isinstance(reconciler, Companions):
        raise TypeError(f"controller {NAME!r} reconciles with {reconciler!r}, not Companions")
    leases = ShardLeases(mgr, lease_namespace, lease_selector)
    reconciler.for_shard(shard_id, leases)
    leases.watch(controller, CompanionRoutes(mgr))

    def owner(req: Request) -> Hashable | None:
        return (NAME, req.cluster, req.namespace, req.name)

    return owner
