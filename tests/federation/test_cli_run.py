from __future__ import annotations

import asyncio
import gc
import signal
import sys
from pathlib import Path

import aiohttp
import anyio
import pytest

from federation import app
from federation.settings import ManagerSettings
from kubeplane import EmbeddedAPIServer
from kubeplane.freeport import free_port
from mcruntime.gcpause import SERVING_THRESHOLDS
from tests.support import Plane, eventually

pytestmark = pytest.mark.slow


async def test_run_serves_probes_and_metrics_holds_the_lease_and_stops_on_sigterm(
    apiserver: EmbeddedAPIServer, tmp_path: Path
) -> None:
    assert apiserver.kubeconfig_path is not None
    health, metrics = free_port(), free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", "run",
        f"--kubeconfig={apiserver.kubeconfig_path}",
        "--leader-elect", "--leader-election-namespace=default", "--leader-election-id=cli-test",
        f"--health-probe-bind-address=127.0.0.1:{health}", f"--metrics-bind-address=127.0.0.1:{metrics}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    plane = Plane(apiserver)
    try:
        async with aiohttp.ClientSession() as http:

            async def probe(url: str) -> int:
                try:
                    async with http.get(url) as resp:
                        return resp.status
                except aiohttp.ClientError:
                    return 0

            ready = False
            with anyio.move_on_after(20):
                while not ready:
                    ready = await probe(f"http://127.0.0.1:{health}/readyz") == 200
                    await anyio.sleep(0.1)
            assert ready, "the manager never became ready"
            assert await probe(f"http://127.0.0.1:{health}/healthz") == 200
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                assert "rest_client_request_duration_seconds" in await resp.text()

        def holder() -> str:
            try:
                lease = plane.get("leases", "default", "cli-test", group="coordination.k8s.io")
            except Exception:  # noqa: BLE001 - not created yet
                return ""
            return str(lease["spec"].get("holderIdentity") or "")

        await eventually(holder, within=20, what="the lease to be held")
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(20):
            code = await proc.wait()
        assert code == 0
        assert holder() == "", "a graceful shutdown releases the lease"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    import os
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "federation.cli", "run", *args, "--health-probe-bind-address=0",
         "--metrics-bind-address=0"],
        capture_output=True, text=True, timeout=60, check=False, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return proc.returncode, proc.stderr


def test_run_refuses_bad_input_with_one_line_errors(tmp_path: Path) -> None:
    unreadable = tmp_path / "unreadable.kubeconfig"
    unreadable.write_text("apiVersion: v1\nclusters: [")
    port = free_port()
    unreachable = tmp_path / "unreachable.kubeconfig"
    unreachable.write_text(
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    cases = [
        (["--kubeconfig", str(tmp_path / "missing.kubeconfig")], 1, "missing.kubeconfig"),
        (["--kubeconfig", str(unreadable)], 1, "unreadable.kubeconfig"),
        (["--kubeconfig", str(unreachable)], 1, f"cannot reach the management cluster at http://127.0.0.1:{port}"),
        (["--enable-management-controllers", "--cluster-provider=none"], 2,
         "management mode needs a way to find cells and projects"),
        (["--feature-gates=PodRuntime=maybe"], 2, "--feature-gates: invalid value 'maybe'"),
    ]  # fmt: skip
    for args, code, message in cases:
        rc, err = run_cli(*args)
        assert rc == code, (args, rc, err)
        assert message in err, (args, err)
        assert "Traceback" not in err, err
        assert len(err.strip().splitlines()) <= 2, f"one line (after the 'invalid settings' header): {err}"


async def test_the_log_level_and_version_flags(apiserver: EmbeddedAPIServer) -> None:
    version = await anyio.run_process([sys.executable, "-m", "federation.cli", "--version"], check=True)
    assert version.stdout.decode().startswith("federation-manager ")
    assert apiserver.kubeconfig_path is not None
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", "run", f"--kubeconfig={apiserver.kubeconfig_path}",
        "--log-level=DEBUG", "--health-probe-bind-address=0", "--metrics-bind-address=0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = ""
    with anyio.fail_after(30):
        while "DEBUG" not in seen or ("starting controller provider" not in seen and "modes none" not in seen):
            seen += (await proc.stdout.readline()).decode()
    await anyio.sleep(1.5)  # the manager installs its signal handlers as it starts running
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.wait(), 20)
    assert proc.returncode == 0


async def test_run_puts_what_start_up_made_out_of_the_collectors_sight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` freezes the objects start-up made (modules, classes, the wired manager) before
    the manager runs, so a full garbage collection walks only what the work allocates, and
    raises the collector's thresholds (`SERVING_THRESHOLDS`): the work's short-lived objects
    are freed by reference counting before a collection walks them."""
    frozen_while_running: list[int] = []
    thresholds_while_running: list[tuple[int, int, int]] = []

    class Running:
        async def run(self, *, handle_signals: bool) -> None:
            frozen_while_running.append(gc.get_freeze_count())
            thresholds_while_running.append(gc.get_threshold())

    async def prepared(_settings: ManagerSettings, **_kwargs: object) -> Running:
        return Running()

    monkeypatch.setattr(app, "prepare_manager", prepared)
    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        await app.run_manager(ManagerSettings(kubeconfig=tmp_path / "unused"), handle_signals=False)
    finally:
        gc.unfreeze()  # the test process's own objects go back to the collector
        gc.set_threshold(*thresholds)
    assert frozen_while_running and frozen_while_running[0] > 1000
    assert thresholds_while_running == [SERVING_THRESHOLDS] and SERVING_THRESHOLDS[0] > 700
