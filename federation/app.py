"""The composition root: from settings to a running manager.

`build_manager` makes the runtime Manager (local cluster, leader election, endpoints,
the cluster provider) and `register_controllers` adds the controllers of each enabled
mode. The CLI's `run` and the all-in-one `up` both go through `run_manager`, so the demo
runs exactly what an operator deploys."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from opentelemetry.trace import TracerProvider

from cells.options import CellOptions
from mcruntime import gcpause
from mcruntime.cache import CacheOptions
from mcruntime.cluster import ClusterOptions
from mcruntime.connection import ConnectionConfig, load_default
from mcruntime.errors import APIError, ConfigError, TransportError, is_retryable
from mcruntime.leaderelection import LeaderElectionConfig
from mcruntime.manager import Manager
from mcruntime.transport import Transport

from .api.constants import CELL_ROLE, CLUSTER_ROLE_LABEL, SHARD_RING_LABEL
from .features import POD_RUNTIME, QUOTA_GATE
from .fleet.options import ManagementOptions
from .settings import SHARD_ID_RULE, ManagerSettings, valid_shard_id

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

    from .fleet.sharding import ShardingOptions

log = logging.getLogger("federation")

LOCAL_PROBE_TIMEOUT = 10.0

ManagementRegistrar = Callable[[Manager, ManagementOptions], None]
CellRegistrar = Callable[[Manager, CellOptions], None]
"""A controller module's `register(mgr, options)`: wires its watches, nothing else."""


# Each mode's controllers are imported only when that mode is on: a manager loads the code
# (and, for the cell controllers, the API models) it runs, not the other mode's (issue 22,
# "a small process"; tests/test_lean_process.py).
def management_controllers() -> list[tuple[str, ManagementRegistrar]]:
    from federation.controllers import companions, federator, workload
    from projector import instances as instance_projector
    from projector import status as status_projector

    return [
        ("federator", federator.register),
        (companions.NAME, companions.register),
        ("workload-controller", workload.register),
        ("instance-projector", instance_projector.register),
        ("status-projector", status_projector.register),
    ]


# the controllers that report on what another writes take their turn behind it while it has
# a backlog, for at most so many seconds (`Controller.yields_to`, DESIGN §4): the user's
# intent reaches the cells first, and a status is computed once from the copies written,
# not once per copy as it lands; the bound keeps statuses (a dark cell's Unknown among
# them) going while the federator's workers wait on a cell that does not answer
YIELDS_TO = (("status-projector", "federator", 1.0),)


# with --sharding, the controllers each shard runs for the project WDs (Workloads, project
# namespaces) it owns (the others run on the elected replica, as without sharding)
SHARDED_CONTROLLERS = ("federator", "status-projector", "instance-projector", "workload-controller", "companions")


def cell_controllers(options: CellOptions) -> list[tuple[str, CellRegistrar]]:
    """The cell controllers `options` turn on. A feature-gated one is imported only with its
    gate on: a cell manager does not load a pod runtime or quota grants it does not run."""
    from cells import instance, workloaddeployment

    wiring: list[tuple[str, CellRegistrar]] = [
        (workloaddeployment.NAME, workloaddeployment.register),
        (instance.NAME, instance.register),
    ]
    if options.pod_runtime:  # feature gate PodRuntime
        from cells import podruntime

        wiring.append((podruntime.NAME, podruntime.register))
    else:
        log.info("pod runtime off (feature gate PodRuntime): Instances are left to another runtime")
    if options.quota_gate:  # feature gate QuotaGate
        from cells import quotagrant

        wiring.append((quotagrant.NAME, quotagrant.register))
    return wiring


