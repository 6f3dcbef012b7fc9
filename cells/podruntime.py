"""Pod runtime (cell mode, feature gate PodRuntime): a sandbox Instance runs as a Pod, and
the Pod's state comes back as the Instance's Programmed and Available conditions.

Request key: (cell = the manager's local cluster, namespace, Instance name); a Pod event
maps to the Instance of the same name.
Reads (caches only): Instances, Pods.
Writes, and alone writes: Pods of Instances (create; delete when the Instance goes or is
suspended, or the Pod no longer matches: never patched); the Instance's `Programmed`, `Available`
and `status.controller.observedTemplateHash` (status apply, field manager `pod-runtime`);
the finalizer `compute.datumapis.com/instance-controller`; Warning Events.
Never writes: Ready, QuotaGranted or the gates (Instance controller), the Instance's spec,
a Pod the Instance does not control, anything of a virtual-machine Instance.

DESIGN §3 Pod runtime, pinned by: 1 a Pod per ungated sandbox Instance
(tests/cells/test_podspec.py, test_replicas_become_ready_instances_and_pods); 2 phase and
waiting reasons to conditions (test_bad_images_surface_on_instance_and_deployment);
3 a deleted Pod comes back (test_deleted_instance_and_pod_come_back); 4 the finalizer holds
a deleting Instance until its Pod is gone (test_template_edit_and_restart_roll_one_at_a_time_from_the_top,
test_cascading_deletion_leaves_nothing); 5 zero requests at steady state (test_zero_writes_when_idle);
6 no Pod while suspended (test_suspend_stops_pods_keeps_instances_and_resumes_in_order)."""

from __future__ import annotations

import logging
from typing import Any

from cells.conditionset import merge_owned
from cells.options import CellOptions
from cells.podspec import conditions_from_pod, pod_for, pod_matches, pod_template_hash, wants_pod
from cells.readiness import is_suspended
from federation.api.conditionjson import rfc3339_now
from federation.api.constants import Finalizer
from federation.api.resources import INSTANCES, PODS
from federation.fleet.changetrace import carried_context, stage_attributes
from mcruntime import controllerutil
from mcruntime.client import Client
from mcruntime.cluster import Cluster
from mcruntime.fields import generation, get_list, get_mapping, get_str, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.objects import Obj
from mcruntime.reconciler import PermanentError, Result
from mcruntime.recorder import ControllerEvents
from mcruntime.request import Request
from mcruntime.source import LOCAL
from mcruntime.tracing import stage_span, tracer_for

log = logging.getLogger(__name__)

NAME = "pod-runtime"
FIELD_MANAGER = NAME
FINALIZER = Finalizer.INSTANCE_CONTROLLER.value


def _typed(instance: dict[str, Any]) -> Obj:
    return {"apiVersion": INSTANCES.api_version, "kind": INSTANCES.kind, **instance}


def _controlled_by(pod: Obj | None, instance: Obj) -> bool:
    return pod is not None and controllerutil.is_controlled_by(pod, instance)


def _available(conditions: list[Any]) -> bool:
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


