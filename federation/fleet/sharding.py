"""Sharded management replicas (DESIGN.md §5): which shard a project WorkloadDeployment
belongs to, and the ring the shard Leases make. Pure: no I/O.

Label keys: `sharding.compute.datumapis.com/shard` (the owning shard, on project WDs),
`sharding.compute.datumapis.com/drain` (the sharder asks the owner to hand it over) and
`sharding.compute.datumapis.com/ring` (on each shard's Lease: the ring's name, the
sharder Lease name). A WD hashes by `<project cluster>/<group>/<Kind>/<namespace>/<name>`,
so two projects' `default/api` land apart; a Workload too, and a WD a Workload controls
hashes by its Workload's key (both land on one shard: the Workload's shard caches the WDs
it reconciles). What the federation writes for a WD (copies, projections, status) follows
the WD's shard, since only its owner reconciles it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation.api.constants import Label
from federation.api.resources import INSTANCES, SECRETS, WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.fleet.references import shard_share
from mcruntime.controllerutil import controller_of
from mcruntime.fields import get_str, get_str_map, is_object
from mcruntime.indexers import IndexFunc, label_index_name, label_value
from mcruntime.resources import CONFIGMAPS, Resource
from mcruntime.sharding import (
    TOKENS_PER_SHARD,
    HashRing,
    ShardLabels,
    ShardState,
    is_available,
    seconds_to_next_state,
    shard_state,
)

SHARD_LABELS = ShardLabels(shard=str(Label.SHARD), drain=str(Label.DRAIN))


@dataclass(frozen=True, slots=True)
class ShardingOptions:
    """This replica's place in the ring."""

    shard: str  # its shard name: its Lease's name and holder
    ring: str  # the ring's name (the sharder Lease's), on every shard Lease as Label.SHARD_RING
    lease_namespace: str  # where the shard Leases live in the management cluster
    # the sharder's virtual tokens on its ring, as a fraction of every other shard's 100
    # (`ring_tokens`): it also assigns every WD, so a smaller share evens out the load;
    # None: derived from the number of available shards (`derived_sharder_weight`)
    sharder_ring_weight: float | None = 1.0

    @property
    def lease_selector(self) -> str:
        return f"{Label.SHARD_RING}={self.ring}"

    @property
    def others_selector(self) -> str:
        """What is not labelled for this shard: the other shards' objects and the unassigned."""
        return f"{Label.SHARD}!={self.shard}"

    def cache_selectors(self, *, cell: bool) -> dict[Resource, str]:
        """What this shard caches of the sharded resources in a project or a cell
        (`CacheOptions.label_selectors`): the WDs labelled for it (project WDs, and the
        copies the federator labels after their WD) and the Instances: in a project the
        projections (the Instance projector labels them after their WD), in a cell the
        cell's own (the cell WD controller labels them after their copy); in a project the
        Workloads labelled for it; in a cell the companions this shard holds a share of
        (labelled `referenced_by_key(shard)` by the companion controller)."""
        mine = f"{Label.SHARD}={self.shard}"
        if not cell:
            return {WORKLOAD_DEPLOYMENTS: mine, WORKLOADS: mine, INSTANCES: mine}
        share = shard_share(self.shard)
        return {WORKLOAD_DEPLOYMENTS: mine, INSTANCES: mine, CONFIGMAPS: share, SECRETS: share}


