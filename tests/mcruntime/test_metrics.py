"""Queue, request and reconcile metrics are pull-based: a queue add, a request or a
reconcile adds to a plain dict (counts) or a bucket list (latencies), and the totals reach
OpenTelemetry (and /metrics) only when a reader collects, in the same families, buckets
and values the synchronous instruments exported."""

from __future__ import annotations

import collections
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import anyio
import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics._internal.measurement_consumer import SynchronousMeasurementConsumer
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry, generate_latest

from kubeplane import EmbeddedAPIServer
from mcruntime import LOCAL, ConnectionConfig, Manager, Request, Result, Transport, WorkQueue
from mcruntime import transport as transport_module
from mcruntime.metrics import (
    QUEUE_BUCKETS,
    RECONCILE_BUCKETS,
    REQUEST_BUCKETS,
    PullHistogram,
    RuntimeMetricReader,
    RuntimeMetrics,
    Tally,
)
from mcruntime.resources import CONFIGMAPS
from tests.support import Plane, config_for, configmap, eventually

# what the runtime recorded synchronously before its latencies became pull-based
SYNCHRONOUS = {
    "controller_runtime_reconcile_time_seconds": ("Time per reconciliation", RECONCILE_BUCKETS),
    "workqueue_queue_duration_seconds": (
        "How long an item stays in the queue before being handed to a worker",
        QUEUE_BUCKETS,
    ),
    "workqueue_work_duration_seconds": ("How long processing an item takes", QUEUE_BUCKETS),
    "rest_client_request_duration_seconds": ("API request latency by cluster and verb", REQUEST_BUCKETS),
}
# changed a few times per process lifetime: still synchronous instruments
RARE = {"leader_election_master_status", "mcruntime_engaged_clusters", "mcruntime_cluster_state"}


