"""Benchmark: watch events per second into the informer cache.

An embedded API server runs in a child process (so server and client each get a core),
holding N custom objects of ~2 KB (workload-shaped: many small fields). The informer
lists them (paged); then the server stops serving, applies U updates, serves again, and
the informer resumes its watch and catches up. Reported:

- LIST fill rate (objects/s into the cache);
- end-to-end watch rate (events/s from the server serving again until the cache holds
  the last update);
- the informer's own CPU cost per event (the same lines fed to it in-process: decode,
  strip, re-encode, store, index);
- the plain-dict baseline: `orjson.loads` of each line into a dict keyed by name, i.e.
  the least any Python client can do;
- the runtime metrics' CPU per recorded item (one request, one queue item, one reconcile,
  one watch event): the pull-based `Tally`/`PullHistogram` the runtime records into,
  against the synchronous OpenTelemetry instruments it used before (same names, buckets
  and attributes, with a Prometheus reader attached, as in a Manager), and what one
  /metrics scrape then costs.

Run: .venv/bin/python bench/bench_informer.py [--objects N] [--updates U] [--smoke] [--metrics-only]"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest

from mcruntime import Backoff, ConnectionConfig, Informer, Transport
from mcruntime.metrics import QUEUE_BUCKETS, RECONCILE_BUCKETS, REQUEST_BUCKETS, RuntimeMetricReader, RuntimeMetrics
from mcruntime.objects import key_of
from mcruntime.resources import Resource

# The child: an embedded server filled through the internal API (no HTTP cost), driven by
# commands on stdin: "burst U" stops serving, applies U updates, serves again and answers
# "done <resourceVersion>": the informer then resumes its watch from where it was and
# receives the U events as fast as the server can stream them (the server's write path
# is not what this benchmark measures).
SERVER = r"""
import sys, anyio
sys.path.insert(0, sys.argv[3])
from bench_informer import CRD, make_object
from kubeplane import EmbeddedAPIServer
from kubeplane.objectapi import WriteOptions

N = int(sys.argv[1])
HISTORY = int(sys.argv[2])

