"""A manager process loads what it runs (issue 22, "a small process": an idle manager
<= 60 MiB, bench/bench_idle_memory.py): `federation-manager run` imports neither the
generated API client of kubernetes-asyncio (every API and model class, ~60 MiB; only its
configuration and authentication are used) nor kubeplane (the embedded API server, which
the product imports only for `up`), nor urllib3 (kubernetes-asyncio names it for basic
auth only), SQLite (`up`'s state), the compute API's pydantic models, the controllers of a
mode that is off or of a feature gate that is off, the cluster providers it does not run,
aiohttp (~12 MiB and ~0.3 CPU-s a start: the endpoints have their own small server, and
kubernetes-asyncio's OpenID Connect refresher loads it only for a kubeconfig that needs one
refreshed). Checked on a real
`run` process with `-X importtime`, which reports every import the process makes, up to
and after it is ready."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from federation import cli
from kubeplane import EmbeddedAPIServer
from kubeplane.freeport import free_port
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
    # /healthz, /readyz and /metrics have their own server (mcruntime/routeserver.py); the
    # OpenID Connect refresher's aiohttp loads with its first use (mcruntime/k8sconfig.py)
    "aiohttp",
    "frozenlist",
    "yarl",
)
CELL = ("cells.workloaddeployment", "cells.instance")
# controllers behind a feature gate (PodRuntime, QuotaGate; both off by default)
GATED = ("cells.podruntime", "cells.podspec", "cells.quotagrant", "cells.quotabudget")
PROVIDERS = ("mcruntime.providers.clusterprofile", "mcruntime.providers.kubeconfig_dir", "mcruntime.providers.secrets")
# a manager with no mode enabled runs probes, metrics and leader election only
MANAGEMENT = ("federation.controllers", "projector")
NEEDED = ("kubernetes_asyncio.config.kube_config", "kubernetes_asyncio.client.configuration")


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
    assert "mcruntime.providers.clusterprofile" in modules, "management mode finds its clusters by ClusterProfiles"
    assert among(modules, *HEAVY, *CELL, *GATED, *PROVIDERS[1:]) == []


@pytest.mark.slow  # a `run` process
async def test_a_cell_manager_loads_neither_the_api_models_nor_the_management_controllers(
    apiserver: EmbeddedAPIServer, tmp_path: Path
) -> None:
    modules = await modules_of_an_idle_run(
        apiserver, tmp_path, "--enable-cell-controllers", "--site-name=dfw-1", "--city-code=DFW"
    )
    assert all(m in modules for m in CELL)
    assert among(modules, *HEAVY, *MANAGEMENT, *GATED, *PROVIDERS) == []


@pytest.mark.slow  # a `run` process
async def test_a_cell_manager_loads_a_gated_controller_with_its_gate_on(
    apiserver: EmbeddedAPIServer, tmp_path: Path
) -> None:
    modules = await modules_of_an_idle_run(
        apiserver, tmp_path, "--enable-cell-controllers", "--site-name=dfw-1", "--feature-gates=PodRuntime=true"
    )
    assert all(m in modules for m in (*CELL, "cells.podruntime"))
    assert among(modules, *HEAVY, "cells.quotagrant") == []


@pytest.mark.slow  # a `run` process
async def test_a_manager_with_no_mode_loads_no_controller(apiserver: EmbeddedAPIServer, tmp_path: Path) -> None:
    modules = await modules_of_an_idle_run(apiserver, tmp_path)
    assert "mcruntime.manager" in modules
    assert among(modules, *HEAVY, *MANAGEMENT, *CELL, *GATED, *PROVIDERS) == []


def test_the_parser_reads_the_installed_version_only_for_version(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every process builds the parser; only `--version` parses the package's metadata."""
    reads: list[str] = []
    monkeypatch.setattr(cli, "_version", lambda: reads.append("read") or "9.9")
    assert cli.build_parser("run").parse_args(["run"]).command == "run"
    assert reads == []
    with pytest.raises(SystemExit) as exited:
        cli.build_parser("run").parse_args(["--version"])
    assert exited.value.code == 0 and reads == ["read"]
    assert capsys.readouterr().out == "federation-manager 9.9\n"