def default_identity() -> str:
    """client-go's leader identity: hostname (the pod name) plus a unique suffix."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


class StartupError(Exception):
    """The manager cannot start; the message is one line naming the problem."""


async def local_config(settings: ManagerSettings) -> ConnectionConfig:
    """The local (management or cell) cluster's connection, checked to answer: a manager
    that cannot reach its own cluster, or that the cluster refuses (credentials, a wrong
    address), exits at once instead of retrying silently. An answer that says "not now"
    (429, 5xx) is no such verdict: the cluster is there, and the manager starts (its caches
    retry, /readyz says not ready until they list). Exiting on one would turn a passing
    fault into a manager that never runs: a cell whose copies nobody ever observes
    (tests/federation/test_startup_probe.py)."""
    try:
        config = await load_default(settings.kubeconfig)
    except ConfigError as exc:
        raise StartupError(str(exc)) from exc
    transport = Transport(config, cluster=settings.local_cluster_name, request_timeout=LOCAL_PROBE_TIMEOUT)
    async with transport:
        try:
            await transport.request("GET", "/version", verb="get")
        except TransportError as exc:
            raise StartupError(
                f"cannot reach the {settings.local_cluster_name} cluster at {config.host}: {exc}"
            ) from exc
        except APIError as exc:
            if not is_retryable(exc):  # 429/5xx say "not now", not "no"
                refused = f"the {settings.local_cluster_name} cluster at {config.host} refused us"
                raise StartupError(f"{refused}: {exc}") from exc
            log.warning("the %s cluster at %s answered the start-up probe with %s; starting anyway (its caches "
                        "retry until it serves)", settings.local_cluster_name, config.host, exc)  # fmt: skip
    return config


def build_manager(
    settings: ManagerSettings, local: ConnectionConfig, *, tracer_provider: TracerProvider | None = None
) -> Manager:
    """A Manager configured from settings: local cluster, leader election, endpoints and
    the cluster provider. Controllers are added by `register_controllers`."""
    election = shard_lease = None
    sharding = sharding_options(settings)
    if sharding is not None:
        shard_lease = LeaderElectionConfig(
            namespace=sharding.lease_namespace,
            name=sharding.shard,
            identity=sharding.shard,
            lease_duration=settings.leader_election_lease_duration,
            renew_deadline=settings.leader_election_renew_deadline,
            retry_period=settings.leader_election_retry_period,
            labels=((SHARD_RING_LABEL, sharding.ring),),
        )
    if settings.leader_elect or sharding is not None:  # with sharding, the elected replica is the sharder
        election = LeaderElectionConfig(
            namespace=settings.leader_election_namespace or settings.own_namespace(),
            name=settings.leader_election_id,
            identity=f"{sharding.shard}_{uuid.uuid4()}" if sharding is not None else default_identity(),
            lease_duration=settings.leader_election_lease_duration,
            renew_deadline=settings.leader_election_renew_deadline,
            retry_period=settings.leader_election_retry_period,
        )
    manager = Manager(
        local,
        name="federation-manager",
        local_cluster_name=settings.local_cluster_name,
        leader_election=election,
        health_probe_bind_address=settings.health_probe_bind_address,
        metrics_bind_address=settings.metrics_bind_address,
        graceful_shutdown_timeout=settings.graceful_shutdown_timeout,
        tracer_provider=tracer_provider,
        shard_lease=shard_lease,
        # a shard caches the project WDs and Workloads, cell copies and cell Instances
        # labelled for it, nothing else of them (the sharder reads the other shards' WDs and
        # Workloads through slim FLEET views); by the cluster's role
        cluster_options_for=partial(sharded_cluster_options, sharding) if sharding is not None else None,
        local_cluster_options=ClusterOptions(),
    )
    reg = settings.registration
    provider = settings.effective_provider()
    # each provider's module is imported when it is the one chosen (a small process)
    if provider == "clusterprofile":
        from mcruntime.providers.clusterprofile import ClusterProfileProvider

        manager.add_provider(
            ClusterProfileProvider(
                secret_annotation=reg.kubeconfig_secret_annotation,
                namespace=reg.namespace,
                label_selector=reg.label_selector,
            )
        )
    elif provider == "secrets":
        from mcruntime.providers.secrets import KubeconfigSecretProvider

        manager.add_provider(KubeconfigSecretProvider(namespace=reg.namespace, label_selector=reg.label_selector))
    elif provider == "kubeconfig-dir":
        from mcruntime.providers.kubeconfig_dir import KubeconfigDirProvider

        assert reg.kubeconfig_dir is not None
        manager.add_provider(
            KubeconfigDirProvider(reg.kubeconfig_dir, poll_interval=reg.poll_interval, subdir_label=CLUSTER_ROLE_LABEL)
        )
    return manager


def sharded_cluster_options(sharding: ShardingOptions, labels: Mapping[str, str]) -> ClusterOptions:
    """An engaged cluster's options on a shard: its caches narrowed to the shard's label,
    a cell's (by its role label) Instances too."""
    cell = labels.get(CLUSTER_ROLE_LABEL) == CELL_ROLE
    return ClusterOptions(cache=CacheOptions(label_selectors=sharding.cache_selectors(cell=cell)))


