"""`federation-manager up`: a working federation on embedded API servers.

It starts a management cluster, one control plane per project and one cluster per cell,
installs the CRDs where they belong, registers every cell and project in the management
cluster the way a platform team would (ClusterProfile + kubeconfig Secret), then runs the
management-mode controllers and one set of cell-mode controllers per cell, built by
`federation/app.py` from the same settings `run` reads, and applies the sample Workload.
`<state-dir>/<cluster>.kubeconfig` is written for every cluster and `<state-dir>/ready`
once every controller's caches have synced; both are removed on exit."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import yaml
from rich.console import Console
from rich.table import Table

from federation import app
from federation.api.constants import REGISTRATION_NAMESPACE
from federation.api.crds import MANAGEMENT_CRDS, all_crd_manifests
from federation.api.resources import LOCATIONS, NAMESPACES, SECRETS, WORKLOADS
from federation.registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile
from federation.settings import ManagerSettings, load_settings
from kubeplane import EmbeddedAPIServer
from mcruntime.client import Client
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.connection import ConnectionConfig
from mcruntime.manager import Manager
from mcruntime.resources import CLUSTER_PROFILES, CUSTOM_RESOURCE_DEFINITIONS

FIELD_MANAGER = "federation-demo"
# config/samples, shipped in the package (federation/samples links to it), so an installed
# wheel finds them too.
SAMPLES = files("federation") / "samples"
ESTABLISH_TIMEOUT = 30.0
SYNC_TIMEOUT = 60.0
MANAGEMENT = "management"


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
    try:
        project.name  # noqa: B018 - validates the org/project path
    except ValueError as exc:
        raise ValueError(f"--project {text!r}: {exc}") from None
    return project


def check_names(cells: Sequence[Cell], projects: Sequence[Project]) -> None:
    """Every cluster needs its own name (it names a kubeconfig and a ClusterProfile)."""
    seen: dict[str, str] = {MANAGEMENT: "the management cluster"}
    for what, name in [*((f"--cell {c.name}", c.name) for c in cells), *((f"--project {p.path}", p.name)
                                                                        for p in projects)]:  # fmt: skip
        if name in seen:
            raise ValueError(f"{what}: cluster name {name!r} is already used by {seen[name]}")
        seen[name] = what


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


def sample_objects(name: str) -> list[dict[str, Any]]:
    """Every object of a multi-document sample."""
    docs = [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d is not None]
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ValueError(f"{SAMPLES / name} does not hold objects")
    return docs


def management_settings(state_dir: Path) -> ManagerSettings:
    return load_settings(
        kubeconfig=state_dir / f"{MANAGEMENT}.kubeconfig",
        enable_management_controllers=True,
        local_cluster_name=MANAGEMENT,
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        graceful_shutdown_timeout=5.0,
    )


def cell_settings(state_dir: Path, cell: Cell) -> ManagerSettings:
    return load_settings(
        kubeconfig=state_dir / f"{cell.name}.kubeconfig",
        enable_cell_controllers=True,
        local_cluster_name=cell.name,
        site_name=cell.name,
        city_code=cell.city_code,
        feature_gates={"PodRuntime": True},
        metrics_bind_address="0",
        health_probe_bind_address="0",
        graceful_shutdown_timeout=5.0,
    )


def synced(manager: Manager, expected_clusters: set[str]) -> bool:
    """Every expected cluster engaged and ready, every controller's watches synced."""
    states = manager.cluster_states()
    if not expected_clusters <= set(states):
        return False
    if any(states[name] is not ClusterState.READY for name in expected_clusters):
        return False
    return manager.local.state is ClusterState.READY and all(c.has_synced for c in manager.controllers)


