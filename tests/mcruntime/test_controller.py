from __future__ import annotations

import contextlib
import logging
import random
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    APIError,
    Cluster,
    Controller,
    ItemExponentialFailureRateLimiter,
    PermanentError,
    Request,
    Result,
    RuntimeMetrics,
    TemporaryError,
    logs,
)
from mcruntime.resources import CONFIGMAPS
from mcruntime.source import ENGAGED
from mcruntime.tracing import stage_span
from tests.support import Plane, configmap, eventually

FAST = ItemExponentialFailureRateLimiter[Request](0.001, 0.02)


def metric_points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    data = reader.get_metrics_data()
    out: dict[tuple[tuple[str, Any], ...], Any] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        out[tuple(sorted(point.attributes.items()))] = point
    return out


async def run_controller(controller: Controller, body: Any) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(controller.run)
        await body()
        await controller.shutdown(grace=5)


async def test_results_and_errors_decide_whether_and_when_a_request_returns(caplog: pytest.LogCaptureFixture) -> None:
    calls: dict[str, int] = {}
    conflict = APIError(409, "Conflict", "the object has been modified")

    async def reconcile(req: Request) -> Result:
        n = calls[req.name] = calls.get(req.name, 0) + 1
        if req.name == "requeue-after" and n == 1:
            return Result(requeue_after=0.05)
        if req.name == "backoff" and n == 1:
            raise TemporaryError("not ready yet")
        if req.name == "flaky" and n < 3:
            raise RuntimeError("boom")
        if req.name == "conflict" and n == 1:
            raise conflict
        if req.name == "permanent":
            raise PermanentError("cannot ever work")
        if req.name == "temporary" and n == 1:
            raise TemporaryError("not yet", delay=0.05)
        if req.name == "not-a-result" and n == 1:
            return None  # type: ignore[return-value]
        return Result()

    reader = InMemoryMetricReader()
    metrics = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    controller = Controller("results", reconcile, workers=3, rate_limiter=FAST, metrics=metrics)
    names = ["requeue-after", "backoff", "flaky", "conflict", "permanent", "temporary", "not-a-result", "plain"]

    async def body() -> None:
        for name in names:
            controller.enqueue(Request("c", "ns", name))
        expected = {"requeue-after": 2, "backoff": 2, "flaky": 3, "conflict": 2, "permanent": 1, "temporary": 2,
                    "not-a-result": 2, "plain": 1}  # fmt: skip
        await eventually(lambda: calls == expected and controller.in_flight == 0, what=f"calls {expected}, got {calls}")
        await anyio.sleep(0.1)  # nothing else is due: a permanent error is not retried
        assert calls == expected

    with caplog.at_level(logging.DEBUG, logger="mcruntime.controller"):
        await run_controller(controller, body)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not any("conflict" in m for m in errors), "conflicts must not be logged as errors"
    assert any("must return a Result" in m for m in errors)
    totals = {
        dict(k)["result"]: p.value for k, p in metric_points(reader, "controller_runtime_reconcile_total").items()
    }
    assert totals["conflict"] == 1 and totals["requeue_after"] == 2 and totals["success"] == len(names) - 1
    err_total = sum(p.value for p in metric_points(reader, "controller_runtime_reconcile_errors_total").values())
    assert err_total == 2 + 1 + 1  # flaky twice, permanent once, not-a-result once


async def test_empty_cluster_names_never_reach_the_reconciler() -> None:
    seen: list[Request] = []

    async def reconcile(req: Request) -> Result:
        seen.append(req)
        return Result()

    controller = Controller("empty", reconcile)

    async def body() -> None:
        controller.enqueue(Request("", "ns", "x"))
        controller.enqueue("not a request")
        controller.enqueue(Request("real", "ns", "y"))
        await eventually(lambda: seen, what="the valid request")

    await run_controller(controller, body)
    assert seen == [Request("real", "ns", "y")]


