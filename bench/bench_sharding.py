"""Benchmark: management mode sharded over 1, 2 and 3 replicas (`run --sharding`, DESIGN.md
§5) against one unsharded replica, on the fan-out workload (P projects x W WorkloadDeployments
of 1 replica into one DFW cell; no cell manager: the copies are the work). Per run: fan-out
wall time (first create -> every copy written), CPU-seconds (from every replica ready to
the copies and labels converged, every project WD's status written, and --settle seconds
more: the same work the write count covers) and peak RSS of each replica, and manager writes
per WD (the servers' write counters less the benchmark's own creates); and, over the same
window, each replica's reconciles and API requests (its /metrics) and wake-ups (voluntary
context switches: event-loop waits that slept), the work set against that CPU.
Then, with 2 shards converged, the time until every WD is labelled as the 3-shard ring says
after a third joins (drain, acknowledgement, assignment), and the time until the 2
survivors own everything after one is SIGKILLed (its Lease must expire, turn uncertain and
be acquired: 1.25 lease durations after its last renewal; the lease is --lease seconds here).

Targets (issue 23): per-shard CPU and memory <= 1.2/N of one replica's; a dead shard's WDs
handed over within 2x the lease duration; writes per WD unchanged but for the label writes.
On a 2-core machine the API servers share the cores with the replicas, so wall time cannot
scale with N here; the per-replica CPU ratio is what predicts more cores. Each shard caches
the project WDs, Workloads and copies labelled for it and runs every controller for them;
the sharder replica also the other shards' WDs and Workloads, slim (its FLEET views,
metadata-only watches: name, labels, owner references), for the assignment, and so takes a
smaller share of the ring (`--sharder-ring-weight`, each shard's, default the product's):
"as the ring says" is the ring of the sharder elected then. The notes name the sharder replica.

With --cold N: a cold start per shard count instead of (before) the fan-out: N project WDs
over --projects projects, created before any replica starts, already labelled as the ring
of that run's shards says with shard-0 the sharder (as after every replica restarted; shard-0
starts 0.5 s before the others, so it is elected) and already federated
(finalizer preset; their city has no cell), written straight into each project server's
data directory, which it restarts from (`seed`). Per run: seconds until every replica is ready
(its views listed and synced), each replica's CPU-seconds and RSS then, and each one's
CPU-seconds at its own readiness (one ready before the last goes on with its share meanwhile). The first status
writes that follow are not waited for (on the shared 2-core machine they outlasted 300 s
at 10k). The issue's size is 100k; a reduced N is what fits here.

Run: python bench/bench_sharding.py [--projects P] [--wds W] [--lease S] [--cold N] [--create-rate R] [--shards 1,2,3]
[--no-unsharded] [--sharder-ring-weight W] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from harness import (
    REPO,
    Fleet,
    Manager,
    cpu_seconds,
    fleet,
    report,
    rss_bytes,
    spawn,
    start_manager,
    wakeups,
    wd_path,
    workload_deployment,
)

sys.path.insert(0, str(REPO))
from federation.api.constants import Label
from federation.fleet.sharding import sharder_ring, wd_hash_key
from federation.settings import ManagerSettings
from mcruntime.sharding import HashRing

CELLS = (("dfw-1", "DFW"),)


def lease_flags(lease: float) -> list[str]:
    return [f"--leader-election-lease-duration={lease}", f"--leader-election-renew-deadline={lease * 2 / 3:.2f}",
            f"--leader-election-retry-period={lease / 6:.2f}", "--leader-election-namespace=default"]  # fmt: skip


def shard(f: Fleet, name: str, args: argparse.Namespace) -> Manager:
    kubeconfig = f"--kubeconfig={f.servers['management'].kubeconfig}"
    flags = ["--enable-management-controllers", "--sharding", f"--shard-id={name}", kubeconfig, "--workers=8"]
    if args.sharder_ring_weight is not None:  # else the product's default, derived from the number of shards
        flags.append(f"--sharder-ring-weight={args.sharder_ring_weight}")
    return start_manager(name, f.workdir, *flags, *lease_flags(args.lease))


def unsharded(f: Fleet) -> Manager:
    kubeconfig = f"--kubeconfig={f.servers['management'].kubeconfig}"
    return start_manager("replica", f.workdir, "--enable-management-controllers", "--workers=8", kubeconfig)


async def federation_writes(f: Fleet, projects: list[str]) -> int:
    """Writes the projects and the cell received (not management's: Lease renewals)."""
    return sum(await asyncio.gather(*(f.writes(c) for c in [*projects, *(c for c, _ in CELLS)])))


async def copies(f: Fleet) -> int:
    return len(await f.list("dfw-1", wd_path()))


async def statuses(f: Fleet, projects: list[str]) -> int:
    """Project WDs with a status written (conditions): with no cell manager the projector
    writes it once its delay for unobserved copies is over (AwaitingPropagation)."""
    written = 0
    for project in projects:
        written += sum(
            1 for wd in await f.list(project, wd_path("default")) if (wd.get("status") or {}).get("conditions")
        )
    return written


async def as_the_ring_says(f: Fleet, projects: list[str], shards: list[str], total: int, weight: float | None) -> bool:
    """Every WD labelled as the ring of the sharder elected now says (its own share weighted)."""
    ring, seen = sharder_ring(shards, (await _sharder(f)).removeprefix("; sharder "), weight), 0
    for project in projects:
        for wd in await f.list(project, wd_path("default")):
            labels: dict[str, Any] = wd["metadata"].get("labels") or {}
            if labels.get(Label.SHARD) != ring.owner(wd_hash_key(project, wd)) or Label.DRAIN in labels:
                return False
            seen += 1
    return seen == total


async def create(f: Fleet, projects: list[str], wds: int, rate: float) -> None:
    """`wds` WDs in each project: all at once, or `rate` per second (one per project at a time)."""

    def post(p: str, i: int) -> Any:
        return f.request(p, "POST", wd_path("default"), workload_deployment(f"wd-{i:05d}", "DFW", 1))

    if not rate:
        await asyncio.gather(*(post(p, i) for p in projects for i in range(wds)))
        return
    started = time.monotonic()
    for i in range(wds):
        await asyncio.gather(*(post(p, i) for p in projects))
        await asyncio.sleep(max(0.0, started + (i + 1) * len(projects) / rate - time.monotonic()))


async def until(check: Any, within: float, managers: list[Manager], peaks: dict[str, int]) -> float:
    """Seconds until `check()` holds, sampling each replica's RSS meanwhile."""
    started = time.monotonic()
    while not await check():
        for m in managers:
            m.proc.check_alive()
            peaks[m.name] = max(peaks.get(m.name, 0), rss_bytes(m.pid))
        if time.monotonic() - started > within:
            raise RuntimeError(f"not done within {within}s")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def fan_out(args: argparse.Namespace, n: int | None, rep: Any) -> None:
    """One fleet, `n` shards (None: one unsharded replica), W x P WDs created at once."""
    projects = [f"p{i:02d}" for i in range(args.projects)]
    total = args.projects * args.wds
    label = f"{n} shard{'s' if n != 1 else ''}" if n else "1 replica, unsharded"
    with tempfile.TemporaryDirectory(prefix="bench-sharding-") as tmp:
        async with fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=CELLS) as f:
            names = [f"shard-{i}" for i in range(n)] if n else []
            managers = [shard(f, name, args) for name in names] if n else [unsharded(f)]
            async with aiohttp.ClientSession() as session:
                for m in managers:
                    await m.wait_ready(session)
            peaks: dict[str, int] = {}
            if n:
                await until(lambda: _leases(f, names), 60, managers, peaks)
            # the counters are read before the CPU window opens (and after it closes): a
            # reading costs a replica ~15 ms of CPU (two /metrics scrapes), as much for a shard as for the
            # unsharded replica, and is the benchmark's doing, not the replica's work
            async with aiohttp.ClientSession() as session:
                work0 = {m.name: await m.work(session) for m in managers}
            cpu0 = {m.name: cpu_seconds(m.pid) for m in managers}
            woke0 = {m.name: wakeups(m.pid) for m in managers}
            writes0 = await federation_writes(f, projects)
            started = time.monotonic()
            await create(f, projects, args.wds, args.create_rate)
            await until(lambda: _equals(copies(f), total), args.timeout, managers, peaks)
            wall = time.monotonic() - started
            if n:
                weight = args.sharder_ring_weight
                await until(lambda: as_the_ring_says(f, projects, names, total, weight), args.timeout, managers, peaks)
            if args.metrics:
                await save_metrics(args.metrics, label, managers)
            # every status written, then the settle: a fixed wait alone ended the window
            # before a loaded replica's last status writes (2.6 of its 3 writes per WD)
            await until(lambda: _equals(statuses(f, projects), total), args.timeout, managers, peaks)
            await asyncio.sleep(args.settle)
            if args.metrics:
                await save_metrics(args.metrics, f"{label} settled", managers)
            # CPU over the same work the writes count: read when the copies were there, it
            # missed the status writes that follow, a share that varied from run to run
            cpu = {m.name: cpu_seconds(m.pid) - cpu0[m.name] for m in managers}
            woke = {m.name: wakeups(m.pid) - woke0[m.name] for m in managers}
            async with aiohttp.ClientSession() as session:
                work = {m.name: await m.work(session) for m in managers}
            writes = await federation_writes(f, projects) - writes0 - total
            sharder = await _sharder(f) if n else ""
            rep.add(f"{label}: fan-out wall time ({total} WDs)", wall, "s")
            rep.add(f"{label}: CPU-seconds, busiest replica", max(cpu.values()), "CPU-s", "",
                    _each(cpu, "{:.2f}") + sharder)  # fmt: skip
            rep.add(f"{label}: CPU-seconds, all replicas", sum(cpu.values()), "CPU-s")
            # the work itself, to set against the CPU: a shard's reconciles and requests
            # scale with its share; its wake-ups (event-loop waits that slept) do not
            reconciles = {k: work[k][0] - work0[k][0] for k in work}
            requests = {k: work[k][1] - work0[k][1] for k in work}
            rep.add(f"{label}: reconciles, all replicas", sum(reconciles.values()), "reconciles", "",
                    _each(reconciles, "{:.0f}"))  # fmt: skip
            rep.add(f"{label}: API requests, all replicas", sum(requests.values()), "requests", "",
                    _each(requests, "{:.0f}"))  # fmt: skip
            rep.add(f"{label}: wake-ups (loop sleeps), all replicas", sum(woke.values()), "wake-ups",
                    "", _each({k: float(v) for k, v in woke.items()}, "{:.0f}"))  # fmt: skip
            rep.add(f"{label}: peak RSS, largest replica", max(peaks.values(), default=0) / 2**20, "MiB", "",
                    _each({k: v / 2**20 for k, v in peaks.items()}, "{:.0f}") + sharder)  # fmt: skip
            rep.add(f"{label}: manager writes per WD (projects and cell)", writes / total, "writes/WD", "",
                    "sharded: +1 label write per WD assigned")  # fmt: skip
            if n == 2:
                await rebalance(f, args, projects, names, total, managers, rep)
            for m in managers:
                m.proc.stop()


