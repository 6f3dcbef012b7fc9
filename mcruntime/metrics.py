"""The runtime's OpenTelemetry instruments, named after controller-runtime's and
client-go's Prometheus metrics so existing dashboards read them unchanged.

Every component takes a `RuntimeMetrics`; the default uses the global meter provider (a
no-op unless the process configured one). The Manager builds its own provider with a
`RuntimeMetricReader` (a Prometheus reader) and serves it on /metrics (see `health.py`).

Everything recorded per item (per queue add, request, reconcile, watch event) is kept in
plain Python and reaches OpenTelemetry only when a reader collects, so a cold start of
100k objects pays no per-item OpenTelemetry cost (a synchronous `Counter.add` or
`Histogram.record` costs ~20-100x a dict add: it cleans and hashes the attributes and walks
the reader storages on every call):
- counts are `Tally`s, reported through observable (pull-based) instruments;
- latencies are `PullHistogram`s: bucket counts, sum, min and max per attribute set, kept
  with one `bisect` on the same boundaries the SDK would use. OpenTelemetry has no
  observable histogram, so a `RuntimeMetricReader` adds their points, as the SDK's own
  data classes, to what the SDK collected, before its exporter translates them: /metrics
  shows the same families (type, buckets, labels, values) the synchronous histograms did
  (tests/mcruntime/test_metrics.py)."""

from __future__ import annotations

import functools
import math
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from opentelemetry import metrics as otel_metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

# seconds; controller-runtime's reconcile buckets, and client-go's request latency ones
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                     40, 50, 60)  # fmt: skip
QUEUE_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
SCOPE = "mcruntime"

AttributeKey = tuple[tuple[str, str], ...]


class Tally:
    """Running totals per attribute set, kept in plain Python and observed on collection.

    `add(amount, attributes)` has the signature of a synchronous Counter's, so call sites
    do not change. Attribute values are strings, as everywhere in this runtime."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[AttributeKey, float] = {}

    def add(self, amount: float, attributes: Mapping[str, str] | None = None) -> None:
        key = tuple(attributes.items()) if attributes else ()
        self._values[key] = self._values.get(key, 0) + amount

    def bound(self, attributes: Mapping[str, str] | None = None) -> Callable[[float], None]:
        """`add` for one attribute set, its key made once: for the hot paths that count
        with the same attributes every time (a queue's adds and depth, per item)."""
        key: AttributeKey = tuple(attributes.items()) if attributes else ()
        values = self._values

        def add(amount: float) -> None:
            values[key] = values.get(key, 0) + amount

        return add

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(key)) for key, value in list(self._values.items())]


class _Series:
    """One attribute set of a `PullHistogram`: what the SDK's explicit-bucket aggregation keeps."""

    __slots__ = ("counts", "max", "min", "started", "sum")

    def __init__(self, buckets: int) -> None:
        self.counts = [0] * buckets
        self.sum = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.started = time.time_ns()


class PullHistogram:
    """A histogram kept in plain Python and exported when a `RuntimeMetricReader` collects.

    `record(value, attributes)` has the signature of a synchronous Histogram's. Values fall
    into buckets as the SDK's explicit-bucket aggregation puts them (`bisect_left`: a value
    equal to a boundary counts in that boundary's `le` bucket); totals are cumulative, as
    Prometheus reads them."""

    __slots__ = ("_series", "boundaries", "description", "name", "scope", "unit")

    def __init__(self, name: str, *, boundaries: Sequence[float], unit: str = "", description: str = "",
                 scope: str = SCOPE) -> None:  # fmt: skip
        if not all(math.isfinite(b) for b in boundaries):
            raise ValueError(f"{name}: bucket boundaries must be finite")
        if any(later <= earlier for earlier, later in pairwise(boundaries)):
            raise ValueError(f"{name}: bucket boundaries must be strictly increasing")
        self.name = name
        self.boundaries = tuple(boundaries)
        self.unit = unit
        self.description = description
        self.scope = scope
        self._series: dict[AttributeKey, _Series] = {}

    def record(self, value: float, attributes: Mapping[str, str] | None = None) -> None:
        self._record(tuple(attributes.items()) if attributes else (), value)

    def bound(self, attributes: Mapping[str, str] | None = None) -> Callable[[float], None]:
        """`record` for one attribute set, its key made once (see `Tally.bound`); the
        series itself still appears with its first value."""
        return functools.partial(self._record, tuple(attributes.items()) if attributes else ())

    def _record(self, key: AttributeKey, value: float) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(len(self.boundaries) + 1)
        series.counts[bisect_left(self.boundaries, value)] += 1
        series.sum += value
        # comparisons, not min()/max(): no call on the hot path
        if value < series.min:  # noqa: PLR1730
            series.min = value
        if value > series.max:  # noqa: PLR1730
            series.max = value

    def metric(self, now_ns: int) -> Metric | None:
        """The cumulative points so far, as the SDK's own data classes (None before any record)."""
        points = []
        for key, series in list(self._series.items()):
            counts = tuple(series.counts)
            points.append(
                HistogramDataPoint(
                    attributes=dict(key),
                    start_time_unix_nano=series.started,
                    time_unix_nano=now_ns,
                    count=sum(counts),
                    sum=series.sum,
                    bucket_counts=counts,
                    explicit_bounds=self.boundaries,
                    min=series.min,
                    max=series.max,
                )
            )
        if not points:
            return None
        data = Histogram(data_points=points, aggregation_temporality=AggregationTemporality.CUMULATIVE)
        return Metric(name=self.name, description=self.description, unit=self.unit, data=data)


