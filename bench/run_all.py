"""Run every benchmark under bench/ (bench_*.py) one after another and print their figures.

python bench/run_all.py            # full runs
python bench/run_all.py --smoke    # quick runs, as CI does
python bench/run_all.py --only apiserver
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benchmarks(only: str | None) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    return [p for p in found if only is None or only in p.stem]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="quick mode that only checks the benchmarks run")
    parser.add_argument("--only", help="run benchmarks whose name contains this text")
    args = parser.parse_args()
    selected = benchmarks(args.only)
    if not selected:
        print(f"no benchmark matches {args.only!r}", file=sys.stderr)
        return 2
    failed = []
    for path in selected:
        print(f"=== {path.stem}{' (smoke)' if args.smoke else ''}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, str(path), *(["--smoke"] if args.smoke else [])], check=False)
        print(f"--- {path.stem}: exit {result.returncode} in {time.perf_counter() - start:.1f}s\n", flush=True)
        if result.returncode != 0:
            failed.append(path.stem)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
