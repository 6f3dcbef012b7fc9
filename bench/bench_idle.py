"""Benchmark: the cost of doing nothing. After a federation has converged (P projects x W
WorkloadDeployments over 3 cells, management-mode and cell-mode managers each in its own
process), count the write requests every server receives and the CPU every manager uses
over an idle window (default 60 s). Targets: zero writes, under 1% of a core.

Run: python bench/bench_idle.py [--projects P] [--wds W] [--window S] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from harness import cell_manager, cpu_seconds, fleet, management, report, wd_path, workload_deployment

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))


async def main(args: argparse.Namespace) -> None:
    projects = [f"p{i:02d}" for i in range(args.projects)]
    rep = report("bench_idle", {"projects": args.projects, "wds_per_project": args.wds, "window_s": args.window})
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        async with fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=CELLS) as f:
            managers = [
                management(f, "--workers=8"),
                *(cell_manager(f, c, "--feature-gates=PodRuntime=true") for c, _ in CELLS),
            ]
            async with aiohttp.ClientSession() as session:
                for m in managers:
                    await m.wait_ready(session)
                for project in projects:
                    for i in range(args.wds):
                        city = "DFW" if i % 2 == 0 else "LHR"
                        await f.request(
                            project, "POST", wd_path("default"), workload_deployment(f"wd-{i:04d}", city, 1)
                        )
                # converged: no write anywhere for a quiet spell
                quiet_since, last = time.monotonic(), -1
                while time.monotonic() - quiet_since < args.quiet:
                    now = await f.total_writes()
                    if now != last:
                        quiet_since, last = time.monotonic(), now
                    for m in managers:
                        m.proc.check_alive()
                    await asyncio.sleep(0.5)
                before_writes = await f.writes_by_resource()
                cpu_before = {m.name: cpu_seconds(m.pid) for m in managers}
                await asyncio.sleep(args.window)
                cpu_after = {m.name: cpu_seconds(m.pid) for m in managers}
                after_writes = await f.writes_by_resource()
                changed = {
                    f"{cluster}/{resource}": n - before_writes.get(cluster, {}).get(resource, 0)
                    for cluster, per in after_writes.items()
                    for resource, n in per.items()
                    if n != before_writes.get(cluster, {}).get(resource, 0)
                }
                rep.add(
                    "write requests over the idle window (all servers)",
                    sum(changed.values()),
                    "writes",
                    "0",
                    ", ".join(f"{k}+{v}" for k, v in sorted(changed.items())) or "none",
                )
                for m in managers:
                    share = (cpu_after[m.name] - cpu_before[m.name]) / args.window * 100
                    rep.add(f"{m.name} CPU while idle", share, "% core", "< 1%")
            for m in managers:
                m.proc.stop()
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=5)
    parser.add_argument("--wds", type=int, default=100, help="WorkloadDeployments per project (1 replica each)")
    parser.add_argument("--window", type=float, default=60.0, help="idle window, seconds")
    parser.add_argument("--quiet", type=float, default=5.0, help="seconds without writes that count as converged")
    parser.add_argument("--smoke", action="store_true", help="1 project x 6 WDs, 3 s window")
    args = parser.parse_args(argv)
    if args.smoke:
        args.projects, args.wds, args.window, args.quiet = 1, 6, 3.0, 2.0
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
