"""Benchmark: fan-out convergence against the API servers' own write capacity.

P projects x W WorkloadDeployments (default 10 x 500) are created at once in the project
control planes; C cells (default 3: dfw-1 and dfw-2 serve DFW, lhr-1 serves LHR) receive
them, every other WD going to DFW (2 copies) and the rest to LHR (1 copy). Every server
and every manager is its own process: one management-mode `federation-manager run` and one
cell-mode `run` per cell. Measured:

- time from the first create until every copy exists in its cells and every project WD's
  status reflects its cells (`status.observedGeneration == metadata.generation`, which the
  projector only sets once every target cell has observed the spec);
- the management manager's writes per converged WD, against the ideal minimum: one
  finalizer patch, one copy per target cell, one status write (1 + copies + 1; downstream
  namespaces, one per project namespace and cell, are amortised and counted apart, as are
  the user-facing Events);
- the achieved write rate against the servers' capacity for the same minimal writes,
  measured in the same run by a raw aiohttp client (concurrency 64) after the managers
  have stopped: copy creates into the cells, finalizer patches and status applies on the
  project WDs.

WDs have 0 replicas: this measures federation (placement, copies, status), not Instance
churn (bench_rollout.py does that).

Run: python bench/bench_fanout.py [--projects P] [--wds W] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from harness import (
    Fleet,
    cell_manager,
    fleet,
    management,
    report,
    wd_path,
    workload_deployment,
)

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))


def city_of(i: int) -> str:
    return "DFW" if i % 2 == 0 else "LHR"


async def create_all(f: Fleet, projects: list[str], wds: int, concurrency: int = 64) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def create(project: str, i: int) -> None:
        async with sem:
            await f.request(project, "POST", wd_path("default"), workload_deployment(f"wd-{i:05d}", city_of(i), 0))

    await asyncio.gather(*(create(p, i) for p in projects for i in range(wds)))


async def converged(f: Fleet, projects: list[str], wds: int) -> bool:
    expected_copies = sum(2 if city_of(i) == "DFW" else 1 for i in range(wds)) * len(projects)
    copies = 0
    for cell, _city in CELLS:
        copies += len(await f.list(cell, wd_path()))
    if copies < expected_copies:
        return False
    for project in projects:
        for wd in await f.list(project, wd_path("default")):
            if (wd.get("status") or {}).get("observedGeneration") != wd["metadata"].get("generation"):
                return False
    return True


def attributed(writes: dict[str, dict[str, int]], projects: list[str]) -> tuple[int, int]:
    """(downstream namespace writes, Event writes in the projects): only the management
    manager writes either, so the servers' counters attribute them exactly."""
    namespaces = sum(
        n
        for cluster, per in writes.items()
        if cluster not in projects
        for resource, n in per.items()
        if resource == "namespaces"
    )
    events = sum(
        n
        for cluster, per in writes.items()
        if cluster in projects
        for resource, n in per.items()
        if resource.startswith("events")
    )
    return namespaces, events


async def raw_capacity(f: Fleet, projects: list[str], wds: int, total: int, concurrency: int = 64) -> float:
    """Writes/s the servers take from a raw client issuing the same kinds of writes."""
    sem = asyncio.Semaphore(concurrency)
    cells = [c for c, _ in CELLS]
    for cell in cells:
        await f.apply(
            cell,
            "/api/v1/namespaces/bench-raw",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-raw"}},
        )

    async def one(i: int) -> None:
        async with sem:
            kind = i % 3
            if kind == 0:
                cell = cells[i % len(cells)]
                await f.request(
                    cell, "POST", wd_path("bench-raw"), workload_deployment(f"raw-{i:06d}", "DFW", 0, "bench-raw")
                )
            else:
                project = projects[i % len(projects)]
                name = f"wd-{(i // 3) % wds:05d}"
                if kind == 1:
                    await f.request(
                        project,
                        "PATCH",
                        wd_path("default", name),
                        {"metadata": {"annotations": {"bench/raw": str(i)}}},
                        content_type="application/merge-patch+json",
                    )
                else:
                    await f.request(
                        project,
                        "PATCH",
                        wd_path("default", name, "status"),
                        {"status": {"replicas": i % 7}},
                        content_type="application/merge-patch+json",
                    )

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(total)))
    return total / (time.perf_counter() - started)