def collected(reader: InMemoryMetricReader) -> dict[str, dict[tuple[tuple[str, Any], ...], Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[str, dict[tuple[tuple[str, Any], ...], Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    value = getattr(point, "value", None)
                    out.setdefault(metric.name, {})[tuple(sorted(point.attributes.items()))] = value
    return out


async def test_queue_counts_cost_no_opentelemetry_call_per_item(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = InMemoryMetricReader()
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    calls = 0
    real = SynchronousMeasurementConsumer.consume_measurement

    def counting(self: SynchronousMeasurementConsumer, measurement: Any) -> None:
        nonlocal calls
        calls += 1
        real(self, measurement)

    monkeypatch.setattr(SynchronousMeasurementConsumer, "consume_measurement", counting)
    queue: WorkQueue[str] = WorkQueue("cold", metrics=metrics)
    for i in range(1000):
        queue.add(f"item-{i}")
    queue.add("item-0")  # already queued: neither an add nor depth
    assert calls == 0, "adding to a queue makes no OpenTelemetry call"
    item = await queue.get()
    queue.done(item)
    queue.add_rate_limited("item-0")
    seen = collected(reader)
    assert seen["workqueue_adds_total"] == {(("name", "cold"),): 1000}
    assert seen["workqueue_depth"] == {(("name", "cold"),): 999}
    assert seen["workqueue_retries_total"] == {(("name", "cold"),): 1}


async def test_a_queue_item_counts_through_instruments_bound_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue's per-item counts (adds, depth, wait and work time) go through instruments
    bound to its attributes when it is made: no attribute key is built per item, and the
    figures are those the unbound calls gave, a histogram series appearing with its first
    value only."""
    reader = InMemoryMetricReader()
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    queue: WorkQueue[str] = WorkQueue("bound", metrics=metrics)
    assert metrics.queue_wait.metric(0) is None, "no series before a first value"
    unbound: list[str] = []
    monkeypatch.setattr(Tally, "add", lambda *_a: unbound.append("Tally.add"))
    monkeypatch.setattr(PullHistogram, "record", lambda *_a: unbound.append("PullHistogram.record"))
    for i in range(3):
        queue.add(f"item-{i}")
    for _ in range(3):
        queue.done(await queue.get())
    assert unbound == []
    monkeypatch.undo()
    seen = collected(reader)
    assert seen["workqueue_adds_total"] == {(("name", "bound"),): 3}
    assert seen["workqueue_depth"] == {(("name", "bound"),): 0}
    for name in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        histogram = getattr(metrics, "queue_wait" if "queue_duration" in name else "queue_work")
        metric = histogram.metric(0)
        assert metric is not None and metric.name == name
        (point,) = metric.data.data_points
        assert point.count == 3 and dict(point.attributes) == {"name": "bound"}


def test_bound_instruments_add_to_the_same_series_as_the_unbound_calls() -> None:
    tally, histogram = Tally(), PullHistogram("h", boundaries=(1.0, 2.0))
    attrs = {"controller": "c", "result": "success"}
    add, record = tally.bound(attrs), histogram.bound(attrs)
    tally.add(2, attrs)
    add(3)
    add(-1)
    histogram.record(0.5, attrs)
    record(1.5)
    record(5.0)
    assert tally._values == {tuple(attrs.items()): 4}
    metric = histogram.metric(0)
    assert metric is not None
    (point,) = metric.data.data_points
    assert list(point.bucket_counts) == [1, 1, 1] and point.sum == 7.0 and dict(point.attributes) == attrs


def test_request_counts_are_observed_per_attribute_set() -> None:
    reader = InMemoryMetricReader()
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    for _ in range(3):
        metrics.requests.add(1, {"cluster": "a", "verb": "get", "code": "200"})
    metrics.requests.add(1, {"cluster": "a", "verb": "patch", "code": "409"})
    assert collected(reader)["rest_client_requests_total"] == {
        (("cluster", "a"), ("code", "200"), ("verb", "get")): 3,
        (("cluster", "a"), ("code", "409"), ("verb", "patch")): 1,
    }


def lines_of(text: str, names: set[str]) -> list[str]:
    """The exposition lines of the named families (HELP, TYPE, _bucket, _count, _sum)."""
    return sorted(line for line in text.splitlines() if any(name in line for name in names))


def test_pull_histograms_export_what_the_synchronous_histograms_did() -> None:
    before_registry, after_registry = CollectorRegistry(), CollectorRegistry()
    before = MeterProvider(metric_readers=[PrometheusMetricReader(registry=before_registry)]).get_meter("mcruntime")
    synchronous = {
        name: before.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=buckets)
        for name, (description, buckets) in SYNCHRONOUS.items()
    }  # fmt: skip
    reader = RuntimeMetricReader(registry=after_registry)
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    reader.include(metrics.histograms)
    pulled = {h.name: h for h in metrics.histograms}
    assert set(pulled) == set(SYNCHRONOUS)
    # on, just below and just above every boundary, zero, and past the last one
    values = [0.0, 1e-9, 1234.5] + [b * f for _, buckets in SYNCHRONOUS.values() for b in buckets
                                    for f in (1.0, 0.999, 1.001)]  # fmt: skip
    n = 0
    for i, value in enumerate(values * 3):
        for name in SYNCHRONOUS:
            attrs = {"name": f"q{i % 3}"} if name.startswith("workqueue") else {"controller": "c", "verb": "get"}
            synchronous[name].record(value, attrs)
            pulled[name].record(value, attrs)
        n += 1
    metrics.requests.add(1, {"cluster": "a", "verb": "get", "code": "200"})  # the SDK has data to collect
    expected = lines_of(generate_latest(before_registry).decode(), set(SYNCHRONOUS))
    seen = lines_of(generate_latest(after_registry).decode(), set(SYNCHRONOUS))
    assert any("_bucket{" in line for line in seen) and any(line.startswith("# TYPE") for line in seen)
    assert seen == expected
    count = 'rest_client_request_duration_seconds_count{controller="c",otel_scope_name="mcruntime",'
    assert f'{count}otel_scope_schema_url="",otel_scope_version="",verb="get"}} {float(n)}' in seen


def test_pull_histogram_points_are_the_sdk_points() -> None:
    histogram = PullHistogram("h", boundaries=(0.1, 1.0), unit="s", description="d")
    assert histogram.metric(0) is None, "nothing recorded, nothing exported"
    for value in (0.05, 0.1, 0.5, 2.0, 3.0):
        histogram.record(value, {"k": "v"})
    metric = histogram.metric(7)
    assert metric is not None and (metric.name, metric.unit, metric.description) == ("h", "s", "d")
    (point,) = metric.data.data_points
    assert (point.attributes, point.count, point.sum, point.min, point.max) == ({"k": "v"}, 5, 5.65, 0.05, 3.0)
    assert point.bucket_counts == (2, 1, 2) and point.explicit_bounds == (0.1, 1.0) and point.time_unix_nano == 7


@pytest.mark.parametrize("boundaries", [(1.0, 1.0), (2.0, 1.0), (1.0, float("inf"))])
def test_pull_histogram_refuses_bad_boundaries(boundaries: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="bucket boundaries must be"):
        PullHistogram("h", boundaries=boundaries)


async def test_requests_queues_and_reconciles_make_no_opentelemetry_call_per_item(
    apiserver: EmbeddedAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manager reconciling N objects (each reconcile a live GET) records every latency and
    count, yet calls the OpenTelemetry SDK only for the rare cluster-state changes; /metrics
    then shows N of each."""
    calls: collections.Counter[str] = collections.Counter()
    real = SynchronousMeasurementConsumer.consume_measurement

    def counting(self: SynchronousMeasurementConsumer, measurement: Any) -> None:
        calls[measurement.instrument.name] += 1
        real(self, measurement)

    monkeypatch.setattr(SynchronousMeasurementConsumer, "consume_measurement", counting)
    n = 60
    plane = Plane(apiserver)
    for i in range(n):
        plane.create("configmaps", configmap(f"cm-{i}"))
    mgr = Manager(config_for(apiserver), metrics_bind_address="127.0.0.1:0")
    reconciled: set[str] = set()

    async def reconcile(req: Request) -> Result:
        await mgr.local.client.get_live(CONFIGMAPS, req.name, namespace=req.namespace)
        reconciled.add(req.name)
        return Result()

    controller = mgr.new_controller("counted", reconcile).for_(CONFIGMAPS, clusters=LOCAL)
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await eventually(lambda: len(reconciled) >= n and controller.idle, what=f"{n} reconciles")
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{mgr.metrics_port}/metrics") as resp:
            text = await resp.text()
        mgr.stop()
    assert set(calls) <= RARE and sum(calls.values()) <= 4, f"per-item OpenTelemetry calls: {dict(calls)}"

    def value(prefix: str) -> float:
        (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
        return float(line.rsplit(" ", 1)[1])

    gets = value('rest_client_request_duration_seconds_count{cluster="local",otel_scope_name="mcruntime",'
                 'otel_scope_schema_url="",otel_scope_version="",verb="get"}')  # fmt: skip
    assert gets == value('rest_client_requests_total{cluster="local",code="200",otel_scope_name="mcruntime",'
                         'otel_scope_schema_url="",otel_scope_version="",verb="get"}') >= n  # fmt: skip
    reconciles = value('controller_runtime_reconcile_time_seconds_count{controller="counted"')
    assert reconciles == value('controller_runtime_reconcile_total{controller="counted"') >= n
    assert value('workqueue_queue_duration_seconds_count{name="counted"') == reconciles
    assert value('workqueue_work_duration_seconds_count{name="counted"') == reconciles
    assert value('controller_runtime_reconcile_time_seconds_bucket{controller="counted",le="+Inf"') == reconciles
    assert value('controller_runtime_reconcile_time_seconds_sum{controller="counted"') > 0


def test_per_item_counts_export_what_the_synchronous_counters_did() -> None:
    """The counts that were synchronous Counters (reconciles, errors, retries, informer LISTs
    and events, ...) keep their /metrics families: `counter` with `_total`, and the
    up-down ones (active workers) a `gauge`."""
    counters = {"reconcile_total": "controller_runtime_reconcile_total",
                "reconcile_errors": "controller_runtime_reconcile_errors_total",
                "cluster_retries": "mcruntime_cluster_retries_total",
                "dropped_requests": "controller_runtime_dropped_requests_total",
                "informer_lists": "informer_lists_total", "informer_relists": "informer_relists_total",
                "informer_watch_restarts": "informer_watch_restarts_total",
                "informer_events": "informer_events_total"}  # fmt: skip
    before_registry, after_registry = CollectorRegistry(), CollectorRegistry()
    before = MeterProvider(metric_readers=[PrometheusMetricReader(registry=before_registry)]).get_meter("mcruntime")
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[PrometheusMetricReader(registry=after_registry)]))
    attrs = {"controller": "c", "cluster": "a"}
    for attribute, name in counters.items():
        before.create_counter(name).add(3, attrs)
        getattr(metrics, attribute).add(3, attrs)
    workers = before.create_up_down_counter("controller_runtime_active_workers")
    for delta in (1, 1, -1):
        workers.add(delta, attrs)
        metrics.active_workers.add(delta, attrs)
    names = {*counters.values(), "controller_runtime_active_workers"}

    def samples(registry: CollectorRegistry) -> list[str]:  # HELP texts differ in this test: types and values
        return [line for line in lines_of(generate_latest(registry).decode(), names) if not line.startswith("# HELP")]

    seen = samples(after_registry)
    assert seen == samples(before_registry)
    assert "# TYPE controller_runtime_reconcile_total counter" in seen
    assert "# TYPE controller_runtime_active_workers gauge" in seen
    assert any(line.startswith("informer_events_total{") and line.endswith(" 3.0") for line in seen)


def test_a_request_is_counted_through_instruments_bound_once_per_verb_and_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every API request records its latency and counts itself by cluster, verb and status:
    the instruments are bound once per (verb, status), so a request builds no attribute
    dicts or keys; the figures are the same as before."""
    reader = InMemoryMetricReader()
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    transport = Transport(ConnectionConfig.insecure("http://127.0.0.1:1"), cluster="web", metrics=metrics)
    transport._record("patch", 200, 0.0)  # the first of its kind binds
    unbound: list[str] = []
    monkeypatch.setattr(Tally, "add", lambda *_a: unbound.append("Tally.add"))
    monkeypatch.setattr(PullHistogram, "record", lambda *_a: unbound.append("PullHistogram.record"))
    for _ in range(3):
        transport._record("patch", 200, 0.0)
    assert unbound == []
    monkeypatch.undo()
    transport._record("patch", 409, 0.0)
    transport._record("watch", "error", 0.0)
    assert collected(reader)["rest_client_requests_total"] == {
        (("cluster", "web"), ("code", "200"), ("verb", "patch")): 4,
        (("cluster", "web"), ("code", "409"), ("verb", "patch")): 1,
        (("cluster", "web"), ("code", "error"), ("verb", "watch")): 1,
    }
    latency = metrics.request_latency.metric(0)
    assert latency is not None
    counts = sorted((dict(p.attributes)["verb"], p.count) for p in latency.data.data_points)
    assert counts == [("patch", 5), ("watch", 1)]


def test_a_request_target_encodes_its_query_as_urlencode_does_and_a_repeated_one_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    transport = Transport(ConnectionConfig.insecure("http://127.0.0.1:1"))
    encoded: list[object] = []
    real = transport_module.urlencode

    def counting(query: Any, **kwargs: Any) -> str:
        encoded.append(query)
        return real(query, **kwargs)

    monkeypatch.setattr(transport_module, "urlencode", counting)
    query = {"fieldManager": "target-test", "labelSelector": "app in (a,b),tier!=x", "force": "true"}
    for _ in range(3):
        target = transport.target("/api/v1/namespaces/ns/configmaps", query)
        assert target == "/api/v1/namespaces/ns/configmaps?" + urlencode(query, quote_via=quote, safe="")
    assert len(encoded) == 1, "a repeated query is encoded once"
    assert transport.target("/api/v1/pods") == "/api/v1/pods"
    assert transport.target("/api/v1/pods", {"fieldManager": "target-test", "force": "false"}).endswith("force=false")
