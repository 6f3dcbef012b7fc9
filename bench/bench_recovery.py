"""Benchmark: how soon a cell that answers again after a long pause is acted on (issue 18
item 3).

One project, one cell (LHR), the management-mode manager as its own process; no cell
manager (this program writes the copy's status as the cell's controllers would). Per
trial: a change in the cell (the copy's `status.updatedReplicas` set to a new number) is
timed until the project WD shows it — once on the normal path, then after the cell's API
server was paused (connections refused) for P seconds: the clock starts when the cell
answers again (this program polls it every 50 ms) and the change is made at that moment.
Reported: both times per trial, their medians, and the difference (target: under 2 s
above the normal path).

Run: python bench/bench_recovery.py [--pause 80] [--trials 3] [--smoke]
(`--smoke`: a 5 s pause, one trial, to check the program runs.) Before/after: run it from
a worktree of the base commit too (`git worktree add /tmp/base <commit>`, copy this file
there, run it with the same interpreter): the servers and manager run that tree's code."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from harness import Fleet, fleet, management, median, report, wd_path, workload_deployment

NS = "default"


async def copy_in_cell(f: Fleet) -> tuple[str, str]:
    """The downstream namespace and name of the WD's copy in the cell."""
    while True:
        copies = await f.list("lhr-1", wd_path())
        if copies:
            return copies[0]["metadata"]["namespace"], copies[0]["metadata"]["name"]
        await asyncio.sleep(0.1)


async def acted_on(f: Fleet, namespace: str, name: str, value: int, within: float = 300.0) -> float:
    """Set the copy's updatedReplicas to `value`; seconds until the project WD shows it."""
    started = time.monotonic()
    await f.request(
        "lhr-1", "PATCH", wd_path(namespace, name, "status"), {"status": {"updatedReplicas": value}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    while time.monotonic() - started < within:
        wd = await f.request("web", "GET", wd_path(NS, "api"))
        if (wd.get("status") or {}).get("updatedReplicas") == value:
            return time.monotonic() - started
        await asyncio.sleep(0.02)
    raise RuntimeError(f"the project WD did not show updatedReplicas={value} within {within}s")


async def answers(f: Fleet) -> bool:
    try:
        await f.request("lhr-1", "GET", "/version")
    except (TimeoutError, aiohttp.ClientError, RuntimeError):
        return False
    return True


async def main(pause: float, trials: int) -> None:
    rep = report("bench_recovery", {"pause_s": pause, "trials": trials})
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        async with fleet(Path(tmp), projects=["acme/web"], cells=[("lhr-1", "LHR")]) as f:
            mgr = management(f)
            try:
                await mgr.wait_ready(f.session)
                await f.request("web", "POST", wd_path(NS), workload_deployment("api", "LHR", 1))
                namespace, name = await copy_in_cell(f)
                value = 100
                normal: list[float] = []
                recovered: list[float] = []
                for trial in range(trials):
                    value += 1
                    normal.append(await acted_on(f, namespace, name, value))
                    await f.request("lhr-1", "POST", "/_embedded/pause", {"seconds": pause})
                    await asyncio.sleep(1.0)  # the pause starts after its own answer went out
                    while not await answers(f):
                        mgr.proc.check_alive()
                        await asyncio.sleep(0.05)
                    value += 1
                    recovered.append(await acted_on(f, namespace, name, value))
                    rep.add(f"trial {trial + 1}: normal path", normal[-1], "s")
                    rep.add(f"trial {trial + 1}: after a {pause:.0f} s pause", recovered[-1], "s")
                rep.add("median: normal path", median(normal), "s")
                rep.add("median: after the pause", median(recovered), "s")
                rep.add("median difference", median(recovered) - median(normal), "s", "< 2 s")
            finally:
                mgr.proc.stop()
    rep.write()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pause", type=float, default=80.0)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.pause, args.trials = 5.0, 1
    asyncio.run(main(args.pause, args.trials))
    sys.exit(0)
