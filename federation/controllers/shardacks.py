"""Drain acknowledger (management mode with `--sharding`, on every shard): hands a WD (and,
as `drain-acknowledger-workloads`, a Workload) the sharder drains back (DESIGN.md §5).

Request key: (project cluster, project namespace, name), for objects labelled for this shard
and drained (only their events are reconciled: an assignment costs no reconcile here).
Reads (cache): project WDs (Workloads).
Writes, and alone writes: the removal of the shard and drain labels from an object labelled
for this shard and drained — one merge patch guarded by its resourceVersion, made only
once no reconcile of it is in flight on this shard (the other controllers refuse a
drained object from the moment its drain label is cached). Never writes: any other
label, a spec or status, anything in cells.

Invariants: no WD reconciled by two shards at once, every reconcile's shard and time
recorded (test_shards_share_the_wds_and_hand_them_over_without_double_work,
test_three_shard_processes_share_hand_over_and_survive_a_sigkill); nothing written for a
WD not drained (test_zero_sharder_writes_at_steady_state_and_no_writes_without_a_fresh_lease)."""

from __future__ import annotations

from collections.abc import Hashable

from federation.api.resources import WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.fleet.fleetview import PROJECTS
from federation.fleet.sharding import (
    DRAIN_INDEX,
    DRAINING,
    SHARD_INDEX,
    SHARD_INDEXERS,
    SHARD_LABELS,
    ShardingOptions,
)
from mcruntime.fields import get_str, get_str_map
from mcruntime.handlers import EventHandler, RequestSink
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.manager import Manager
from mcruntime.objects import make_key
from mcruntime.ownwrites import request_key
from mcruntime.reconciler import Result
from mcruntime.request import Request
from mcruntime.resources import Resource
from mcruntime.sharding import Action, ShardGate, shard_decision
from mcruntime.sharding.gate import Owner

NAME = "drain-acknowledger"
WORKLOADS_NAME = "drain-acknowledger-workloads"
FIELD_MANAGER = "drain-acknowledger"


def owned_key(resource: Resource, req: Request) -> Hashable:
    """The gate's key of a sharded object: a WD's is (cluster, namespace, name), as the WD
    controllers' owners say; a Workload's is told apart by its kind."""
    if resource == WORKLOAD_DEPLOYMENTS:
        return (req.cluster, req.namespace, req.name)
    return (resource.kind, req.cluster, req.namespace, req.name)


class DrainAcknowledger:
    def __init__(self, mgr: Manager, gate: ShardGate, options: ShardingOptions, resource: Resource) -> None:
        self.mgr = mgr
        self.gate = gate
        self.shard = options.shard
        self.resource = resource

    async def reconcile(self, req: Request) -> Result:
        # 1. fetch (cache)
        project = self.mgr.get_cluster(req.cluster)
        obj = await project.client.get_or_none(self.resource, req.name, namespace=req.namespace)
        # 2. early exit: gone
        if obj is None:
            return Result()
        # 3. desired, from the pure decision
        decision = shard_decision(get_str_map(obj, "metadata.labels"), SHARD_LABELS, self.shard)
        # 4. compare: not drained, nothing to do
        if decision.action is not Action.ACKNOWLEDGE_DRAIN:
            return Result()
        # 5. once no reconcile of it runs here, hand it back: one label patch
        await self.gate.wait_quiet(owned_key(self.resource, req))
        patch = {
            "metadata": {
                "labels": decision.labels_patch(SHARD_LABELS),
                "resourceVersion": get_str(obj, "metadata.resourceVersion"),
            }
        }
        await project.client.patch(self.resource, req.name, patch, namespace=req.namespace, field_manager=FIELD_MANAGER)
        return Result()


def owned_by(mgr: Manager, shard: str, resource: Resource = WORKLOAD_DEPLOYMENTS) -> Owner:
    """The owner function a shard's controllers of `resource` are gated with
    (`Controller.shard`): an object cached labelled for `shard` and not drained."""

    def owner(req: Request) -> Hashable | None:
        store = mgr.get_cluster(req.cluster).cache.informer_of(resource).store
        key = make_key(req.namespace, req.name)
        if store.indexed(SHARD_INDEX, shard, key) and not store.indexed(DRAIN_INDEX, DRAINING, key):
            return owned_key(resource, req)
        return None

    return owner


class Drained(EventHandler):
    """The object, when the cache holds it drained: read from the drain index the cache
    computed as it stored the object, so no event is decoded here (every object this shard
    caches passes: a cold start's, each status write), and every object assigned here
    arrives undrained and costs nothing. A removal from the view hands nothing back."""

    def __init__(self, mgr: Manager, resource: Resource) -> None:
        self.mgr = mgr
        self.resource = resource

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        if event.type is EventType.DELETED:
            return
        store = self.mgr.get_cluster(source_cluster).cache.informer_of(self.resource).store
        if store.indexed(DRAIN_INDEX, DRAINING, event.key):
            sink.enqueue(request_key(source_cluster, event))


def register(mgr: Manager, options: ShardingOptions) -> None:
    """Wire the watches: project WDs and Workloads (their labels)."""
    gate = mgr.shard_gate
    if gate is None:
        raise ValueError("the drain acknowledger runs on a shard: the manager needs a shard Lease")
    for name, resource in ((NAME, WORKLOAD_DEPLOYMENTS), (WORKLOADS_NAME, WORKLOADS)):
        ctrl = mgr.new_controller(name, DrainAcknowledger(mgr, gate, options, resource), workers=4)
        # only what is drained: every WD that arrives (is assigned here) is not
        ctrl.watch(resource, Drained(mgr, resource), clusters=PROJECTS, indexers=SHARD_INDEXERS)
        ctrl.shard(gate, _acknowledging(mgr, options.shard, resource))


def _acknowledging(mgr: Manager, shard: str, resource: Resource) -> Owner:
    def acknowledging(req: Request) -> Hashable | None:
        """Labelled for this shard, drained or not (its own key: it waits for the others')."""
        store = mgr.get_cluster(req.cluster).cache.informer_of(resource).store
        if store.indexed(SHARD_INDEX, shard, make_key(req.namespace, req.name)):
            return ("drain", owned_key(resource, req))
        return None

    return acknowledging
