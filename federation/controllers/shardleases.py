"""Shard-lease controller (management mode with `--sharding`, on the elected replica
only): turns an uncertain shard dead by acquiring its Lease, and deletes orphaned Leases
(DESIGN.md §5; the states are `mcruntime/sharding/states.py`'s).

Request key: (management cluster, lease namespace, shard Lease name).
Reads (cache): the shard Leases of the ring.
Writes, and alone writes: an uncertain shard's Lease (holder = the sharder's identity,
after which the shard is dead and the sharder reassigns its WDs directly; the shard, if
it still runs, fails to renew and stops) and the deletion of orphaned Leases. Never
writes: a Lease that is ready or expired (its shard may only be slow), any WD.

A Lease's state changes with time alone: the request comes back when the next state is
due (`seconds_to_next_state`), as in kubernetes-controller-sharding.

Invariants: a shard that stopped renewing is dead 1.25 lease durations after its last renewal and its WDs
move (test_a_dead_shards_wds_are_reassigned, test_three_shard_processes_share_hand_over_and_survive_a_sigkill)."""

from __future__ import annotations

import time
from typing import Any

from federation.fleet.sharding import ShardingOptions
from mcruntime.errors import APIError, is_conflict, is_not_found
from mcruntime.fields import get_str
from mcruntime.manager import Manager
from mcruntime.reconciler import Result
from mcruntime.request import Request
from mcruntime.resources import LEASES
from mcruntime.sharding import ShardState, seconds_to_next_state, shard_state
from mcruntime.sharding.states import format_time
from mcruntime.source import LOCAL

NAME = "shard-lease-controller"


class ShardLeases:
    def __init__(self, mgr: Manager, identity: str) -> None:
        self.mgr = mgr
        self.identity = identity  # the sharder's: any holder but the shard itself makes it dead

    async def reconcile(self, req: Request) -> Result:
        # 1. fetch (cache)
        client = self.mgr.get_cluster(req.cluster).client
        lease = await client.get_or_none(LEASES, req.name, namespace=req.namespace)
        # 2. early exit: gone
        if lease is None:
            return Result()
        # 3. desired, from the pure state function
        now = time.time()
        state = shard_state(lease, now)
        # 4./5. write only what the state asks for
        if state is ShardState.UNCERTAIN:
            await self._acquire(lease, now)
        elif state is ShardState.ORPHANED:
            await self._delete(lease)
            return Result()
        due = seconds_to_next_state(lease, now)
        return Result(requeue_after=due + 0.05) if due is not None else Result()

    async def _acquire(self, lease: dict[str, Any], now: float) -> None:
        """Take the Lease over (one update, on the version judged uncertain)."""
        spec = dict(lease.get("spec") or {})
        spec.update(
            holderIdentity=self.identity,
            acquireTime=format_time(now),
            renewTime=format_time(now),
            leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1,
        )
        body = {**lease, "spec": spec}
        await self.mgr.local.client.update(LEASES, body)

    async def _delete(self, lease: dict[str, Any]) -> None:
        try:
            await self.mgr.local.client.delete(
                LEASES, get_str(lease, "metadata.name"), namespace=get_str(lease, "metadata.namespace")
            )
        except APIError as exc:
            if not (is_not_found(exc) or is_conflict(exc)):
                raise


def register(mgr: Manager, options: ShardingOptions, identity: str) -> None:
    """Wire the watch: the ring's shard Leases in the management cluster."""
    ctrl = mgr.new_controller(NAME, ShardLeases(mgr, identity), workers=1)
    ctrl.for_(LEASES, clusters=LOCAL, namespace=options.lease_namespace, label_selector=options.lease_selector)