async def rebalance(f: Fleet, args: argparse.Namespace, projects: list[str], names: list[str], total: int,
                    managers: list[Manager], rep: Any) -> None:  # fmt: skip
    peaks: dict[str, int] = {}
    third = shard(f, "shard-2", args)
    managers.append(third)
    started = time.monotonic()
    joined = await until(lambda: as_the_ring_says(f, projects, [*names, "shard-2"], total,
                                                       args.sharder_ring_weight), args.timeout, managers,
                         peaks)  # fmt: skip
    rep.add("rebalance after a third shard joins (process start included)", joined, "s",
            "", f"{time.monotonic() - started:.1f}s")  # fmt: skip
    victim = managers[0]
    victim.proc.proc.send_signal(signal.SIGKILL)
    victim.proc.proc.wait()
    killed = time.monotonic()
    survivors = [m for m in managers if m is not victim]
    acquired = await until(lambda: _acquired(f, victim.name), args.timeout, survivors, peaks)
    dead = await until(lambda: as_the_ring_says(f, projects, [m.name for m in survivors], total,
                                                     args.sharder_ring_weight), args.timeout,
                       survivors, peaks)  # fmt: skip
    split = f"lease {args.lease:.0f}s; its Lease acquired after {acquired:.1f}s, WDs relabelled {dead:.1f}s later"
    rep.add("hand-over of a SIGKILLed shard's WDs", time.monotonic() - killed, "s",
            f"<= {2 * args.lease:.0f}s (2x lease)", split)  # fmt: skip


