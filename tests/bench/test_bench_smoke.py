"""CI runs each benchmark in its quick mode: it must still run and print its figures.
(Benchmarks measure; tests never assert on timings.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))


def test_the_benchmarks_are_found() -> None:
    assert len(SCRIPTS) >= 4, f"no benchmarks under {BENCH}: the smoke test below would silently run nothing"


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_runs_in_smoke_mode(script: str) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    # every benchmark reports figures: at least one line with a number and a unit or ratio
    lines = [line for line in result.stdout.splitlines() if any(ch.isdigit() for ch in line)]
    assert lines, f"{script} printed no figures:\n{result.stdout}"
