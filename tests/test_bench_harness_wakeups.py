"""The benchmark harness's `wakeups`: a process's voluntary context switches, which
bench_sharding sets against each replica's CPU (a shard's work scales with its share, its
wake-ups need not). Counted by the kernel for the main thread (the event loop's)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from harness import wakeups  # noqa: E402


def test_each_sleep_is_a_wakeup() -> None:
    me = os.getpid()
    before = wakeups(me)
    for _ in range(5):
        time.sleep(0.001)
    slept = wakeups(me) - before
    assert slept >= 5, f"five sleeps, {slept} voluntary switches counted"


def test_a_process_that_is_gone_is_an_error_not_a_zero() -> None:
    with pytest.raises(FileNotFoundError):
        wakeups(2**22 + 1)  # above the kernel's pid_max ceiling: never a live process