async def cold_start(args: argparse.Namespace, n: int | None, rep: Any) -> None:
    """`args.cold` WDs labelled for `n` shards (None: one unsharded replica), then the replicas start."""
    projects = [f"p{i:02d}" for i in range(args.projects)]
    label = f"{n} shard{'s' if n != 1 else ''}" if n else "1 replica, unsharded"
    names = [f"shard-{i}" for i in range(n)] if n else []
    # labelled as the ring of shard-0 as the sharder says (it starts first, so it is elected)
    ring = sharder_ring(names, "shard-0", args.sharder_ring_weight) if n else None
    with tempfile.TemporaryDirectory(prefix="bench-sharding-cold-") as tmp:
        async with (
            fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=()) as f,
            aiohttp.ClientSession() as session,
        ):
            per = args.cold // len(projects)
            seeded = time.monotonic()
            await asyncio.gather(*(seed(f, Path(tmp), p, per, ring) for p in projects))
            print(f"  ({per * len(projects):,} WDs seeded in {time.monotonic() - seeded:.1f} s)", file=sys.stderr,
                  flush=True)  # fmt: skip
            writes0 = sum(await asyncio.gather(*(f.writes(p) for p in projects)))  # no cell here
            started = time.monotonic()
            managers = [shard(f, name, args) for name in names[:1]] if n else [unsharded(f)]
            if n and n > 1:  # shard-0 first, to be the sharder the WDs were labelled for
                await asyncio.sleep(0.5)
                managers += [shard(f, name, args) for name in names[1:]]
            own: dict[str, float] = {}

            async def own_readiness(m: Manager) -> None:
                await m.wait_ready(session, within=args.timeout)
                await _synced(m, session, len(projects), args.timeout)
                own[m.name] = cpu_seconds(m.pid)

            try:
                await asyncio.gather(*(own_readiness(m) for m in managers))
                ready = time.monotonic() - started
                cpu = {m.name: cpu_seconds(m.pid) for m in managers}
                rss = {m.name: rss_bytes(m.pid) / 2**20 for m in managers}
                sharder = await _sharder(f) if n else ""
                writes = sum(await asyncio.gather(*(f.writes(p) for p in projects))) - writes0
                if args.metrics:
                    await save_metrics(args.metrics, f"cold {label}", managers)
            finally:
                for m in managers:
                    m.proc.stop()
            total = per * len(projects)
            rep.add(f"cold start {total:,} WDs, {label}: until every replica ready", ready, "s")
            rep.add(f"cold start {total:,} WDs, {label}: CPU-seconds until ready, busiest", max(cpu.values()), "CPU-s",
                    "", _each(cpu, "{:.2f}") + sharder)  # fmt: skip
            # a replica ready before the last one goes on with its share meanwhile (an unsharded
            # replica's CPU is read at its own readiness): each one's at its own, too
            rep.add(f"cold start {total:,} WDs, {label}: CPU-seconds at its own readiness, busiest", max(own.values()),
                    "CPU-s", "", _each(own, "{:.2f}") + sharder)  # fmt: skip
            # none expected: every WD is labelled as the ring says already (a write here is a
            # relabelling, e.g. a sharder that decided before the other shards' Leases came)
            rep.add(f"cold start {total:,} WDs, {label}: writes to the projects until ready", writes, "writes")
            rep.add(f"cold start {total:,} WDs, {label}: RSS when ready, largest replica", max(rss.values()), "MiB",
                    "", _each(rss, "{:.0f}") + sharder)  # fmt: skip


