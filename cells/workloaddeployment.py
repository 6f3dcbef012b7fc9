"""Cell WorkloadDeployment controller (cell mode): a WorkloadDeployment becomes ordered
Instances `<wd>-<i>`, one action at a time, plus the HPA it owns when it autoscales.

Request key: (cell = the manager's local cluster, namespace, WD name).
Reads (caches only): WorkloadDeployments; Instances (indexed by controller uid);
HorizontalPodAutoscalers; Namespaces (the two upstream labels); companions' names.
Writes, and alone writes: Instances (create with the copy's traceparent, delete, the labels of §2 and the copy's
shard label, `status.suspended`); the WD's finalizer `compute.datumapis.com/workload-deployment-controller` and
`status` (field manager `cell-workloaddeployment`); the HPA named like the WD, when the WD controls it; Events.
Never writes: the WD's spec, other Instance status or gates, foreign Instances or HPAs, Pods.

DESIGN §3 Cell WD controller, by tests/cells/: 1 Instances and labels (test_replicas_become_ready_instances_and_pods,
test_ordinal_start_and_scale_follow, test_a_copys_shard_label_follows_onto_its_instances);
2 one action at a time (test_template_edit_and_restart_roll_one_at_a_time_from_the_top);
3 self-heal (test_deleted_instance_and_pod_come_back, test_an_instance_edited_by_hand_is_recreated);
4 status (test_bad_images_surface_on_instance_and_deployment, test_a_spec_the_cell_rejects_is_reported_in_status,
test_a_wd_of_another_city_is_refused); 5 HPA (test_autoscaler_follows_scale_settings_and_foreign_ones_are_left_alone);
6 deletion (test_cascading_deletion_leaves_nothing, test_an_orphaning_delete_leaves_the_instances_running_unowned);
7 zero requests at steady state (test_zero_writes_when_idle); 8 suspension
(test_suspend_stops_pods_keeps_instances_and_resumes_in_order)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cells.autoscaling import autoscaler_for, is_controlled_by_wd, wants_autoscaler
from cells.instances import (
    check_served_city,
    instance_for,
    instance_labels,
    observe,
    ordinal_of,
    ordinal_range,
    wd_suspended,
)
from cells.options import CellOptions
from cells.referenceddata import names_only, with_referenced_data
from cells.stateful import Action, Create, Delete, Resume, Suspend, Wait, next_action
from cells.template import template_hash
from cells.wdstatus import rejected_status, wd_status
from federation.api.conditionjson import rfc3339_now
from federation.api.constants import Finalizer
from federation.api.resources import HORIZONTAL_POD_AUTOSCALERS, INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.changetrace import carried, carried_context, stage_attributes, with_traceparent
from federation.fleet.references import REFERENCED_DATA_LABEL
from mcruntime import controllerutil
from mcruntime.client import Client
from mcruntime.cluster import Cluster
from mcruntime.errors import APIError, is_already_exists, is_invalid
from mcruntime.fields import get_list, get_mapping, get_objects, get_str, get_str_map, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.ownwrites import OwnWrites
from mcruntime.predicates import labels_changed
from mcruntime.reconciler import PermanentError, Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.resources import CONFIGMAPS, SECRETS
from mcruntime.source import LOCAL
from mcruntime.tracing import stage_span, tracer_for

log = logging.getLogger(__name__)

NAME = "cell-workloaddeployment"
FIELD_MANAGER = NAME
FINALIZER = Finalizer.WORKLOAD_DEPLOYMENT_CONTROLLER.value
ORPHAN_FINALIZER = "orphan"  # set by `kubectl delete --cascade=orphan`; the garbage collector acts on it


def _typed(wd: Mapping[str, Any]) -> Obj:
    """The WD with apiVersion and kind (cached LIST items carry neither; Events need both)."""
    return {"apiVersion": WORKLOAD_DEPLOYMENTS.api_version, "kind": WORKLOAD_DEPLOYMENTS.kind, **wd}


def _mine(wd: Mapping[str, Any], instances: Sequence[Obj]) -> list[Obj]:
    """The controlled Instances named `<wd>-<ordinal>` (anything else is not this WD's to manage)."""
    name = get_str(wd, "metadata.name")
    return [i for i in instances if ordinal_of(get_str(i, "metadata.name"), name) is not None]


@dataclass(frozen=True)
class Desired:
    """What a WD wants of its cell now, from the pure functions."""

    current_hash: str
    action: Action | None  # the one Instance action (`stateful.next_action`)
    new_instance: Obj | None  # the Instance to create, when the action is a Create
    autoscaler: Obj | None  # the HPA it owns, when it autoscales


def desired(
    wd: Obj, instances: Sequence[Obj], namespace_labels: Mapping[str, str], *, city_code: str, quota_gate: bool
) -> Desired:
    """The desired state of a WD in its cell; ValueError names a spec the cell cannot act on."""
    check_served_city(wd, city_code)
    template = get_mapping(wd, "spec.template")
    current_hash = template_hash(template)
    instance_labels(wd, namespace_labels, 0)  # label values checked before anything is written
    name = get_str(wd, "metadata.name")
    observed = [observe(i, name, template.get("spec") or {}) for i in instances]
    action = next_action(ordinal_range(wd), current_hash, observed, suspended=wd_suspended(wd))
    new_instance = (
        instance_for(wd, namespace_labels, action.ordinal, current_hash, quota_gate=quota_gate)
        if isinstance(action, Create)
        else None
    )
    return Desired(current_hash, action, new_instance, autoscaler_for(wd) if wants_autoscaler(wd) else None)


class WorkloadDeploymentController:
    def __init__(self, mgr: Manager, *, quota_gate: bool, city_code: str = "") -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, NAME)
        self.tracer = tracer_for(mgr.tracer_provider)
        self.quota_gate = quota_gate
        self.city_code = city_code  # --city-code: the only city this cell serves ("" = not checked)
        # per Instance uid: its last relabel patch's answer until the cache shows it (see `_relabel`)
        self._relabelled: OwnWrites[str] = OwnWrites()

    async def reconcile(self, cell: Cluster, cached: Obj) -> Result:
        """`_reconcile` in the `cell.reconcile` span of the change the copy carries (its
        `compute.datumapis.com/traceparent`), so a change's trace goes on in the cell."""
        attributes = stage_attributes(cell.name, cached)
        with stage_span(self.tracer, "cell.reconcile", carried_context(cached), attributes):
            return await self._reconcile(cell, cached)

    async def _reconcile(self, cell: Cluster, cached: Obj) -> Result:
        # 1. the cell and the cached WD, from the runtime (a WD that is gone gets no call:
        # the garbage collector has the rest)
        client = cell.client
        wd = _typed(cached)
        namespace_name, name = get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name")
        # 2. fetch (caches); 3. early exit: deleting
        uid = get_str(wd, "metadata.uid")
        controlled = await client.list(INSTANCES, namespace=namespace_name, index=(CONTROLLER_UID, uid))
        instances = _mine(wd, controlled)
        if is_deleting(wd):
            return await self._finalize(client, wd, instances)
        # 4. first sighting: the finalizer that deletes the Instances before the WD goes
        wd = _typed(await controllerutil.add_finalizer(client, WORKLOAD_DEPLOYMENTS, wd, FINALIZER))
        # 5. desired state from the pure functions (a spec they reject is reported, not retried)
        namespace = await client.get_or_none(NAMESPACES, namespace_name)
        namespace_labels = get_str_map(namespace, "metadata.labels") if namespace is not None else {}
        try:
            want = desired(wd, instances, namespace_labels, city_code=self.city_code, quota_gate=self.quota_gate)
        except ValueError as exc:
            if await self._rejected(client, wd, instances, str(exc)):  # told once, not on every reconcile
                await self.events.event(cell, wd, "Warning", "InvalidSpec", str(exc))
            raise PermanentError(f"WorkloadDeployment {namespace_name}/{name}: {exc}") from exc
        # 6. write only the difference: one Instance action, the HPA, labels of existing Instances
        await self._act(cell, wd, want, instances)
        await self._autoscaler(cell, wd, want.autoscaler)
        for instance in instances:
            await self._relabel(client, wd, instance, namespace_labels)
        # 7. status, only when it changed
        await self._status(client, wd, instances, want.current_hash)
        return Result()

    # ------------------------------------------------------------------ deletion
    async def _finalize(self, client: Client, wd: Obj, instances: list[Obj]) -> Result:
        """Delete the Instances, wait until they are gone (their deletion events bring the
        request back), then release the finalizer."""
        finalizers = get_list(wd, "metadata.finalizers")
        if FINALIZER not in finalizers:
            return Result()
        if ORPHAN_FINALIZER in finalizers:
            return Result()  # the garbage collector orphans the Instances, then drops `orphan`: an event
        for instance in instances:
            if not is_deleting(instance):
                await self._delete(client, instance)
        if instances:
            return Result()
        await controllerutil.remove_finalizer(client, WORKLOAD_DEPLOYMENTS, wd, FINALIZER)
        return Result()

    async def _act(self, cell: Cluster, wd: Obj, want: Desired, instances: Sequence[Obj]) -> None:
        """The one Instance action `next_action` decided (one write, or none for a Wait)."""
        action = want.action
        if want.new_instance is not None:
            await self._create(cell, wd, want.new_instance)
        elif isinstance(action, Delete):
            await self._delete_for(cell, wd, action, instances)
        elif isinstance(action, Suspend | Resume):
            (instance,) = [i for i in instances if get_str(i, "metadata.name") == action.name]
            await self._suspend(cell.client, instance, isinstance(action, Suspend))
        elif isinstance(action, Wait):
            log.debug("%s: %s", action.name, action.reason)  # its watch event brings us back

    # ------------------------------------------------------------------ writes (one per helper)
    async def _suspend(self, client: Client, instance: Obj, suspended: bool) -> None:
        """The Instance's `status.suspended` (this controller's one field of Instance status):
        the pod runtime stops or starts its Pod, the Instance controller says Suspended."""
        await controllerutil.write_status(
            client, INSTANCES, instance, {"suspended": suspended}, field_manager=FIELD_MANAGER
        )
        log.info("Instance %s/%s: %s", get_str(instance, "metadata.namespace"), get_str(instance, "metadata.name"),
                 "suspended" if suspended else "resumed")  # fmt: skip

    async def _create(self, cell: Cluster, wd: Obj, desired: Obj) -> None:
        client = cell.client
        namespace, name = get_str(desired, "metadata.namespace"), get_str(desired, "metadata.name")
        squatter = await client.get_or_none(INSTANCES, name, namespace=namespace)
        if squatter is not None:
            # not controlled by this WD (controlled ones are in `instances`): never adopted; its
            # events reach this WD through the name mapping, so its deletion brings us back
            await self.events.event(cell, wd, "Warning", "InstanceNameTaken",
                              f"Instance {name} exists and is not controlled by this WorkloadDeployment; "
                              "it is left alone and its ordinal waits for it to go")  # fmt: skip
            return
        desired = with_traceparent(desired, carried(wd))  # the Instance's Pod work continues the change's trace
        try:
            with stage_span(self.tracer, "instance.create", None, stage_attributes(cell.name, desired)):
                await client.create(INSTANCES, desired, field_manager=FIELD_MANAGER)
        except APIError as exc:
            if is_already_exists(exc):
                raise TemporaryError(f"Instance {name} appeared meanwhile; looking again") from exc
            if is_invalid(exc):
                await self.events.event(cell, wd, "Warning", "InvalidInstance", f"Instance {name} rejected: {exc}")
                raise PermanentError(f"Instance {namespace}/{name} rejected by the API server: {exc}") from exc
            raise
        await self.events.event(cell, wd, "Normal", "SuccessfulCreate", f"create Instance {name}")

    async def _delete_for(self, cell: Cluster, wd: Obj, action: Delete, instances: Sequence[Obj]) -> None:
        (instance,) = [i for i in instances if get_str(i, "metadata.name") == action.name]
        await self._delete(cell.client, instance)
        await self.events.event(
            cell, wd, "Normal", "SuccessfulDelete", f"delete Instance {action.name}: {action.reason}"
        )

    async def _delete(self, client: Client, instance: Obj) -> None:
        await controllerutil.delete_exact(client, INSTANCES, instance)

    async def _autoscaler(self, cell: Cluster, wd: Obj, desired: Obj | None) -> None:
        client = cell.client
        namespace, name = get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name")
        cached = await client.get_or_none(HORIZONTAL_POD_AUTOSCALERS, name, namespace=namespace)
        if cached is not None and not is_controlled_by_wd(cached, wd):
            if desired is not None:
                await self.events.event(cell, wd, "Warning", "AutoscalerNotOwned",
                                  f"HorizontalPodAutoscaler {name} exists and is not controlled by this "
                                  "WorkloadDeployment; it is left alone")  # fmt: skip
            return
        if desired is None:
            if cached is not None:
                await controllerutil.delete_exact(client, HORIZONTAL_POD_AUTOSCALERS, cached)
            return
        if cached is None:
            # a create, not an apply: an HPA someone else made meanwhile is refused, not taken over
            try:
                await client.create(HORIZONTAL_POD_AUTOSCALERS, desired, field_manager=FIELD_MANAGER)
            except APIError as exc:
                if is_already_exists(exc):
                    raise TemporaryError(f"HorizontalPodAutoscaler {name} appeared meanwhile; looking again") from exc
                raise
            return
        await controllerutil.apply_if_differs(
            client, HORIZONTAL_POD_AUTOSCALERS, desired, cached=cached, field_manager=FIELD_MANAGER
        )

    async def _relabel(self, client: Client, wd: Obj, instance: Obj, namespace_labels: Mapping[str, str]) -> None:
        """Bring this controller's labels on an existing Instance up to date (the namespace's
        upstream labels may arrive after the Instance was created; a copy's shard label moves
        on a hand-over). While the cache still shows the version a patch was made over, the
        patch's answer stands for it (`OwnWrites`): one patch per Instance, not one per
        reconcile that runs before the cache catches up."""
        if is_deleting(instance):
            return
        uid = get_str(instance, "metadata.uid")
        latest = self._relabelled.latest(uid, instance) or instance
        name = get_str(instance, "metadata.name")
        ordinal = ordinal_of(name, get_str(wd, "metadata.name"))
        assert ordinal is not None  # `_mine` kept only `<wd>-<ordinal>` names
        current = get_str_map(latest, "metadata.labels")
        missing = {k: v for k, v in instance_labels(wd, namespace_labels, ordinal).items() if current.get(k) != v}
        if missing:
            answer = await client.patch(
                INSTANCES,
                name,
                {"metadata": {"labels": missing}},
                namespace=get_str(instance, "metadata.namespace"),
                field_manager=FIELD_MANAGER,
            )
            self._relabelled.remember(uid, instance, answer)

    async def _status(self, client: Client, wd: Obj, instances: list[Obj], current_hash: str) -> None:
        now = rfc3339_now()
        status = wd_status(wd, instances, current_hash, now=now)
        present = {(r.kind, get_str(o, "metadata.name")) for r in (CONFIGMAPS, SECRETS)
                   for o in await client.list(r, namespace=get_str(wd, "metadata.namespace"))}  # fmt: skip
        await self._write_status(client, wd, with_referenced_data(status, wd, present, now=now))

    async def _rejected(self, client: Client, wd: Obj, instances: list[Obj], problem: str) -> bool:
        """A spec this cell cannot act on is observed and said so in status (the project sees
        it). True when the status changed (written)."""
        return await self._write_status(client, wd, rejected_status(wd, instances, problem, now=rfc3339_now()))

    async def _write_status(self, client: Client, wd: Obj, status: dict[str, Any]) -> bool:
        if status == wd.get("status"):
            return False
        # computed from the WD itself: conditional, a status computed from an older WD is refused (409)
        await controllerutil.write_status(
            client, WORKLOAD_DEPLOYMENTS, wd, status, field_manager=FIELD_MANAGER, conditional=True
        )
        return True

    # ------------------------------------------------------------------ mapping events to requests
    def wds_of_instance(self, _cluster: str, instance: Obj) -> list[Request]:
        """An Instance's controller WD, and the WD its name `<wd>-<ordinal>` belongs to (so
        the deletion of an Instance squatting an ordinal wakes the WD waiting for it)."""
        namespace = get_str(instance, "metadata.namespace", required=False)
        names = {
            str(ref["name"])
            for ref in get_objects(instance, "metadata.ownerReferences")
            if ref.get("controller") and ref.get("kind") == WORKLOAD_DEPLOYMENTS.kind and ref.get("name")
        }
        prefix, _, suffix = get_str(instance, "metadata.name", required=False).rpartition("-")
        if prefix and suffix.isdigit():
            names.add(prefix)
        return [Request("", namespace, name) for name in sorted(names)]

    def wd_of_autoscaler(self, _cluster: str, hpa: Obj) -> list[Request]:
        """An HPA named like a WD (ours or a foreign one it must step around)."""
        return [Request("", get_str(hpa, "metadata.namespace", required=False), get_str(hpa, "metadata.name"))]

    def wds_of_companion(self, cluster: str, companion: Obj) -> list[Request]:
        """A companion arrived or went: the WDs of its namespace."""
        name = get_str(companion, "metadata.namespace", required=False)
        informer = self.mgr.get_cluster(cluster).cache.informer_of(WORKLOAD_DEPLOYMENTS)
        return [Request("", name, get_str(wd, "metadata.name")) for wd in informer.list(namespace=name)]

    def wds_of_namespace(self, cluster: str, namespace: Obj) -> list[Request]:
        """The namespace's labels changed: its WDs re-stamp the upstream labels."""
        name = get_str(namespace, "metadata.name")
        informer = self.mgr.get_cluster(cluster).cache.informer_of(WORKLOAD_DEPLOYMENTS)
        return [Request("", name, get_str(wd, "metadata.name")) for wd in informer.list(namespace=name)]


