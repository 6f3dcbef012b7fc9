"""Run the benchmarks under bench/ (bench_*.py) one after another, print their figures as
they go, and at the end one table of every figure the run wrote to bench/results/, with
the command that reproduces it; the same table goes to bench/results/summary.json.

python bench/run_all.py                    # full runs
python bench/run_all.py --smoke            # quick runs, as CI does
python bench/run_all.py --only fanout      # one benchmark (bench_fanout.py); repeatable
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = Path(os.environ.get("BENCH_RESULTS") or HERE / "results")  # as bench/harness.py


def available() -> dict[str, Path]:
    """name (the file's stem without `bench_`) → script."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def select(only: list[str] | None) -> list[Path]:
    found = available()
    if not only:
        return list(found.values())
    unknown = [name for name in only if name not in found]
    if unknown:
        raise SystemExit(f"run_all: no benchmark named {', '.join(unknown)}; choose from {', '.join(found)}")
    return [found[name] for name in only]


def collect(since: float) -> list[dict[str, Any]]:
    """The result files written during this run (benchmarks on the shared harness write one)."""
    out = []
    if not RESULTS.is_dir():
        return []
    for path in sorted(RESULTS.glob("bench_*.json")):
        if path.stat().st_mtime >= since:
            out.append(json.loads(path.read_text()))
    return out


def summarize(results: list[dict[str, Any]]) -> None:
    if not results:
        return
    print(f"=== every figure written to {RESULTS} in this run")
    for result in results:
        print(f"{result['benchmark']}  (rerun: {result['command']})")
        for fig in result["figures"]:
            target = f"  target {fig['target']}" if fig.get("target") else ""
            print(f"  {fig['name']:<62} {fig['value']:>14,.3f} {fig['unit']:<10}{target}")
    (RESULTS / "summary.json").write_text(json.dumps(results, indent=2))
    print(f"summary written to {RESULTS / 'summary.json'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="quick mode that only checks the benchmarks run")
    parser.add_argument("--only", action="append", metavar="NAME", help=f"one of: {', '.join(available())}")
    args = parser.parse_args()
    selected = select(args.only)
    started_at = time.time()
    failed = []
    for path in selected:
        print(f"=== {path.stem}{' (smoke)' if args.smoke else ''}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, str(path), *(["--smoke"] if args.smoke else [])], check=False)
        print(f"--- {path.stem}: exit {result.returncode} in {time.perf_counter() - start:.1f}s\n", flush=True)
        if result.returncode != 0:
            failed.append(path.stem)
    summarize(collect(started_at))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
