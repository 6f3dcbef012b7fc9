"""The assignment decision per object, a pure function of its labels, the ring and the
shards' states (kubernetes-controller-sharding's hand-over):

| object's labels | owner's state | ring says | sharder does |
|---|---|---|---|
| no shard label | - | S | ASSIGN S (shard label S, drain label removed): one write |
| shard A | any | A | NOTHING (a drain under way is acknowledged, then A gets it back) |
| shard A, no drain | available | S != A | DRAIN (drain label added): one write |
| shard A, drain | available | S != A | NOTHING: A acknowledges by removing both labels |
| shard A | dead, orphaned or no Lease | S != A | REASSIGN_DEAD (shard label S, drain removed): one write |
| any | - | empty ring | NOTHING |

The shard A itself, seeing its object with the drain label, stops reconciling it and
ACKNOWLEDGE_DRAIN (removes both labels, one write); `shard_decision`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from .ring import HashRing
from .states import ShardState, is_available


@dataclass(frozen=True)
class ShardLabels:
    """The label keys of one ring: which shard owns an object, and the drain request."""

    shard: str
    drain: str


class Action(enum.StrEnum):
    NOTHING = "nothing"
    ASSIGN = "assign"
    DRAIN = "drain"
    ACKNOWLEDGE_DRAIN = "acknowledge-drain"
    REASSIGN_DEAD = "reassign-dead"


@dataclass(frozen=True)
class Decision:
    action: Action
    shard: str | None = None  # the shard assigned (ASSIGN, REASSIGN_DEAD) or drained/acknowledging

    def labels_patch(self, keys: ShardLabels) -> dict[str, str | None]:
        """The metadata.labels merge patch carrying this decision (empty for NOTHING)."""
        if self.action in (Action.ASSIGN, Action.REASSIGN_DEAD):
            return {keys.shard: self.shard, keys.drain: None}
        if self.action is Action.DRAIN:
            return {keys.drain: "true"}
        if self.action is Action.ACKNOWLEDGE_DRAIN:
            return {keys.shard: None, keys.drain: None}
        return {}


NOTHING = Decision(Action.NOTHING)


def sharder_decision(
    labels: Mapping[str, str], keys: ShardLabels, hash_key: str, ring: HashRing, states: Mapping[str, ShardState]
) -> Decision:
    """What the sharder writes on one object (at most one label patch)."""
    desired = ring.owner(hash_key)
    if desired is None:
        return NOTHING
    current = labels.get(keys.shard) or ""
    if not current:
        return Decision(Action.ASSIGN, desired)
    if current == desired:
        return NOTHING
    if not is_available(states.get(current)):
        return Decision(Action.REASSIGN_DEAD, desired)
    if keys.drain in labels:
        return NOTHING
    return Decision(Action.DRAIN, current)


def shard_decision(labels: Mapping[str, str], keys: ShardLabels, me: str) -> Decision:
    """What shard `me` writes on an object it sees: the drain acknowledgement, or nothing."""
    if labels.get(keys.shard) == me and keys.drain in labels:
        return Decision(Action.ACKNOWLEDGE_DRAIN, me)
    return NOTHING