def register(mgr: Manager, options: CellOptions) -> None:
    """Wire the watches, all on the cell (the manager's local cluster)."""
    controller = WorkloadDeploymentController(mgr, quota_gate=options.quota_gate, city_code=options.city_code)
    ctrl = mgr.new_controller(NAME, ForObject(mgr, WORKLOAD_DEPLOYMENTS, controller), workers=options.workers)
    ctrl.for_(WORKLOAD_DEPLOYMENTS, clusters=LOCAL)
    ctrl.watch(
        INSTANCES,
        EnqueueRequestsFromMapFunc(controller.wds_of_instance, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=LOCAL,
        indexers={CONTROLLER_UID: controller_uid},
    )
    ctrl.watch(
        HORIZONTAL_POD_AUTOSCALERS,
        EnqueueRequestsFromMapFunc(controller.wd_of_autoscaler, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=LOCAL,
    )
    ctrl.watch(
        NAMESPACES,
        EnqueueRequestsFromMapFunc(controller.wds_of_namespace, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=LOCAL,
        predicates=[labels_changed],
    )
    # companions arriving or going (names only are cached): the WDs of their namespace (ReferencedDataReady)
    to_wds = EnqueueRequestsFromMapFunc(controller.wds_of_companion, cluster_name=ClusterName.INJECT_SOURCE)
    for resource in (CONFIGMAPS, SECRETS):
        ctrl.watch(resource, to_wds, clusters=LOCAL, label_selector=f"{REFERENCED_DATA_LABEL}=true",
                   transform=names_only)  # fmt: skip
