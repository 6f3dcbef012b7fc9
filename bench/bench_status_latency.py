"""Benchmark: status latency from a cell to the project, at fixed rates of change.

One project with W WorkloadDeployments (default 20, 5 Instances each) in the LHR city
(one cell); the management-mode manager runs as its own process. The cell's own
controllers are stood in for by this program, which writes the cell Instances and the
copies' status itself, so the figures are the federation's latency — cell watch → mapped
request → reconcile → project write → project watch — not the cell's.

At each rate (default 50, 200 and 500 changes/s, for D seconds each) it changes, round
robin, one Instance's status (a condition message carrying a sequence number) and one
copy's status (`updatedReplicas` = a per-WD sequence number), and a watcher on the
project records when the Instance projection shows that message and when the project WD's
status shows that number (or a later one: the projector coalesces bursts on one key).
Reported: p50/p95/p99 of both, per rate.

Run: python bench/bench_status_latency.py [--wds W] [--seconds D] [--rates 50,200,500] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from harness import (
    GROUP,
    TRACING_MODES,
    VERSION,
    Fleet,
    cpu_seconds,
    fleet,
    instances_path,
    management,
    percentile,
    report,
    set_tracing,
    wd_path,
    workload_deployment,
)

REPLICAS = 5


def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    }


async def stand_in_for_the_cell(f: Fleet, wds: int) -> tuple[str, dict[str, str]]:
    """Create each copy's Instances (labels, owner) and report them Ready, as the cell's
    own controllers would; returns the downstream namespace and instance → copy names."""
    copies: list[dict[str, Any]] = []
    while len(copies) < wds:
        copies = await f.list("lhr-1", wd_path())
        await asyncio.sleep(0.2)
    namespace = copies[0]["metadata"]["namespace"]
    ns = await f.request("lhr-1", "GET", f"/api/v1/namespaces/{namespace}")
    upstream = {k: v for k, v in ns["metadata"]["labels"].items() if k.startswith("meta.datumapis.com/")}
    owners: dict[str, str] = {}
    for copy in copies:
        meta = copy["metadata"]
        for i in range(REPLICAS):
            name = f"{meta['name']}-{i}"
            owners[name] = meta["name"]
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Instance",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {
                        "compute.datumapis.com/workload-deployment-name": meta["name"],
                        "compute.datumapis.com/instance-index": str(i),
                        **upstream,
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": f"{GROUP}/{VERSION}",
                            "kind": "WorkloadDeployment",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": copy["spec"]["template"]["spec"],
            }
            await f.request("lhr-1", "POST", instances_path(namespace), body)
            await set_instance(f, namespace, name, "ready")
        await set_copy(f, namespace, meta["name"], 0)
    return namespace, owners


async def set_instance(f: Fleet, namespace: str, name: str, message: str) -> None:
    conditions = [
        condition("Programmed", "True", "Programmed"),
        condition("Available", "True", "Available", message),
        condition("Ready", "True", "Available", message),
    ]
    await f.request(
        "lhr-1",
        "PATCH",
        instances_path(namespace, name, "status"),
        {"status": {"conditions": conditions}},
        content_type="application/merge-patch+json",
    )


async def set_copy(f: Fleet, namespace: str, name: str, tick: int) -> None:
    status = {
        "replicas": REPLICAS,
        "currentReplicas": REPLICAS,
        "readyReplicas": REPLICAS,
        "updatedReplicas": tick,
        "desiredReplicas": REPLICAS,
        "observedGeneration": 1,
        "conditions": [
            condition("Available", "True", "StableInstanceFound"),
            condition("ReplicasReady", "True", "ReplicasAvailable"),
        ],
    }
    await f.request(
        "lhr-1",
        "PATCH",
        wd_path(namespace, name, "status"),
        {"status": status},
        content_type="application/merge-patch+json",
    )


class Watcher:
    """Follows the project's Instances and WDs and times when each change shows."""

    def __init__(self) -> None:
        self.sent_instance: dict[str, float] = {}  # message → send time
        self.instance_latency: list[float] = []
        self.sent_wd: dict[tuple[str, int], float] = {}  # (wd, tick) → send time
        self.seen_wd: dict[str, int] = {}
        self.next_tick: dict[str, int] = {}  # the last number written per WD, across rounds
        self.wd_latency: list[float] = []

    def instance_event(self, obj: dict[str, Any]) -> None:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Available":
                sent = self.sent_instance.pop(c.get("message", ""), None)
                if sent is not None:
                    self.instance_latency.append(time.monotonic() - sent)

    def wd_event(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        tick = int((obj.get("status") or {}).get("updatedReplicas") or 0)
        last = self.seen_wd.get(name, 0)
        if tick <= last:
            return
        now = time.monotonic()
        for t in range(last + 1, tick + 1):
            sent = self.sent_wd.pop((name, t), None)
            if sent is not None:
                self.wd_latency.append(now - sent)
        self.seen_wd[name] = tick


async def watch(session: aiohttp.ClientSession, url: str, on_event: Any) -> None:
    async with session.get(
        url,
        params={"watch": "true", "allowWatchBookmarks": "false"},
        timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
    ) as resp:
        buffer = b""
        async for chunk in resp.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    event = orjson.loads(line)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        on_event(event["object"])


async def drive(
    f: Fleet, namespace: str, owners: dict[str, str], watcher: Watcher, rate: float, seconds: float, round_: int
) -> None:
    names = sorted(owners)
    interval = 1.0 / rate
    started = time.monotonic()
    n = 0
    pending: set[asyncio.Task[None]] = set()
    while time.monotonic() - started < seconds:
        due = started + n * interval
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        name = names[n % len(names)]
        message = f"round {round_} change {n}"
        watcher.sent_instance[message] = time.monotonic()
        task = asyncio.create_task(set_instance(f, namespace, name, message))
        pending.add(task)
        task.add_done_callback(pending.discard)
        wd = owners[name]
        watcher.next_tick[wd] = tick = watcher.next_tick.get(wd, 0) + 1
        watcher.sent_wd[(wd, tick)] = time.monotonic()
        task = asyncio.create_task(set_copy(f, namespace, wd, tick))
        pending.add(task)
        task.add_done_callback(pending.discard)
        n += 1
    if pending:
        await asyncio.gather(*pending)


async def main(args: argparse.Namespace) -> None:
    rates = [float(r) for r in args.rates.split(",")]
    rep = report(
        "bench_status_latency",
        {
            "wds": args.wds,
            "instances": args.wds * REPLICAS,
            "rates": args.rates,
            "seconds_per_rate": args.seconds,
            "tracing": args.tracing,
        },
    )
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        set_tracing(args.tracing, Path(tmp))
        async with fleet(Path(tmp), projects=["bench/web"], cells=[("lhr-1", "LHR")]) as f:
            mgr = management(f, "--workers=8")
            async with aiohttp.ClientSession() as session:
                await mgr.wait_ready(session)
                for i in range(args.wds):
                    await f.request(
                        "web", "POST", wd_path("default"), workload_deployment(f"wd-{i:03d}", "LHR", REPLICAS)
                    )
                namespace, owners = await stand_in_for_the_cell(f, args.wds)
                watcher = Watcher()
                project = f.servers["web"].url
                tasks = [
                    asyncio.create_task(watch(session, project + instances_path("default"), watcher.instance_event)),
                    asyncio.create_task(watch(session, project + wd_path("default"), watcher.wd_event)),
                ]
                await asyncio.sleep(2)  # initial projections settle
                for round_, rate in enumerate(rates):
                    watcher.instance_latency.clear()
                    watcher.wd_latency.clear()
                    cpu, reconciled = cpu_seconds(mgr.pid), await mgr.reconciles(session)
                    await drive(f, namespace, owners, watcher, rate, args.seconds, round_)
                    await asyncio.sleep(2)  # let the last changes arrive
                    changes = rate * args.seconds  # per kind: Instance statuses, and as many copy statuses
                    rep.add(f"{rate:.0f}/s: manager CPU per change", (cpu_seconds(mgr.pid) - cpu) / changes * 1000,
                            "ms", "", "an Instance's and a copy's status")  # fmt: skip
                    for name, n in sorted((await mgr.reconciles(session)).items()):
                        if name.endswith("projector"):
                            per_change = (n - reconciled.get(name, 0)) / changes
                            rep.add(f"{rate:.0f}/s: {name} reconciles per change", per_change, "reconciles")
                    for what, values in (
                        ("Instance projection", watcher.instance_latency),
                        ("project WD status", watcher.wd_latency),
                    ):
                        for p in (50, 95, 99):
                            target = "<= 250 ms" if p == 99 and rate == 200 else ""
                            rep.add(
                                f"{rate:.0f}/s: cell write -> {what} p{p}",
                                percentile(values, p) * 1000,
                                "ms",
                                target,
                                f"{len(values)} changes seen",
                            )
                    watcher.sent_instance.clear()
                    watcher.sent_wd.clear()
                for task in tasks:
                    task.cancel()
            mgr.proc.stop()
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds at each rate")
    parser.add_argument("--rates", default="50,200,500", help="changes per second, comma-separated")
    parser.add_argument("--tracing", choices=TRACING_MODES, default="off", help="the manager's tracing (cost figures)")
    parser.add_argument("--smoke", action="store_true", help="4 WDs, 2 s at 50/s, to check the benchmark runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.wds, args.seconds, args.rates = 4, 2.0, "50"
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
