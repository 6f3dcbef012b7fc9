"""`./taskw test:fast`, the fast lane the README documents: it runs everything not
marked `slow`, and what starts processes (up, apiserver, run, a virtualenv) or idles to
watch for writes is marked slow; `./taskw test` still runs everything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two collections of the whole suite

REPO = Path(__file__).resolve().parents[1]
PROCESS_FILES = (  # every test here starts federation-manager processes or idles
    "tests/chaos/", "tests/e2e/", "tests/bench/", "tests/federation/test_demo.py", "tests/federation/test_cli_run.py",
    "tests/federation/test_demo_persistence.py", "tests/federation/test_demo_statedir.py",
    "tests/federation/test_deployed_management.py", "tests/cells/test_cell_run.py",
    "tests/kubeplane/test_cli_apiserver.py", "tests/cells/test_cell_suspension.py",
    "tests/federation/test_up_referenced_data.py",
    "tests/cells/test_cell_idle.py", "tests/federation/test_steady_state.py", "tests/test_taskw.py",
    "tests/federation/test_up_clean_start.py", "tests/mcruntime/test_lease_under_load.py", "tests/test_wheel.py",
    "tests/federation/test_sharding.py", "tests/federation/test_sharded_processes.py",
)  # fmt: skip


def collected(task: str) -> set[str]:
    env = {**os.environ, "FEDERATION_VENV": sys.prefix, "PYTEST_WORKERS": "0"}  # -n 0: collect here
    ran = subprocess.run(["sh", str(REPO / "taskw"), task, "--", "--collect-only", "-q"],
                         capture_output=True, text=True, timeout=300, check=False, cwd=REPO, env=env)  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    return {line for line in ran.stdout.splitlines() if "::" in line}


def test_the_fast_lane_leaves_out_what_starts_processes_and_the_full_suite_keeps_it() -> None:
    fast, everything = collected("test:fast"), collected("test")
    assert fast < everything
    assert not [t for t in fast if t.startswith(PROCESS_FILES)], "a process-starting test in the fast lane"
    assert all(any(t.startswith(p) for t in everything) for p in PROCESS_FILES), "the full suite runs them all"
    assert len(fast) > 1000 and any(t.startswith("tests/cells/test_instances.py") for t in fast)
