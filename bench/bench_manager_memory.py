"""Benchmark: what the manager's caches cost, and how long a cold start takes.

N project WorkloadDeployments (default 10k and 100k, over 10 projects) are created before
the management-mode manager starts; their city has no cell, so nothing is federated and
every cached object is a project WD (plus one namespace per project). Measured:

- startup time: from `federation-manager run` until every engaged cluster is ready (all
  its views synced, per `/readyz?verbose`);
- the manager's CPU-seconds from start until idle (its queues empty), per cached object;
- the manager's RSS once it is idle, minus the RSS of the same manager over empty projects,
  per cached object, next to a plain-dict baseline (the same objects decoded into dicts in
  a fresh interpreter).

Targets: <= 4 KiB RSS per cached object at 100k; synced from cold in <= 20 s at 100k.

Run: python bench/bench_manager_memory.py [--objects 10000,100000] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from harness import (
    REPO,
    Fleet,
    Report,
    cpu_seconds,
    fleet,
    management,
    report,
    rss_bytes,
    wd_path,
    workload_deployment,
)

PROJECTS = 10
BASELINE = r"""
import gc, os, sys, orjson
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
data = open(sys.argv[1], "rb").read()
gc.collect(); before = rss()
objects = [orjson.loads(line) for line in data.splitlines()]
gc.collect(); print(rss() - before, len(objects))
"""


async def fill(f: Fleet, projects: list[str], total: int) -> bytes:
    """Create `total` WDs (the federator's finalizer and cell namespace preset, so the manager
    finds them already claimed), returning one stored object per line (for the dict baseline)."""
    sem = asyncio.Semaphore(64)
    lines: list[bytes] = []
    # the federator's claim is its finalizer with the cell namespace it names (`ns-<uid>`)
    claimed = {
        p: f"ns-{(await f.request(p, 'GET', '/api/v1/namespaces/default'))['metadata']['uid']}" for p in projects
    }

    async def create(project: str, i: int) -> None:
        wd = workload_deployment(f"wd-{i:06d}", "NOWHERE", 1)
        wd["metadata"]["finalizers"] = ["compute.datumapis.com/federator"]
        wd["metadata"].setdefault("annotations", {})["compute.datumapis.com/federation-namespace"] = claimed[project]
        async with sem:
            lines.append(orjson.dumps(await f.request(project, "POST", wd_path("default"), wd)))

    per = total // len(projects)
    await asyncio.gather(*(create(p, i) for p in projects for i in range(per)))
    return b"\n".join(lines)


async def run_manager(f: Fleet, session: aiohttp.ClientSession, expected: int) -> tuple[float, int, int, float]:
    """(seconds until every engaged cluster is ready, RSS then, RSS once idle, CPU-seconds until idle)."""
    mgr = management(f, "--workers=8")
    started = time.monotonic()
    await mgr.wait_ready(session)
    while True:
        async with session.get(f"http://127.0.0.1:{mgr.health_port}/readyz?verbose") as resp:
            text = await resp.text()
        if text.count(": ready (") >= expected:
            break
        mgr.proc.check_alive()
        await asyncio.sleep(0.05)
    synced = time.monotonic() - started
    synced_rss = rss_bytes(mgr.pid)
    print(f"  ({expected} clusters synced after {synced:.1f} s; waiting until idle)", file=sys.stderr, flush=True)
    # idle: the projector's first status writes done, queues empty
    last, stable = -1.0, 0
    while stable < 6:
        depth = await mgr.metric(session, "workqueue_depth")
        total = await mgr.metric(session, "controller_runtime_reconcile_total")
        stable = stable + 1 if depth == 0 and total == last else 0
        last = total
        await asyncio.sleep(0.5)
    rss = rss_bytes(mgr.pid)
    cpu = cpu_seconds(mgr.pid)
    mgr.proc.stop()
    return synced, synced_rss, rss, cpu


async def measure(n: int, rep: Report) -> None:
    projects = [f"p{i:02d}" for i in range(PROJECTS)]
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        async with (
            fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=()) as f,
            aiohttp.ClientSession() as session,
        ):
            _, _, empty_rss, empty_cpu = await run_manager(f, session, PROJECTS)
            dump = await fill(f, projects, n)
            synced, synced_rss, rss, cpu = await run_manager(f, session, PROJECTS)
            data = Path(tmp) / "objects.jsonl"
            data.write_bytes(dump)
            out = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-c", BASELINE, str(data)],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            dict_bytes, count = (int(x) for x in out.stdout.split())
            json_per = len(dump) / count
            per_object = (rss - empty_rss) / n
            rep.add(
                f"{n:,} objects: startup until every cluster's views are synced",
                synced,
                "s",
                "<= 20 s" if n >= 100_000 else "",
            )
            rep.add(f"{n:,} objects: manager CPU from start until idle", cpu, "s", "", f"{empty_cpu:.2f} s when empty")
            rep.add(f"{n:,} objects: manager CPU per cached object", (cpu - empty_cpu) / n * 1e6, "us")
            rep.add(
                f"{n:,} objects: manager RSS per cached object",
                per_object,
                "B",
                "<= 4096 B" if n >= 100_000 else "",
                f"{per_object / json_per:.2f}x the object's JSON",
            )
            rep.add(
                f"{n:,} objects: of it, when the caches had synced",
                (synced_rss - empty_rss) / n,
                "B",
                "",
                "before the first reconciles: the caches alone, and what their sync left",
            )
            rep.add(
                f"{n:,} objects: plain dict per object (baseline)",
                dict_bytes / count,
                "B",
                "",
                f"{dict_bytes / count / json_per:.2f}x JSON; manager/dict {per_object / (dict_bytes / count):.2f}x",
            )


async def main(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.objects.split(",")]
    rep = report("bench_manager_memory", {"objects": args.objects, "projects": PROJECTS})
    for n in sizes:
        await measure(n, rep)
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", default="10000,100000", help="cached object counts, comma-separated")
    parser.add_argument("--smoke", action="store_true", help="2,000 objects")
    args = parser.parse_args(argv)
    if args.smoke:
        args.objects = "2000"
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