async def main(args: argparse.Namespace) -> None:
    projects = [f"p{i:02d}" for i in range(args.projects)]
    rep = report("bench_fanout", {"projects": args.projects, "wds_per_project": args.wds, "cells": len(CELLS)})
    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        async with fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=CELLS) as f:
            cells = [cell_manager(f, c) for c, _ in CELLS]
            mgr = management(f, f"--workers={args.workers}")
            managers = [mgr, *cells]
            async with aiohttp.ClientSession() as session:
                for m in managers:
                    await m.wait_ready(session)
            await f.reset_counters()
            started = time.perf_counter()
            await create_all(f, projects, args.wds)
            created = time.perf_counter() - started
            while not await converged(f, projects, args.wds):
                for m in managers:
                    m.proc.check_alive()
                await asyncio.sleep(0.5)
            elapsed = time.perf_counter() - started
            writes = await f.writes_by_resource()
            async with aiohttp.ClientSession() as session:
                sent = await mgr.write_requests(session)
            for m in managers:
                m.proc.stop()
            total_wds = args.projects * args.wds
            copies = sum(2 if city_of(i) == "DFW" else 1 for i in range(args.wds)) * args.projects
            namespaces, events = attributed(writes, projects)
            core = sent - namespaces - events
            ideal = 2 * total_wds + copies
            rep.add("WDs federated", total_wds, "WDs")
            rep.add("copies in cells", copies, "copies")
            rep.add("time to create the project WDs (raw client)", created, "s")
            rep.add("time until every copy exists and every status reflects its cells", elapsed, "s")
            rep.add("converged WDs per second", total_wds / elapsed, "WD/s")
            rep.add(
                "manager writes per converged WD (finalizer, copies, status)",
                core / total_wds,
                "writes",
                f"ideal {ideal / total_wds:.2f}",
            )
            rep.add("manager writes / ideal", core / ideal, "x", "<= 1.1x")
            # where the writes above the ideal go: the projects are written by the management
            # manager alone, so their counters split its writes exactly; the rest went to cells
            wd_res = "workloaddeployments.compute.datumapis.com"
            finalizers = sum(writes.get(p, {}).get(wd_res, 0) for p in projects) - total_wds  # less our creates
            statuses = sum(writes.get(p, {}).get(f"{wd_res}/status", 0) for p in projects)
            rep.add("  finalizer writes per project WD", finalizers / total_wds, "writes", "ideal 1")
            rep.add("  status writes per project WD", statuses / total_wds, "writes", "ideal 1")
            rep.add("  writes per copy in the cells", (core - finalizers - statuses) / copies, "writes", "ideal 1")
            rep.add(
                "downstream namespace writes (amortised)", namespaces, "writes", f"ideal {len(projects) * len(CELLS)}"
            )
            rep.add("Events written", events, "events")
            achieved = (core + namespaces) / elapsed
            capacity = await raw_capacity(f, projects, args.wds, max(3000, 3 * (core // 3)))
            rep.add("achieved manager write rate", achieved, "writes/s")
            rep.add("servers' capacity for the same writes (raw aiohttp, c=64)", capacity, "writes/s")
            rep.add("achieved / capacity", achieved / capacity, "x", ">= 0.5x")
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--wds", type=int, default=500, help="WorkloadDeployments per project")
    parser.add_argument("--workers", type=int, default=8, help="workers per management controller")
    parser.add_argument("--smoke", action="store_true", help="2 projects x 20 WDs, to check the benchmark runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.projects, args.wds = 2, 20
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
