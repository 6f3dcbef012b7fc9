"""Benchmark: a template change rolled out across cells. W WorkloadDeployments (default
500, 1 replica each; every other one in DFW, served by two cells, the rest in LHR) run
Ready Instances (Pods through the PodRuntime gate and the embedded kubelet stand-in); then
every WD's template gets a new `compute.datumapis.com/restartedAt`, which changes its
template hash, and each cell recreates its Instances. Measured: time from the change until
every project WD reports all replicas updated and ready at the new generation. Every
server and manager is its own process.

Run: python bench/bench_rollout.py [--wds W] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from harness import Fleet, cell_manager, fleet, management, report, wd_path, workload_deployment

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))


async def all_rolled(f: Fleet, wds: int, generation: int) -> int:
    """How many project WDs are fully updated and ready at `generation`."""
    done = 0
    for wd in await f.list("web", wd_path("default")):
        s = wd.get("status") or {}
        if (
            wd["metadata"].get("generation") == generation
            and s.get("observedGeneration") == generation
            and s.get("updatedReplicas") == s.get("readyReplicas") == s.get("desiredReplicas") == 1
        ):
            done += 1
    return done


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_rollout", {"wds": args.wds, "cells": len(CELLS)})
    with tempfile.TemporaryDirectory(prefix="bench-rollout-") as tmp:
        async with fleet(Path(tmp), projects=["bench/web"], cells=CELLS) as f:
            managers = [management(f, "--workers=8")]
            managers += [cell_manager(f, c, "--feature-gates=PodRuntime=true", "--workers=8") for c, _ in CELLS]
            async with aiohttp.ClientSession() as session:
                for m in managers:
                    await m.wait_ready(session)
            started = time.perf_counter()
            sem = asyncio.Semaphore(64)

            async def create(i: int) -> None:
                async with sem:
                    city = "DFW" if i % 2 == 0 else "LHR"
                    await f.request("web", "POST", wd_path("default"), workload_deployment(f"wd-{i:04d}", city, 1))

            await asyncio.gather(*(create(i) for i in range(args.wds)))
            while await all_rolled(f, args.wds, 1) < args.wds:
                for m in managers:
                    m.proc.check_alive()
                await asyncio.sleep(0.5)
            rep.add("first rollout: create until every WD is ready", time.perf_counter() - started, "s")

            async def restart(i: int) -> None:
                patch = {
                    "spec": {
                        "template": {
                            "metadata": {"annotations": {"compute.datumapis.com/restartedAt": "2026-11-22T00:00:00Z"}}
                        }
                    }
                }
                async with sem:
                    await f.request(
                        "web",
                        "PATCH",
                        wd_path("default", f"wd-{i:04d}"),
                        patch,
                        content_type="application/merge-patch+json",
                    )

            started = time.perf_counter()
            await asyncio.gather(*(restart(i) for i in range(args.wds)))
            while (done := await all_rolled(f, args.wds, 2)) < args.wds:
                for m in managers:
                    m.proc.check_alive()
                await asyncio.sleep(0.5)
            elapsed = time.perf_counter() - started
            rep.add("template change until every WD is updated and ready", elapsed, "s", "", f"{done} WDs")
            rep.add("WDs rolled per second", args.wds / elapsed, "WD/s")
            for m in managers:
                m.proc.stop()
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="8 WDs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.wds = 8
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
