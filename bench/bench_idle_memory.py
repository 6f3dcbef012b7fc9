"""Benchmark: how small an idle manager process is (issue 22, point 5).

Embedded API servers (management, one project, one cell) run as their own processes; then
`federation-manager run` is started, one at a time, with no controllers enabled, with the
management controllers, and with the cell controllers. Once it is ready (`/readyz`) and
has idled for a moment, its peak resident memory (`VmHWM` in /proc/<pid>/status), its
resident memory then (`VmRSS`) and its start-up CPU are read. Each variant is run
`--repeat` times and the median reported (alternate this with a checkout of an older
commit for before/after figures).

Target: an idle manager <= 60 MiB VmHWM.

Run: python bench/bench_idle_memory.py [--repeat N] [--idle S] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import aiohttp
from harness import Fleet, cpu_seconds, fleet, median, report, start_manager

MIB = 1024 * 1024
CELLS = (("dfw-1", "DFW"),)


def status_kib(pid: int, field: str) -> int:
    """A `Vm*` line of /proc/<pid>/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def variants(f: Fleet) -> dict[str, list[str]]:
    management = f"--kubeconfig={f.servers['management'].kubeconfig}"
    cell = f.servers["dfw-1"].kubeconfig
    return {
        "no controllers": [management],
        "management controllers": [management, "--enable-management-controllers"],
        "cell controllers": [
            f"--kubeconfig={cell}",
            "--enable-cell-controllers",
            "--site-name=dfw-1",
            "--city-code=DFW",
            "--local-cluster-name=dfw-1",
        ],
    }


async def one(f: Fleet, session: aiohttp.ClientSession, args: list[str], idle: float) -> tuple[int, int, float]:
    """(VmHWM KiB, VmRSS KiB, CPU-seconds) of one idle manager."""
    mgr = start_manager("manager-idle", f.workdir, *args)
    try:
        await mgr.wait_ready(session)
        await asyncio.sleep(idle)
        mgr.proc.check_alive()
        return status_kib(mgr.pid, "VmHWM"), status_kib(mgr.pid, "VmRSS"), cpu_seconds(mgr.pid)
    finally:
        mgr.proc.stop()


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_idle_memory", {"repeat": args.repeat, "idle_s": args.idle})
    with tempfile.TemporaryDirectory(prefix="bench-idle-memory-") as tmp:
        async with fleet(Path(tmp), projects=["bench/p00"], cells=CELLS) as f, aiohttp.ClientSession() as session:
            for name, extra in variants(f).items():
                runs = [await one(f, session, extra, args.idle) for _ in range(args.repeat)]
                hwm = median([r[0] for r in runs]) * 1024 / MIB
                rss = median([r[1] for r in runs]) * 1024 / MIB
                cpu = median([r[2] for r in runs])
                spread = ", ".join(f"{r[0] / 1024:.1f}" for r in runs)
                rep.add(f"{name}: peak memory (VmHWM), median", hwm, "MiB", "<= 60 MiB", f"runs: {spread}")
                rep.add(f"{name}: resident memory once idle (VmRSS)", rss, "MiB")
                rep.add(f"{name}: CPU from start until idle", cpu, "s")
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant (the median is reported)")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds to idle after ready before reading")
    parser.add_argument("--smoke", action="store_true", help="one run per variant")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat = 1
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
