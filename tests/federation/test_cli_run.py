from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import anyio

from kubeplane import EmbeddedAPIServer
from tests.support import Plane, eventually


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