def cold_wd(project: str, i: int, ring: HashRing | None) -> dict[str, Any]:
    """The i-th cold-start WD: already claimed by the federator (its finalizer) and, sharded,
    labelled as the ring of that run says."""
    wd = workload_deployment(f"wd-{i:06d}", "NOWHERE", 1)
    wd["metadata"]["finalizers"] = ["compute.datumapis.com/federator"]
    if ring is not None:
        wd["metadata"]["labels"] = {str(Label.SHARD): ring.owner(wd_hash_key(project, wd)) or ""}
    return wd


async def seed(f: Fleet, tmp: Path, project: str, count: int, ring: HashRing | None) -> None:
    """`count` WDs in a project, written straight into a data directory its API server then
    restarts from (same port, so the registered kubeconfig still points at it): one created
    through the API as the template of what the server stores, the others cloned from it
    (own name, uid, resourceVersion, labels), with the server's CRDs and namespaces. POSTing
    100k WDs one by one took minutes per run; this takes seconds. The servers' first
    revision after the restart is above every seeded one (kubeplane/persist.py)."""
    from kubeplane.persist import SQLiteStore  # the bench's own test bed, not the product

    template = await f.request(project, "POST", wd_path("default"), cold_wd(project, 0, ring))
    crds = await f.list(project, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    namespaces = await f.list(project, "/api/v1/namespaces")
    server = f.servers[project]
    port = server.url.rsplit(":", 1)[1]
    data_dir = tmp / f"data-{project}"
    await asyncio.to_thread(server.proc.stop)

    def write() -> None:
        store = SQLiteStore(data_dir)
        rev = 1
        for crd in crds:
            rev += 1
            raw = orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", **crd})
            store.put(("apiextensions.k8s.io", "customresourcedefinitions"), False, "", crd["metadata"]["name"], raw,
                      rev)  # fmt: skip
        for ns in namespaces:
            rev += 1
            raw = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", **ns})
            store.put(("", "namespaces"), False, "", ns["metadata"]["name"], raw, rev)
        store._conn.execute("BEGIN")  # one transaction for the WDs (the server's own writes are one each)
        for i in range(count):
            wd = cold_wd(project, i, ring)
            rev += 1
            meta = {**template["metadata"], "name": wd["metadata"]["name"], "uid": str(uuid.uuid4()),
                    "resourceVersion": str(rev), "labels": wd["metadata"].get("labels") or {}}  # fmt: skip
            store.put(("compute.datumapis.com", "workloaddeployments"), True, "default", meta["name"],
                      orjson.dumps({**template, "metadata": meta}), rev)  # fmt: skip
        store._conn.execute("COMMIT")
        store.set_revision(rev)
        store.close()

    await asyncio.to_thread(write)
    args = ["apiserver", "--port", port, "--kubeconfig", str(server.kubeconfig), "--name", project,
            "--bookmark-interval", "30", "--data-dir", str(data_dir)]  # fmt: skip
    server.proc = spawn(f"apiserver-{project}-seeded", args, f.workdir)
    deadline = time.monotonic() + 300
    while True:
        server.proc.check_alive()
        try:
            async with f.session.get(f"{server.url}/readyz") as resp:
                if resp.status == 200:
                    break
        except aiohttp.ClientError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"apiserver {project} did not restart from its seeded data")
        await asyncio.sleep(0.1)
    served = len(await f.list(project, wd_path("default")))
    if served != count:
        raise RuntimeError(f"apiserver {project} serves {served} WDs after its restart, not the {count} seeded")


