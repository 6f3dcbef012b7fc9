"""Liveness under load: a leader whose event loop is saturated by CPU-bound reconciles
still renews its Lease on time, because renewals run on their own thread, loop and HTTP
client (mcruntime/leaderelection.py `_RenewalLoop`).

The API server is its own process (an in-process one would share the saturated loop) and
the Lease's renewTime sequence is read from the server by `kubectl get --watch`, which runs
outside the test's loop. Each reconcile holds the loop for longer than the renew deadline,
so a renewal on the manager's own loop would miss it and the manager would lose the lease."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import datetime
from pathlib import Path

import anyio
import pytest

from mcruntime import LeaderElectionConfig, LeaderElectionLost, Manager, Request, Result
from mcruntime.connection import from_kubeconfig_file
from tests.support import eventually
from tests.support.processes import _written, free_port, spawn

LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
BURN = 2.5  # CPU-seconds one reconcile holds the event loop: more than the renew deadline
RECONCILES = 3

pytestmark = pytest.mark.slow  # an apiserver process and kubectl --watch


def burn(seconds: float) -> None:
    """CPU-bound work on this thread, never yielding to the event loop."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def observed(renewals: Path, after: float) -> bool:
    rows = [line.split() for line in renewals.read_text().splitlines() if line.startswith("manager-lock busy ")]
    return any(len(row) > 2 and stamp(row[2]) >= after for row in rows)


async def test_renewals_stay_on_time_while_reconciles_saturate_the_event_loop(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server = await spawn(
        "apiserver", ["apiserver", "--port", str(free_port()), "--kubeconfig", str(kubeconfig)], tmp_path
    )
    watcher: asyncio.subprocess.Process | None = None
    try:
        await eventually(lambda: _written(kubeconfig) or server.proc.returncode is not None, "apiserver up", 30)
        assert server.proc.returncode is None, server.output()
        renewals = tmp_path / "renewals.txt"
        with renewals.open("wb") as out:
            watcher = await asyncio.create_subprocess_exec(
                "kubectl", f"--kubeconfig={kubeconfig}", "get", "leases", "-n", "default", "--watch",
                "-o", r"jsonpath={.metadata.name} {.spec.holderIdentity} {.spec.renewTime}{'\n'}",
                stdout=out, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
        config = await from_kubeconfig_file(kubeconfig)
        election = LeaderElectionConfig(
            namespace="default", name="manager-lock", identity="busy",
            lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY,
        )  # fmt: skip
        manager = Manager(config, leader_election=election)
        done: list[float] = []  # thread CPU time burnt per finished reconcile

        async def reconcile(req: Request) -> Result:
            started = time.thread_time()
            burn(BURN)
            done.append(time.thread_time() - started)
            return Result()

        controller = manager.new_controller("burner", reconcile, workers=1)
        outcome: list[BaseException] = []

        async def run() -> None:
            try:
                await manager.run()
            except LeaderElectionLost as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await eventually(lambda: manager.elector is not None and manager.elector.is_leader, "leading", 30)
            for i in range(RECONCILES):  # one worker: one after another, the loop held throughout
                controller.enqueue(Request("local", "default", f"work-{i}"))
            await eventually(lambda: len(done) >= RECONCILES or outcome, "the reconciles", within=300)
            busy_end = time.time()
            # stop only once the watch has printed a renewal made after the busy period (lines
            # still in kubectl's pipe when it is terminated would be lost, not late)
            await eventually(lambda: observed(renewals, busy_end) or outcome, "a renewal after the busy period", 60)
            manager.stop()
        assert not outcome, f"the lease was lost while the loop was busy: {outcome}"
        assert len(done) >= RECONCILES and min(done) >= BURN, "the loop was held by CPU-bound reconciles"
    finally:
        if watcher is not None:
            watcher.terminate()
            await watcher.wait()
        await server.stop()
    rows = [line.split() for line in renewals.read_text().splitlines() if line.startswith("manager-lock busy ")]
    times = sorted({stamp(row[2]) for row in rows})
    busy_for = BURN * RECONCILES
    assert times[-1] - times[0] >= busy_for, f"renewals observed over the busy period: {rows}"
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) < RENEW, f"a renewal came later than the renew deadline after the previous one: {gaps}"