def sharding_options(settings: ManagerSettings) -> ShardingOptions | None:
    """This replica's place in the ring, with --sharding (None without)."""
    if not settings.sharding:
        return None
    shard = settings.effective_shard_id()
    if not valid_shard_id(shard):
        raise StartupError(f"--shard-id: the default {shard!r} (pod or host name) is not a valid shard name "
                           f"({SHARD_ID_RULE}); set --shard-id")  # fmt: skip
    from .fleet.sharding import ShardingOptions  # only with --sharding (the ring's hash library with it)

    return ShardingOptions(
        shard=shard,
        ring=settings.leader_election_id,
        lease_namespace=settings.leader_election_namespace or settings.own_namespace(),
        sharder_ring_weight=settings.sharder_ring_weight,
    )


def shard_management_controllers(manager: Manager, options: ShardingOptions) -> list[str]:
    """Gate the sharded controllers by this replica's shard, and add the sharder, the
    shard-lease controller (both on the elected replica) and the drain acknowledger."""
    from federation.api.resources import WORKLOADS
    from federation.controllers import companions, shardacks, sharder, shardleases

    gate, election = manager.shard_gate, manager.leader_election
    assert gate is not None and election is not None, "build_manager gives a sharded manager both Leases"
    from projector import instances as instance_projector

    owner = shardacks.owned_by(manager, options.shard)
    # an Instance projection is owned with the project WD its Instances name; a Workload is
    # owned as labelled; a project namespace's companions by every shard, each for its own WDs
    owners = dict.fromkeys(SHARDED_CONTROLLERS, owner)
    owners["instance-projector"] = instance_projector.owned_by(manager, owner)
    owners["workload-controller"] = shardacks.owned_by(manager, options.shard, WORKLOADS)
    owners[companions.NAME] = companions.shard(manager, options.shard, options.lease_namespace, options.lease_selector)
    for controller in manager.controllers:
        if controller.name in owners:
            controller.shard(gate, owners[controller.name])
    sharder.register(manager, options)
    shardleases.register(manager, options, election.identity)
    shardacks.register(manager, options)
    return [sharder.NAME, sharder.WORKLOADS_NAME, shardleases.NAME, shardacks.NAME, shardacks.WORKLOADS_NAME]


def management_options(settings: ManagerSettings) -> ManagementOptions:
    """What the management-mode controllers are told, from the settings."""
    return ManagementOptions(
        workers=settings.controllers.workers,
        status_batch_period=settings.controllers.status_batch_period,
        awaiting_propagation_after=settings.controllers.awaiting_propagation_after,
        cell_status_stale_after=settings.cell_status_stale_after,
        cell_unreachable_grace=settings.cell_unreachable_grace,
    )


