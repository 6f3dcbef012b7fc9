"""Sharding in the deployed shape: `apiserver` processes and three `federation-manager run
--enable-management-controllers --sharding --shard-id NAME` processes. Every reconcile
is recorded from each shard's span file (`--tracing --traces-file`); the servers enforce
RBAC and every identity holds only the shipped roles (the management-sharded overlay's): assignment by the
ring (Workloads too, each with its WDs), hand-over to a shard that joins, a SIGKILLed
shard's WDs reassigned once its Lease is dead, and no WD or Workload reconciled by two
shards at once."""

from __future__ import annotations

import datetime
import json
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from federation.api.constants import Label
from federation.fleet.sharding import sharder_ring, wd_hash_key, workload_hash_key
from federation.settings import ManagerSettings
from kubeplane.testing import kubectl_path
from tests.support import eventually
from tests.support.processes import DeployedFleet, Process, deployed_fleet, spawn

from .test_federator import workload_deployment
from .test_workload_controller import workload

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

N_WORKLOADS = 4  # each makes one WD (DFW)
N_WDS = 18 + N_WORKLOADS
LEASE = ("--leader-election-lease-duration=3", "--leader-election-renew-deadline=2",
         "--leader-election-retry-period=0.5", "--leader-election-namespace=federation-system")  # fmt: skip
WORK = {"reconcile federator", "reconcile status-projector", "reconcile workload-controller"}


async def start_shard(f: DeployedFleet, shard: str) -> Process:
    args = ["run", "--enable-management-controllers", "--sharding", f"--shard-id={shard}",
            f"--kubeconfig={f.manager_kubeconfig('management')}", "--health-probe-bind-address=0",
            "--metrics-bind-address=0", "--tracing", f"--traces-file={f.workdir / f'{shard}.spans'}",
            "--graceful-shutdown-timeout=5", *LEASE]  # fmt: skip
    process = await spawn(shard, args, f.workdir, env={"OTEL_TRACES_EXPORTER": "none"})
    f.managers[shard] = process
    f.stack.push_async_callback(process.stop)
    return process


async def wds(f: DeployedFleet) -> list[dict[str, Any]]:
    out = await f.kubectl("web")("get", "wd", "-n", "default", "-o", "json")
    return list(json.loads(out)["items"])


async def assigned_as_the_ring_says(f: DeployedFleet, shards: list[str]) -> bool:
    """Every WD and Workload labelled as the ring says (a Workload's WDs hash with it)."""
    # the ring of the sharder elected now, its own share weighted as the product's default
    lease = json.loads(await f.kubectl("management")("get", "lease", "federation-manager", "-n", "federation-system",
                                                      "-o", "json"))  # fmt: skip
    elected = str((lease.get("spec") or {}).get("holderIdentity") or "").split("_")[0]
    ring = sharder_ring(shards, elected, ManagerSettings.model_fields["sharder_ring_weight"].default)
    items = await wds(f)
    out = await f.kubectl("web")("get", "workloads", "-n", "default", "-o", "json")
    workloads = list(json.loads(out)["items"])
    return (
        len(items) == N_WDS
        and len(workloads) == N_WORKLOADS
        and all(
            (wd["metadata"].get("labels") or {}).get(Label.SHARD) == ring.owner(wd_hash_key("web", wd))
            and Label.DRAIN not in (wd["metadata"].get("labels") or {})
            for wd in items
        )
        and all(
            (w["metadata"].get("labels") or {}).get(Label.SHARD) == ring.owner(workload_hash_key("web", w))
            for w in workloads
        )
    )


async def copies(f: DeployedFleet) -> int:
    out = await f.kubectl("dfw-1")("get", "wd", "-A", "-o", "json")
    return len(json.loads(out)["items"])


def _time(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def reconciles(f: DeployedFleet, shards: list[str]) -> dict[str, list[tuple[float, float, str]]]:
    """WD → (start, end, shard) of every reconcile that did work (admitted by the shard gate)."""
    out: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for shard in shards:
        path = f.workdir / f"{shard}.spans"
        for line in path.read_text().splitlines() if path.exists() else []:
            span = json.loads(line)
            attrs = span.get("attributes") or {}
            if span.get("name") in WORK and attrs.get("result") not in ("not-owned", "lease-not-fresh"):
                out[str(attrs.get("k8s.object.name"))].append(
                    (_time(span["start_time"]), _time(span["end_time"]), shard)
                )
    return out


def overlaps(runs: dict[str, list[tuple[float, float, str]]]) -> list[str]:
    found = []
    for wd, spans in runs.items():
        spans.sort()
        for i, (start, end, shard) in enumerate(spans):
            for other_start, _, other in spans[i + 1 :]:
                if other_start >= end:
                    break
                if other != shard:
                    found.append(f"{wd}: {shard} and {other} at {start:.3f}")
    return found


async def test_three_shard_processes_share_hand_over_and_survive_a_sigkill(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with deployed_fleet(tmp_path, cells=(("dfw-1", "DFW"),), rbac=True) as f:  # the shipped roles only
        a, b = await start_shard(f, "shard-a"), await start_shard(f, "shard-b")

        async def leases() -> set[str]:
            out = await f.kubectl("management")("get", "leases", "-n", "federation-system", "-l",
                                                str(Label.SHARD_RING), "-o",
                                                "jsonpath={.items[*].spec.holderIdentity}")  # fmt: skip
            return set(out.split())

        await eventually(lambda: _contains(leases(), {"shard-a", "shard-b"}), "both shards hold their Leases", 30)
        docs = [workload_deployment(f"api-{i:02d}", "DFW", 1) for i in range(N_WDS - N_WORKLOADS)]
        docs += [workload(f"app-{i}", ["DFW"]) for i in range(N_WORKLOADS)]
        await f.kubectl("web")(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
        )
        await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b"]), "assigned", within=60)
        await eventually(lambda: _equals(copies(f), N_WDS), "every WD federated", within=60)

        c = await start_shard(f, "shard-c")
        await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b", "shard-c"]), "joined", 60)

        await b.stop(signal.SIGKILL)  # no release: its Lease must expire, turn uncertain, be acquired
        await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-c"]), "b's WDs moved", within=60)
        await eventually(lambda: _equals(copies(f), N_WDS), "every WD still federated", within=30)

        assert await a.stop() == 0, a.output()[-3000:]
        assert await c.stop() == 0, c.output()[-3000:]
        runs = reconciles(f, ["shard-a", "shard-b", "shard-c"])
        assert {shard for spans in runs.values() for *_, shard in spans} >= {"shard-a", "shard-c"}
        assert overlaps(runs) == [], "a WD reconciled by two shards at once"


async def _contains(got: Any, want: set[str]) -> bool:
    return want <= await got


async def _equals(got: Any, want: int) -> bool:
    return bool(await got == want)
