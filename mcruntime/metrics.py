"""The runtime's OpenTelemetry instruments, named after controller-runtime's and
client-go's Prometheus metrics so existing dashboards read them unchanged.

Every component takes a `RuntimeMetrics`; the default uses the global meter provider (a
no-op unless the process configured one). The Manager builds its own provider with a
Prometheus reader and serves it on /metrics (see `metrics_server.py`).

The per-item counts of the work queues and the REST client (adds, depth, retries, requests)
are `Tally`s: a dict add per event, reported through observable (pull-based) instruments
when a reader collects, so a cold start of 100k objects pays no per-item OpenTelemetry
cost for them (a synchronous `Counter.add` costs ~100x a dict add: it cleans and hashes
the attributes and walks the reader storages on every call)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

# seconds; controller-runtime's reconcile buckets, and client-go's request latency ones
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                     40, 50, 60)  # fmt: skip
QUEUE_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class Tally:
    """Running totals per attribute set, kept in plain Python and observed on collection.

    `add(amount, attributes)` has the signature of a synchronous Counter's, so call sites
    do not change. Attribute values are strings, as everywhere in this runtime."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[tuple[tuple[str, str], ...], float] = {}

    def add(self, amount: float, attributes: Mapping[str, str] | None = None) -> None:
        key = tuple(attributes.items()) if attributes else ()
        self._values[key] = self._values.get(key, 0) + amount

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(key)) for key, value in list(self._values.items())]


class RuntimeMetrics:
    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        provider = meter_provider or otel_metrics.get_meter_provider()
        meter = provider.get_meter("mcruntime")
        self.meter_provider = provider
        # controllers
        self.reconcile_total = meter.create_counter(
            "controller_runtime_reconcile_total", description="Reconciliations per controller and result"
        )
        self.reconcile_errors = meter.create_counter(
            "controller_runtime_reconcile_errors_total", description="Reconciliations that raised an error"
        )
        self.reconcile_time = meter.create_histogram(
            "controller_runtime_reconcile_time_seconds",
            unit="s",
            description="Time per reconciliation",
            explicit_bucket_boundaries_advisory=RECONCILE_BUCKETS,
        )
        self.active_workers = meter.create_up_down_counter(
            "controller_runtime_active_workers", description="Workers currently reconciling"
        )
        self.cluster_retries = meter.create_counter(
            "mcruntime_cluster_retries_total",
            description="Requests retried with backoff, per controller and cluster (one failing cluster stands out)",
        )
        self.dropped_requests = meter.create_counter(
            "controller_runtime_dropped_requests_total",
            description="Requests a handler or controller refused (empty or unknown cluster name, ...)",
        )
        # work queues
        self.queue_depth = Tally()
        meter.create_observable_up_down_counter(
            "workqueue_depth", callbacks=[self.queue_depth.observe], description="Current depth of the queue"
        )
        self.queue_adds = Tally()
        meter.create_observable_counter(
            "workqueue_adds_total", callbacks=[self.queue_adds.observe], description="Adds handled by the queue"
        )
        self.queue_wait = meter.create_histogram(
            "workqueue_queue_duration_seconds",
            unit="s",
            description="How long an item stays in the queue before being handed to a worker",
            explicit_bucket_boundaries_advisory=QUEUE_BUCKETS,
        )
        self.queue_work = meter.create_histogram(
            "workqueue_work_duration_seconds",
            unit="s",
            description="How long processing an item takes",
            explicit_bucket_boundaries_advisory=QUEUE_BUCKETS,
        )
        self.queue_retries = Tally()
        meter.create_observable_counter(
            "workqueue_retries_total", callbacks=[self.queue_retries.observe], description="Rate-limited re-adds"
        )
        # informers
        self.informer_lists = meter.create_counter("informer_lists_total", description="Complete (paged) LISTs")
        self.informer_relists = meter.create_counter(
            "informer_relists_total", description="LISTs forced by 410 Expired (history compacted)"
        )
        self.informer_watch_restarts = meter.create_counter(
            "informer_watch_restarts_total", description="WATCH streams resumed after ending or failing"
        )
        self.informer_events = meter.create_counter("informer_events_total", description="Watch events applied")
        # REST
        self.request_latency = meter.create_histogram(
            "rest_client_request_duration_seconds",
            unit="s",
            description="API request latency by cluster and verb",
            explicit_bucket_boundaries_advisory=REQUEST_BUCKETS,
        )
        self.requests = Tally()
        meter.create_observable_counter(
            "rest_client_requests_total",
            callbacks=[self.requests.observe],
            description="API requests by cluster, verb and status code",
        )
        # leader election
        self.leader = meter.create_up_down_counter(
            "leader_election_master_status", description="1 while this process holds the lease"
        )
        # clusters
        self.engaged_clusters = meter.create_up_down_counter(
            "mcruntime_engaged_clusters", description="Clusters currently engaged by providers"
        )
        self.cluster_state = meter.create_up_down_counter(
            "mcruntime_cluster_state",
            description="1 for each engaged cluster in its current state (syncing, ready, unreachable)",
        )


_default: RuntimeMetrics | None = None


def default_metrics() -> RuntimeMetrics:
    """Instruments on the global meter provider, for components used outside a Manager."""
    global _default
    if _default is None:
        _default = RuntimeMetrics()
    return _default
