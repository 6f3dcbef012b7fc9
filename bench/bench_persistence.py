"""What persistence costs: raw creates per second against `federation-manager apiserver`
in memory and with `--data-dir` (every object in SQLite, WAL mode, written before the
write is acknowledged), alternating the two, the median of the rounds.

    python bench/bench_persistence.py            # 3 rounds of 3000 creates each way
    python bench/bench_persistence.py --smoke    # a few seconds, checks it still runs
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_apiserver import raw_client, wait_ready

from kubeplane.freeport import free_port


def start(workdir: Path, data_dir: Path | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "federation.cli", "--log-level", "WARNING", "apiserver", "--port", str(port),
           "--kubeconfig", str(workdir / "kubeconfig")]  # fmt: skip
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), f"http://127.0.0.1:{port}"


async def creates(workdir: Path, data_dir: Path | None, n: int, concurrency: int, run: str) -> float:
    proc, url = start(workdir, data_dir)
    try:
        await wait_ready(url, proc)
        return (await raw_client(url, n, concurrency, run))["create"]
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark still runs")
    parser.add_argument("--objects", type=int, default=0, help="creates per round (default 3000, smoke 200)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds each way (default 3, smoke 1)")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    n = args.objects or (200 if args.smoke else 3000)
    rounds = args.rounds or (1 if args.smoke else 3)
    memory: list[float] = []
    sqlite: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):  # alternating: machine noise falls on both sides alike
            memory.append(await creates(Path(tmp), None, n, args.concurrency, f"m{i}"))
            sqlite.append(await creates(Path(tmp), Path(tmp) / f"data-{i}", n, args.concurrency, f"s{i}"))
    mem, per = statistics.median(memory), statistics.median(sqlite)
    print(f"apiserver raw creates, {os.cpu_count()} cores, {n} ConfigMaps x {rounds} rounds, concurrency "
          f"{args.concurrency}{' [smoke]' if args.smoke else ''}")  # fmt: skip
    print(f"in memory:              {mem:8.0f} creates/s (rounds: {', '.join(f'{v:.0f}' for v in memory)})")
    print(f"--data-dir (SQLite WAL): {per:8.0f} creates/s (rounds: {', '.join(f'{v:.0f}' for v in sqlite)})")
    print(f"persisted / in memory: {per / mem:.2f}x")


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
