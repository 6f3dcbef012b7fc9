"""Benchmark: engaging and disengaging clusters must not leak. A management-mode manager
(its own process) serves 2 projects and 3 cells; one cell and one project are deregistered
(their ClusterProfiles and Secrets deleted) and registered again, N times (default 200),
each time waiting until the manager has disengaged them and engaged them back ready.
Reported at the start, the middle and the end: the manager's RSS, open sockets and
asyncio tasks (its `mcruntime_asyncio_tasks` metric). Flat is the target.

Run: python bench/bench_churn.py [--cycles N] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import aiohttp
from harness import Manager, fleet, management, open_sockets, report, rss_bytes, wd_path, workload_deployment

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))


async def states(session: aiohttp.ClientSession, mgr: Manager) -> str:
    async with session.get(f"http://127.0.0.1:{mgr.health_port}/readyz?verbose") as resp:
        return await resp.text()


async def wait_for(session: aiohttp.ClientSession, mgr: Manager, present: bool, names: list[str]) -> None:
    for _ in range(2400):
        text = await states(session, mgr)
        if all((f"{n}: ready" in text) == present and (f"{n}:" in text) == present for n in names):
            return
        mgr.proc.check_alive()
        await asyncio.sleep(0.025)
    raise RuntimeError(f"{names} did not become {'ready' if present else 'disengaged'}")


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_churn", {"cycles": args.cycles})
    with tempfile.TemporaryDirectory(prefix="bench-churn-") as tmp:
        async with fleet(Path(tmp), projects=["bench/web", "bench/shop"], cells=CELLS) as f:
            for project in ("web", "shop"):
                for i in range(20):
                    await f.request(project, "POST", wd_path("default"), workload_deployment(f"wd-{i}", "DFW", 0))
            mgr = management(f, "--workers=4")
            async with aiohttp.ClientSession() as session:
                await mgr.wait_ready(session)
                await wait_for(session, mgr, True, ["dfw-1", "dfw-2", "lhr-1", "web", "shop"])

                async def sample(label: str) -> None:
                    await asyncio.sleep(1.0)  # let closed sockets and finished tasks go
                    rep.add(f"{label}: manager RSS", rss_bytes(mgr.pid) / 2**20, "MiB")
                    rep.add(f"{label}: open sockets", open_sockets(mgr.pid), "sockets")
                    rep.add(f"{label}: asyncio tasks", await mgr.metric(session, "mcruntime_asyncio_tasks"), "tasks")

                await sample("start")
                for cycle in range(1, args.cycles + 1):
                    for name in ("dfw-2", "shop"):
                        await f.unregister(name)
                    await wait_for(session, mgr, False, ["dfw-2", "shop"])
                    await f.register()
                    await wait_for(session, mgr, True, ["dfw-2", "shop"])
                    if cycle == args.cycles // 2:
                        await sample(f"after {cycle} cycles")
                await sample(f"after {args.cycles} cycles")
            mgr.proc.stop()
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="4 cycles")
    args = parser.parse_args(argv)
    if args.smoke:
        args.cycles = 4
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
