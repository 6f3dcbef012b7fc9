"""Benchmark: the runtime's CPU per watch event, from the watch line to the reconcile.

In one process, no server: an informer takes watch lines of ~2 KB workload-shaped objects
(`_handle_line`, as from a stream) and hands each event to the listeners of four
controllers wired as the management manager wires its own (a `for_` watch with
`not_status_only`, a map-function watch, an own-write filter, an owner watch); each
controller's workers take the requests and run a reconciler that reads the object from
the cache (`get_or_none`, one read of an object that is not there) and returns. What is
left is the runtime's own cost per event: decoding, storing, predicates, handlers, the
work queue, the worker loop, metrics. Reported: CPU microseconds per event (process time),
median of `--repeat` rounds.

Run: .venv/bin/python bench/bench_event_path.py [--events N] [--repeat R] [--smoke]"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio.lowlevel

from bench.harness import report
from mcruntime import ConnectionConfig, Request, Resource, Result, Transport
from mcruntime.cache import InformerCache
from mcruntime.client import Client
from mcruntime.controller import Controller
from mcruntime.handlers import ClusterName, EnqueueRequestForOwner, EnqueueRequestsFromMapFunc
from mcruntime.ownwrites import EnqueueUnlessOwnWrite, OwnWrites
from mcruntime.predicates import not_status_only
from mcruntime.view import View

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")
OWNERS = Resource("example.com", "v1", "owners", "Owner")
KEYS = 200


def widget(i: int, version: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": f"w-{i}",
            "namespace": f"ns-{i % 2}",
            "uid": f"uid-{i}",
            "resourceVersion": str(1000 + version),
            "generation": 1 + version // 2,
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"example.com/owner": "team-a"},
            "finalizers": ["example.com/federation"],
            "ownerReferences": [
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Owner",
                    "name": f"o-{i}",
                    "uid": f"ou-{i}",
                    "controller": True,
                }
            ],
            "managedFields": [{"manager": "bench", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "replicas": 2 + version // 2,
            "template": {
                "containers": [{"name": f"c{j}", "image": f"img:{j}", "ports": [{"port": 80 + j}]} for j in range(6)]
            },
            "placements": [
                {"name": city, "cityCodes": [city], "scaleSettings": {"minReplicas": 1}}
                for city in ("DFW", "LHR", "AMS")
            ],
        },
        "status": {
            "replicas": version,
            "conditions": [{"type": "Available", "status": "True", "reason": f"r{version}"}],
        },
    }


def lines(events: int) -> list[bytes]:
    out = []
    for n in range(events):
        i, version = n % KEYS, n // KEYS
        kind = "ADDED" if version == 0 else "MODIFIED"
        out.append(orjson.dumps({"type": kind, "object": widget(i, version)}))
    return out


async def one_round(watch_lines: list[bytes]) -> float:
    transport = Transport(ConnectionConfig.insecure("http://127.0.0.1:1"))
    cache = InformerCache(transport, cluster="project")
    informer = cache.declare(View(WIDGETS))
    informer._synced.set()  # listed: the events below are the watch's
    client = Client(transport, cache)

    async def reconcile(request: Request) -> Result:
        # a reconciler's usual read of something it has not made yet
        await client.get_or_none(WIDGETS, request.name + "-copy", namespace=request.namespace)
        return Result()

    def map_func(cluster: str, obj: dict[str, Any]) -> list[Request]:
        meta = obj["metadata"]
        return [Request("cell", meta["namespace"], meta["name"])]

    controllers = [Controller(f"c{i}", reconcile, workers=2) for i in range(4)]
    controllers[0].for_(WIDGETS, predicates=[not_status_only])
    controllers[1].watch(WIDGETS, EnqueueRequestsFromMapFunc(map_func, cluster_name=ClusterName.PRESERVE_MAPPED))
    controllers[2].watch(WIDGETS, EnqueueUnlessOwnWrite(OwnWrites()))
    controllers[3].watch(WIDGETS, EnqueueRequestForOwner(OWNERS))
    for ctrl in controllers:
        for watch in ctrl.watches:
            informer.add_listener(ctrl._listener(watch, "project"), name=ctrl.name)
    async with anyio.create_task_group() as tg:
        informer._tg = tg
        for listener in informer._listeners:
            tg.start_soon(listener.run)
        for ctrl in controllers:
            await tg.start(ctrl.run)
        await anyio.sleep(0.01)
        started = time.process_time()
        for k in range(0, len(watch_lines), 16):  # a chunk of a stream at a time
            for line in watch_lines[k : k + 16]:
                informer._handle_line(line)
            await anyio.lowlevel.checkpoint()
        for ctrl in controllers:
            await ctrl.wait_idle(settle=0.0)  # polls every 10 ms: no spinning counted
        spent = time.process_time() - started
        for ctrl in controllers:
            await ctrl.shutdown()
        tg.cancel_scope.cancel()
    return spent / len(watch_lines) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a quick run that only checks the benchmark works")
    args = parser.parse_args()
    events, repeat = (400, 1) if args.smoke else (args.events, args.repeat)
    watch_lines = lines(events)
    import uvloop

    rep = report("bench_event_path", {"events": events, "repeat": repeat, "controllers": 4})
    rounds = [
        anyio.run(one_round, watch_lines, backend_options={"loop_factory": uvloop.new_event_loop})
        for _ in range(repeat)
    ]
    rep.add("runtime CPU per watch event (4 controllers)", statistics.median(rounds), "us",
            note=f"median of {repeat}: {' '.join(f'{r:.1f}' for r in rounds)}")  # fmt: skip
    rep.write()


if __name__ == "__main__":
    main()
