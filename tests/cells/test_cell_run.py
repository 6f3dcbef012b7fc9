"""The deployed shape: `federation-manager apiserver` as the cell, the compute CRDs applied
with kubectl from config/crd, `federation-manager run --enable-cell-controllers ...
--feature-gates=PodRuntime=true` as its own process, and a user driving it with kubectl."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually

from .cellbed import workload_deployment

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def process(*args: str, log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """`python -m federation.cli ARGS`, its output in `log`; SIGTERM on exit, and it must stop cleanly."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "federation.cli", *args, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
        try:
            yield proc
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), 20)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
    if proc.returncode != 0:
        output = await anyio.Path(log).read_text()
        raise AssertionError(f"{args[0]} exited {proc.returncode}:\n{output[-3000:]}")


async def test_cell_controllers_run_as_deployed_with_feature_gates_from_the_command_line(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    kubeconfig = tmp_path / "cell.kubeconfig"
    port = _free_port()
    server_args = ("apiserver", "--port", str(port), "--kubeconfig", str(kubeconfig), "--name", "cell-dfw")
    async with process(*server_args, log=tmp_path / "apiserver.log"):
        await eventually(kubeconfig.exists, "the apiserver's kubeconfig", within=30)
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        await eventually(lambda: _answers(kubectl), "the apiserver answering", within=30)
        await kubectl("apply", "--server-side", "-k", str(REPO / "config" / "crd" / "compute"))
        await kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
        run_args = (
            "run", "--enable-cell-controllers", f"--kubeconfig={kubeconfig}", "--site-name", "cell-dfw",
            "--city-code", "DFW", "--feature-gates=PodRuntime=true", "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        )  # fmt: skip
        async with process(*run_args, log=tmp_path / "manager.log"):
            wd = workload_deployment("api", 2)
            namespace = wd["metadata"]["namespace"]
            await kubectl("create", "namespace", namespace)
            await kubectl("apply", "-f", "-", stdin=json.dumps(wd))
            instances = ("instance/api-0", "instance/api-1")
            await eventually(lambda: _exist(kubectl, namespace, *instances), "the Instances", within=60)
            await kubectl("wait", "--for=condition=Ready", "--timeout=60s", "-n", namespace, *instances, within=90)
            await kubectl("wait", "--for=condition=Ready", "--timeout=30s", "-n", namespace, "pod/api-0", "pod/api-1")
            await kubectl(
                "wait", "--for=jsonpath={.status.readyReplicas}=2", "--timeout=30s", "-n", namespace, "wd/api"
            )
            row = await kubectl("get", "wd", "api", "-n", namespace, "--no-headers")
            assert row.split()[2:8] == ["True", "StableInstanceFound", "2", "2", "2", "2"], row
            await kubectl("delete", "wd", "api", "-n", namespace, "--timeout=60s")
            left = await kubectl("get", "instances,pods", "-n", namespace, "-o", "name")
            assert left.strip() == "", f"left behind: {left}"
        started = "controllers cell-workloaddeployment, instance-controller, pod-runtime;"
        assert started in await anyio.Path(tmp_path / "manager.log").read_text(), "the gates came from the command line"


async def _answers(kubectl: Kubectl) -> bool:
    return (await kubectl.run("get", "--raw", "/version", within=10)).returncode == 0


async def _exist(kubectl: Kubectl, namespace: str, *names: str) -> bool:
    return (await kubectl.run("get", "-n", namespace, *names, within=10)).returncode == 0