async def test_reconciles_of_one_key_never_overlap_and_the_last_state_is_seen() -> None:
    state = {f"k{i}": 0 for i in range(4)}
    seen: dict[str, int] = {}
    active: set[str] = set()
    overlaps: list[str] = []

    async def reconcile(req: Request) -> Result:
        if req.name in active:
            overlaps.append(req.name)
        active.add(req.name)
        observed = state[req.name]
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        seen[req.name] = observed
        active.discard(req.name)
        return Result()

    controller = Controller("load", reconcile, workers=6)

    async def producer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(60):
            key = rng.choice(list(state))
            state[key] += 1
            controller.enqueue(Request("c", "ns", key))
            await anyio.lowlevel.checkpoint()

    async def body() -> None:
        async with anyio.create_task_group() as tg:
            for seed in range(40):
                tg.start_soon(producer, seed)
        await eventually(lambda: seen == state and controller.in_flight == 0, what="the last state of every key")

    await run_controller(controller, body)
    assert overlaps == []


async def test_through_an_informer_the_final_reconcile_sees_the_last_update(
    apiserver: EmbeddedAPIServer, cluster: Cluster, plane: Plane
) -> None:
    seen: dict[str, str] = {}

    async def reconcile(req: Request) -> Result:
        obj = await cluster.client.get(CONFIGMAPS, req.name, namespace=req.namespace)
        seen[req.name] = obj["data"]["n"]
        return Result()

    controller = Controller("informed", reconcile, workers=4).for_(CONFIGMAPS, clusters=ENGAGED)
    controller.engage(cluster)
    names = ["a", "b", "c"]
    for name in names:
        plane.create("configmaps", configmap(name, n="0"))

    async def body() -> None:
        for i in range(1, 101):
            for name in names:
                cm = plane.get("configmaps", "default", name)
                cm["data"] = {"n": str(i)}
                plane.update("configmaps", cm)
            if i % 10 == 0:
                await anyio.lowlevel.checkpoint()
        await eventually(lambda: all(seen.get(n) == "100" for n in names), what=f"n=100 everywhere, saw {seen}")

    await run_controller(controller, body)


async def test_a_span_and_log_fields_per_reconcile() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fields: list[dict[str, Any]] = []

    async def reconcile(req: Request) -> Result:
        fields.append(logs.current_fields())
        if req.name == "bad":
            raise RuntimeError("bad object")
        return Result()

    controller = Controller("traced", reconcile, tracer_provider=provider, rate_limiter=FAST)

    async def body() -> None:
        controller.enqueue(Request("cell-a", "ns", "good"))
        controller.enqueue(Request("cell-a", "ns", "bad"))
        await eventually(lambda: len(exporter.get_finished_spans()) >= 2, what="two spans")

    await run_controller(controller, body)
    spans = {s.attributes["k8s.object.name"]: s for s in exporter.get_finished_spans()}  # type: ignore[index]
    good = spans["good"]
    assert good.attributes is not None
    assert good.attributes["k8s.cluster.name"] == "cell-a" and good.attributes["k8s.namespace.name"] == "ns"
    assert good.attributes["result"] == "success"
    assert spans["bad"].status.status_code.name == "ERROR"
    assert fields[0] == {"controller": "traced", "cluster": "cell-a", "namespace": "ns", "name": "good"}