async def main():
    async with EmbeddedAPIServer(history=HISTORY, bookmark_interval=30.0) as srv:
        api, registry = srv.plane.api, srv.plane.registry
        opts = WriteOptions(field_manager="bench")
        api.create(registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions"), "", CRD, opts)
        while registry.get("bench.example.com", "v1", "benchobjects") is None:
            await anyio.sleep(0.01)
        rt = registry.get("bench.example.com", "v1", "benchobjects")
        ns_rt = registry.get("", "v1", "namespaces")
        for n in range(50):
            api.create(ns_rt, "", {"metadata": {"name": f"ns-{n}"}}, opts)
        for i in range(N):
            obj = make_object(i, 0)
            api.create(rt, obj["metadata"]["namespace"], obj, opts)
            if i % 2000 == 0:
                await anyio.sleep(0)
        print("ready", srv.port, srv.plane.api.db.rev, flush=True)
        round_ = 0
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line or line.strip() == "quit":
                return
            count = int(line.split()[1])
            round_ += 1
            await srv.pause()
            for u in range(count):
                i = u % N
                name, ns = f"obj-{i:06d}", f"ns-{i % 50}"
                current = api.get(rt, ns, name).copy()
                fresh = make_object(i, round_ * 1_000_000 + u)
                current["spec"] = fresh["spec"]
                current["metadata"]["annotations"] = fresh["metadata"]["annotations"]  # never a no-op write
                api.update(rt, ns, name, current, opts)
            await srv.resume()
            print("done", srv.plane.api.db.rev, flush=True)

anyio.run(main)
"""

BENCH_OBJECTS = Resource("bench.example.com", "v1", "benchobjects", "BenchObject")
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "benchobjects.bench.example.com"},
    "spec": {
        "group": "bench.example.com",
        "names": {"plural": "benchobjects", "singular": "benchobject", "kind": "BenchObject"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def make_object(i: int, round_: int) -> dict[str, Any]:
    """~2 KB of JSON shaped like a real workload object: many small fields (labels,
    containers, env, ports, resources, probes, conditions), which is where Python dicts
    cost several times the JSON size."""
    return {
        "apiVersion": "bench.example.com/v1",
        "kind": "BenchObject",
        "metadata": {
            "name": f"obj-{i:06d}",
            "namespace": f"ns-{i % 50}",
            "labels": {
                "app.kubernetes.io/name": "bench",
                "app.kubernetes.io/instance": f"i{i % 100}",
                "tier": str(i % 7),
                "shard": f"s{i % 16}",
            },
            "annotations": {"example.com/round": str(round_)},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"rs-{i % 100}",
                    "uid": f"uid-{i % 100}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 1 + i % 3,
            "nodeName": f"node-{i % 20}",
            "containers": [
                {
                    "name": f"c{c}",
                    "image": f"registry.example.com/app/c{c}:1.{round_ % 10}",
                    "args": ["--port", str(8000 + c), "--verbose"],
                    "env": [{"name": f"VAR_{e}", "value": f"value-{e}-{i}"} for e in range(5)],
                    "ports": [{"name": "http", "containerPort": 8000 + c, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"cpu": "500m", "memory": "256Mi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/ready", "port": 8000 + c},
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                    },
                }
                for c in range(2)
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z", "reason": "Ok"}
                for t in ("Ready", "Available", "Programmed")
            ],
        },
    }


class ServerProcess:
    def __init__(self, objects: int, history: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(objects), str(history), str(Path(__file__).resolve().parent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        words = self.proc.stdout.readline().split()
        if not words or words[0] != "ready":
            raise SystemExit(f"benchmark server did not start: {words}")
        self.port = int(words[1])
        self.url = f"http://127.0.0.1:{self.port}"

    async def command(self, line: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return (await anyio.to_thread.run_sync(self.proc.stdout.readline)).split()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def measure(objects: int, updates: int) -> dict[str, float]:
    server = ServerProcess(objects, history=updates + objects + 1000)
    results: dict[str, float] = {}
    try:
        async with Transport(ConnectionConfig.insecure(server.url), cluster="bench") as transport:
            informer = Informer(
                transport, BENCH_OBJECTS, cluster="bench", read_timeout=600, backoff=Backoff(0.01, 0.02, jitter=0)
            )
            captured: list[bytes] = []
            async with anyio.create_task_group() as tg:
                started = time.perf_counter()
                await tg.start(informer.run)
                await informer.wait_for_sync()
                results["list_objects_per_s"] = objects / (time.perf_counter() - started)
                assert len(informer.store) == objects
                words = await server.command(f"burst {updates}")
                final_rv = words[1]
                t0 = time.perf_counter()
                # polling keeps the measured path free of extra listeners
                while informer.resource_version is None or int(informer.resource_version) < int(final_rv):  # noqa: ASYNC110
                    await anyio.sleep(0.001)
                results["watch_events_per_s"] = updates / (time.perf_counter() - t0)
                results["events_applied"] = informer.stats.events
                results["relists"] = informer.stats.relists
                tg.cancel_scope.cancel()
            # capture the same event stream once more to measure CPU cost in-process
            start_rv = str(int(final_rv) - updates)
            query = {"resourceVersion": start_rv, "allowWatchBookmarks": "false", "timeoutSeconds": "30"}
            async with transport.watch(BENCH_OBJECTS.path(), query, read_timeout=30) as lines:
                async for line in lines:
                    captured.append(line)
                    if len(captured) >= updates:
                        break
    finally:
        server.close()
    if len(captured) != updates or b'"ERROR"' in captured[0]:
        raise SystemExit(f"captured {len(captured)} events instead of {updates}: {captured[:1]!r}")
    results.update(cpu_rates(captured))
    results["event_bytes"] = sum(map(len, captured)) / max(1, len(captured))
    return results


def cpu_rates(lines: list[bytes]) -> dict[str, float]:
    out: dict[str, float] = {}
    baseline: dict[str, Any] = {}
    t0 = time.perf_counter()
    for line in lines:
        event = orjson.loads(line)
        baseline[key_of(event["object"])] = event["object"]
    out["baseline_dict_events_per_s"] = len(lines) / (time.perf_counter() - t0)
    # decode, transform, re-encode, store and index; handler delivery is in the end-to-end figure
    informer = Informer(Transport(ConnectionConfig.insecure("http://127.0.0.1:1")), BENCH_OBJECTS)
    t0 = time.perf_counter()
    for line in lines:
        informer._handle_line(line)
    out["informer_cpu_events_per_s"] = len(lines) / (time.perf_counter() - t0)
    return out


def synchronous_metrics(registry: CollectorRegistry) -> SimpleNamespace:
    """The instruments the runtime recorded into per item before they became pull-based."""
    meter = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)]).get_meter("mcruntime")

    def histogram(name: str, buckets: tuple[float, ...]) -> Any:
        return meter.create_histogram(name, unit="s", explicit_bucket_boundaries_advisory=buckets)

    return SimpleNamespace(
        reconcile_total=meter.create_counter("controller_runtime_reconcile_total"),
        reconcile_time=histogram("controller_runtime_reconcile_time_seconds", RECONCILE_BUCKETS),
        active_workers=meter.create_up_down_counter("controller_runtime_active_workers"),
        queue_depth=meter.create_up_down_counter("workqueue_depth"),
        queue_adds=meter.create_counter("workqueue_adds_total"),
        queue_wait=histogram("workqueue_queue_duration_seconds", QUEUE_BUCKETS),
        queue_work=histogram("workqueue_work_duration_seconds", QUEUE_BUCKETS),
        informer_events=meter.create_counter("informer_events_total"),
        request_latency=histogram("rest_client_request_duration_seconds", REQUEST_BUCKETS),
        requests=meter.create_counter("rest_client_requests_total"),
    )


def per_item(m: Any) -> dict[str, Callable[[int], None]]:
    """What each call site records per item (mcruntime/transport.py, workqueue.py,
    controller.py, informer.py), attributes built as they build them."""
    queue = {"name": "bench"}
    controller = {"controller": "bench"}
    informer = {"cluster": "c", "resource": "benchobjects.bench.example.com"}

    def request(i: int) -> None:
        attrs = {"cluster": "c", "verb": ("get", "patch", "apply")[i % 3]}
        m.request_latency.record(0.001 * (i % 50), attrs)
        m.requests.add(1, {**attrs, "code": "200"})

    def queue_item(i: int) -> None:
        m.queue_adds.add(1, queue)
        m.queue_depth.add(1, queue)
        m.queue_depth.add(-1, queue)
        m.queue_wait.record(1e-5 * (i % 100), queue)
        m.queue_work.record(1e-3 * (i % 100), queue)

    def reconcile(i: int) -> None:
        m.active_workers.add(1, controller)
        m.active_workers.add(-1, controller)
        m.reconcile_time.record(0.002 * (i % 40), controller)
        m.reconcile_total.add(1, {**controller, "result": "success"})

    def watch_event(_i: int) -> None:
        m.informer_events.add(1, informer)  # the informer adds once per 256 events; this is per event

    return {"request": request, "queue item": queue_item, "reconcile": reconcile, "watch event": watch_event}


def metric_costs(items: int, rounds: int = 3) -> dict[str, tuple[float, float]]:
    """ns of process time per item, (synchronous OpenTelemetry, pull-based), best of `rounds`,
    the two alternating; plus one /metrics scrape of the result (in the "scrape" row, ns)."""
    before_registry, after_registry = CollectorRegistry(), CollectorRegistry()
    before = synchronous_metrics(before_registry)
    reader = RuntimeMetricReader(registry=after_registry)
    after = RuntimeMetrics(MeterProvider(metric_readers=[reader]))
    reader.include(after.histograms)
    cases = {"before": per_item(before), "after": per_item(after)}
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for which, calls in cases.items():
            for label, call in calls.items():
                t0 = time.process_time_ns()
                for i in range(items):
                    call(i)
                elapsed = (time.process_time_ns() - t0) / items
                best[label, which] = min(best.get((label, which), elapsed), elapsed)
    for which, registry in (("before", before_registry), ("after", after_registry)):
        t0 = time.process_time_ns()
        generate_latest(registry)
        best["/metrics scrape", which] = time.process_time_ns() - t0
    labels = [*per_item(after), "/metrics scrape"]
    return {label: (best[label, "before"], best[label, "after"]) for label in labels}


def print_metric_costs(items: int) -> None:
    print(f"runtime metrics, CPU per recorded item ({items:,} items per case, best of 3, alternating):")
    print(f"  {'':<20}{'synchronous OTel':>18}{'pull-based':>14}{'ratio':>9}")
    for label, (before, after) in metric_costs(items).items():
        unit = "ns/item" if label != "/metrics scrape" else "ns"
        print(f"  {label:<20}{before:>12,.0f} {unit:<7}{after:>8,.0f} {unit:<7}{before / after:>6.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--updates", type=int, default=50_000)
    parser.add_argument("--smoke", action="store_true", help="a quick run that only checks the benchmark works")
    parser.add_argument("--metrics-only", action="store_true", help="only the runtime metrics' cost per item")
    args = parser.parse_args()
    if args.smoke:
        args.objects, args.updates = 200, 1_000
    metric_items = 2_000 if args.smoke else 50_000
    if args.metrics_only:
        print_metric_costs(metric_items)
        return
    r = asyncio.run(measure(args.objects, args.updates))
    print(f"informer benchmark: {args.objects} objects, {args.updates} updates, ~{r['event_bytes']:.0f} B/event")
    print(f"  LIST fill into the cache:        {r['list_objects_per_s']:>10,.0f} objects/s")
    print(
        f"  watch, end to end (server→cache): {r['watch_events_per_s']:>10,.0f} events/s"
        f"  (resumed without re-list: {r['relists'] == 0})"
    )
    print(f"  informer CPU per event (in-proc): {r['informer_cpu_events_per_s']:>10,.0f} events/s")
    print(f"  baseline: orjson line → dict:    {r['baseline_dict_events_per_s']:>10,.0f} events/s")
    ratio = r["informer_cpu_events_per_s"] / r["baseline_dict_events_per_s"]
    print(f"  informer / baseline:              {ratio:>10.2f}x")
    print_metric_costs(metric_items)


if __name__ == "__main__":
    main()