async def _synced(m: Manager, session: aiohttp.ClientSession, clusters: int, within: float) -> None:
    """Every engaged cluster's views synced (`/readyz?verbose` names each cluster ready)."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        m.proc.check_alive()
        async with session.get(f"http://127.0.0.1:{m.health_port}/readyz?verbose") as resp:
            if (await resp.text()).count(": ready (") >= clusters:
                return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{m.name}: its clusters not synced within {within}s")


async def save_metrics(directory: Path, label: str, managers: list[Manager]) -> None:
    """Each replica's /metrics (at convergence, and again once settled: the CPU window's end)
    (reconciles per controller, requests per verb, watch events per view), to tell where a
    replica's CPU goes."""
    texts: dict[str, str] = {}
    async with aiohttp.ClientSession() as session:
        for m in managers:
            async with session.get(f"http://127.0.0.1:{m.metrics_port}/metrics") as resp:
                texts[m.name] = await resp.text()

    def write() -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (directory / f"{label.replace(' ', '_').replace(',', '')}-{name}.prom").write_text(text)

    await asyncio.to_thread(write)


async def _sharder(f: Fleet) -> str:
    """The note "; sharder <shard>": who holds the sharder Lease (its identity is `<shard>_<uuid>`)."""
    items = await f.list("management", "/apis/coordination.k8s.io/v1/namespaces/default/leases")
    holders = [(i.get("spec") or {}).get("holderIdentity") or "" for i in items
               if i["metadata"]["name"] == "federation-manager"]  # fmt: skip
    return f"; sharder {holders[0].split('_')[0]}" if holders and holders[0] else ""