async def test_a_reconcile_with_tracing_off_makes_no_generator_scope_and_binds_its_log_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every reconcile binds its log fields and opens its span: with tracing off the span is
    one shared no-op scope and the fields a plain one, no generator context manager each
    (their frames were most of the controller's own cost per reconcile); the fields still
    ride on what the reconciler logs, nest, and are gone after it."""
    made: list[object] = []
    real_init = contextlib._GeneratorContextManager.__init__

    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(args[0])
        real_init(self, *args, **kwargs)

    fields: list[dict[str, Any]] = []

    async def reconcile(req: Request) -> Result:
        fields.append(logs.current_fields())
        with logs.bound(step="inner"):
            fields.append(logs.current_fields())
        return Result()

    controller = Controller("quiet", reconcile, rate_limiter=FAST)

    async def body() -> None:
        monkeypatch.setattr(contextlib._GeneratorContextManager, "__init__", counting_init)
        for name in ("a", "b", "c"):
            controller.enqueue(Request("cell-a", "ns", name))
        await eventually(lambda: len(fields) == 6, what="three reconciles")
        monkeypatch.undo()

    await run_controller(controller, body)
    assert made == [], "a generator context manager per reconcile"
    assert fields[0] == {"controller": "quiet", "cluster": "cell-a", "namespace": "ns", "name": "a"}
    assert fields[1] == {**fields[0], "step": "inner"}
    assert logs.current_fields() == {}


async def test_conflicts_and_retries_are_named_events_on_the_spans() -> None:
    """A lost optimistic-concurrency race is a `conflict` event (status, verb, path), not a
    generic exception; every backoff retry is a `retry` event with its reason and count; a
    stage span that ends on a conflict says `outcome=Conflict`."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    attempts = 0

    async def reconcile(req: Request) -> Result:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            with stage_span(tracer, "federate", None, {"k8s.object.name": req.name}):
                raise APIError(409, "Conflict", "the object has been modified", verb="PUT", path="/x/api")
        if attempts == 2:
            raise TemporaryError("cell dfw-1 has not synced")
        return Result()

    controller = Controller("traced", reconcile, tracer_provider=provider, rate_limiter=FAST)

    async def body() -> None:
        controller.enqueue(Request("cell-a", "ns", "api"))
        await eventually(lambda: attempts >= 3, what="a conflict, a temporary error, then success")

    await run_controller(controller, body)
    spans = exporter.get_finished_spans()
    stage = next(s for s in spans if s.name == "federate")
    assert stage.attributes is not None and stage.attributes["outcome"] == "Conflict"
    conflict = next(e for e in stage.events if e.name == "conflict")
    assert conflict.attributes is not None
    assert conflict.attributes["http.response.status_code"] == 409 and conflict.attributes["url.path"] == "/x/api"
    reconciles = [s for s in spans if s.name == "reconcile traced"]
    first, second = reconciles[0], reconciles[1]
    assert [e.name for e in first.events] == ["conflict", "retry"]
    assert first.events[1].attributes == {"retry.reason": "conflict", "retry.count": 1}
    assert [e.name for e in second.events] == ["retry"]
    assert second.events[0].attributes == {"retry.reason": "temporary", "retry.count": 2}
    assert list(reconciles[2].events) == [], "a reconcile that succeeds carries no retry or conflict"


async def test_shutdown_lets_in_flight_reconciles_finish() -> None:
    release = anyio.Event()
    finished: list[str] = []
    started = anyio.Event()

    async def reconcile(req: Request) -> Result:
        started.set()
        await release.wait()
        finished.append(req.name)
        return Result()

    controller = Controller("graceful", reconcile)
    async with anyio.create_task_group() as tg:
        await tg.start(controller.run)
        controller.enqueue(Request("c", "ns", "in-flight"))
        controller.enqueue(Request("c", "ns", "queued-behind"))
        await started.wait()
        tg.start_soon(controller.shutdown, 5.0)
        await anyio.sleep(0.02)
        assert finished == []
        release.set()
    assert finished == ["in-flight"], "in-flight work finishes; queued work is left for the next leader"


async def test_shutdown_cancels_reconciles_that_overrun_the_grace_period() -> None:
    async def reconcile(req: Request) -> Result:
        await anyio.sleep_forever()
        return Result()

    controller = Controller("stuck", reconcile)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(controller.run)
            controller.enqueue(Request("c", "ns", "x"))
            await eventually(lambda: controller.in_flight == 1, what="the reconcile to start")
            await controller.shutdown(grace=0.05)


async def test_a_reconcile_timeout_turns_into_a_retry() -> None:
    calls = 0

    async def reconcile(req: Request) -> Result:
        nonlocal calls
        calls += 1
        if calls == 1:
            await anyio.sleep(10)
        return Result()

    controller = Controller("timeouts", reconcile, reconcile_timeout=0.05, rate_limiter=FAST)

    async def body() -> None:
        controller.enqueue(Request("c", "ns", "x"))
        await eventually(lambda: calls == 2, what="a retry after the timeout")

    await run_controller(controller, body)


def test_bad_controller_options_are_refused() -> None:
    async def reconcile(req: Request) -> Result:
        return Result()

    with pytest.raises(ValueError, match="workers"):
        Controller("x", reconcile, workers=0)
    with pytest.raises(TypeError, match="EventHandler"):
        Controller("x", reconcile).watch(CONFIGMAPS, lambda *a: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="requeue_after"):
        Result(requeue_after=-1)


def test_result_sooner_keeps_the_earliest_requeue() -> None:
    combined = Result.sooner(Result(requeue_after=30), Result(), Result(requeue_after=5))
    assert combined == Result(requeue_after=5)
    assert Result.sooner(Result(), Result()) == Result()


async def test_a_batch_period_folds_a_burst_of_events_into_one_reconcile() -> None:
    seen: list[Request] = []

    async def reconcile(req: Request) -> Result:
        seen.append(req)
        return Result()

    controller = Controller("batched", reconcile, rate_limiter=FAST, batch_period=0.2)

    async def body() -> None:
        for _ in range(20):
            controller.enqueue(Request("c", "ns", "a"))
            await anyio.sleep(0.005)
        assert not controller.idle, "a batched request is pending work"
        await eventually(lambda: seen, what="the batched reconcile")
        await anyio.sleep(0.3)
        assert seen == [Request("c", "ns", "a")]
        assert await controller.wait_idle(within=2)

    await run_controller(controller, body)
    with pytest.raises(ValueError, match="batch_period"):
        Controller("x", reconcile, batch_period=-1)


async def test_a_sharded_controller_reconciles_only_what_its_shard_owns_and_only_with_a_fresh_lease() -> None:
    from mcruntime.sharding import ShardGate

    seen: list[Request] = []
    fresh = False

    async def reconcile(req: Request) -> Result:
        seen.append(req)
        return Result()

    gate = ShardGate("a", lambda: fresh)
    mine = {Request("p", "ns", "mine")}
    controller = Controller("sharded", reconcile, rate_limiter=FAST).shard(gate, lambda r: r if r in mine else None)
    assert controller.sharded

    async def body() -> None:
        nonlocal fresh
        controller.enqueue(Request("p", "ns", "mine"))
        controller.enqueue(Request("p", "ns", "theirs"))
        await eventually(lambda: controller.queue.num_requeues(Request("p", "ns", "mine")) >= 3, "retried, not run")
        assert seen == []  # no fresh Lease: nothing reconciled, the request waits with backoff
        fresh = True
        await eventually(lambda: seen, what="the owned request")
        await controller.wait_idle(within=5)

    await run_controller(controller, body)
    assert seen == [Request("p", "ns", "mine")]  # "theirs" was dropped: another shard's


async def test_a_controller_that_yields_reconciles_after_the_others_backlog_once_per_key() -> None:
    release = anyio.Event()
    order: list[str] = []

    async def spec(req: Request) -> Result:
        order.append(req.name)
        await release.wait()
        return Result()

    async def status(req: Request) -> Result:
        order.append(req.name)
        return Result()

    writer = Controller("writer", spec)
    reporter = Controller("reporter", status, workers=4).yields_to(writer, at_most=30)
    with pytest.raises(ValueError, match="itself"):
        writer.yields_to(writer, at_most=1)
    with pytest.raises(ValueError, match="at_most"):
        reporter.yields_to(writer, at_most=0)
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        await tg.start(reporter.run)
        for name in ("copy-1", "copy-2"):
            writer.enqueue(Request("c", "ns", name))
        await eventually(lambda: order == ["copy-1"], what="the writer's first reconcile")
        for _ in range(3):  # three events for one key while the writer has a backlog
            reporter.enqueue(Request("c", "ns", "wd"))
        await anyio.wait_all_tasks_blocked()
        assert order == ["copy-1"], "the reporter went before the writer's backlog"
        release.set()
        await eventually(lambda: "wd" in order, what="the reporter's turn")
        assert await reporter.wait_idle(within=2)
        assert order == ["copy-1", "copy-2", "wd"], "one reconcile for the three events, after copy-2"
        await reporter.shutdown(grace=1)
        await writer.shutdown(grace=1)
