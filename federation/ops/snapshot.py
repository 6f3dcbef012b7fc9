"""One read of a whole federation, for the operator commands (`status`, `plan`, `check`)
and the invariant checker: the registrations in the management cluster, and what every
registered project and cell holds that the federation writes or reads.

Contract
- Live reads only (no informers): a command reads once and exits, or re-reads on a timer.
- Every cluster is read under one deadline (`read_timeout` seconds for all of its reads). A
  cluster that does not answer in time, refuses, or answers with an error is recorded as
  unreachable with that error; loading never raises for it and never waits past the
  deadline. A management cluster that cannot be read gives a snapshot without projects
  or cells (`management.reachable` False) — the caller decides what to say.
- A ClusterProfile whose kubeconfig Secret is missing or unusable is recorded as a
  cluster that is not registered (`registered` False, the reason in `error`): the manager
  does not engage it either, so placement leaves it out (`Snapshot.cell_infos`).
- The result is plain frozen data (`Snapshot`), objects as the API returned them.

What is read
- management: ClusterProfiles (label `compute.datumapis.com/cluster-role in (cell,project)`,
  the manager's default registration selector) and the Secrets they name, in the
  registration namespace;
- each project: Namespaces, WorkloadDeployments, Instances (projections), Workloads, and
  the names of its ConfigMaps and Secrets (`sources`: kind, name, namespace; never data);
- each cell: the federated namespaces and WD copies (the federator's views: labels
  `meta.datumapis.com/upstream-cluster-name` / `meta.datumapis.com/upstream-namespace`
  present), every Instance, and the companions' names (label
  `compute.datumapis.com/referenced-data=true`; never data).
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from federation.api.clusterprofile import kubeconfig_secret_name
from federation.api.constants import (
    KUBECONFIG_SECRET_KEY,
    REGISTRATION_NAMESPACE,
    UPSTREAM_UID_ANNOTATION,
    ClusterRole,
    Label,
)
from federation.api.resources import (
    CLUSTER_PROFILES,
    INSTANCES,
    LOCATIONS,
    NAMESPACES,
    SECRETS,
    WORKLOAD_DEPLOYMENTS,
    WORKLOADS,
)
from federation.fleet.downstream import UpstreamRef, upstream_identity
from federation.fleet.fleetview import CELL_COPIES_SELECTOR, CELL_NAMESPACES_SELECTOR
from federation.fleet.locations import KnownLocation, known_location
from federation.fleet.placement import CellInfo
from federation.fleet.references import REFERENCED_DATA_LABEL
from mcruntime.client import Client
from mcruntime.connection import ConnectionConfig, from_kubeconfig_file
from mcruntime.errors import APIError, ClusterNotReadyError, ConfigError, TransportError
from mcruntime.fields import get_objects, get_str, get_str_map
from mcruntime.objects import Obj
from mcruntime.providers.secretdata import config_from_secret
from mcruntime.resources import CONFIGMAPS
from mcruntime.transport import Transport

DEFAULT_TIMEOUT = 5.0
MANAGEMENT = "management"
REGISTRATION_SELECTOR = f"{Label.CLUSTER_ROLE} in ({ClusterRole.CELL},{ClusterRole.PROJECT})"
COMPANIONS = f"{REFERENCED_DATA_LABEL}=true"
FIELD_MANAGER = "federation-manager-inspect"  # never writes; named for the servers' request logs

# What a failed read of one cluster can raise; each is recorded, none escapes.
_READ_ERRORS = (APIError, TransportError, ClusterNotReadyError, TimeoutError, ConfigError)


class SnapshotSourceError(ValueError):
    """The management cluster cannot even be addressed (no kubeconfig, bad state dir)."""


@dataclass(frozen=True, slots=True)
class Health:
    """Whether a cluster was read completely. `registered` is False when its ClusterProfile
    has no usable kubeconfig Secret (the manager does not engage it)."""

    reachable: bool
    error: str = ""
    registered: bool = True


OK = Health(True)


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    name: str  # the bare project name: the cluster name every request carries
    upstream_label: str  # encoded `cluster-<org>_<project>` from its registration ("" when missing)
    health: Health
    namespaces: tuple[Obj, ...] = ()
    workload_deployments: tuple[Obj, ...] = ()
    instances: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()
    sources: tuple[Obj, ...] = ()  # ConfigMaps and Secrets, names only (`names_of`)

    @property
    def reachable(self) -> bool:
        return self.health.reachable

    def namespace(self, name: str) -> Obj | None:
        return next((ns for ns in self.namespaces if get_str(ns, "metadata.name", required=False) == name), None)

    def workload_deployment(self, namespace: str, name: str) -> Obj | None:
        return next(
            (
                wd
                for wd in self.workload_deployments
                if get_str(wd, "metadata.name", required=False) == name
                and get_str(wd, "metadata.namespace", required=False) == namespace
            ),
            None,
        )


@dataclass(frozen=True, slots=True)
class CellSnapshot:
    name: str
    city_code: str  # "" when registered without one (serves no city)
    health: Health
    namespaces: tuple[Obj, ...] = ()  # federated namespaces only
    copies: tuple[Obj, ...] = ()  # federated WD copies only
    instances: tuple[Obj, ...] = ()
    companions: tuple[Obj, ...] = ()  # labelled referenced-data ConfigMaps and Secrets, names only

    @property
    def reachable(self) -> bool:
        return self.health.reachable

    def namespace(self, name: str) -> Obj | None:
        return next((ns for ns in self.namespaces if get_str(ns, "metadata.name", required=False) == name), None)


def names_of(kind: str, objs: list[Obj]) -> list[Obj]:
    """ConfigMaps or Secrets as the snapshot keeps them: kind, name and namespace (no data,
    no labels or annotations, which may hold it too)."""
    return [{"kind": kind, "metadata": {"name": get_str(o, "metadata.name"),
                                        "namespace": get_str(o, "metadata.namespace", required=False)}}
            for o in objs]  # fmt: skip


@dataclass(frozen=True, slots=True)
class CellCopy:
    """A WD copy in a cell and the project WD it says it belongs to (None: unlabelled,
    malformed or contradictory, see `downstream.upstream_identity`)."""

    cell: str
    obj: Obj
    upstream: UpstreamRef | None

    @property
    def name(self) -> str:
        return get_str(self.obj, "metadata.name", required=False)

    @property
    def namespace(self) -> str:
        return get_str(self.obj, "metadata.namespace", required=False)

    @property
    def uid(self) -> str:
        return get_str(self.obj, "metadata.uid", required=False)

    @property
    def upstream_uid(self) -> str:
        return str(get_str_map(self.obj, "metadata.annotations").get(UPSTREAM_UID_ANNOTATION) or "")

    def serves(self, project: str, namespace: str, name: str) -> bool:
        up = self.upstream
        return up is not None and (up.project, up.namespace, up.name) == (project, namespace, name)


@dataclass(frozen=True, slots=True)
class Snapshot:
    management: Health
    source: str  # the management cluster's address, for messages
    registration_namespace: str = REGISTRATION_NAMESPACE
    projects: Mapping[str, ProjectSnapshot] = field(default_factory=dict)
    cells: Mapping[str, CellSnapshot] = field(default_factory=dict)
    taken_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    # the management cluster's Locations, as placement reads them (`fleetview.known_locations`)
    locations: tuple[KnownLocation, ...] = ()
    # how each registered project was reached (for `plan`'s server-side dry run); not state
    project_configs: Mapping[str, ConnectionConfig] = field(default_factory=dict, compare=False, repr=False)

    def cell_infos(self) -> list[CellInfo]:
        """The cells placement sees, as the manager's `fleetview.registered_cells` does:
        registered (usable credentials) with a city code; reachability carried along."""
        return [
            CellInfo(cell.name, cell.city_code, cell.reachable)
            for cell in sorted(self.cells.values(), key=lambda c: c.name)
            if cell.health.registered and cell.city_code
        ]

    def copies(self) -> Iterator[CellCopy]:
        """Every WD copy in the cells that were read, with the project WD it names."""
        for cell in sorted(self.cells.values(), key=lambda c: c.name):
            namespaces = {get_str(ns, "metadata.name", required=False): ns for ns in cell.namespaces}
            for obj in cell.copies:
                ns = namespaces.get(get_str(obj, "metadata.namespace", required=False))
                yield CellCopy(cell.name, obj, upstream_identity(obj, ns))

    def copies_by_upstream(self) -> dict[tuple[str, str, str], list[CellCopy]]:
        """(project, project namespace, WD name) → the copies that name it, in cell order
        (copies naming no project WD are left out: see `copies`)."""
        index: dict[tuple[str, str, str], list[CellCopy]] = {}
        for copy in self.copies():
            if copy.upstream is not None:
                up = copy.upstream
                index.setdefault((up.project, up.namespace, up.name), []).append(copy)
        return index

    def copies_of(self, project: str, namespace: str, name: str) -> list[CellCopy]:
        return self.copies_by_upstream().get((project, namespace, name), [])

    def unreachable_cells(self) -> list[CellSnapshot]:
        return [c for c in sorted(self.cells.values(), key=lambda c: c.name) if not c.reachable]


# ---------------------------------------------------------------------- where to start


def management_kubeconfig(*, state_dir: Path | None = None, kubeconfig: Path | None = None) -> Path:
    """The management cluster's kubeconfig: `<state_dir>/management.kubeconfig` (what
    `federation-manager up --state-dir` writes) or the one given. Raises
    SnapshotSourceError naming what is missing."""
    if (state_dir is None) == (kubeconfig is None):
        raise SnapshotSourceError("give exactly one of --state-dir DIR or --kubeconfig FILE")
    if state_dir is not None:
        if not state_dir.is_dir():
            raise SnapshotSourceError(f"--state-dir {state_dir}: no such directory")
        path = state_dir / f"{MANAGEMENT}.kubeconfig"
        if not path.is_file():
            raise SnapshotSourceError(
                f"--state-dir {state_dir}: {path.name} not found (is `federation-manager up --state-dir "
                f"{state_dir}` running?)"
            )
        return path
    assert kubeconfig is not None
    if not kubeconfig.is_file():
        raise SnapshotSourceError(f"--kubeconfig {kubeconfig}: no such file")
    return kubeconfig


async def management_config(*, state_dir: Path | None = None, kubeconfig: Path | None = None) -> ConnectionConfig:
    """The management cluster's connection (`management_kubeconfig`); ConfigError when
    the file is not a usable kubeconfig."""
    return await from_kubeconfig_file(management_kubeconfig(state_dir=state_dir, kubeconfig=kubeconfig))


# ---------------------------------------------------------------------- loading


def _describe(exc: BaseException, read_timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {read_timeout:g}s"
    return str(exc) or type(exc).__name__


async def _read(
    name: str, config: ConnectionConfig, read_timeout: float, reads: Callable[[Client], Awaitable[None]]
) -> Health:
    """Run `reads` against one cluster under one deadline; any failure becomes its Health."""
    # The deadline below is the one bound; the transport's own timeouts sit past it so a
    # hung cluster is always reported the same way.
    transport = Transport(
        config,
        cluster=name,
        request_timeout=read_timeout + 1,
        connect_timeout=read_timeout + 1,
        max_throttle_retries=0,
        user_agent=FIELD_MANAGER,
    )
    try:
        async with transport:
            with anyio.fail_after(read_timeout):
                await reads(Client(transport, None, field_manager=FIELD_MANAGER))
    except _READ_ERRORS as exc:
        return Health(False, _describe(exc, read_timeout))
    return OK


@dataclass
class _Registration:
    name: str
    role: str
    labels: Mapping[str, str]
    config: ConnectionConfig | None
    error: str


async def _registrations(profiles: list[Obj], secrets: list[Obj]) -> list[_Registration]:
    by_name = {get_str(s, "metadata.name", required=False): s for s in secrets}
    found: list[_Registration] = []
    for profile in sorted(profiles, key=lambda p: get_str(p, "metadata.name", required=False)):
        name, labels = get_str(profile, "metadata.name", required=False), get_str_map(profile, "metadata.labels")
        secret_name = kubeconfig_secret_name(name, get_str_map(profile, "metadata.annotations"))
        secret = by_name.get(secret_name)
        config: ConnectionConfig | None = None
        error = ""
        if secret is None:
            error = f"kubeconfig Secret {secret_name} not found"
        else:
            try:
                config = await config_from_secret(secret, KUBECONFIG_SECRET_KEY)
            except ConfigError as exc:
                error = str(exc)
        found.append(_Registration(name, labels.get(Label.CLUSTER_ROLE, ""), labels, config, error))
    return found


async def _project(reg: _Registration, read_timeout: float) -> ProjectSnapshot:
    upstream = reg.labels.get(Label.UPSTREAM_CLUSTER_NAME, "")
    if reg.config is None:
        return ProjectSnapshot(reg.name, upstream, Health(False, reg.error, registered=False))
    got: dict[str, list[Obj]] = {}

    async def reads(client: Client) -> None:
        got["namespaces"] = await client.list_live(NAMESPACES)
        got["wds"] = await client.list_live(WORKLOAD_DEPLOYMENTS)
        got["instances"] = await client.list_live(INSTANCES)
        got["workloads"] = await client.list_live(WORKLOADS)
        got["sources"] = names_of("ConfigMap", await client.list_live(CONFIGMAPS))
        got["sources"] += names_of("Secret", await client.list_live(SECRETS))

    health = await _read(reg.name, reg.config, read_timeout, reads)
    if not health.reachable:
        return ProjectSnapshot(reg.name, upstream, health)
    return ProjectSnapshot(
        reg.name,
        upstream,
        health,
        namespaces=tuple(got["namespaces"]),
        workload_deployments=tuple(got["wds"]),
        instances=tuple(got["instances"]),
        workloads=tuple(got["workloads"]),
        sources=tuple(got["sources"]),
    )


async def _cell(reg: _Registration, read_timeout: float) -> CellSnapshot:
    city = reg.labels.get(Label.TOPOLOGY_CITY_CODE, "")
    if reg.config is None:
        return CellSnapshot(reg.name, city, Health(False, reg.error, registered=False))
    got: dict[str, list[Obj]] = {}

    async def reads(client: Client) -> None:
        got["namespaces"] = await client.list_live(NAMESPACES, label_selector=CELL_NAMESPACES_SELECTOR)
        got["copies"] = await client.list_live(WORKLOAD_DEPLOYMENTS, label_selector=CELL_COPIES_SELECTOR)
        got["instances"] = await client.list_live(INSTANCES)
        got["companions"] = names_of("ConfigMap", await client.list_live(CONFIGMAPS, label_selector=COMPANIONS))
        got["companions"] += names_of("Secret", await client.list_live(SECRETS, label_selector=COMPANIONS))

    health = await _read(reg.name, reg.config, read_timeout, reads)
    if not health.reachable:
        return CellSnapshot(reg.name, city, health)
    return CellSnapshot(
        reg.name,
        city,
        health,
        namespaces=tuple(got["namespaces"]),
        copies=tuple(got["copies"]),
        instances=tuple(got["instances"]),
        companions=tuple(got["companions"]),
    )


async def load_snapshot(
    management: ConnectionConfig,
    *,
    registration_namespace: str = REGISTRATION_NAMESPACE,
    read_timeout: float = DEFAULT_TIMEOUT,
) -> Snapshot:
    """Read the federation once (see the module docstring). Clusters are read
    concurrently, each under `read_timeout`, so the whole load takes about one `read_timeout` at
    worst after the management read."""
    if read_timeout <= 0:
        raise ValueError(f"read_timeout must be a positive number of seconds, got {read_timeout!r}")
    got: dict[str, list[Obj]] = {}

    async def registration(client: Client) -> None:
        got["profiles"] = await client.list_live(
            CLUSTER_PROFILES, namespace=registration_namespace, label_selector=REGISTRATION_SELECTOR
        )
        got["secrets"] = await client.list_live(SECRETS, namespace=registration_namespace)
        try:
            got["locations"] = await client.list_live(LOCATIONS)
        except APIError as exc:
            if exc.status != 404:
                raise
            got["locations"] = []  # no Location CRD installed: only cityCode deployments place

    health = await _read(MANAGEMENT, management, read_timeout, registration)
    if not health.reachable:
        return Snapshot(health, management.host, registration_namespace)
    regs = await _registrations(got["profiles"], got["secrets"])
    projects: dict[str, ProjectSnapshot] = {}
    cells: dict[str, CellSnapshot] = {}

    async def project(reg: _Registration) -> None:
        projects[reg.name] = await _project(reg, read_timeout)

    async def cell(reg: _Registration) -> None:
        cells[reg.name] = await _cell(reg, read_timeout)

    async with anyio.create_task_group() as tg:
        for reg in regs:
            if reg.role == ClusterRole.PROJECT:
                tg.start_soon(project, reg)
            elif reg.role == ClusterRole.CELL:
                tg.start_soon(cell, reg)
    return Snapshot(
        health,
        management.host,
        registration_namespace,
        dict(sorted(projects.items())),
        dict(sorted(cells.items())),
        locations=tuple(known_location(obj) for obj in got.get("locations", [])),
        project_configs={
            reg.name: reg.config for reg in regs if reg.role == ClusterRole.PROJECT and reg.config is not None
        },
    )


async def server_verdict(
    snapshot: Snapshot, project: str, wd: Mapping[str, Any], namespace: str, *, read_timeout: float = DEFAULT_TIMEOUT
) -> str | None:
    """What `project`'s API server says of `wd` in `namespace` becoming exactly this object,
    without storing anything: a create, or a replace of the deployed WD at the resourceVersion
    the snapshot read, with dryRun=All and fieldValidation=Strict (as `kubectl replace
    --dry-run=server --validate=strict`). The server's message when it refuses the object;
    None when it would accept it, or when there is no verdict to be had (the project or the
    namespace cannot be reached: the offline check stands alone then)."""
    config = snapshot.project_configs.get(project)
    if config is None:
        return None
    metadata: dict[str, Any] = {**(wd.get("metadata") or {}), "namespace": namespace}
    deployed = snapshot.projects[project].workload_deployment(namespace, get_str(wd, "metadata.name", required=False))
    if deployed is not None:
        metadata["resourceVersion"] = get_str(deployed, "metadata.resourceVersion", required=False)
    body = {**wd, "metadata": metadata}
    verdict: list[str] = []

    async def dry_run(client: Client) -> None:
        try:
            if deployed is None:
                await client.create(WORKLOAD_DEPLOYMENTS, body, field_manager=FIELD_MANAGER, dry_run=True, strict=True)
            else:
                await client.update(WORKLOAD_DEPLOYMENTS, body, field_manager=FIELD_MANAGER, dry_run=True, strict=True)
        except APIError as exc:
            if exc.status == 404:  # the namespace does not exist yet: nothing to validate against
                return
            if 400 <= exc.status < 500:
                verdict.append(exc.message)
                return
            raise

    await _read(project, config, read_timeout, dry_run)
    return verdict[0] if verdict else None


def controller_uid(obj: Mapping[str, Any]) -> str:
    """The UID of an object's controlling owner ("" when it has none)."""
    for ref in get_objects(obj, "metadata.ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""