async def _acquired(f: Fleet, name: str) -> bool:
    """The shard's Lease is held by another (the sharder acquired it: dead) or released."""
    items = await f.list("management", "/apis/coordination.k8s.io/v1/namespaces/default/leases")
    return any(i["metadata"]["name"] == name and (i.get("spec") or {}).get("holderIdentity") != name for i in items)


async def _leases(f: Fleet, names: list[str]) -> bool:
    items = await f.list("management", "/apis/coordination.k8s.io/v1/namespaces/default/leases")
    held = {(i.get("spec") or {}).get("holderIdentity") for i in items}
    return set(names) <= held


async def _equals(value: Any, want: int) -> bool:
    return bool(await value == want)


def _each(values: dict[str, float], fmt: str) -> str:
    return ", ".join(f"{k} {fmt.format(v)}" for k, v in sorted(values.items()))


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_sharding", {"projects": args.projects, "wds_per_project": args.wds, "lease_s": args.lease,
                                    "shards": args.shards, "cold": args.cold, "create_rate": args.create_rate,
                                    "sharder_ring_weight": args.sharder_ring_weight})  # fmt: skip
    for n in [None, *args.shards] if args.unsharded else args.shards:
        if args.cold:
            await cold_start(args, n, rep)
        else:
            await fan_out(args, n, rep)
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=4)
    parser.add_argument("--wds", type=int, default=500, help="WorkloadDeployments per project (1 replica each)")
    parser.add_argument("--lease", type=float, default=6.0, help="shard and sharder lease duration, seconds")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after convergence before counting writes")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--cold", type=int, default=0, help="a cold start of this many WDs instead of the fan-out")
    parser.add_argument(
        "--create-rate",
        type=float,
        default=0.0,
        help="create the fan-out's WDs at this many per second (default 0: all at once); paced, every replica "
        "idles between events, which shows the CPU per unit of work apart from the load",
    )
    parser.add_argument("--metrics", type=Path, help="save each replica's /metrics at convergence in this directory")
    parser.add_argument("--smoke", action="store_true", help="1 project x 20 WDs, 1 and 2 shards")
    parser.add_argument(
        "--sharder-ring-weight",
        type=float,
        default=ManagerSettings.model_fields["sharder_ring_weight"].default,
        help="each shard's --sharder-ring-weight (default: the product's, derived from the number of shards)",
    )
    parser.add_argument(
        "--shards",
        type=lambda v: [int(n) for n in v.split(",")],
        default=[1, 2, 3],
        help="the shard counts to run, comma-separated (default 1,2,3)",
    )
    parser.add_argument(
        "--no-unsharded",
        dest="unsharded",
        action="store_false",
        help="skip the unsharded replica's run (e.g. while profiling the shards)",
    )
    args = parser.parse_args(argv)
    if args.create_rate < 0:
        parser.error(f"--create-rate: WDs per second cannot be negative, got {args.create_rate}")
    if args.smoke:
        args.projects, args.wds, args.lease, args.settle, args.shards = 1, 20, 3.0, 1.0, [1, 2]
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
