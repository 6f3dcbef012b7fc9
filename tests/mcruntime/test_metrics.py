"""Queue and request counts are pull-based: a queue add or a request adds to a plain dict,
and the totals reach OpenTelemetry (and /metrics) only when a reader collects."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics._internal.measurement_consumer import SynchronousMeasurementConsumer
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from mcruntime import WorkQueue
from mcruntime.metrics import RuntimeMetrics


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
