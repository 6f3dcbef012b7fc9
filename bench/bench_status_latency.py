"""Benchmark: status latency from a cell to the project, at fixed rates of change.

One project with W WorkloadDeployments (default 20, 5 Instances each) in the LHR city
(one cell); the management-mode manager runs as its own process. The cell's own
controllers are stood in for by this program, which writes the cell Instances and the
copies' status itself, so no cell controller's time is in the figures: they are the
federation's latency — cell watch → mapped request → reconcile → project write → project
watch — plus, in the "cell write ->" figures, the time the cell's API server takes to
accept the write.

At each rate (default 50, 200 and 500 changes/s, for D seconds each) it changes, round
robin, one Instance's status (a condition message carrying a sequence number) and one
copy's status (`updatedReplicas` = a per-WD sequence number), and a watcher records when
the Instance projection shows that message and when the project WD's status shows that
number (or a later one: the projector coalesces bursts on one key). Reported: p50/p95/p99
of both, per rate, from the moment the change was sent ("cell write ->", the target's
figure). Beside them, where that time goes outside the manager: how long the stand-in
cell's API server took to answer the write ("cell write answered", which the 400 writes/s
of this program queue up on a shared machine), and the latency from the moment the cell's
own watch showed the change ("cell watch ->": the manager's part, cell watch -> mapped
request -> reconcile -> project write -> project watch).

And inside it, from the manager's own histograms: each projector's mean queue wait (after
any batch period) and reconcile time, and its status writes' request time, each with the
share over 100 ms.

The watcher is its own process (`follow`): on this program's loop, which also sends
hundreds of writes a second, each arrival would be timed whenever that loop got to it.
The manager runs with its shipped `--workers` and `--status-batch-period` unless given.

Run: python bench/bench_status_latency.py [--wds W] [--seconds D] [--rates 50,200,500] [--workers N]
     [--status-batch-period S] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from harness import (
    GROUP,
    TRACING_MODES,
    VERSION,
    Fleet,
    Manager,
    Report,
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


Record = tuple[float, str, str, str, int]  # (when, "cell" | "project", kind, name, tick)


def seen(source: str, kind: str, obj: dict[str, Any]) -> Record:
    """What an event of a watched object shows: an Instance's Available message (as the
    name), a WD's `updatedReplicas` (as the tick)."""
    now, status = time.monotonic(), obj.get("status") or {}
    if kind == "instance":
        for c in status.get("conditions") or []:
            if c.get("type") == "Available":
                return now, source, kind, str(c.get("message", "")), 0
        return now, source, kind, "", 0
    return now, source, kind, obj["metadata"]["name"], int(status.get("updatedReplicas") or 0)


def follow(watches: list[tuple[str, str, str]], conn: Connection) -> None:
    """The watcher process: follows each (source, kind, url) and, on each request, hands
    over what it saw since the last one."""

    async def run() -> None:
        box: list[list[Record]] = [[]]
        async with aiohttp.ClientSession() as session:
            tasks = [asyncio.create_task(watch(session, url, source, kind, box)) for source, kind, url in watches]
            while await asyncio.to_thread(conn.recv) == "dump":
                taken, box[0] = box[0], []
                await asyncio.to_thread(conn.send, taken)
            for task in tasks:
                task.cancel()

    asyncio.run(run())


async def watch(session: aiohttp.ClientSession, url: str, source: str, kind: str, box: list[list[Record]]) -> None:
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
                        box[0].append(seen(source, kind, event["object"]))