def assert_snippet_loads(code: str) -> None:
    """Run `code` in a fresh interpreter; it prints `loaded` once its assertions hold."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "loaded", result.stderr


def test_the_providers_and_the_endpoints_load_apart_from_the_runtime() -> None:
    """The runtime's public names still reach every provider; importing the runtime loads
    none of them, nor aiohttp."""
    code = (
        "import sys, mcruntime\n"
        "from mcruntime.manager import Manager\n"
        "assert not [m for m in sys.modules if m.startswith(('mcruntime.providers.cluster', 'mcruntime.providers.kube',"
        " 'mcruntime.providers.secrets', 'aiohttp'))], sorted(sys.modules)\n"
        "from mcruntime import ClusterProfileProvider, KubeconfigDirProvider, KubeconfigSecretProvider\n"
        "from mcruntime.providers import ClusterProfileProvider as P\n"
        "assert P is ClusterProfileProvider and KubeconfigDirProvider and KubeconfigSecretProvider\n"
        "print('loaded')\n"
    )
    assert_snippet_loads(code)


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
    assert_snippet_loads(code)


def test_the_openid_refresher_and_aiohttp_load_with_the_first_one_made() -> None:
    """kubernetes-asyncio's kubeconfig loader names `OpenIDRequestor` (its module imports
    aiohttp) for the one refresh an `oidc` auth-provider needs: loading kubeconfigs through
    the runtime loads neither, and the first requestor made is the real one."""
    code = (
        "import sys, mcruntime.connection\n"
        "from kubernetes_asyncio.config import kube_config\n"
        "assert 'aiohttp' not in sys.modules, sorted(sys.modules)\n"
        "requestor = kube_config.OpenIDRequestor('client', 'secret', 'https://issuer.example', None)\n"
        "from kubernetes_asyncio.config.openid import OpenIDRequestor\n"
        "assert type(requestor) is OpenIDRequestor and 'aiohttp' in sys.modules\n"
        "assert type(kube_config.OpenIDRequestor('c', 's', 'https://issuer.example', None)) is OpenIDRequestor\n"
        "print('loaded')\n"
    )
    assert_snippet_loads(code)


@pytest.mark.slow  # an `apiserver` process
async def test_an_api_server_process_loads_neither_the_views_nor_the_settings(tmp_path: Path) -> None:
    """`federation-manager apiserver` builds the CLI for itself alone: neither the inspection
    views (`status`, `plan`, `check`), nor `run`'s settings (pydantic), nor the runtime. The
    tests and the benchmarks start hundreds of these processes; with them it took ~1.5 CPU-s
    to serve, without them ~0.5 (bench/bench_apiserver.py --starts)."""
    kubeconfig, log = tmp_path / "kubeconfig", tmp_path / "importtime.log"
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-X", "importtime", "-m", "federation.cli", "apiserver", "--port", "0",
            "--kubeconfig", str(kubeconfig), stdout=asyncio.subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:

        async def serving() -> bool:
            assert proc.returncode is None, log.read_text()[-2000:]
            return kubeconfig.exists() and "server:" in kubeconfig.read_text()

        await eventually(serving, "the API server wrote its kubeconfig", within=60.0, every=0.05)
    finally:
        proc.terminate()
        await proc.wait()
    modules = imported(log.read_text())
    assert "kubeplane.server" in modules
    assert among(modules, "federation.ops", "federation.settings", "pydantic", "mcruntime", "kubernetes_asyncio") == []


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["run", "--enable-cell-controllers"], "run"),
        (["--log-level", "WARNING", "apiserver", "--port", "0"], "apiserver"),
        (["--log-level=DEBUG", "run"], "run"),
        (["--version"], None),
        (["--log-level", "INFO"], None),
        ([], None),
        (["status", "-o", "wide"], "status"),
    ],
)
def test_the_subcommand_is_found_past_the_top_level_options(argv: list[str], command: str | None) -> None:
    """A process builds the CLI for its own subcommand: `--log-level WARNING` before it (as
    the benchmarks start API servers) is an option and its value, not the subcommand."""
    assert cli.subcommand(argv) == command
