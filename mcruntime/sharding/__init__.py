"""Sharding building blocks (after kubernetes-controller-sharding, DESIGN.md §5): shard
states from membership Leases, a consistent-hash ring, the pure assignment decision per
object, and the gate a shard's controllers pass before reconciling. Nothing here knows
which API the sharded objects belong to: label keys and hash keys are the caller's."""

from .assignment import Action, Decision, ShardLabels, shard_decision, sharder_decision
from .gate import ShardGate
from .ring import TOKENS_PER_SHARD, HashRing
from .states import ShardState, is_available, seconds_to_next_state, shard_state

__all__ = [
    "TOKENS_PER_SHARD",
    "Action",
    "Decision",
    "HashRing",
    "ShardGate",
    "ShardLabels",
    "ShardState",
    "is_available",
    "seconds_to_next_state",
    "shard_decision",
    "shard_state",
    "sharder_decision",
]