class Watcher:
    """Times when each change shows: in the cell's watch and in the project's."""

    def __init__(self) -> None:
        self.sent_instance: dict[str, float] = {}  # message → send time
        self.sent_wd: dict[tuple[str, int], float] = {}  # (wd, tick) → send time
        self.answered: list[float] = []  # the cell writes' own latency
        self.in_cell: dict[tuple[str, str, int], float] = {}  # (kind, name, tick) → first seen in the cell
        self.seen_wd: dict[str, int] = {}
        self.next_tick: dict[str, int] = {}  # the last number written per WD, across rounds
        self.latency: dict[tuple[str, str], list[float]] = {}  # (kind, "write" | "watch") → seconds

    def clear(self) -> None:
        self.sent_instance.clear()
        self.sent_wd.clear()
        self.answered.clear()
        self.in_cell.clear()
        self.latency.clear()

    def add(self, records: list[Record]) -> None:
        """What the watcher process saw: the cell's records first (each precedes its
        projection), then the project's in order."""
        for when, source, kind, name, tick in sorted(records):
            if source == "cell":
                self.in_cell.setdefault((kind, name, tick), when)
        for when, source, kind, name, tick in sorted(records):
            if source == "project" and kind == "instance":
                self._instance(when, name)
            elif source == "project":
                self._wd(when, name, tick)

    def _record(self, kind: str, when: float, sent: float, in_cell: float | None) -> None:
        self.latency.setdefault((kind, "write"), []).append(when - sent)
        if in_cell is not None:
            self.latency.setdefault((kind, "watch"), []).append(when - in_cell)

    def _instance(self, when: float, message: str) -> None:
        sent = self.sent_instance.pop(message, None)
        if sent is not None:
            self._record("instance", when, sent, self.in_cell.get(("instance", message, 0)))

    def _wd(self, when: float, name: str, tick: int) -> None:
        last = self.seen_wd.get(name, 0)
        if tick <= last:
            return
        for t in range(last + 1, tick + 1):
            sent = self.sent_wd.pop((name, t), None)
            if sent is not None:
                self._record("wd", when, sent, self.in_cell.get(("wd", name, t)))
        self.seen_wd[name] = tick


def timed(pending: set[asyncio.Task[None]], watcher: Watcher, write: Any) -> None:
    """Send a cell write; its own latency (until the cell answered) is recorded."""
    sent = time.monotonic()
    task = asyncio.create_task(write)
    pending.add(task)
    task.add_done_callback(pending.discard)
    task.add_done_callback(lambda _: watcher.answered.append(time.monotonic() - sent))


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
        timed(pending, watcher, set_instance(f, namespace, name, message))
        wd = owners[name]
        watcher.next_tick[wd] = tick = watcher.next_tick.get(wd, 0) + 1
        watcher.sent_wd[(wd, tick)] = time.monotonic()
        timed(pending, watcher, set_copy(f, namespace, wd, tick))
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
            "workers": args.workers or "shipped",
            "status_batch_period": "shipped" if args.status_batch_period is None else args.status_batch_period,
            "tracing": args.tracing,
        },
    )
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        set_tracing(args.tracing, Path(tmp))
        async with fleet(Path(tmp), projects=["bench/web"], cells=[("lhr-1", "LHR")]) as f:
            extra = [f"--workers={args.workers}"] if args.workers else []
            if args.status_batch_period is not None:
                extra.append(f"--status-batch-period={args.status_batch_period}")
            mgr = management(f, *extra)
            async with aiohttp.ClientSession() as session:
                await mgr.wait_ready(session)
                for i in range(args.wds):
                    await f.request(
                        "web", "POST", wd_path("default"), workload_deployment(f"wd-{i:03d}", "LHR", REPLICAS)
                    )
                namespace, owners = await stand_in_for_the_cell(f, args.wds)
                watcher = Watcher()
                project, cell = f.servers["web"].url, f.servers["lhr-1"].url
                watches = [
                    ("project", "instance", project + instances_path("default")),
                    ("project", "wd", project + wd_path("default")),
                    ("cell", "instance", cell + instances_path(namespace)),
                    ("cell", "wd", cell + wd_path(namespace)),
                ]
                conn, child_conn = multiprocessing.Pipe()
                follower = multiprocessing.get_context("spawn").Process(
                    target=follow, args=(watches, child_conn), daemon=True
                )
                follower.start()

                def dump() -> list[Record]:
                    conn.send("dump")
                    taken: list[Record] = conn.recv()
                    return taken

                await asyncio.sleep(2)  # the watches start, initial projections settle
                await asyncio.to_thread(dump)
                for round_, rate in enumerate(rates):
                    watcher.clear()
                    cpu, reconciled = cpu_seconds(mgr.pid), await mgr.reconciles(session)
                    stages = await histograms(session, mgr)
                    await drive(f, namespace, owners, watcher, rate, args.seconds, round_)
                    await asyncio.sleep(2)  # let the last changes arrive
                    watcher.add(await asyncio.to_thread(dump))
                    changes = rate * args.seconds  # per kind: Instance statuses, and as many copy statuses
                    rep.add(f"{rate:.0f}/s: manager CPU per change", (cpu_seconds(mgr.pid) - cpu) / changes * 1000,
                            "ms", "", "an Instance's and a copy's status")  # fmt: skip
                    for name, n in sorted((await mgr.reconciles(session)).items()):
                        if name.endswith("projector"):
                            per_change = (n - reconciled.get(name, 0)) / changes
                            rep.add(f"{rate:.0f}/s: {name} reconciles per change", per_change, "reconciles")
                    stage_figures(rep, rate, stages, await histograms(session, mgr))
                    figures(rep, rate, watcher)
                conn.send("stop")
                await asyncio.to_thread(follower.join, 10)
            mgr.proc.stop()
    rep.write()


