"""The manager: owns the local (management) cluster, engages and disengages provider
clusters at run time, runs controllers (only while leader, when leader election is on;
a sharded controller only while this replica holds its shard Lease, `shard_lease`),
serves /healthz, /readyz and /metrics, and shuts down gracefully on SIGTERM/SIGINT:
controllers stop taking work and finish what is in flight, the lease is released, then
providers, clusters (informers and connections) and endpoints stop."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

import anyio
import anyio.abc
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.sdk.metrics import MeterProvider as SDKMeterProvider
from opentelemetry.trace import TracerProvider
from prometheus_client import CollectorRegistry

from .cluster import Cluster, ClusterOptions, ClusterState
from .connection import ConnectionConfig
from .controller import Controller
from .errors import ClusterNotEngagedError
from .events import EventRecorder
from .health import Check, CheckResult, EndpointServer, parse_bind_address
from .leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector
from .metrics import PullHistogram, RuntimeMetricReader, RuntimeMetrics
from .providers.base import Provider
from .ratelimiter import RateLimiter
from .reconciler import ReconcileFunc, Reconciler
from .request import Request
from .source import ClusterEvent, ClusterEventType, disjoint

if TYPE_CHECKING:
    from .resources import Resource
    from .sharding.gate import ShardGate

log = logging.getLogger(__name__)


@dataclass
class _Engaged:
    cluster: Cluster
    scope: anyio.CancelScope | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    # every controller has declared its views in the cluster: until then the cluster is
    # not in `Manager.clusters`, so no map function meets a cluster without its views
    bound: bool = False


class Manager:
    def __init__(
        self,
        local: ConnectionConfig | Cluster | None = None,
        *,
        name: str = "mcruntime",
        local_cluster_name: str = "local",
        leader_election: LeaderElectionConfig | None = None,
        health_probe_bind_address: str = "0",
        metrics_bind_address: str = "0",
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        graceful_shutdown_timeout: float = 30.0,
        cluster_options: ClusterOptions | None = None,
        field_manager: str | None = None,
        shard_lease: LeaderElectionConfig | None = None,
        local_cluster_options: ClusterOptions | None = None,
        cluster_options_for: Callable[[Mapping[str, str]], ClusterOptions] | None = None,
    ) -> None:
        self.name = name
        self.registry = CollectorRegistry()
        self._reader: RuntimeMetricReader | None = None
        if meter_provider is None:
            self._reader = RuntimeMetricReader(registry=self.registry)
            meter_provider = SDKMeterProvider(metric_readers=[self._reader], shutdown_on_exit=False)
        self.meter_provider = meter_provider
        self.tracer_provider = tracer_provider
        self.metrics = RuntimeMetrics(meter_provider)
        if self._reader is not None:
            # latencies are pull histograms (metrics.py): a caller's own provider exports
            # them through a `RuntimeMetricReader` of its own that includes them
            self._reader.include(self.metrics.histograms)
        # leak detectors for long runs and churn benchmarks: tasks and engaged clusters
        meter_provider.get_meter("mcruntime").create_observable_gauge(
            "mcruntime_asyncio_tasks", callbacks=[_count_tasks], description="asyncio tasks alive in the process"
        )
        self.field_manager = field_manager or name
        self.cluster_options = cluster_options or ClusterOptions()
        # an engaged cluster's options by its labels (default: `cluster_options` for every one),
        # e.g. a sharded manager narrows one role's caches and not another's
        self._options_for = cluster_options_for or (lambda _labels: self.cluster_options)
        self._per_cluster_options = cluster_options_for is not None
        if isinstance(local, ConnectionConfig):
            # the local cluster's own options (default: the engaged clusters'): a sharded
            # manager narrows the fleet's caches, not its own cluster's
            local = Cluster(local_cluster_name, local, metrics=self.metrics, field_manager=self.field_manager,
                            options=local_cluster_options or self.cluster_options)  # fmt: skip
        self._local = local
        self.leader_election = leader_election
        if leader_election is not None and local is None:
            raise ValueError("leader election needs a local cluster to hold the Lease")
        if shard_lease is not None and local is None:
            raise ValueError("a shard needs a local cluster to hold its Lease")
        if shard_lease is not None and leader_election is not None and shard_lease.name == leader_election.name:
            raise ValueError(f"the shard Lease and the leader election Lease cannot both be {shard_lease.name!r}")
        self.shard_lease = shard_lease
        # the shard's own Lease, held by its own elector (renewed on a thread of its own);
        # controllers gated by `shard_gate` run only while it is held
        self.shard_elector: LeaderElector | None = None
        self.shard_gate: ShardGate | None = None
        if shard_lease is not None:
            from .sharding.gate import ShardGate  # a sharded manager only (the ring's hash library with it)

            self.shard_gate = ShardGate(shard_lease.identity, self._shard_lease_fresh)
        self._shard_done = anyio.Event()
        self.health_bind = parse_bind_address(health_probe_bind_address)
        self.metrics_bind = parse_bind_address(metrics_bind_address)
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.controllers: list[Controller] = []
        self.providers: list[Provider] = []
        self._clusters: dict[str, _Engaged] = {}
        # `clusters` as last built, until the next engage, bind or disengage (read per event)
        self._bound: Mapping[str, Cluster] | None = None
        self._clusters_tg: anyio.abc.TaskGroup | None = None
        self._lock = anyio.Lock()
        self._stop = anyio.Event()
        self._lead_done = anyio.Event()
        self.elected = anyio.Event()
        self.elector: LeaderElector | None = None
        self._campaign_scope: anyio.CancelScope | None = None
        self.lost_leadership = False
        self.running = False
        self.health_port: int | None = None
        self.metrics_port: int | None = None
        self._healthz: dict[str, Check] = {"ping": lambda: True}
        self._readyz: dict[str, Check] = {"ping": lambda: True, "clusters": self._clusters_detail}
        self._recorders: dict[tuple[str, str], EventRecorder] = {}

    # ------------------------------------------------------------------ clusters
    @property
    def local(self) -> Cluster:
        if self._local is None:
            raise ClusterNotEngagedError("(local: this manager was built without a local cluster)")
        return self._local

    @property
    def clusters(self) -> Mapping[str, Cluster]:
        """The clusters providers engaged (not the local one) whose controllers have
        declared their views. A cluster still starting (its pool opening, between the
        engage and the controllers' binding) is left out: a map function looping over the
        clusters would otherwise meet one without its views (NoCacheViewError) and lose
        the event's work for every other cluster. Nothing is lost by leaving it out: its
        informers list everything once they start, and its ENGAGED event follows.

        Read-only, and the same mapping until the next engage, bind or disengage (map
        functions read it on every event): a change makes a new one, so a caller looping
        over it across an await loops over the clusters as they were when it read them."""
        bound = self._bound
        if bound is None:
            bound = self._bound = MappingProxyType({n: e.cluster for n, e in self._clusters.items() if e.bound})
        return bound

    def get_cluster(self, name: str) -> Cluster:
        """The cluster a request names. An empty or unknown name is an error: a request
        is never routed to the local cluster (or any other) by default."""
        if not name:
            raise ClusterNotEngagedError("")
        if self._local is not None and name == self._local.name:
            return self._local
        engaged = self._clusters.get(name)
        if engaged is None:
            raise ClusterNotEngagedError(name)
        return engaged.cluster

    async def engage(self, name: str, config: ConnectionConfig, labels: Mapping[str, str] | None = None) -> None:
        """Start serving a cluster (or pick up new credentials or labels for it)."""
        if not name:
            raise ValueError("cannot engage a cluster with an empty name")
        if self._local is not None and name == self._local.name:
            raise ValueError(f"cannot engage {name!r}: that is the local cluster's name")
        async with self._lock:
            if self._clusters_tg is None:
                raise RuntimeError("the manager is not running; clusters are engaged by providers while it runs")
            existing = self._clusters.get(name)
            if existing is not None:
                same_options = self._options_for(labels or {}) == self._options_for(existing.cluster.labels)
                if config.fingerprint and existing.cluster.config.fingerprint == config.fingerprint and same_options:
                    if dict(labels or {}) != existing.cluster.labels:
                        cluster = existing.cluster
                        self._dispatch(ClusterEventType.DISENGAGED, cluster)
                        cluster.labels = dict(labels or {})
                        for controller in self.controllers:
                            controller.disengage(name)
                            if self._engages_now(controller):
                                controller.engage(cluster)
                        self._dispatch(ClusterEventType.ENGAGED, cluster)
                        if cluster.state is ClusterState.READY:
                            self._dispatch(ClusterEventType.READY, cluster)
                        log.info("cluster %s: labels changed; watches re-bound", name)
                    return
                await self._disengage_locked(name)
            hosting = self._clusters_tg  # read again: the manager may have begun stopping meanwhile
            if hosting is None:
                raise RuntimeError("the manager is stopping; no cluster is engaged any more")
            cluster = Cluster(name, config, labels=labels, metrics=self.metrics, field_manager=self.field_manager,
                              options=self._options_for(labels or {}))  # fmt: skip
            engaged = _Engaged(cluster)
            self._clusters[name] = engaged
            self._bound = None
            try:
                await hosting.start(self._run_cluster, engaged)
            except BaseException:
                # never left registered without a running task: a disengage would wait on it forever
                self._clusters.pop(name, None)
                self._bound = None
                engaged.done.set()
                raise
            for controller in self.controllers:
                if self._engages_now(controller):
                    controller.engage(cluster)
            engaged.bound = True
            self._bound = None
            self.metrics.engaged_clusters.add(1)
            self.metrics.cluster_state.add(1, {"cluster": name, "state": str(cluster.state)})
            cluster.on_state_change(self._on_cluster_state)
            self._dispatch(ClusterEventType.ENGAGED, cluster)
            cluster.mark_bound()
            log.info("engaged cluster %s (%s)", name, config.source or config.host)

    async def _run_cluster(self, engaged: _Engaged, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            with anyio.CancelScope() as scope:
                engaged.scope = scope
                await engaged.cluster.run(task_status=task_status)
        finally:
            engaged.done.set()

    async def disengage(self, name: str) -> bool:
        """Stop serving a cluster: unbind watches, stop its informers, close its connections."""
        async with self._lock:
            return await self._disengage_locked(name)

    async def _disengage_locked(self, name: str) -> bool:
        engaged = self._clusters.pop(name, None)
        if engaged is None:
            return False
        self._bound = None
        cluster = engaged.cluster
        for controller in self.controllers:
            controller.disengage(name)
        for key in [k for k in self._recorders if k[0] == name]:
            del self._recorders[key]
        if engaged.scope is not None:
            engaged.scope.cancel()
        with anyio.CancelScope(shield=True):
            await engaged.done.wait()
        self.metrics.engaged_clusters.add(-1)
        self.metrics.cluster_state.add(-1, {"cluster": name, "state": str(cluster.state)})
        self._dispatch(ClusterEventType.DISENGAGED, cluster)
        log.info("disengaged cluster %s", name)
        return True

    def _on_cluster_state(self, cluster: Cluster, old: ClusterState, new: ClusterState) -> None:
        if self._clusters.get(cluster.name) is None or self._clusters[cluster.name].cluster is not cluster:
            return  # a stale cluster object winding down
        self.metrics.cluster_state.add(-1, {"cluster": cluster.name, "state": str(old)})
        self.metrics.cluster_state.add(1, {"cluster": cluster.name, "state": str(new)})
        if new is ClusterState.UNREACHABLE:
            log.warning("cluster %s is unreachable: %s", cluster.name, cluster.last_error)
            self._dispatch(ClusterEventType.UNREACHABLE, cluster)
        elif new is ClusterState.READY:
            log.info("cluster %s is ready", cluster.name)
            self._dispatch(ClusterEventType.READY, cluster)

    def _on_local_state(self, cluster: Cluster, _old: ClusterState, new: ClusterState) -> None:
        if new is ClusterState.UNREACHABLE:
            log.warning("the local cluster %s is unreachable: %s", cluster.name, cluster.last_error)
        if new in (ClusterState.READY, ClusterState.UNREACHABLE):
            event = ClusterEventType.READY if new is ClusterState.READY else ClusterEventType.UNREACHABLE
            self._dispatch(event, cluster, is_local=True)

    def _dispatch(self, type_: ClusterEventType, cluster: Cluster, *, is_local: bool = False) -> None:
        event = ClusterEvent(type_, cluster.name, dict(cluster.labels))
        for controller in self.controllers:
            controller.cluster_event(event, is_local=is_local)

    def _clusters_detail(self) -> CheckResult:
        """Informational: each engaged cluster's state (an unreachable cell must not make
        the manager unready; it is reported, and the controllers route around it)."""
        lines = [f"{name}: {e.cluster.describe()}" for name, e in sorted(self._clusters.items())]
        return True, "; ".join(lines) if lines else "none engaged"

    def cluster_states(self) -> dict[str, ClusterState]:
        return {name: e.cluster.state for name, e in self._clusters.items()}

    # ------------------------------------------------------------------ events
    def event_recorder(self, cluster: str, component: str | None = None) -> EventRecorder:
        """The event recorder for a cluster, kept while the cluster is engaged so its
        deduplication and spam-filter state survive from one reconcile to the next."""
        component = component or self.name
        key = (cluster, component)
        recorder = self._recorders.get(key)
        if recorder is None:
            recorder = self._recorders[key] = EventRecorder(self.get_cluster(cluster).client, component)
        return recorder

    # ------------------------------------------------------------------ wiring
    def add_controller(self, controller: Controller) -> Controller:
        if self.running:
            raise RuntimeError("add controllers before the manager runs")
        if any(c.name == controller.name for c in self.controllers):
            raise ValueError(f"a controller named {controller.name!r} is already registered")
        self.controllers.append(controller)
        return controller

    def export_histograms(self, histograms: Iterable[PullHistogram]) -> None:
        """Export a component's own `PullHistogram`s on /metrics beside the runtime's (with a
        caller's own meter provider, its reader must `include` them)."""
        if self._reader is not None:
            self._reader.include(histograms)

    def new_controller(
        self,
        name: str,
        reconciler: Reconciler | ReconcileFunc,
        *,
        workers: int = 1,
        rate_limiter: RateLimiter[Request] | None = None,
        needs_leader_election: bool = True,
        reconcile_timeout: float | None = None,
        batch_period: float = 0.0,
    ) -> Controller:
        """A controller wired to this manager's metrics and tracer."""
        controller = Controller(
            name, reconciler, workers=workers, rate_limiter=rate_limiter, needs_leader_election=needs_leader_election,
            reconcile_timeout=reconcile_timeout, batch_period=batch_period, metrics=self.metrics,
            tracer_provider=self.tracer_provider,
        )  # fmt: skip
        return self.add_controller(controller)

    def check_views(self) -> None:
        """Refuse, before anything runs, two controllers declaring different cache views of
        one resource for clusters that may overlap (each cluster holds one view per resource)."""
        declared = [(c, w) for c in self.controllers for w in c.watches]
        for i, (ca, wa) in enumerate(declared):
            for cb, wb in declared[i + 1 :]:
                # alias aside: a cache that does not narrow the resource holds both as one view
                same = replace(wa.view, alias="") == replace(wb.view, alias="")
                if wa.resource != wb.resource or same or disjoint(wa.clusters, wb.clusters):
                    continue
                if wa.view.alias != wb.view.alias and self._may_narrow(wa.resource):
                    continue  # apart where a cache narrows it; a cache that does not refuses it when engaged
                raise ValueError(
                    f"controllers {ca.name!r} and {cb.name!r} declare different cache views of {wa.resource} for "
                    f"clusters that may overlap: [{wa.view}] and [{wb.view}]; use one view (or disjoint clusters)"
                )

    def _may_narrow(self, resource: Resource) -> bool:
        """Whether an engaged cluster's cache may narrow the resource (per-cluster options,
        or the default options' selector), so that an aliased view of it lives apart."""
        return self._per_cluster_options or resource in self.cluster_options.cache.label_selectors

    def add_provider(self, provider: Provider) -> Provider:
        if self.running:
            raise RuntimeError("add providers before the manager runs")
        self.providers.append(provider)
        return provider

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._readyz[name] = check

    @property
    def ready(self) -> bool:
        return self.running and all(_safe(check) for check in self._readyz.values())

    # ------------------------------------------------------------------ running
    def stop(self) -> None:
        """Ask for a graceful shutdown (what SIGTERM does)."""
        self._stop.set()

    async def run(
        self, *, handle_signals: bool = False, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run until `stop()` (or SIGTERM/SIGINT with `handle_signals`). Raises
        LeaderElectionLost when leadership is lost, after stopping everything."""
        if self.running:
            raise RuntimeError("the manager is already running")
        self.check_views()
        self.running = True
        try:
            async with anyio.create_task_group() as tg:
                if handle_signals:
                    await tg.start(self._on_signals)
                await self._start_endpoints(tg)
                if self._local is not None:
                    local = self._local
                    await tg.start(local.run)
                    for controller in self.controllers:
                        if self._engages_now(controller):
                            controller.engage(local, is_local=True)
                    local.on_state_change(self._on_local_state)
                    local.mark_bound()
                    self._readyz.setdefault("local-cache", lambda: local.cache.has_synced)
                await tg.start(self._host_clusters)
                for controller in self.controllers:
                    if not controller.needs_leader_election and not controller.sharded:
                        await tg.start(controller.run)
                for provider in self.providers:
                    self._readyz.setdefault(f"provider-{provider.name}", lambda p=provider: p.has_synced)  # type: ignore[misc]
                    await tg.start(provider.run, self)
                tg.start_soon(self._campaign if self.leader_election else self._lead_directly, name="leader")
                if self.shard_lease is not None:
                    tg.start_soon(self._hold_shard_lease, name="shard lease")
                else:
                    self._shard_done.set()
                task_status.started()
                await self._stop.wait()
                log.info("manager %s: shutting down", self.name)
                await self._stop_controllers()
                if self._campaign_scope is not None and not (self.elector and self.elector.is_leader):
                    self._campaign_scope.cancel()  # still campaigning: nothing to hand over
                with anyio.move_on_after(self.graceful_shutdown_timeout):
                    await self._lead_done.wait()  # the lease is released once leading ends
                    await self._shard_done.wait()  # and the shard Lease once its controllers stopped
                tg.cancel_scope.cancel()
        finally:
            self.running = False
            self._clusters.clear()
            self._bound = None
            self._recorders.clear()
            if self._reader is not None and isinstance(self.meter_provider, SDKMeterProvider):
                self.meter_provider.shutdown()  # our own provider: unregisters the Prometheus collector
                self._reader = None
        if self.lost_leadership:
            raise LeaderElectionLost(f"manager {self.name}: leadership lost; controllers were stopped")

    async def _start_endpoints(self, tg: anyio.abc.TaskGroup) -> None:
        health: EndpointServer | None = None
        metrics: EndpointServer | None = None
        if self.health_bind is not None:
            health = EndpointServer("health", self.health_bind)
            health.add_checks("/healthz", "healthz", self._healthz)
            health.add_checks("/readyz", "readyz", self._readyz)
        if self.metrics_bind is not None:
            shared = health is not None and self.metrics_bind == self.health_bind and self.metrics_bind[1] != 0
            metrics = health if shared else EndpointServer("metrics", self.metrics_bind)
            assert metrics is not None
            metrics.add_metrics(self.registry)
        if health is not None:
            self.health_port = await tg.start(health.run)
        if metrics is not None:
            self.metrics_port = self.health_port if metrics is health else await tg.start(metrics.run)

    async def _host_clusters(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with anyio.create_task_group() as tg:
            self._clusters_tg = tg
            try:
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._clusters_tg = None

    def _engages_now(self, controller: Controller) -> bool:
        """Whether the controller declares its views in clusters now. A sharded replica
        declares the elected replica's controllers' views only once elected (`_lead`), so
        the other shards cache their share and nothing of the whole fleet those controllers
        read (a new sharder lists them then: a cold start of its own)."""
        deferred = self.shard_lease is not None and controller.needs_leader_election and not controller.sharded
        return not deferred or self.elected.is_set()

    async def _engage_deferred(self) -> None:
        """Elected: the controllers `_engages_now` held back declare their views everywhere."""
        if self.shard_lease is None:
            return
        async with self._lock:
            for controller in self.controllers:
                if controller.needs_leader_election and not controller.sharded:
                    if self._local is not None:
                        controller.engage(self._local, is_local=True)
                    for engaged in self._clusters.values():
                        controller.engage(engaged.cluster)

    async def _lead(self) -> None:
        """Run the controllers that need leadership until they are stopped."""
        self.elected.set()
        await self._engage_deferred()
        async with anyio.create_task_group() as tg:
            for controller in self.controllers:
                if controller.needs_leader_election and not controller.sharded:
                    await tg.start(controller.run)
            await self._stop.wait()  # leadership is held until shutdown, controllers or not

    async def _lead_directly(self) -> None:
        try:
            await self._lead()
        finally:
            self._lead_done.set()

    async def _campaign(self) -> None:
        assert self.leader_election is not None
        self.elector = LeaderElector(
            self.local.client, self.leader_election, metrics=self.metrics, connection=self.local.transport.config
        )
        self._healthz["leader-election"] = self.elector.healthy
        try:
            with anyio.CancelScope() as scope:
                self._campaign_scope = scope
                await self.elector.run(self._lead)
        except LeaderElectionLost as exc:
            log.error("%s", exc)
            self.lost_leadership = True
            self._stop.set()
        finally:
            self._lead_done.set()

    # ------------------------------------------------------------------ sharding
    def _shard_lease_fresh(self) -> bool:
        """This replica holds its shard Lease and renewed it within the renew deadline
        (monotonic time keeps running while the process is paused, so a shard resumed
        after its lease lapsed is not fresh, before its renewal thread even notices)."""
        elector = self.shard_elector
        if elector is None or not elector.is_leader or self.shard_lease is None:
            return False
        return time.monotonic() - elector.last_renew < self.shard_lease.renew_deadline

    async def _shard_work(self) -> None:
        """Run the sharded controllers until shutdown (while the shard Lease is held)."""
        async with anyio.create_task_group() as tg:
            for controller in self.controllers:
                if controller.sharded:
                    await tg.start(controller.run)
            await self._stop.wait()

    async def _hold_shard_lease(self) -> None:
        assert self.shard_lease is not None
        self.shard_elector = LeaderElector(
            self.local.client, self.shard_lease, metrics=self.metrics, connection=self.local.transport.config
        )
        self._healthz["shard-lease"] = self.shard_elector.healthy
        try:
            await self.shard_elector.run(self._shard_work)
        except LeaderElectionLost as exc:
            # another replica (the sharder) may own this shard's objects now: stop everything
            log.error("shard %s: %s", self.shard_lease.identity, exc)
            self.lost_leadership = True
            self._stop.set()
        finally:
            self._shard_done.set()

    async def _stop_controllers(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for controller in self.controllers:
                    tg.start_soon(controller.shutdown, self.graceful_shutdown_timeout)

    async def _on_signals(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for signum in signals:
                if self._stop.is_set():
                    log.warning("second signal %s: stopping at once", signal.Signals(signum).name)
                    raise KeyboardInterrupt
                log.info("received %s: shutting down gracefully", signal.Signals(signum).name)
                self.stop()


def _count_tasks(_options: CallbackOptions) -> Iterable[Observation]:
    try:
        return [Observation(len(asyncio.all_tasks()))]
    except RuntimeError:  # collected outside the event loop (no running loop): nothing to count
        return []


def _safe(check: Check) -> bool:
    try:
        result = check()
    except Exception:
        log.exception("readiness check raised")
        return False
    return bool(result[0] if isinstance(result, tuple) else result)
