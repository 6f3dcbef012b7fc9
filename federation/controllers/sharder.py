"""Sharder (management mode with `--sharding`, on the elected replica only): assigns each
project WorkloadDeployment to a shard by writing its shard label (DESIGN.md §5).

Request key: (project cluster, project namespace, WD name).
Reads (caches): project WDs (every one: the `FLEET` view the elected replica's controllers
share, next to this replica's own shard's); the shard Leases in the management cluster
(`sharding.compute.datumapis.com/ring=<ring>`).
Writes, and alone writes: the shard label on project WDs (assign; reassign from a dead
shard) and the drain label (ask the owner to hand over), one merge patch per decision,
guarded by the WD's resourceVersion. Never writes: a WD's spec, status or other labels,
anything in cells, the Leases (the shard-lease controller acquires uncertain ones).

Invariants (decision table: tests/mcruntime/test_sharding.py test_the_sharders_decision):
- every WD labelled as the ring says; a move drains first and assigns once acknowledged
  (test_shards_share_the_wds_and_hand_them_over_without_double_work);
- a dead shard's WDs reassigned directly (test_a_dead_shards_wds_are_reassigned);
- zero writes once assigned (test_zero_sharder_writes_at_steady_state_and_no_writes_without_a_fresh_lease)."""

from __future__ import annotations

import time
from typing import Any

from federation.api.resources import WORKLOAD_DEPLOYMENTS
from federation.fleet.fleetview import FLEET, PROJECTS, project_clusters
from federation.fleet.sharding import SHARD_LABELS, Rings, ShardingOptions, available, shard_states, wd_hash_key
from mcruntime.fields import get_mapping, get_str, get_str_map
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.manager import Manager
from mcruntime.predicates import labels_changed
from mcruntime.reconciler import Result
from mcruntime.request import Request
from mcruntime.resources import LEASES
from mcruntime.sharding import Action, sharder_decision
from mcruntime.source import LOCAL

NAME = "sharder"
FIELD_MANAGER = "sharder"


def membership_changed(event: ObjectEvent) -> bool:
    """A Lease created, deleted, released or acquired: the ring may change (a renewal,
    the every-few-seconds event, changes nothing the sharder decides on)."""
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    return bool(
        get_mapping(event.old, "spec").get("holderIdentity") != get_mapping(event.obj, "spec").get("holderIdentity")
    )


class Sharder:
    def __init__(self, mgr: Manager, options: ShardingOptions) -> None:
        self.mgr = mgr
        self.options = options
        self.rings = Rings()

    async def reconcile(self, req: Request) -> Result:
        # 1. the project, and its WD (cache)
        project = self.mgr.get_cluster(req.cluster)
        wd = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, req.name, namespace=req.namespace, alias=FLEET)
        # 2. early exit: gone (a deleting WD still needs its owner to finalize it)
        if wd is None:
            return Result()
        # 3. desired: the pure decision over the ring of available shards
        leases = await self.mgr.local.client.list(
            LEASES, namespace=self.options.lease_namespace, label_selector=self.options.lease_selector
        )
        states = shard_states(leases, time.time())
        ring = self.rings.of(available(states))
        decision = sharder_decision(
            get_str_map(wd, "metadata.labels"), SHARD_LABELS, wd_hash_key(req.cluster, wd), ring, states
        )
        # 4. compare: nothing to do at steady state
        if decision.action is Action.NOTHING:
            return Result()
        # 5. write the difference: one label patch, only onto the version decided on
        patch = {"metadata": {"labels": decision.labels_patch(SHARD_LABELS), "resourceVersion": _rv(wd)}}
        await project.client.patch(
            WORKLOAD_DEPLOYMENTS, req.name, patch, namespace=req.namespace, field_manager=FIELD_MANAGER
        )
        return Result()

    def every_wd(self, _cluster: str, _lease: dict[str, Any]) -> list[Request]:
        """Membership changed: every project WD is decided again."""
        return [
            Request(project.name, get_str(wd, "metadata.namespace"), get_str(wd, "metadata.name"))
            for project in project_clusters(self.mgr)
            for wd in project.cache.informer_of(WORKLOAD_DEPLOYMENTS, FLEET).store.list()
        ]


def _rv(obj: dict[str, Any]) -> str:
    return get_str(obj, "metadata.resourceVersion")


def register(mgr: Manager, options: ShardingOptions) -> None:
    """Wire the watches: project WDs (their coming and their labels), the shard Leases."""
    sharder = Sharder(mgr, options)
    # a membership change re-decides every WD and relabels a dead shard's share at once: one
    # small patch each, so their pace is the project servers' (4 workers took ~5 s for 200
    # WDs on the contended bench machine, 40% of the hand-over budget)
    ctrl = mgr.new_controller(NAME, sharder, workers=16)
    ctrl.for_(WORKLOAD_DEPLOYMENTS, clusters=PROJECTS, predicates=[labels_changed], alias=FLEET)
    ctrl.watch(
        LEASES,
        EnqueueRequestsFromMapFunc(sharder.every_wd, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=LOCAL,
        namespace=options.lease_namespace,
        label_selector=options.lease_selector,
        predicates=[membership_changed],
    )