def cell_options(settings: ManagerSettings) -> CellOptions:
    """What the cell-mode controllers are told, from the settings."""
    return CellOptions(
        workers=settings.controllers.workers,
        quota_gate=settings.feature_gates.enabled(QUOTA_GATE),
        pod_runtime=settings.feature_gates.enabled(POD_RUNTIME),
        city_code=settings.city_code,
    )


def register_controllers(manager: Manager, settings: ManagerSettings) -> list[str]:
    """Add the controllers of every enabled mode, each given its mode's frozen options;
    returns the names of those that were added, in order (a controller whose feature gate
    is off is not wired, nor imported)."""
    wiring: list[tuple[str, Callable[[], None]]] = []
    if settings.enable_management_controllers:
        management = management_options(settings)
        wiring += [(name, partial(register, manager, management)) for name, register in management_controllers()]
    if settings.enable_cell_controllers:
        cell = cell_options(settings)
        wiring += [(name, partial(register, manager, cell)) for name, register in cell_controllers(cell)]
    names: list[str] = []
    for name, wire in wiring:
        before = len(manager.controllers)
        wire()
        if len(manager.controllers) > before:
            names.append(name)
    by_name = {c.name: c for c in manager.controllers}
    for lower, higher, at_most in YIELDS_TO:
        if lower in by_name and higher in by_name:
            by_name[lower].yields_to(by_name[higher], at_most=at_most)
    sharding = sharding_options(settings) if settings.enable_management_controllers else None
    if sharding is not None:
        names += shard_management_controllers(manager, sharding)
    return names


async def prepare_manager(settings: ManagerSettings, *, tracer_provider: TracerProvider | None = None) -> Manager:
    """Build the manager and add the controllers of every enabled mode (logged)."""
    manager = build_manager(settings, await local_config(settings), tracer_provider=tracer_provider)
    names = register_controllers(manager, settings)
    modes = [m for m, on in (("management", settings.enable_management_controllers),
                             ("cell", settings.enable_cell_controllers)) if on]  # fmt: skip
    log.info(
        "federation-manager: modes %s; controllers %s; cluster provider %s",
        ", ".join(modes) or "none",
        ", ".join(names) or "none",
        settings.effective_provider(),
    )
    if settings.enable_cell_controllers:
        log.info(
            "cell mode: site %s serving city %s",
            settings.site_name or "(--site-name not set)",
            settings.city_code or "(any: --city-code not set, WorkloadDeployments of every city are run)",
        )
    return manager


async def run_manager(settings: ManagerSettings, *, handle_signals: bool = True) -> None:
    """Build, wire and run a manager until it is stopped (SIGTERM/SIGINT with `handle_signals`)."""
    tracer_provider = tracing_provider(settings)
    try:
        manager = await prepare_manager(settings, tracer_provider=tracer_provider)
        gcpause.tune_for_serving()
        if not (settings.enable_management_controllers or settings.enable_cell_controllers):
            log.warning("no mode enabled (--enable-management-controllers, --enable-cell-controllers): only probes, "
                        "metrics and leader election run")  # fmt: skip
        await manager.run(handle_signals=handle_signals)
    finally:
        if tracer_provider is not None:
            tracer_provider.shutdown()  # the spans still batched are exported


def tracing_provider(settings: ManagerSettings) -> SdkTracerProvider | None:
    """The SDK tracer provider `--tracing` asks for (OTEL_* environment); None when off, and
    then the SDK's tracing is not even imported (a lean `run`, tests/test_lean_process.py)."""
    if not settings.tracing:
        return None
    from . import telemetry  # only when asked for: the SDK's tracing and exporters are not free to load

    try:
        exporters = telemetry.exporters_from_environment()
        if settings.traces_file is not None:
            exporters.append(telemetry.JsonLinesSpanExporter(settings.traces_file))
        return telemetry.provider(settings.local_cluster_name, exporters)
    except telemetry.TelemetryError as exc:
        raise StartupError(str(exc)) from exc
    except OSError as exc:
        raise StartupError(f"--traces-file {settings.traces_file}: {exc.strerror or exc}") from exc
