"""Sharder (management mode with `--sharding`, on the elected replica only): assigns each
project WorkloadDeployment (and, as `sharder-workloads`, each Workload) to a shard by
writing its shard label (DESIGN.md §5).

Request key: (project cluster, project namespace, WD or Workload name).
Reads (caches): project WDs and Workloads, its own shard's in its shard's views, the others
in the metadata-only `FLEET` views (`assignment_identity`); the shard Leases.
Writes, and alone writes: the shard and drain labels on project WDs and Workloads, one merge
patch per decision, guarded by the resourceVersion. Never writes: a spec, a status or other
labels, anything in cells, the Leases (the shard-lease controller acquires uncertain ones).

Invariants (decision table: tests/mcruntime/test_sharding.py test_the_sharders_decision):
- every WD labelled as this sharder's ring says, its own share weighted by
  `--sharder-ring-weight`, all of it when alone (tests/federation/test_shard_ring.py);
- a move, a leadership move's too, drains first and assigns once acknowledged
  (test_shards_share_the_wds_and_hand_them_over_without_double_work, test_a_leadership_move_hands_over_by_draining);
- a dead shard's WDs reassigned directly (test_a_dead_shards_wds_are_reassigned);
- zero writes once assigned (test_zero_sharder_writes_at_steady_state_and_no_writes_without_a_fresh_lease);
- one reconcile per assignment, never its own write's echo (test_sharder_events.py,
  test_the_sharders_own_label_write_costs_no_second_reconcile)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from federation.api.resources import WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.fleet.fleetview import FLEET, PROJECTS, project_clusters
from federation.fleet.sharding import (
    SHARD_LABELS,
    RingView,
    ShardingOptions,
    assignment_identity,
    wd_hash_key,
    workload_hash_key,
)
from mcruntime.cluster import Cluster
from mcruntime.fields import get_mapping, get_str, get_str_map
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc, EventHandler, RequestSink
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.manager import Manager
from mcruntime.objects import split_key
from mcruntime.ownwrites import OwnWrites, precedes, request_key, version_of
from mcruntime.predicates import labels_changed
from mcruntime.reconciler import Result
from mcruntime.request import Request
from mcruntime.resources import LEASES, Resource
from mcruntime.sharding import Action, Decision, sharder_decision
from mcruntime.source import LOCAL

NAME = "sharder"
WORKLOADS_NAME = "sharder-workloads"
FIELD_MANAGER = "sharder"
HashKey = Callable[[str, Mapping[str, Any]], str]


def membership_changed(event: ObjectEvent) -> bool:
    """A Lease created, deleted, released or acquired: the ring may change (a renewal,
    the every-few-seconds event, changes nothing the sharder decides on)."""
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    return bool(
        get_mapping(event.old, "spec").get("holderIdentity") != get_mapping(event.obj, "spec").get("holderIdentity")
    )


class Sharder:
    def __init__(self, mgr: Manager, options: ShardingOptions, resource: Resource, hash_key: HashKey) -> None:
        self.mgr = mgr
        self.options = options
        self.resource = resource
        self.hash_key = hash_key
        # the states and ring of the Leases below, worked out once per change; its own shard
        # weighted (it also assigns every WD): a leadership move changes the ring, handed over
        # like any membership change (drain, acknowledgement, assignment)
        self.ring = RingView(options.shard, options.sharder_ring_weight)
        self.writes: OwnWrites[Request] = OwnWrites()  # each label patch's answer, until its echo
        self._leases: tuple[tuple[bytes, ...], list[dict[str, Any]]] = ((), [])  # as cached, and decoded

    async def reconcile(self, req: Request) -> Result:
        # 1. the project, and its WD or Workload (cache)
        project = self.mgr.get_cluster(req.cluster)
        obj = await self._cached(project, req)
        # 2. early exit: gone (a deleting one still needs its owner to finalize it)
        if obj is None:
            return Result()
        # this sharder's last label write, if its echo has not come yet
        obj = self.writes.latest(req, obj) or obj
        # 3. desired: the pure decision over the ring of available shards
        decision = self.decide(req.cluster, obj)
        # 4. compare: nothing to do at steady state
        if decision.action is Action.NOTHING:
            return Result()
        # 5. write the difference: one label patch, only onto the version decided on
        patch = {"metadata": {"labels": decision.labels_patch(SHARD_LABELS), "resourceVersion": _rv(obj)}}
        answer = await project.client.patch(
            self.resource, req.name, patch, namespace=req.namespace, field_manager=FIELD_MANAGER
        )
        self.writes.remember(req, obj, answer)
        return Result()

    def decide(self, cluster: str, obj: Mapping[str, Any]) -> Decision:
        """The pure decision (`sharder_decision`) on `obj` of project `cluster`, over the
        ring of the shards available now."""
        states, ring = self.ring.at(self._ring_leases(), time.time())
        labels = get_str_map(obj, "metadata.labels")
        return sharder_decision(labels, SHARD_LABELS, self.hash_key(cluster, obj), ring, states)

    def _ring_leases(self) -> list[dict[str, Any]]:
        """The ring's Leases from the sharder's view of them (it selects `lease_selector` in
        the lease namespace), decoded again only when one changed: every event and every
        decision reads them, a renewal changes one every few seconds."""
        raws = tuple(raw for _, raw in self.mgr.local.cache.informer_of(LEASES).store.items_raw())
        if raws != self._leases[0]:
            self._leases = (raws, [orjson.loads(raw) for raw in raws])
        return self._leases[1]

    def needs_write(self, cluster: str, obj: Mapping[str, Any]) -> bool:
        """Whether the decision on `obj` is a write (an object already labelled as the ring
        says needs no reconcile: a membership change re-decides every one, `every_one`)."""
        return self.decide(cluster, obj).action is not Action.NOTHING

    async def _cached(self, project: Cluster, req: Request) -> dict[str, Any] | None:
        """The object from this shard's view or the others', the newer where both hold it: it
        moves between the two as its label does, each view reporting it on its own watch, so
        the view it left may still show its state before (a removal decides nothing: the
        arrival does) and it may be in neither for a moment (its arrival brings it back)."""
        views = [
            await project.client.get_or_none(self.resource, req.name, namespace=req.namespace, alias=alias)
            for alias in ("", FLEET)
        ]
        return newest(*views)

    def every_one(self, _cluster: str, _lease: dict[str, Any]) -> list[Request]:
        """Membership changed: every project WD (Workload) is decided again."""
        # from the stores' keys: a membership change (several while replicas start) decodes no object
        found: dict[Request, None] = {}
        for project in project_clusters(self.mgr):
            for alias in ("", FLEET):
                for key in project.cache.informer_of(self.resource, alias).store:
                    found[Request(project.name, *split_key(key))] = None
        return list(found)


class AssignmentEvents(EventHandler):
    """The object's events as the sharder needs them: only those whose decision is a write
    (`needs_write`: a cold start's objects, labelled as the ring says, wake nothing), and
    neither its own label write coming back (the answer it remembers, arriving in the view
    the new label selects) nor a removal from a view. A removal is the object deleted
    (nothing to assign) or relabelled into the other view (a label write: this sharder's
    own, or another writer's, whose arrival in the other view brings it back), so it
    decides nothing either way."""

    def __init__(self, writes: OwnWrites[Request], needs_write: Callable[[str, Mapping[str, Any]], bool]) -> None:
        self.writes = writes
        self.needs_write = needs_write

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        req = request_key(source_cluster, event)
        if event.type is EventType.DELETED:
            # the state the sharder's own write was made over, leaving the view: the answer
            # stays for its arrival in the other; any other (a deletion) drops it (`latest`)
            self.writes.latest(req, event.obj)
            return
        if req in self.writes and self.writes.observed(req, event.obj):
            return  # its own write
        if self.needs_write(source_cluster, event.obj):
            sink.enqueue(req)


def newest(mine: dict[str, Any] | None, others: dict[str, Any] | None) -> dict[str, Any] | None:
    """Of an object's states in the sharder's two views, the later (resourceVersions compared
    as KEP-5504 allows, `precedes`); this shard's view's when they cannot be told apart."""
    if mine is None or others is None:
        return mine if others is None else others
    return others if precedes(version_of(mine), version_of(others)) else mine


def _rv(obj: dict[str, Any]) -> str:
    return get_str(obj, "metadata.resourceVersion")


def register(mgr: Manager, options: ShardingOptions) -> None:
    """Wire the watches: project WDs and Workloads (their coming and their labels), the shard Leases."""
    for name, resource, hash_key, workers in (
        # a membership change re-decides every WD and relabels a dead shard's share at once: one
        # small patch each, so their pace is the project servers' (4 workers took ~5 s for 200
        # WDs on the contended bench machine, 40% of the hand-over budget)
        (NAME, WORKLOAD_DEPLOYMENTS, wd_hash_key, 16),
        (WORKLOADS_NAME, WORKLOADS, workload_hash_key, 4),
    ):
        sharder = Sharder(mgr, options, resource, hash_key)
        ctrl = mgr.new_controller(name, sharder, workers=workers)
        # every one: this shard's in its shard's view (in full: its controllers' view), the
        # others' past it, sent as their metadata only (no spec or status to receive and
        # decode) and kept as the assignment reads them (`assignment_identity`); neither
        # view wakes it for its own label write (`AssignmentEvents`)
        events = AssignmentEvents(sharder.writes, sharder.needs_write)
        ctrl.watch(resource, events, clusters=PROJECTS, predicates=[labels_changed])
        ctrl.watch(resource, events, clusters=PROJECTS, predicates=[labels_changed], alias=FLEET,
                   label_selector=options.others_selector, transform=assignment_identity,
                   metadata_only=True)  # fmt: skip
        ctrl.watch(
            LEASES,
            EnqueueRequestsFromMapFunc(sharder.every_one, cluster_name=ClusterName.PRESERVE_MAPPED),
            clusters=LOCAL,
            namespace=options.lease_namespace,
            label_selector=options.lease_selector,
            predicates=[membership_changed],
        )
