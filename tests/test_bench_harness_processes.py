"""The benchmark harness stops what it started: a benchmark that fails half-way (a manager
that cannot bind its port, a check that raises) leaves no server or manager running, as a
CI run once left three cell managers behind it for the rest of the suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from harness import spawn_script, stopping_spawned  # noqa: E402


def test_every_process_spawned_in_the_block_is_stopped_when_it_raises(tmp_path: Path) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(120)\n")
    started = []
    with pytest.raises(RuntimeError, match="half-way"), stopping_spawned():
        started = [spawn_script(f"sleeper-{i}", sleeper, [], tmp_path) for i in range(2)]
        assert all(p.proc.poll() is None for p in started)
        raise RuntimeError("the benchmark failed half-way")
    assert all(p.proc.poll() is not None for p in started), "a spawned process outlived its benchmark"


def test_a_process_spawned_before_the_block_is_left_to_its_owner(tmp_path: Path) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(120)\n")
    outer = spawn_script("outer", sleeper, [], tmp_path)
    try:
        with stopping_spawned():
            inner = spawn_script("inner", sleeper, [], tmp_path)
        assert inner.proc.poll() is not None
        assert outer.proc.poll() is None
    finally:
        outer.stop()
