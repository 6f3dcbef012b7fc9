"""Instance controller (cell mode): an Instance's Ready condition, its scheduling gates, and,
with the QuotaGate feature, its ResourceClaim and QuotaGranted condition.

Request key: (cell = the manager's local cluster, namespace, Instance name).
Reads (caches): Instances; with QuotaGate, ResourceClaims; companions' names (no data). One
uncached read: while quota is pending the claim is read live (DESIGN §3 Instance controller).
Writes, and alone writes: the Instance's `Ready`, `QuotaGranted`, `ReferencedDataReady` conditions
(server-side apply on status, field manager `instance-controller`); removal of gates; the
ResourceClaim `instance-<name>` (create only); Warning Events for blocking reasons.
Never writes: Programmed, Available, status.controller (pod runtime), status.suspended (WD
controller), the rest of the Instance's spec, a claim's status (grant controller), Pods, WDs.

DESIGN §3 Instance controller, pinned by: 1 Ready by the blocking priority, Suspended first
(tests/cells/test_readiness.py, test_bad_images_surface_on_instance_and_deployment);
2 gates (test_a_grant_on_the_watch_removes_the_gate_in_one_pass, test_instances_wait_for_their_companions);
3 QuotaGate claims and tiers, kept while suspended (tests/cells/test_quota.py,
test_a_roll_under_a_full_budget_passes_each_grant_on, test_a_grant_missed_by_the_watch_is_picked_up_by_the_tier_requeue,
test_tier_interval_is_honoured_on_every_path, test_suspend_stops_pods_keeps_instances_and_resumes_in_order);
4 Events on transitions (test_bad_images_surface_on_instance_and_deployment); 5 zero requests at steady
state (test_zero_writes_when_idle)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from cells.conditionset import merge_owned
from cells.options import CellOptions
from cells.quota import claim_name, quota_requeue_after
from cells.quotaclaim import claim_for, is_claim_of, is_granted, quota_granted, under_quota, validation_failed
from cells.readiness import condition_is_true, conditions, gates_to_remove, ready_with, scheduling_gates
from cells.referenceddata import instance_referenced_data, names_only
from federation.api.conditionjson import rfc3339_now
from federation.api.constants import SchedulingGate
from federation.api.reasons import InstanceCondition, InstanceReadyReason, ready_reason_priority
from federation.api.resources import INSTANCES, RESOURCE_CLAIMS
from federation.fleet.references import REFERENCED_DATA_LABEL
from mcruntime import controllerutil
from mcruntime.client import Client
from mcruntime.cluster import Cluster
from mcruntime.errors import APIError, is_already_exists, is_conflict
from mcruntime.fields import get_list, get_str, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.resources import CONFIGMAPS, SECRETS
from mcruntime.source import LOCAL

log = logging.getLogger(__name__)

NAME = "instance-controller"
FIELD_MANAGER = NAME
# A Ready reason at least this blocking is worth an Event (PendingQuota and above).
EVENT_PRIORITY = ready_reason_priority(InstanceReadyReason.PENDING_QUOTA.value)


def _typed(instance: dict[str, Any]) -> Obj:
    return {"apiVersion": INSTANCES.api_version, "kind": INSTANCES.kind, **instance}


class InstanceController:
    def __init__(self, mgr: Manager, *, quota_gate: bool) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, NAME)
        self.quota_gate = quota_gate

    async def reconcile(self, cell: Cluster, cached: Obj) -> Result:
        # 1-2. the cell and the cached Instance, from the runtime (one that is gone gets no call)
        # 3. early exit: deleting (nothing to report on an Instance on its way out)
        if is_deleting(cached):
            return Result()
        instance = _typed(cached)
        # 4. the one deadline, computed once up front: every return path below honours it
        quota = self.quota_gate and under_quota(instance)
        tier = self._tier(instance) if quota else None
        try:
            await self._converge(cell, instance, quota=quota)
        except APIError as exc:
            if tier is not None and is_conflict(exc):
                raise TemporaryError(f"conflict while quota is pending; again in {tier:g}s: {exc}", delay=tier) from exc
            raise
        return Result(requeue_after=tier)

    @staticmethod
    def _tier(instance: Obj) -> float | None:
        """The tier interval while QuotaGranted is not True (anchored on creationTimestamp)."""
        if condition_is_true(instance, InstanceCondition.QUOTA_GRANTED.value):
            return None
        return quota_requeue_after(instance, datetime.now(UTC)).total_seconds()

    async def _converge(self, cell: Cluster, instance: Obj, *, quota: bool) -> None:
        client = cell.client
        # 5. quota: the claim (created when missing) and its verdict; the companions present
        overrides = [await self._quota(client, instance)] if quota else []
        referenced = instance_referenced_data(instance, await self._companions(client, instance))
        if referenced is not None:
            overrides.append(referenced)
        # 6. desired conditions from the pure functions: QuotaGranted, and Ready derived with it
        desired = [*overrides, ready_with(instance, overrides)]
        owned, changed = merge_owned(get_list(instance, "status.conditions"), desired, now=rfc3339_now())
        # 7. status, only when it changed
        if changed:
            before = self._ready_reason(instance)
            instance = await self._write_status(client, instance, owned)
            await self._report(cell, instance, before)
        # 8. gates whose condition is True at the current generation (the status just written)
        await self._remove_gates(client, instance)

    @staticmethod
    async def _companions(client: Client, instance: Obj) -> set[tuple[str, str]]:
        """(kind, name) of the companions in the Instance's namespace (cache)."""
        if SchedulingGate.REFERENCED_DATA.value not in scheduling_gates(instance) and not conditions(instance).get(
            InstanceCondition.REFERENCED_DATA_READY.value
        ):
            return set()
        namespace = get_str(instance, "metadata.namespace")
        return {
            (resource.kind, get_str(obj, "metadata.name"))
            for resource in (CONFIGMAPS, SECRETS)
            for obj in await client.list(resource, namespace=namespace)
        }

    # ------------------------------------------------------------------ quota
    async def _quota(self, client: Client, instance: Obj) -> dict[str, Any]:
        """QuotaGranted from the Instance's claim; creates the claim when missing (one write)."""
        namespace, name = get_str(instance, "metadata.namespace"), claim_name(get_str(instance, "metadata.name"))
        claim = await client.get_or_none(RESOURCE_CLAIMS, name, namespace=namespace)
        if claim is None:
            try:
                desired = claim_for(instance)
            except ValueError as exc:
                return validation_failed(instance, str(exc))
            try:
                claim = await client.create(RESOURCE_CLAIMS, desired, field_manager=FIELD_MANAGER)
            except APIError as exc:
                if not is_already_exists(exc):
                    raise
                claim = await client.get_live_or_none(
                    RESOURCE_CLAIMS, name, namespace=namespace
                )  # the cache has not seen it yet
        elif is_claim_of(claim, instance) and not is_granted(claim):
            claim = await client.get_live_or_none(RESOURCE_CLAIMS, name, namespace=namespace)
        return quota_granted(claim, instance)

    # ------------------------------------------------------------------ writes (one per helper)
    async def _write_status(self, client: Client, instance: Obj, owned: list[dict[str, Any]]) -> Obj:
        applied = await controllerutil.write_status(
            client, INSTANCES, instance, {"conditions": owned}, field_manager=FIELD_MANAGER
        )
        return _typed(applied)

    async def _remove_gates(self, client: Client, instance: Obj) -> None:
        removable = gates_to_remove(instance)
        if not removable:
            return
        remaining = [{"name": gate} for gate in scheduling_gates(instance) if gate not in removable]
        # resourceVersion: the gates are removed from the Instance whose conditions were checked
        patch = {
            "metadata": {"resourceVersion": get_str(instance, "metadata.resourceVersion", required=False)},
            "spec": {"controller": {"schedulingGates": remaining}},
        }
        await client.patch(
            INSTANCES,
            get_str(instance, "metadata.name"),
            patch,
            namespace=get_str(instance, "metadata.namespace"),
            field_manager=FIELD_MANAGER,
        )
        log.info("Instance %s/%s: removed scheduling gates %s", get_str(instance, "metadata.namespace"),
                 get_str(instance, "metadata.name"), ", ".join(removable))  # fmt: skip

    # ------------------------------------------------------------------ events
    @staticmethod
    def _ready_reason(instance: Obj) -> str:
        return str((conditions(instance).get(InstanceCondition.READY.value) or {}).get("reason") or "")

    async def _report(self, cell: Cluster, instance: Obj, before: str) -> None:
        """A Warning when Ready turns to a user-visible blocking reason (not on every write)."""
        ready = conditions(instance).get(InstanceCondition.READY.value) or {}
        reason = str(ready.get("reason") or "")
        if reason == before or ready_reason_priority(reason) < EVENT_PRIORITY:
            return
        await self.events.event(cell, instance, "Warning", reason, str(ready.get("message") or ""))


