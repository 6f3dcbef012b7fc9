"""The fault matrix with management sharded over three `run --sharding` replicas (DESIGN.md
§5), during a 30-WD rollout: a shard SIGKILLed, a shard joining, the sharder SIGKILLed, a
shard paused (SIGSTOP) past its lease and resumed — it must not write before it notices it
lost its Lease and exits; restarted, it rejoins. Each converges with zero invariant
violations and an idle window without a manager write (Lease renewals aside)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio

from federation.api.constants import Label
from federation.fleet.sharding import sharder_ring, wd_hash_key
from federation.settings import ManagerSettings
from tests.support import eventually
from tests.support.processes import Process

from .harness import CHAOS, Chaos, chaos_fleet, wd
from .test_manager_kill import instance_names_exact

pytestmark = CHAOS

LEASE = ("--leader-election-lease-duration=4", "--leader-election-renew-deadline=3",
         "--leader-election-retry-period=0.5", "--leader-election-namespace=federation-system")  # fmt: skip


def thirty() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"web": [], "shop": []}
    for i in range(30):
        city = "DFW" if i % 3 else "LHR"
        out["web" if i % 2 == 0 else "shop"].append(wd(f"s{i:02d}", city, 2 if city == "DFW" else 1))
    return out


async def start(chaos: Chaos, shard: str) -> Process:
    return await chaos.start_management("--sharding", f"--shard-id={shard}", "--graceful-shutdown-timeout=5", *LEASE,
                                        name=shard)  # fmt: skip


async def sharder(chaos: Chaos) -> str:
    """The shard the leader election Lease names (its holder is `<shard>_<uuid>`)."""
    lease = await chaos.get_json("management", "lease", "federation-manager", "-n", "federation-system")
    return str((lease.get("spec") or {}).get("holderIdentity") or "").split("_")[0]


async def roll(chaos: Chaos, wds: dict[str, list[dict[str, Any]]], at: str) -> None:
    for project, objs in wds.items():
        await chaos.roll(project, *[o["metadata"]["name"] for o in objs], at=at)


async def assigned_as_the_ring_says(chaos: Chaos, shards: Iterable[str]) -> bool:
    # the ring of the sharder elected now, its own share weighted as the product's default
    ring = sharder_ring(shards, await sharder(chaos), ManagerSettings.model_fields["sharder_ring_weight"].default)
    for project in ("web", "shop"):
        for obj in (await chaos.get_json(project, "wd", "-n", "default"))["items"]:
            labels = obj["metadata"].get("labels") or {}
            if labels.get(Label.SHARD) != ring.owner(wd_hash_key(project, obj)) or Label.DRAIN in labels:
                return False
    return True


async def converged(chaos: Chaos, shards: Iterable[str], scenario: str, faults: str) -> None:
    """Every WD on the shard the ring of the running shards names (a restarted shard
    rejoins once its old Lease has lapsed), then the federation clean and quiet."""
    live, started = sorted(shards), time.monotonic()
    await eventually(lambda: assigned_as_the_ring_says(chaos, live), f"WDs assigned over {live}", within=120)
    rebalanced = time.monotonic() - started
    took, report = await chaos.converge(within=240, settled=instance_names_exact)
    await chaos.finish(scenario, faults, rebalanced + took, report)  # from the fault's end


async def test_three_shards_through_kills_a_join_and_a_pause(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path, management=None) as chaos:
        shards = {name: await start(chaos, name) for name in ("shard-a", "shard-b")}
        wds = thirty()
        for project, objs in wds.items():
            await chaos.apply(project, objs)
        await chaos.converge(within=240, settled=instance_names_exact)

        # a shard joins mid-rollout
        await roll(chaos, wds, "2026-11-26T01:00:00Z")
        shards["shard-c"] = await start(chaos, "shard-c")
        await converged(chaos, shards, "3 shards: one joins", "shard-c started during a 30-WD rollout")

        # a shard (not the sharder) SIGKILLed mid-rollout
        leader = await sharder(chaos)
        victim = next(n for n in shards if n != leader)
        await roll(chaos, wds, "2026-11-26T01:00:01Z")
        await anyio.sleep(0.5)
        assert await shards.pop(victim).stop(signal.SIGKILL) == -signal.SIGKILL
        await converged(chaos, shards, "3 shards: one SIGKILLed", f"{victim} SIGKILLed during a rollout")
        shards[victim] = await start(chaos, victim)  # restarted, as its Deployment would
        await eventually(lambda: assigned_as_the_ring_says(chaos, shards), f"{victim} back in the ring", within=120)

        # the sharder SIGKILLed mid-rollout
        leader = await sharder(chaos)
        await roll(chaos, wds, "2026-11-26T01:00:02Z")
        await anyio.sleep(0.5)
        assert await shards.pop(leader).stop(signal.SIGKILL) == -signal.SIGKILL
        await converged(
            chaos, shards, "3 shards: the sharder SIGKILLed", f"sharder {leader} SIGKILLed during a rollout"
        )
        shards[leader] = await start(chaos, leader)
        await eventually(lambda: assigned_as_the_ring_says(chaos, shards), f"{leader} back in the ring", within=120)

        # a shard paused past its lease, resumed: it stops (exit 1) instead of writing on
        leader = await sharder(chaos)
        paused = next(n for n in shards if n != leader)
        process = shards.pop(paused)
        process.proc.send_signal(signal.SIGSTOP)
        await roll(chaos, wds, "2026-11-26T01:00:03Z")
        await anyio.sleep(12)  # three lease durations: its Lease is acquired, its WDs move
        process.proc.send_signal(signal.SIGCONT)
        await eventually(lambda: process.proc.returncode is not None, f"{paused} exits", within=30)
        assert "lost lease" in process.output(), process.output()[-2000:]
        shards[paused] = await start(chaos, paused)
        await converged(chaos, shards, "3 shards: one paused past its lease", f"{paused} SIGSTOPped 12 s, then resumed")
        for name, shard in shards.items():
            assert await shard.stop() == 0, f"{name}: {shard.output()[-2000:]}"
