"""CI runs each benchmark in its quick mode: it must still run and print its figures.
(Benchmarks measure; tests never assert on timings.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

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


def test_run_all_names_what_it_can_run() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--only", "nosuch"], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "no benchmark named nosuch; choose from apiserver," in result.stderr


def test_run_all_summarises_every_figure_with_its_command(tmp_path: Path) -> None:
    """One benchmark through the runner: its figures come back in one table and in
    summary.json, each result with the command that reproduces it."""
    result = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--smoke", "--only", "churn"], capture_output=True, text=True,
        timeout=300, check=False, env={**os.environ, "BENCH_RESULTS": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["benchmark"] for r in summary] == ["bench_churn"]
    assert summary[0]["command"] == "python bench/bench_churn.py --smoke"
    assert summary[0]["figures"], "figures recorded"
    assert f"every figure written to {tmp_path} in this run" in result.stdout
    assert "(rerun: python bench/bench_churn.py --smoke)" in result.stdout


def test_the_sharding_cold_start_runs_from_seeded_data() -> None:
    """`bench_sharding.py --cold N` seeds the WDs straight into each project server's data
    directory and restarts it from there (`seed`): the replicas find every WD, labelled."""
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_sharding.py"), "--smoke", "--cold", "400"], capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(400 WDs seeded in" in result.stderr, result.stderr
    for label in ("1 replica, unsharded", "1 shard", "2 shards"):
        assert f"cold start 400 WDs, {label}: until every replica ready" in result.stdout, result.stdout


def test_the_kopf_comparison_refuses_cell_managers() -> None:
    """`bench_fanout --operator kopf` only federates copies: with cell managers it is
    refused before anything starts, naming the flags."""
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_fanout.py"), "--smoke", "--operator", "kopf", "--cells", "managers"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--operator kopf federates copies only: run it with --cells echo" in result.stderr
