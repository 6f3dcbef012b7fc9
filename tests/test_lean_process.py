"""A manager process loads what it runs (issue 22, "a small process": an idle manager
<= 60 MiB, bench/bench_idle_memory.py): `federation-manager run` imports neither the
generated API client of kubernetes-asyncio (every API and model class, ~60 MiB; only its
configuration and authentication are used) nor kubeplane (the embedded API server, which
the product imports only for `up`), nor urllib3 (kubernetes-asyncio names it for basic
auth only), SQLite (`up`'s state), the compute API's pydantic models, or the controllers
of a mode that is off. Checked on a real `run` process with `-X importtime`, which reports
every import the process makes, up to and after it is ready."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from tests.support import eventually, install_project_crds
from tests.support.plane import Plane

# tracing off (no --tracing): neither the SDK's tracing nor our exporters load
HEAVY = (
    "kubernetes_asyncio.client.api",
    "kubernetes_asyncio.client.models",
    "kubeplane",
    "opentelemetry.sdk.trace",
    "federation.telemetry",
    "urllib3",
    "sqlite3",
    "federation.api.base",
    "federation.api.conditions",
    "federation.api.quota",
    "federation.api.workload",
    "federation.api.instance",
    "federation.api.location",
)
CELL = ("cells.workloaddeployment", "cells.instance", "cells.podruntime", "cells.quotagrant")
# a manager with no mode enabled runs probes, metrics and leader election only
MANAGEMENT = ("federation.controllers", "projector")
NEEDED = ("kubernetes_asyncio.config.kube_config", "kubernetes_asyncio.client.configuration")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def among(modules: set[str], *packages: str) -> list[str]:
    """The modules that are one of `packages` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def imported(importtime_log: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_log.splitlines()
        if line.startswith("import time:") and "|" in line
    }


async def modules_of_an_idle_run(apiserver: EmbeddedAPIServer, tmp_path: Path, *modes: str) -> set[str]:
    """Every module a `run` process with these mode flags imported until it was ready."""
    await install_project_crds(apiserver)
    Plane(apiserver).create("namespaces", {"metadata": {"name": "federation-system"}})
    health = free_port()
    log = tmp_path / "importtime.log"
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-X", "importtime", "-m", "federation.cli", "run", *modes,
            f"--kubeconfig={apiserver.kubeconfig_path}", f"--health-probe-bind-address=127.0.0.1:{health}",
            "--metrics-bind-address=0", "--log-level=WARNING",
            stdout=asyncio.subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        async with aiohttp.ClientSession() as session:

            async def ready() -> bool:
                assert proc.returncode is None, log.read_text()[-2000:]
                try:
                    async with session.get(f"http://127.0.0.1:{health}/readyz") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await eventually(ready, "the manager is ready", within=60.0, every=0.1)
    finally:
        proc.terminate()
        await proc.wait()
    return imported(log.read_text())


@pytest.mark.slow  # a `run` process
async def test_an_idle_manager_loads_neither_the_generated_client_nor_kubeplane(
    apiserver: EmbeddedAPIServer, tmp_path: Path
) -> None:
    modules = await modules_of_an_idle_run(apiserver, tmp_path, "--enable-management-controllers")
    assert all(m in modules for m in NEEDED), "the run path loads kubeconfigs through kubernetes-asyncio"
    assert all(m in modules for m in ("federation.controllers.federator", "projector.status"))
    assert among(modules, *HEAVY, *CELL) == []


@pytest.mark.slow  # a `run` process
async def test_a_cell_manager_loads_neither_the_api_models_nor_the_management_controllers(
    apiserver: EmbeddedAPIServer, tmp_path: Path
) -> None:
    modules = await modules_of_an_idle_run(
        apiserver, tmp_path, "--enable-cell-controllers", "--site-name=dfw-1", "--city-code=DFW"
    )
    assert all(m in modules for m in CELL)
    assert among(modules, *HEAVY, *MANAGEMENT) == []


@pytest.mark.slow  # a `run` process
async def test_a_manager_with_no_mode_loads_no_controller(apiserver: EmbeddedAPIServer, tmp_path: Path) -> None:
    modules = await modules_of_an_idle_run(apiserver, tmp_path)
    assert "mcruntime.manager" in modules
    assert among(modules, *HEAVY, *MANAGEMENT, *CELL) == []


def test_the_generated_client_still_loads_in_full_when_a_tool_asks_for_it() -> None:
    """The deferred packages run their own `__init__` on first use of a name they lack."""
    code = (
        "import mcruntime.connection, sys\n"
        "assert 'kubernetes_asyncio.client.models' not in sys.modules\n"
        "from kubernetes_asyncio import client, watch\n"
        "from kubernetes_asyncio.config import new_client_from_config\n"
        "assert client.CoreV1Api.__module__ == 'kubernetes_asyncio.client.api.core_v1_api'\n"
        "assert client.ApiClient.__module__ == 'kubernetes_asyncio.client.api_client'\n"
        "assert watch.Watch and new_client_from_config\n"
        "print('loaded')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "loaded", result.stderr
