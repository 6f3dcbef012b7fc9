"""`federation-manager up`: a working federation on embedded API servers.

It starts a management cluster, one control plane per project and one cluster per cell,
installs the CRDs where they belong, registers every cell and project in the management
cluster the way a platform team would (ClusterProfile + kubeconfig Secret), then runs the
management-mode controllers and one set of cell-mode controllers per cell, built by
`federation/app.py` from the same settings `run` reads, and applies the sample Workload.
`<state-dir>/<cluster>.kubeconfig` is written for every cluster and `<state-dir>/ready`
once every controller's caches have synced; both are removed on exit. Unless `--ephemeral`,
each server keeps its objects in `<state-dir>/data/<cluster>/` (SQLite, kubeplane/persist.py)
and its port: a restart brings the same objects and UIDs back, the controllers find them
converged, and the sample is applied only to a new project."""

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
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from rich.console import Console
from rich.table import Table

from federation import app, join, telemetry
from federation.api.constants import REGISTRATION_NAMESPACE
from federation.api.resources import LOCATIONS, WORKLOADS
from federation.join import install_crds
from federation.registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile
from federation.settings import ManagerSettings, load_settings
from federation.statelock import StateLock
from kubeplane import EmbeddedAPIServer
from mcruntime.client import Client
from mcruntime.cluster import Cluster, ClusterState
from mcruntime.connection import ConnectionConfig
from mcruntime.fields import get_str
from mcruntime.manager import Manager

FIELD_MANAGER = "federation-demo"
# config/samples, shipped in the package (federation/samples links to it), so an installed
# wheel finds them too.
SAMPLES = files("federation") / "samples"
SYNC_TIMEOUT = 60.0
SPAN_EXPORT_DELAY_MS = 200.0  # `up` is for watching: spans reach <state-dir>/traces/ within a fraction of a second
MANAGEMENT = "management"
DATA_DIR = "data"  # <state-dir>/data/<cluster>/kubeplane.db: each embedded server's objects
PORT_FILE = "port"  # <state-dir>/data/<cluster>/port: the port it last served on


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
    def __init__(
        self, state_dir: Path, cells: list[Cell], projects: list[Project], console: Console, *, persistent: bool = True
    ) -> None:
        self.state_dir = state_dir
        self.tracer_providers: list[SdkTracerProvider] = []
        self.cells = cells
        self.projects = projects
        self.console = console
        self.persistent = persistent
        self.restored: list[str] = []  # servers whose objects came back from a previous run
        self.servers: dict[str, EmbeddedAPIServer] = {}
        self.managers: dict[str, Manager] = {}

    def data_dir(self, name: str) -> Path:
        return self.state_dir / DATA_DIR / name

    def step(self, text: str) -> None:
        self.console.print(f"[green]✓[/green] {text}", highlight=False)

    async def start_servers(self, stack: AsyncExitStack) -> None:
        for name in [MANAGEMENT, *(p.name for p in self.projects), *(c.name for c in self.cells)]:
            server = await self._start_server(name)
            stack.push_async_callback(server.stop)
            self.servers[name] = server
            stack.callback(_unlink, self.state_dir / f"{name}.kubeconfig")
        self.step(f"{len(self.servers)} API servers up (1 management, {_count(len(self.projects), 'project')}, "
                  f"{_count(len(self.cells), 'cell')})")  # fmt: skip
        if not self.persistent:
            self.step("state: in memory (--ephemeral): it goes when up stops")
        elif self.restored:
            self.step(f"state: restored from {self.state_dir / DATA_DIR} (SQLite per server; {len(self.restored)} "
                      f"with objects from the last run)")  # fmt: skip
        else:
            self.step(f"state: persisted in {self.state_dir / DATA_DIR} (SQLite per server; kept across restarts)")

    async def _start_server(self, name: str) -> EmbeddedAPIServer:
        """Start one server; persistent ones keep their data and, when it is free, their port
        (the registrations and kubeconfigs from the last run stay true: nothing is rewritten)."""
        kubeconfig = self.state_dir / f"{name}.kubeconfig"
        if not self.persistent:
            server = EmbeddedAPIServer(name=name, kubeconfig=kubeconfig)
            await server.start()
            return server
        data = self.data_dir(name)
        port_file = data / PORT_FILE
        saved = port_file.read_text().strip() if port_file.exists() else ""
        saved = saved if saved.isdigit() else ""
        server = EmbeddedAPIServer(name=name, kubeconfig=kubeconfig, data_dir=data, port=int(saved or 0))
        if server.plane.db.history_floor > 0:  # a revision stored by an earlier run
            self.restored.append(name)
        try:
            await server.start()
        except OSError:
            if not saved:
                raise
            # the last run's port is taken now: a new one (the registration is rewritten to match)
            server = EmbeddedAPIServer(name=name, kubeconfig=kubeconfig, data_dir=data)
            await server.start()
        port_file.write_text(f"{server.port}\n")
        return server

    async def install(self) -> None:
        inventory, compute = join.inventory_crds(), join.compute_crds()
        async with _client(self.servers[MANAGEMENT]) as mgmt:
            await install_crds(mgmt, inventory)
            for location in sample_objects("networking_v1alpha_location.yaml"):
                # created once: a restart (or the user's own edit of a sample) writes nothing
                if await mgmt.get_or_none(LOCATIONS, get_str(location, "metadata.name")) is None:
                    await mgmt.create(LOCATIONS, location)
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
            await join.register(mgmt, registrations(cells, projects), REGISTRATION_NAMESPACE)  # as `join` does
        self.step(f"registered {_count(len(self.cells), 'cell')} and {_count(len(self.projects), 'project')} as "
                  f"ClusterProfiles in {MANAGEMENT}/{REGISTRATION_NAMESPACE}")  # fmt: skip

    async def start_managers(self, tg: anyio.abc.TaskGroup, stop: anyio.Event) -> None:
        plans = [(MANAGEMENT, management_settings(self.state_dir))]
        plans += [(c.name, cell_settings(self.state_dir, c)) for c in self.cells]
        exporter = telemetry.JsonLinesSpanExporter(telemetry.spans_file(self.state_dir))
        for name, settings in plans:
            # every manager records its spans (service.name = its cluster) to <state-dir>/traces/
            tracer_provider = telemetry.provider(name, [exporter], schedule_delay_millis=SPAN_EXPORT_DELAY_MS)
            self.tracer_providers.append(tracer_provider)
            manager = await app.prepare_manager(settings, tracer_provider=tracer_provider)
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

    def project_restored(self) -> bool:
        """The first project came back from storage: what the user did there (the sample
        deleted, say) stays as it was."""
        return self.projects[0].name in self.restored

    async def apply_sample(self) -> dict[str, Any]:
        workload = sample("compute_v1alpha_workload.yaml")
        workload["metadata"].setdefault("namespace", "default")
        async with _client(self.servers[self.projects[0].name]) as client:
            await client.apply(WORKLOADS, workload, force=True)
        self.step(f"applied Workload {get_str(workload, 'metadata.name')!r} to project {self.projects[0].name!r}")
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
        # absolute paths: the commands work pasted in a new terminal, from any directory,
        # without the virtualenv on PATH
        state = self.state_dir.resolve()
        kc = f"--kubeconfig {state}"
        fm = cli_command()
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
            f"  {fm} status --state-dir {state}",
            "",
            f"Run your own manager against these clusters: {fm} run --kubeconfig "
            f"{state}/{MANAGEMENT}.kubeconfig --enable-management-controllers (it finds the cells and "
            f"projects through the ClusterProfiles in {REGISTRATION_NAMESPACE}).",
            "Stop with Ctrl-C.",
        ]
        self.console.print("\n".join(lines), highlight=False, soft_wrap=True)


