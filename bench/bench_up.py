"""Benchmark: is `federation-manager up` responsive on 2 cores? Everything `up` runs —
the embedded API servers and every manager — shares one process and one event loop, so a
burst of work could starve either side. `up` starts (default cells and project), then W
WorkloadDeployments (default 100, 1 replica each, half in DFW, half in LHR) are applied
to the project at once. Measured:

- API latency as kubectl would see it (GET of the project's WD list) at idle and during
  the burst: p50/p99;
- reaction: from the first apply until the first Instance projection appears;
- convergence: until every WD's status reports its replica ready.

Run: python bench/bench_up.py [--wds W] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import aiohttp
import yaml
from harness import REPO, instances_path, percentile, report, wd_path, workload_deployment


async def latencies(session: aiohttp.ClientSession, url: str, stop: asyncio.Event, out: list[float]) -> None:
    while not stop.is_set():
        started = time.monotonic()
        async with session.get(url) as resp:
            await resp.read()
        out.append(time.monotonic() - started)
        await asyncio.sleep(0.05)


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_up", {"wds": args.wds})
    with tempfile.TemporaryDirectory(prefix="bench-up-") as tmp:
        state = Path(tmp)
        log = (state / "up.log").open("wb")
        proc = subprocess_up(state, log)
        try:
            started = time.monotonic()
            while not (state / "ready").exists():
                if proc.poll() is not None:
                    raise RuntimeError((state / "up.log").read_text())
                await asyncio.sleep(0.1)
            rep.add("up: start until ready (servers, CRDs, registration, synced)", time.monotonic() - started, "s")
            project = yaml.safe_load((state / "web.kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
            async with aiohttp.ClientSession() as session:
                idle: list[float] = []
                stop = asyncio.Event()
                sampler = asyncio.create_task(latencies(session, project + wd_path("default"), stop, idle))
                await asyncio.sleep(3)
                stop.set()
                await sampler
                busy: list[float] = []
                stop = asyncio.Event()
                sampler = asyncio.create_task(latencies(session, project + wd_path("default"), stop, busy))
                applied = time.monotonic()
                for i in range(args.wds):
                    body = workload_deployment(f"wd-{i:04d}", "DFW" if i % 2 == 0 else "LHR", 1)
                    async with session.post(project + wd_path("default"), json=body) as resp:
                        assert resp.status == 201, await resp.text()
                first = None
                while True:
                    async with session.get(project + instances_path("default")) as resp:
                        projections = (await resp.json())["items"]
                    if first is None and any(p["metadata"]["name"].startswith("wd-") for p in projections):
                        first = time.monotonic() - applied
                    async with session.get(project + wd_path("default")) as resp:
                        wds = [w for w in (await resp.json())["items"] if w["metadata"]["name"].startswith("wd-")]
                    if all((w.get("status") or {}).get("readyReplicas") == 1 for w in wds):
                        break
                    if proc.poll() is not None:
                        raise RuntimeError("up exited")
                    await asyncio.sleep(0.2)
                converged = time.monotonic() - applied
                stop.set()
                await sampler
            rep.add("API latency at idle p50", percentile(idle, 50) * 1000, "ms")
            rep.add("API latency at idle p99", percentile(idle, 99) * 1000, "ms")
            rep.add(f"API latency during the {args.wds}-WD burst p50", percentile(busy, 50) * 1000, "ms")
            rep.add(f"API latency during the {args.wds}-WD burst p99", percentile(busy, 99) * 1000, "ms")
            rep.add("reaction: first apply until the first Instance projection", (first or 0) * 1000, "ms")
            rep.add(f"convergence: until all {args.wds} WDs report their replica ready", converged, "s")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            log.close()
    rep.write()


def subprocess_up(state: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "federation.cli", "up", "--state-dir", str(state)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env={**os.environ},
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=100)
    parser.add_argument("--smoke", action="store_true", help="10 WDs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.wds = 10
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
