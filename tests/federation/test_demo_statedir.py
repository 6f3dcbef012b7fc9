"""One `up` per state directory, as a user meets it: a second `up` on a directory in use
refuses and names the owner's pid, a lock left by a killed `up` is taken over, and
`ready` goes away on every exit the process sees."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.federation.test_demo import start_up, wait_ready

pytestmark = pytest.mark.slow

FAST = ("--cell", "dfw:DFW")  # one cell: the refusal does not need a bigger federation


async def stop(proc: asyncio.subprocess.Process, signum: int = signal.SIGTERM) -> tuple[str, str]:
    if proc.returncode is None:
        proc.send_signal(signum)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode(), err.decode()


async def test_a_second_up_on_a_state_dir_in_use_refuses_and_a_killed_ones_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    state = tmp_path / "demo"
    first = await start_up("demo", *FAST, cwd=tmp_path)
    try:
        await wait_ready(first, state)
        second = await start_up("demo", *FAST, cwd=tmp_path)
        out, err = (b.decode() for b in await asyncio.wait_for(second.communicate(), 60))
        assert second.returncode == 1, (out, err)
        assert err.strip() == f"a federation is already running with --state-dir demo (pid {first.pid})"
        assert (state / "ready").exists(), "the refused up leaves the running one's files alone"
        assert (state / "dfw.kubeconfig").exists()
        # SIGKILL: the process cannot clean up; its lock and `ready` are left behind
        first.kill()
        await first.wait()
        assert (state / "ready").exists()
        third = await start_up("demo", *FAST, cwd=tmp_path)
        assert third.stdout is not None
        line = (await asyncio.wait_for(third.stdout.readline(), 60)).decode()
        assert line.strip() == f"took over --state-dir demo from pid {first.pid} (no longer running)"
        assert not (state / "ready").exists(), "the dead process's ready is removed before anything starts"
        await wait_ready(third, state)
        out, err = await stop(third)
        assert third.returncode == 0, err
    finally:
        for proc in (first,):
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_ready_is_removed_on_sighup_too(tmp_path: Path) -> None:
    state = tmp_path / "demo"
    proc = await start_up(state, *FAST)
    await wait_ready(proc, state)
    _, err = await stop(proc, signal.SIGHUP)  # the terminal closed
    assert proc.returncode == 0, err
    assert not (state / "ready").exists()
    assert not list(state.glob("*.kubeconfig"))