def with_histograms(data: MetricsData, histograms: Iterable[PullHistogram]) -> MetricsData:
    """`data` as the SDK collected it, plus the histograms' points, each in the scope named
    after its meter (joining the SDK's own metrics of that scope, as its synchronous
    histograms did), under the SDK's resource."""
    if not data.resource_metrics:
        return data
    now = time.time_ns()
    extra: dict[str, list[Metric]] = {}
    for histogram in histograms:
        metric = histogram.metric(now)
        if metric is not None:
            extra.setdefault(histogram.scope, []).append(metric)
    if not extra:
        return data
    first, *rest = data.resource_metrics
    scopes: list[ScopeMetrics] = []
    for scope_metrics in first.scope_metrics:
        added = extra.pop(scope_metrics.scope.name, [])
        scopes.append(
            ScopeMetrics(scope_metrics.scope, [*scope_metrics.metrics, *added], scope_metrics.schema_url)
            if added
            else scope_metrics
        )
    scopes.extend(ScopeMetrics(InstrumentationScope(name), metrics, "") for name, metrics in extra.items())
    return MetricsData([ResourceMetrics(first.resource, scopes, first.schema_url), *rest])


class RuntimeMetricReader(PrometheusMetricReader):
    """The Manager's Prometheus reader: what the SDK collects, plus the `PullHistogram`s it
    was given (`include`), on every scrape.

    The histograms ride along with the SDK's collection (its resource, its scopes): a
    collection with no SDK data at all carries none, which never happens in a manager (a
    recorded request or reconcile always comes with its observed count)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._histograms: list[PullHistogram] = []

    def include(self, histograms: Iterable[PullHistogram]) -> None:
        self._histograms.extend(histograms)

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        if metrics_data is not None and self._histograms:
            metrics_data = with_histograms(metrics_data, self._histograms)
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)


class RuntimeMetrics:
    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        provider = meter_provider or otel_metrics.get_meter_provider()
        meter = provider.get_meter(SCOPE)
        self.meter_provider = provider

        def counter(name: str, description: str, *, up_down: bool = False) -> Tally:
            tally = Tally()
            create = meter.create_observable_up_down_counter if up_down else meter.create_observable_counter
            create(name, callbacks=[tally.observe], description=description)
            return tally

        def histogram(name: str, description: str, boundaries: Sequence[float]) -> PullHistogram:
            return PullHistogram(name, boundaries=boundaries, unit="s", description=description)

        # controllers
        self.reconcile_total = counter(
            "controller_runtime_reconcile_total", "Reconciliations per controller and result"
        )
        self.reconcile_errors = counter(
            "controller_runtime_reconcile_errors_total", "Reconciliations that raised an error"
        )
        self.reconcile_time = histogram(
            "controller_runtime_reconcile_time_seconds", "Time per reconciliation", RECONCILE_BUCKETS
        )
        self.active_workers = counter(
            "controller_runtime_active_workers", "Workers currently reconciling", up_down=True
        )
        self.cluster_retries = counter(
            "mcruntime_cluster_retries_total",
            "Requests retried with backoff, per controller and cluster (one failing cluster stands out)",
        )
        self.dropped_requests = counter(
            "controller_runtime_dropped_requests_total",
            "Requests a handler or controller refused (empty or unknown cluster name, ...)",
        )
        # work queues
        self.queue_depth = counter("workqueue_depth", "Current depth of the queue", up_down=True)
        self.queue_adds = counter("workqueue_adds_total", "Adds handled by the queue")
        self.queue_wait = histogram(
            "workqueue_queue_duration_seconds",
            "How long an item stays in the queue before being handed to a worker",
            QUEUE_BUCKETS,
        )
        self.queue_work = histogram(
            "workqueue_work_duration_seconds", "How long processing an item takes", QUEUE_BUCKETS
        )
        self.queue_retries = counter("workqueue_retries_total", "Rate-limited re-adds")
        # informers
        self.informer_lists = counter("informer_lists_total", "Complete (paged) LISTs")
        self.informer_relists = counter("informer_relists_total", "LISTs forced by 410 Expired (history compacted)")
        self.informer_watch_restarts = counter(
            "informer_watch_restarts_total", "WATCH streams resumed after ending or failing"
        )
        self.informer_events = counter("informer_events_total", "Watch events applied")
        # REST
        self.request_latency = histogram(
            "rest_client_request_duration_seconds", "API request latency by cluster and verb", REQUEST_BUCKETS
        )
        self.requests = counter("rest_client_requests_total", "API requests by cluster, verb and status code")
        # leader election and clusters: a few changes per process lifetime, so synchronous
        self.leader = meter.create_up_down_counter(
            "leader_election_master_status", description="1 while this process holds the lease"
        )
        self.engaged_clusters = meter.create_up_down_counter(
            "mcruntime_engaged_clusters", description="Clusters currently engaged by providers"
        )
        self.cluster_state = meter.create_up_down_counter(
            "mcruntime_cluster_state",
            description="1 for each engaged cluster in its current state (syncing, ready, unreachable)",
        )

    @property
    def histograms(self) -> tuple[PullHistogram, ...]:
        """What a `RuntimeMetricReader` must `include` to export the latencies."""
        return (self.reconcile_time, self.queue_wait, self.queue_work, self.request_latency)


_default: RuntimeMetrics | None = None


def default_metrics() -> RuntimeMetrics:
    """Instruments on the global meter provider, for components used outside a Manager."""
    global _default
    if _default is None:
        _default = RuntimeMetrics()
    return _default