def assignment_identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the sharder caches of every project WD and Workload (its FLEET views): what the
    assignment reads (name, namespace, the shard and drain labels, the controller owner
    reference a WD hashes by) and the resourceVersion its patch is guarded by, nothing of
    the spec or status, so the sharder does not hold its own share a second time in full."""
    m = obj.get("metadata") or {}
    kept = {k: m[k] for k in ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp") if k in m}
    labels = {k: v for k, v in (m.get("labels") or {}).items() if k in (SHARD_LABELS.shard, SHARD_LABELS.drain)}
    if labels:
        kept["labels"] = labels
    refs = [ref for ref in m.get("ownerReferences") or [] if is_object(ref) and ref.get("controller")]
    if refs:
        kept["ownerReferences"] = refs
    return {"metadata": kept}


def hash_key(project: str, resource: Resource, namespace: str, name: str) -> str:
    return f"{project}/{resource.group}/{resource.kind}/{namespace}/{name}"


def workload_hash_key(project: str, workload: Mapping[str, Any]) -> str:
    namespace, name = get_str(workload, "metadata.namespace", required=False), get_str(workload, "metadata.name")
    return hash_key(project, WORKLOADS, namespace, name)


def wd_hash_key(project: str, wd: Mapping[str, Any]) -> str:
    """A WD's ring key: its own, or its controlling Workload's (so the two share a shard)."""
    namespace, name = get_str(wd, "metadata.namespace", required=False), get_str(wd, "metadata.name")
    workload = controlling_workload(wd)
    if workload is not None:
        return hash_key(project, WORKLOADS, namespace, workload)
    return hash_key(project, WORKLOAD_DEPLOYMENTS, namespace, name)


def controlling_workload(wd: Mapping[str, Any]) -> str | None:
    """The name of the Workload that controls the WD (its controller owner reference), if any."""
    ref = controller_of(wd)
    if ref is None or ref.get("kind") != WORKLOADS.kind:
        return None
    if str(ref.get("apiVersion", "")).split("/")[0] != WORKLOADS.group:
        return None
    name = ref.get("name")
    return name if isinstance(name, str) and name else None


def shard_states(leases: Iterable[Mapping[str, Any]], now: float) -> dict[str, ShardState]:
    """Each shard's state, by its Lease's name."""
    return {get_str(lease, "metadata.name"): shard_state(lease, now) for lease in leases}


def available(states: Mapping[str, ShardState]) -> frozenset[str]:
    return frozenset(name for name, state in states.items() if is_available(state))


# What assigning costs the sharder (a label write per WD, the others' WDs held slim), as a
# fraction of one replica's whole federation work: measured at 3 shards on the fan-out
# (DESIGN §5), the sharder ~0.18x of an unsharded replica above the other shards, whose
# fleet does ~1.2x an unsharded replica's work.
ASSIGNING_SHARE = 0.2


def derived_sharder_weight(shards: int) -> float:
    """The sharder's ring weight that evens its load with the other shards' (the default of
    `--sharder-ring-weight`): with N shards and weight w its share is w / (w + N - 1) and
    each other's 1 / (w + N - 1), so a + w / (w + N - 1) = 1 / (w + N - 1) for assigning
    costing a (`ASSIGNING_SHARE`) gives w = (1 - a (N - 1)) / (1 + a): 2/3 of 2 shards, 1/2
    of 3, 1/6 of 5, and none from 6 on (assigning alone is then a full share)."""
    return max(0.0, (1 - ASSIGNING_SHARE * (shards - 1)) / (1 + ASSIGNING_SHARE))


def ring_tokens(shards: frozenset[str], sharder: str | None = None, weight: float | None = 1.0) -> dict[str, int]:
    """Each available shard's virtual tokens on the sharder's ring: 100, the sharder's own
    weighted (`--sharder-ring-weight`: round(100 x weight), so its share of the WDs is about
    weight / (weight + N - 1); None: `derived_sharder_weight` of the N available shards),
    since it also assigns every WD; but all 100 when it is the only available shard, so a
    lone sharder, at any weight, still takes everything."""
    tokens = dict.fromkeys(shards, TOKENS_PER_SHARD)
    if sharder in tokens and len(tokens) > 1:
        w = derived_sharder_weight(len(tokens)) if weight is None else weight
        tokens[sharder] = round(TOKENS_PER_SHARD * w)
    return tokens


def sharder_ring(shards: Iterable[str], sharder: str | None = None, weight: float | None = 1.0) -> HashRing:
    """The ring the sharder `sharder` computes over the available `shards` (`ring_tokens`);
    only the sharder computes assignments, so no other replica needs to agree on it."""
    available_shards = frozenset(shards)
    return HashRing(available_shards, tokens_of=ring_tokens(available_shards, sharder, weight))


class Rings:
    """The ring of each set of available shards, built once (`sharder_ring`)."""

    def __init__(self, sharder: str | None = None, weight: float | None = 1.0) -> None:
        self.sharder, self.weight = sharder, weight
        self._rings: dict[frozenset[str], HashRing] = {}

    def of(self, shards: frozenset[str]) -> HashRing:
        ring = self._rings.get(shards)
        if ring is None:
            if len(self._rings) > 16:  # membership history is short; keep the recent few
                self._rings.clear()
            ring = self._rings[shards] = sharder_ring(shards, self.sharder, self.weight)
        return ring


class RingView:
    """The shards' states and the ring of the available ones, as `shard_states` and
    `Rings.of` give them for the ring's Leases at a time, worked out again only when the
    Leases changed (the caller hands another list; the same one while they are unchanged) or
    when time alone changes a state (`seconds_to_next_state`): the sharder reads them for
    every event and every decision, a Lease changes every few seconds. `sharder` and
    `weight`: the ring is the one that sharder computes (`sharder_ring`)."""

    def __init__(self, sharder: str | None = None, weight: float | None = 1.0) -> None:
        self.rings = Rings(sharder, weight)
        self._leases: Sequence[Mapping[str, Any]] | None = None
        self._until = -math.inf
        self._states: dict[str, ShardState] = {}
        self._ring = HashRing(frozenset())

    def at(self, leases: Sequence[Mapping[str, Any]], now: float) -> tuple[dict[str, ShardState], HashRing]:
        if leases is not self._leases or now >= self._until:
            self._states = shard_states(leases, now)
            self._ring = self.rings.of(available(self._states))
            due = [s for lease in leases if (s := seconds_to_next_state(lease, now)) is not None]
            self._leases, self._until = leases, now + min(due, default=math.inf)
        return self._states, self._ring


SHARD_INDEX = label_index_name(SHARD_LABELS.shard)  # project WDs by their shard
DRAIN_INDEX = "sharding-drain"  # project WDs being drained, under DRAINING
DRAINING = "yes"


def draining(wd: dict[str, Any]) -> list[str]:
    return [DRAINING] if SHARD_LABELS.drain in get_str_map(wd, "metadata.labels") else []


SHARD_INDEXERS: dict[str, IndexFunc] = {SHARD_INDEX: label_value(SHARD_LABELS.shard), DRAIN_INDEX: draining}
"""On the project WD view of a shard: whether it owns a WD is two set lookups, no decoding."""
