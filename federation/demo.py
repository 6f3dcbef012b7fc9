"""`federation-manager up`: the all-in-one demo on embedded API servers.

It starts a management cluster, one control plane per project and one cluster per cell,
installs the CRDs where they belong, registers every cell and project in the management
cluster the way a platform team would (ClusterProfile + kubeconfig Secret), and applies
the sample Workload to the first project. Everything after starting the servers goes
through the runtime's client, as the manager itself talks to clusters."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml

from federation.api.constants import CLUSTER_INVENTORY_GROUP, REGISTRATION_NAMESPACE
from federation.api.crds import all_crd_manifests
from federation.api.resources import NAMESPACES, SECRETS, WORKLOADS
from federation.registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile
from kubeplane import EmbeddedAPIServer
from mcruntime.client import Client
from mcruntime.cluster import Cluster
from mcruntime.connection import ConnectionConfig
from mcruntime.resources import CLUSTER_PROFILES, CUSTOM_RESOURCE_DEFINITIONS

FIELD_MANAGER = "federation-demo"
SAMPLES = Path(__file__).resolve().parent.parent / "config" / "samples"
ESTABLISH_TIMEOUT = 30.0


@dataclass(frozen=True)
class Cell:
    name: str
    city_code: str


@dataclass(frozen=True)
class Project:
    path: str  # "<org>/<project>"

    @property
    def name(self) -> str:
        """The cluster name every request carries: the bare project name."""
        return project_cluster_name(self.path)


def parse_cell(text: str) -> Cell:
    name, sep, city = text.partition(":")
    if not sep or not name or not city:
        raise ValueError(f"--cell {text!r}: expected NAME:CITY, e.g. cell-dfw:DFW")
    return Cell(name, city.upper())


def parse_project(text: str) -> Project:
    project = Project(text)
    project.name  # noqa: B018 - validates the org/project path, raising ValueError naming it
    return project


def _config(server: EmbeddedAPIServer) -> ConnectionConfig:
    return ConnectionConfig.insecure(server.url, server.token)


@asynccontextmanager
async def _client(server: EmbeddedAPIServer) -> AsyncIterator[Client]:
    """An uncached runtime client on one embedded server (setup writes, no informers)."""
    cluster = Cluster(server.name, _config(server), field_manager=FIELD_MANAGER)
    async with cluster.transport:
        yield Client(cluster.transport, None, field_manager=FIELD_MANAGER)


async def install_crds(client: Client, crds: list[dict[str, Any]]) -> None:
    """Server-side apply the CRDs and wait until each is Established."""
    for crd in crds:
        await client.apply(CUSTOM_RESOURCE_DEFINITIONS, crd, force=True)
    with anyio.fail_after(ESTABLISH_TIMEOUT):
        for crd in crds:
            while True:
                live = await client.get_live(CUSTOM_RESOURCE_DEFINITIONS, crd["metadata"]["name"])
                conditions = (live.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    break
                await anyio.sleep(0.02)


async def apply_all(client: Client, objects: Sequence[Mapping[str, Any]]) -> None:
    for obj in objects:
        resource = SECRETS if obj["kind"] == "Secret" else CLUSTER_PROFILES
        await client.apply(resource, obj, force=True)


def registrations(
    cells: Mapping[Cell, EmbeddedAPIServer], projects: Mapping[Project, EmbeddedAPIServer]
) -> list[dict[str, Any]]:
    """Secret + ClusterProfile for every cell and project (federation/registration.py)."""
    objs: list[dict[str, Any]] = []
    for cell, server in cells.items():
        objs += [kubeconfig_secret(cell.name, server.kubeconfig()), cell_profile(cell.name, cell.city_code)]
    for project, server in projects.items():
        objs += [kubeconfig_secret(project.name, server.kubeconfig()), project_profile(project.path)]
    return objs


def sample(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((SAMPLES / name).read_text())
    if not isinstance(loaded, dict):
        raise ValueError(f"{SAMPLES / name} does not hold one object")
    return loaded


async def up(state_dir: Path, cells: list[Cell], projects: list[Project], duration: float | None) -> None:
    await anyio.Path(state_dir).mkdir(parents=True, exist_ok=True)
    crds = all_crd_manifests()
    inventory = [c for c in crds if c["spec"]["group"] == CLUSTER_INVENTORY_GROUP]
    compute = [c for c in crds if c["spec"]["group"] != CLUSTER_INVENTORY_GROUP]
    async with AsyncExitStack() as stack:

        async def start(name: str) -> EmbeddedAPIServer:
            server = EmbeddedAPIServer(name=name, kubeconfig=state_dir / f"{name}.kubeconfig")
            return await stack.enter_async_context(server)

        management = await start("management")
        project_servers = {p: await start(p.name) for p in projects}
        cell_servers = {c: await start(c.name) for c in cells}

        mgmt = await stack.enter_async_context(_client(management))
        await install_crds(mgmt, inventory)
        for server in [*project_servers.values(), *cell_servers.values()]:
            async with _client(server) as client:
                await install_crds(client, compute)
        await mgmt.apply(NAMESPACES, {"metadata": {"name": REGISTRATION_NAMESPACE}}, force=True)
        await apply_all(mgmt, registrations(cell_servers, project_servers))

        workload = sample("compute_v1alpha_workload.yaml")
        first = projects[0]
        async with _client(project_servers[first]) as project_client:
            workload["metadata"].setdefault("namespace", "default")
            await project_client.apply(WORKLOADS, workload, force=True)

        _print_summary(state_dir, management, project_servers, cell_servers, workload)
        await _wait(duration)


def _print_summary(
    state_dir: Path,
    management: EmbeddedAPIServer,
    projects: dict[Project, EmbeddedAPIServer],
    cells: dict[Cell, EmbeddedAPIServer],
    workload: dict[str, Any],
) -> None:
    lines = ["federation-manager demo is up on embedded API servers:", ""]
    lines.append(f"  {'cluster':<14}{'role':<12}{'city':<6}{'url':<28}kubeconfig")
    lines.append(f"  {'management':<14}{'management':<12}{'':<6}{management.url:<28}{management.kubeconfig_path}")
    for p, s in projects.items():
        lines.append(f"  {p.name:<14}{'project':<12}{'':<6}{s.url:<28}{s.kubeconfig_path}")
    for c, s in cells.items():
        lines.append(f"  {c.name:<14}{'cell':<12}{c.city_code:<6}{s.url:<28}{s.kubeconfig_path}")
    first = next(iter(projects))
    lines += [
        "",
        f"Registered {len(cells)} cells and {len(projects)} projects as ClusterProfiles; applied Workload "
        f"{workload['metadata']['name']!r} to project {first.name!r}.",
        "Try:",
        f"  kubectl --kubeconfig {state_dir / 'management.kubeconfig'} get clusterprofiles -A --show-labels",
        f"  kubectl --kubeconfig {state_dir / (first.name + '.kubeconfig')} get workloads",
        "",
        "The federator, cell controllers and projector arrive with later issues: nothing reconciles the",
        "Workload yet. Stop with Ctrl-C.",
    ]
    print("\n".join(lines), flush=True)


async def _wait(duration: float | None) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        with anyio.move_on_after(duration if duration is not None else float("inf")):
            async for _ in signals:
                break
    print("federation-manager demo: shutting down", flush=True)