def register(mgr: Manager, options: CellOptions) -> None:
    """Wire the watches, all on the cell (the manager's local cluster)."""
    quota_gate = options.quota_gate
    controller = ForObject(mgr, INSTANCES, InstanceController(mgr, quota_gate=quota_gate))
    ctrl = mgr.new_controller(NAME, controller, workers=options.workers)
    ctrl.for_(INSTANCES, clusters=LOCAL)
    if quota_gate:  # the claim kind is only needed (and maybe only installed) with the feature on
        ctrl.owns(RESOURCE_CLAIMS, owner=INSTANCES, clusters=LOCAL)
    # a companion arriving or going: the Instances of its namespace (names only are cached)
    to_instances = EnqueueRequestsFromMapFunc(_instances_in_namespace(mgr), cluster_name=ClusterName.INJECT_SOURCE)
    for resource in (CONFIGMAPS, SECRETS):
        ctrl.watch(resource, to_instances, clusters=LOCAL, label_selector=f"{REFERENCED_DATA_LABEL}=true",
                   transform=names_only)  # fmt: skip


def _instances_in_namespace(mgr: Manager) -> Any:
    async def instances(cluster: str, obj: Obj) -> list[Request]:
        namespace = get_str(obj, "metadata.namespace", required=False)
        found = await mgr.get_cluster(cluster).client.list(INSTANCES, namespace=namespace)
        return [Request(cluster, namespace, get_str(i, "metadata.name")) for i in found]

    return instances
