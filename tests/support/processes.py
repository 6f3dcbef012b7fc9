"""The deployed shape in tests: `federation-manager apiserver` processes (one per cluster),
clusters registered with `kubectl apply` of ClusterProfiles and kubeconfig Secrets, and
`federation-manager run` processes, all driven as an operator would."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from federation.api.constants import REGISTRATION_NAMESPACE
from federation.registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile
from kubeplane.freeport import free_port
from kubeplane.testing import Kubectl

from .waiting import eventually

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Process:
    name: str
    proc: asyncio.subprocess.Process
    log: Path

    async def stop(self, sig: int = signal.SIGTERM, within: float = 20.0) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
            try:
                await asyncio.wait_for(self.proc.wait(), within)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
                raise AssertionError(f"{self.name} did not stop within {within}s after {sig}") from None
        return self.proc.returncode or 0

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


async def spawn(name: str, args: Sequence[str], workdir: Path, env: dict[str, str] | None = None) -> Process:
    log = workdir / f"{name}.log"
    handle = log.open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", *args,
        stdout=handle, stderr=asyncio.subprocess.STDOUT, env={**os.environ, **(env or {})},
    )  # fmt: skip
    handle.close()
    return Process(name, proc, log)


def _written(kubeconfig: Path) -> bool:
    """The apiserver has finished writing its kubeconfig (the file appears before that)."""
    if not kubeconfig.exists():
        return False
    loaded = yaml.safe_load(kubeconfig.read_text())
    return isinstance(loaded, dict) and bool(loaded.get("clusters"))


@dataclass
class DeployedFleet:
    workdir: Path
    stack: AsyncExitStack
    servers: dict[str, Process] = field(default_factory=dict)
    managers: dict[str, Process] = field(default_factory=dict)
    cities: dict[str, str] = field(default_factory=dict)
    project_paths: dict[str, str] = field(default_factory=dict)
    server_args: list[str] = field(default_factory=list)
    # with RBAC: the ServiceAccounts bound to the shipped roles (tests/support/rbac.py)
    manager_identity: dict[str, Path] = field(default_factory=dict)
    access_identity: dict[str, Path] = field(default_factory=dict)

    def manager_kubeconfig(self, cluster: str) -> Path:
        """What a manager running in that cluster uses: its ServiceAccount under RBAC, else admin."""
        return self.manager_identity.get(cluster, self.kubeconfig(cluster))

    def access_kubeconfig(self, cluster: str) -> Path:
        """What management mode uses in a project or cell (the registration Secret's)."""
        return self.access_identity.get(cluster, self.kubeconfig(cluster))

    def kubeconfig(self, cluster: str) -> Path:
        return self.workdir / f"{cluster}.kubeconfig"

    def kubectl(self, cluster: str) -> Kubectl:
        return Kubectl(self.kubeconfig(cluster), self.workdir / f"kubectl-cache-{cluster}")

    async def start_server(self, name: str) -> None:
        for attempt in range(3):
            # free_port() only finds a port free *now*: on a busy machine another process can
            # bind it before the server does, so a server refused its port gets another one
            args = ["apiserver", "--port", str(free_port()), "--kubeconfig", str(self.kubeconfig(name)),
                    "--name", name, *self.server_args]  # fmt: skip
            process = await spawn(f"apiserver-{name}", args, self.workdir)
            self.stack.push_async_callback(process.stop)
            await eventually(lambda p=process: _written(self.kubeconfig(name)) or p.proc.returncode is not None,
                             f"apiserver {name} up", within=30)  # fmt: skip
            if process.proc.returncode is None or "address already in use" not in process.output() or attempt == 2:
                break
        self.servers[name] = process
        assert process.proc.returncode is None, process.output()

    async def install_crds(self, cluster: str, bundle: str) -> None:
        kubectl = self.kubectl(cluster)
        rendered = await kubectl("kustomize", str(REPO / "config" / "crd" / bundle))
        await kubectl("apply", "--server-side", "-f", "-", stdin=rendered)
        names = [f"crd/{d['metadata']['name']}" for d in yaml.safe_load_all(rendered) if d]
        await kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)

    async def register(self, cluster: str) -> None:
        """`kubectl apply` of the ClusterProfile and kubeconfig Secret, as an operator would."""
        kubeconfig = yaml.safe_load(self.access_kubeconfig(cluster).read_text())
        secret = kubeconfig_secret(cluster, kubeconfig)
        if cluster in self.cities:
            profile = cell_profile(cluster, self.cities[cluster])
        else:
            profile = project_profile(self.project_paths[cluster])
        manifests = yaml.safe_dump_all([secret, profile], sort_keys=False)
        await self.kubectl("management")("apply", "-f", "-", stdin=manifests)

    async def run_manager(self, name: str, *args: str) -> Process:
        process = await spawn(name, ["run", *args], self.workdir)
        self.managers[name] = process
        self.stack.push_async_callback(process.stop)
        return process


@asynccontextmanager
async def deployed_fleet(
    workdir: Path,
    *,
    projects: Sequence[str] = ("acme/web",),
    cells: Sequence[tuple[str, str]] = (("dfw-1", "DFW"),),
    rbac: bool = False,
) -> AsyncIterator[DeployedFleet]:
    """apiserver processes for management, the projects and the cells, with the CRDs
    installed and every cluster registered in management. With `rbac`, the servers run
    TLS and enforce RBAC, and every identity is bound only to the shipped roles
    (tests/support/rbac.py)."""
    async with AsyncExitStack() as stack:
        fleet = DeployedFleet(workdir, stack)
        if rbac:
            fleet.server_args = ["--tls", "--authorization-mode=RBAC"]
        fleet.cities = dict(cells)
        fleet.project_paths = {project_cluster_name(p): p for p in projects}
        names = ["management", *fleet.project_paths, *fleet.cities]
        await asyncio.gather(*(fleet.start_server(name) for name in names))
        await fleet.install_crds("management", "cluster-inventory")
        await fleet.install_crds("management", "locations")  # placement by spec.locationRef reads them
        await fleet.kubectl("management")("create", "namespace", REGISTRATION_NAMESPACE)
        await asyncio.gather(*(fleet.install_crds(name, "compute") for name in names if name != "management"))
        if rbac:
            from .rbac import grant_shipped_roles

            fleet.manager_identity, fleet.access_identity = await grant_shipped_roles(fleet)
        for name in names[1:]:
            await fleet.register(name)
        yield fleet