class Demo:
    def __init__(self, state_dir: Path, cells: list[Cell], projects: list[Project], console: Console) -> None:
        self.state_dir = state_dir
        self.cells = cells
        self.projects = projects
        self.console = console
        self.servers: dict[str, EmbeddedAPIServer] = {}
        self.managers: dict[str, Manager] = {}

    def step(self, text: str) -> None:
        self.console.print(f"[green]✓[/green] {text}", highlight=False)

    async def start_servers(self, stack: AsyncExitStack) -> None:
        for name in [MANAGEMENT, *(p.name for p in self.projects), *(c.name for c in self.cells)]:
            server = EmbeddedAPIServer(name=name, kubeconfig=self.state_dir / f"{name}.kubeconfig")
            self.servers[name] = await stack.enter_async_context(server)
            stack.callback(_unlink, self.state_dir / f"{name}.kubeconfig")
        self.step(f"{len(self.servers)} API servers up (1 management, {_count(len(self.projects), 'project')}, "
                  f"{_count(len(self.cells), 'cell')})")  # fmt: skip

    async def install(self) -> None:
        crds = all_crd_manifests()
        management_names = {c.name for c in MANAGEMENT_CRDS}
        inventory = [c for c in crds if c["metadata"]["name"] in management_names]
        compute = [c for c in crds if c["metadata"]["name"] not in management_names]
        async with _client(self.servers[MANAGEMENT]) as mgmt:
            await install_crds(mgmt, inventory)
            await mgmt.apply(NAMESPACES, {"metadata": {"name": REGISTRATION_NAMESPACE}}, force=True)
            for location in sample_objects("networking_v1alpha_location.yaml"):
                await mgmt.apply(LOCATIONS, location, force=True)
            for name in self.servers:
                if name != MANAGEMENT:
                    async with _client(self.servers[name]) as client:
                        await install_crds(client, compute)
            self.step(
                "CRDs established (ClusterProfile, Location in management; compute kinds in projects and cells); "
                "sample Locations applied"
            )
            cells = {c: self.servers[c.name] for c in self.cells}
            projects = {p: self.servers[p.name] for p in self.projects}
            for obj in registrations(cells, projects):
                await mgmt.apply(SECRETS if obj["kind"] == "Secret" else CLUSTER_PROFILES, obj, force=True)
        self.step(f"registered {_count(len(self.cells), 'cell')} and {_count(len(self.projects), 'project')} as "
                  f"ClusterProfiles in {MANAGEMENT}/{REGISTRATION_NAMESPACE}")  # fmt: skip

    async def start_managers(self, tg: anyio.abc.TaskGroup, stop: anyio.Event) -> None:
        plans = [(MANAGEMENT, management_settings(self.state_dir))]
        plans += [(c.name, cell_settings(self.state_dir, c)) for c in self.cells]
        for name, settings in plans:
            manager = await app.prepare_manager(settings)
            await tg.start(manager.run)
            self.managers[name] = manager
        expected = {c.name for c in self.cells} | {p.name for p in self.projects}
        with anyio.fail_after(SYNC_TIMEOUT):
            while not (
                synced(self.managers[MANAGEMENT], expected)
                and all(synced(self.managers[c.name], set()) for c in self.cells)
            ):
                if stop.is_set():
                    return
                await anyio.sleep(0.05)
        controllers = sum(len(m.controllers) for m in self.managers.values())
        self.step(f"controllers synced: {controllers} controllers in {len(self.managers)} managers "
                  f"(management mode + cell mode per cell)")  # fmt: skip

    async def apply_sample(self) -> dict[str, Any]:
        workload = sample("compute_v1alpha_workload.yaml")
        workload["metadata"].setdefault("namespace", "default")
        async with _client(self.servers[self.projects[0].name]) as client:
            await client.apply(WORKLOADS, workload, force=True)
        self.step(f"applied Workload {workload['metadata']['name']!r} to project {self.projects[0].name!r}")
        return workload

    def summary(self) -> None:
        table = Table(title="federation-manager is up on embedded API servers", title_justify="left")
        for column in ("cluster", "role", "city", "url", "kubeconfig"):
            table.add_column(column, no_wrap=True)
        table.add_row(MANAGEMENT, "management", "", self.servers[MANAGEMENT].url,
                      str(self.state_dir / f"{MANAGEMENT}.kubeconfig"))  # fmt: skip
        for p in self.projects:
            table.add_row(p.name, "project", "", self.servers[p.name].url, str(self.state_dir / f"{p.name}.kubeconfig"))
        for c in self.cells:
            table.add_row(c.name, "cell", c.city_code, self.servers[c.name].url,
                          str(self.state_dir / f"{c.name}.kubeconfig"))  # fmt: skip
        self.console.print(table)
        mgmt = self.managers[MANAGEMENT]
        kc = f"--kubeconfig {self.state_dir}"
        project = self.projects[0].name
        cell = self.cells[0].name
        lines = [
            f"management manager: /readyz on http://127.0.0.1:{mgmt.health_port}/readyz?verbose, "
            f"/metrics on http://127.0.0.1:{mgmt.metrics_port}/metrics",
            "",
            "Try this:",
            f"  kubectl {kc}/{project}.kubeconfig get workloads,wd,instances",
            f"  kubectl {kc}/{cell}.kubeconfig get wd,instances,pods -A",
            f"  kubectl {kc}/{MANAGEMENT}.kubeconfig get clusterprofiles -n {REGISTRATION_NAMESPACE} --show-labels",
            f"  federation-manager status --state-dir {self.state_dir}",
            "",
            f"Run your own manager against these clusters: federation-manager run --kubeconfig "
            f"{self.state_dir}/{MANAGEMENT}.kubeconfig --enable-management-controllers (it finds the cells and "
            f"projects through the ClusterProfiles in {REGISTRATION_NAMESPACE}).",
            "Stop with Ctrl-C.",
        ]
        self.console.print("\n".join(lines), highlight=False, soft_wrap=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


async def up(state_dir: Path, cells: list[Cell], projects: list[Project], duration: float | None) -> None:
    """Bring the federation up, keep it running until SIGINT/SIGTERM (or `duration`), and
    take it down cleanly: managers stop first, then the servers; kubeconfigs and `ready`
    are removed. A signal during start-up stops after the step in progress."""
    console = Console(file=sys.stdout, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # logs and pipes: do not fold paths and URLs
    await anyio.Path(state_dir).mkdir(parents=True, exist_ok=True)
    stop = anyio.Event()
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, signals, stop, console)
            if duration is not None:
                tg.start_soon(_stop_after, duration, stop)
            try:
                await _serve(Demo(state_dir, cells, projects, console), stop)
            finally:
                tg.cancel_scope.cancel()
    console.print("federation-manager up: stopped", highlight=False)


async def _serve(demo: Demo, stop: anyio.Event) -> None:
    ready = demo.state_dir / "ready"
    async with AsyncExitStack() as stack:
        stack.callback(_unlink, ready)
        await demo.start_servers(stack)
        if stop.is_set():
            return
        await demo.install()
        if stop.is_set():
            return
        async with anyio.create_task_group() as tg:
            try:
                await demo.start_managers(tg, stop)
                if not stop.is_set():
                    await demo.apply_sample()
                    ready.write_text("ready\n")
                    demo.summary()
                    await stop.wait()
                demo.console.print("federation-manager up: shutting down", highlight=False)
            finally:
                for manager in demo.managers.values():
                    manager.stop()


async def _stop_on_signal(signals: AsyncIterator[int], stop: anyio.Event, console: Console) -> None:
    async for signum in signals:
        if stop.is_set():
            console.print(f"{signal.Signals(signum).name} again: already stopping", highlight=False)
        stop.set()


async def _stop_after(duration: float, stop: anyio.Event) -> None:
    await anyio.sleep(duration)
    stop.set()