# the manager's own histograms of the stages in between (name, label that selects the series)
STAGES = (
    ("workqueue_queue_duration_seconds", "name", "queue wait"),
    ("controller_runtime_reconcile_time_seconds", "controller", "reconcile"),
)
Histograms = dict[tuple[str, str], tuple[float, float, float]]  # (metric, series) -> (count, sum, count <= 0.1 s)


async def histograms(session: aiohttp.ClientSession, mgr: Manager) -> Histograms:
    """Count, sum and count within 100 ms of the projectors' queue waits and reconciles and
    of the manager's write requests to the project (`web`: its status writes)."""
    async with session.get(f"http://127.0.0.1:{mgr.metrics_port}/metrics") as resp:
        text = await resp.text()
    found: dict[tuple[str, str], list[float]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition("{")
        metric = name.removesuffix("_count").removesuffix("_sum").removesuffix("_bucket")
        labels = dict(kv.split("=", 1) for kv in rest.rpartition("}")[0].replace('"', "").split(",") if "=" in kv)
        if metric == "rest_client_request_duration_seconds":
            if labels.get("cluster") != "web" or labels.get("verb") != "patch":
                continue
            series = "web patch"
        else:
            key = next((k for m, k, _ in STAGES if m == metric), None)
            series = labels.get(key or "", "")
            if not series.endswith("projector"):
                continue
        entry = found.setdefault((metric, series), [0.0, 0.0, 0.0])
        value = float(line.rsplit(" ", 1)[1])
        if name.endswith("_count"):
            entry[0] += value
        elif name.endswith("_sum"):
            entry[1] += value
        elif name.endswith("_bucket") and labels.get("le") == "0.1":
            entry[2] += value
    return {k: (v[0], v[1], v[2]) for k, v in found.items()}


def stage_figures(rep: Report, rate: float, before: Histograms, after: Histograms) -> None:
    """Mean and the share over 100 ms of each stage, over this rate's window."""
    labels = {m: what for m, _, what in STAGES} | {"rest_client_request_duration_seconds": "write request"}
    for (metric, series), (count, total, within) in sorted(after.items()):
        was = before.get((metric, series), (0.0, 0.0, 0.0))
        n = count - was[0]
        if n <= 0:
            continue
        over = (n - (within - was[2])) / n * 100
        rep.add(f"{rate:.0f}/s: {series} {labels[metric]} mean", (total - was[1]) / n * 1000, "ms", "",
                f"{over:.1f}% over 100 ms, {n:.0f} observed")  # fmt: skip


def figures(rep: Report, rate: float, watcher: Watcher) -> None:
    for p in (50, 99):
        rep.add(f"{rate:.0f}/s: cell write answered p{p}", percentile(watcher.answered, p) * 1000, "ms", "",
                f"{len(watcher.answered)} writes: the stand-in cell's own time")  # fmt: skip
    for start, since in (("write", "cell write"), ("watch", "cell watch")):
        for kind, what in (("instance", "Instance projection"), ("wd", "project WD status")):
            values = watcher.latency.get((kind, start), [])
            for p in (50, 95, 99):
                target = "<= 250 ms" if p == 99 and rate == 200 and start == "write" else ""
                rep.add(f"{rate:.0f}/s: {since} -> {what} p{p}", percentile(values, p) * 1000, "ms", target,
                        f"{len(values)} changes seen")  # fmt: skip


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds at each rate")
    parser.add_argument("--rates", default="50,200,500", help="changes per second, comma-separated")
    parser.add_argument("--workers", type=int, default=0, help="the manager's --workers (default: as shipped)")
    parser.add_argument("--status-batch-period", type=float, default=None,
                        help="the manager's --status-batch-period (default: as shipped)")  # fmt: skip
    parser.add_argument("--tracing", choices=TRACING_MODES, default="off", help="the manager's tracing (cost figures)")
    parser.add_argument("--smoke", action="store_true", help="4 WDs, 2 s at 50/s, to check the benchmark runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.wds, args.seconds, args.rates = 4, 2.0, "50"
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