class PodRuntime:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, NAME)
        self.tracer = tracer_for(mgr.tracer_provider)

    async def reconcile(self, cell: Cluster, cached: Obj) -> Result:
        # 1-2. the cell and the cached Instance, from the runtime (one that is gone gets no
        # call: the garbage collector removes its Pod); its Pod from the cache
        client = cell.client
        namespace, name = get_str(cached, "metadata.namespace"), get_str(cached, "metadata.name")
        # 3. early exits: not a sandbox, deleting
        if not get_mapping(cached, "spec.runtime.sandbox"):
            return Result()
        instance = _typed(cached)
        pod = await client.get_or_none(PODS, name, namespace=namespace)
        if is_deleting(instance):
            return await self._finalize(client, instance, pod)
        # 4. desired Pod from the pure function (a spec it rejects is reported, not retried)
        try:
            desired = pod_for(instance, namespace) if wants_pod(instance) else None
        except ValueError as exc:
            await self.events.event(cell, instance, "Warning", "InvalidRuntime", str(exc))
            raise PermanentError(f"Instance {namespace}/{name}: {exc}") from exc
        # 5. compare with the cache, write only the difference
        if desired is not None:
            instance = _typed(await controllerutil.add_finalizer(client, INSTANCES, instance, FINALIZER))
        ours = await self._pod(cell, instance, desired, pod)
        # 6. status: Programmed, Available, observedTemplateHash, only when they changed
        await self._status(client, instance, ours)
        return Result()

    # ------------------------------------------------------------------ deletion
    async def _finalize(self, client: Client, instance: Obj, pod: Obj | None) -> Result:
        """Delete the Instance's Pod, wait until it is gone (its deletion event brings the
        request back), then release the finalizer."""
        if not controllerutil.has_finalizer(instance, FINALIZER):
            return Result()
        if _controlled_by(pod, instance):
            assert pod is not None
            if not is_deleting(pod):
                await self._delete(client, pod)
            return Result()
        await controllerutil.remove_finalizer(client, INSTANCES, instance, FINALIZER)
        return Result()

    # ------------------------------------------------------------------ writes (one per helper)
    async def _pod(self, cell: Cluster, instance: Obj, desired: Obj | None, pod: Obj | None) -> Obj | None:
        """Create, or delete a Pod that no longer matches; returns this Instance's Pod as known."""
        client = cell.client
        ours = pod if _controlled_by(pod, instance) else None
        if pod is not None and ours is None:
            # a Pod of this name the Instance does not control: never touched; if an earlier
            # Instance of the name owned it, the garbage collector removes it (an event)
            if desired is not None:
                pod_name = get_str(pod, "metadata.name", required=False)
                await self.events.event(cell, instance, "Warning", "PodNameTaken",
                                  f"Pod {pod_name} exists and is not controlled by this Instance; "
                                  "waiting for it to go")  # fmt: skip
            return None
        if ours is None:
            if desired is None:
                return None
            return await client.create(PODS, desired, field_manager=FIELD_MANAGER)
        if is_deleting(ours):
            return ours  # stopping; recreated once it is gone
        if desired is None or not pod_matches(desired, ours):
            await self._delete(client, ours)  # Pods are immutable: replaced, never patched
        return ours

    async def _delete(self, client: Client, pod: Obj) -> None:
        await controllerutil.delete_exact(client, PODS, pod)

    async def _status(self, client: Client, instance: Obj, pod: Obj | None) -> None:
        desired = conditions_from_pod(pod, generation(instance), suspended=is_suspended(instance))
        owned, changed = merge_owned(get_list(instance, "status.conditions"), desired, now=rfc3339_now())
        stored_hash = get_str(instance, "status.controller.observedTemplateHash", required=False)
        # the hash of what was last realised is kept while no Pod runs (the field is required
        # once status.controller exists, and nothing newer has been realised)
        observed = (pod_template_hash(pod) if pod is not None else None) or stored_hash
        if not changed and observed == stored_hash:
            return
        status: dict[str, Any] = {"conditions": owned}
        if observed:
            status["controller"] = {"observedTemplateHash": observed}
        if not (_available(owned) and not _available(get_list(instance, "status.conditions"))):
            await controllerutil.write_status(client, INSTANCES, instance, status, field_manager=FIELD_MANAGER)
            return
        # the Pod of a change's Instance is running: that change's trace goes on (`pod.ready`)
        attributes = stage_attributes(self.mgr.local.name, instance)
        with stage_span(self.tracer, "pod.ready", carried_context(instance), attributes):
            await controllerutil.write_status(client, INSTANCES, instance, status, field_manager=FIELD_MANAGER)

    # ------------------------------------------------------------------ mapping events to requests
    def instance_of_pod(self, cluster: str, pod: Obj) -> list[Request]:
        """The Instance of the Pod's name, when an Instance controls the Pod or one of that
        name exists (a foreign Pod in its way); other Pods of the cell are not ours."""
        namespace = get_str(pod, "metadata.namespace", required=False)
        name = get_str(pod, "metadata.name")
        controller = controllerutil.controller_of(pod)
        if controller is not None and controller.get("kind") == INSTANCES.kind:
            return [Request("", namespace, str(controller.get("name") or name))]
        if self.mgr.get_cluster(cluster).cache.informer_of(INSTANCES).get(name, namespace=namespace) is not None:
            return [Request("", namespace, name)]
        return []


def register(mgr: Manager, options: CellOptions) -> None:
    """Wire the watches on the cell (the manager's local cluster), when PodRuntime is on."""
    if not options.pod_runtime:
        log.info("pod runtime off (feature gate PodRuntime): Instances are left to another runtime")
        return
    runtime = PodRuntime(mgr)
    ctrl = mgr.new_controller(NAME, ForObject(mgr, INSTANCES, runtime), workers=options.workers)
    ctrl.for_(INSTANCES, clusters=LOCAL)
    ctrl.watch(
        PODS,
        EnqueueRequestsFromMapFunc(runtime.instance_of_pod, cluster_name=ClusterName.INJECT_SOURCE),
        clusters=LOCAL,
    )