def cli_command() -> str:
    """How to run this same `federation-manager` from a new terminal: by its full path (the
    virtualenv's bin is on this process's PATH under ./taskw, rarely on a new terminal's)."""
    beside = Path(sys.executable).parent / "federation-manager"
    return str(beside) if beside.exists() else "federation-manager"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


async def up(
    state_dir: Path,
    cells: list[Cell],
    projects: list[Project],
    duration: float | None,
    *,
    shown: str | None = None,
    ephemeral: bool = False,
) -> None:
    """Bring the federation up, keep it running until SIGINT/SIGTERM/SIGHUP (or `duration`),
    and take it down cleanly: managers stop first, then the servers; kubeconfigs and `ready`
    are removed. A signal during start-up stops after the step in progress. One `up` per
    state dir (federation/statelock.py; `shown`: the dir as the user typed it)."""
    console = Console(file=sys.stdout, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # logs and pipes: do not fold paths and URLs
    await anyio.Path(state_dir).mkdir(parents=True, exist_ok=True)
    with StateLock(state_dir, shown if shown is not None else str(state_dir)) as lock:
        # whatever a previous process left: it is dead (we hold its lock), its `ready` is a lie
        _unlink(state_dir / "ready")
        if lock.took_over_from is not None:
            console.print(f"took over --state-dir {lock.shown} from pid {lock.took_over_from} (no longer running)")
        demo = Demo(state_dir, cells, projects, console, persistent=not ephemeral)
        try:
            await _run_until_stopped(demo, duration)
        finally:
            for tracer_provider in demo.tracer_providers:
                tracer_provider.shutdown()  # the spans still batched reach the file
    console.print("federation-manager up: stopped", highlight=False)


async def _run_until_stopped(demo: Demo, duration: float | None) -> None:
    console = demo.console
    stop = anyio.Event()
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, signals, stop, console)
            if duration is not None:
                tg.start_soon(_stop_after, duration, stop)
            try:
                await _serve(demo, stop)
            finally:
                tg.cancel_scope.cancel()


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
                    if demo.project_restored():
                        demo.step("the project's objects are back from the last run (the sample is not re-applied)")
                    else:
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
