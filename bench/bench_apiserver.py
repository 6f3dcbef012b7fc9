"""Embedded API server throughput: creates, gets, lists and watch-event fan-out, from a raw
aiohttp client and from kubernetes-asyncio, next to a trivial aiohttp JSON store measured
on the same machine as the reference ceiling.

The server runs in its own process (`federation-manager apiserver`), the clients in this
one, so on a 2-core machine each side has a core.

It also reports the CPU a server process takes to start (until it serves), and the server's
CPU per request (its process time over the phase, divided by the requests) for each write a
federation manager and its cells make on a custom resource: a WorkloadDeployment (the
compute CRD's schema, patterns and CEL rules) created, applied (server-side apply, creating
and changing), merge-patched, and its status merge-patched and applied. CPU time, not wall
time: it holds steady on a machine shared with other work.

    python bench/bench_apiserver.py              # full run
    python bench/bench_apiserver.py --smoke      # a few seconds, checks it still runs
    python bench/bench_apiserver.py --crd-writes # only the CPU per custom-resource write
    python bench/bench_apiserver.py --starts 9   # only the CPU of a process start, until it serves
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from harness import cpu_seconds, echo_status, workload_deployment

from kubeplane.freeport import free_port

TARGET_CREATES = 3000.0
WD_CRD = (
    Path(__file__).resolve().parents[1]
    / "config"
    / "crd"
    / "compute"
    / "compute.datumapis.com_workloaddeployments.yaml"
)


async def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            if proc.poll() is not None:
                raise SystemExit(f"server exited early with {proc.returncode}")
            try:
                async with session.get(url + "/version") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
    raise SystemExit(f"server at {url} did not come up")


def start_embedded(kubeconfig: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "federation.cli",
        "--log-level",
        "WARNING",
        "apiserver",
        "--port",
        str(port),
        "--kubeconfig",
        str(kubeconfig),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc, f"http://127.0.0.1:{port}"


TRIVIAL_STORE = """
import sys, orjson, uvloop
from aiohttp import web
uvloop.install()
store = {}
async def create(request):
    body = orjson.loads(await request.read())
    store[body["metadata"]["name"]] = body
    return web.Response(body=orjson.dumps(body), status=201, content_type="application/json")
app = web.Application()
app.router.add_post("/api/v1/namespaces/{ns}/configmaps", create)
app.router.add_get("/version", lambda r: web.json_response({}))
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def start_trivial() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", TRIVIAL_STORE, str(port)], stdout=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def configmap(i: int, run: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{run}-{i}", "labels": {"bench": run, "shard": str(i % 10)}},
        "data": {"payload": "x" * 400, "index": str(i)},
    }


async def run_concurrently(n: int, concurrency: int, job: Callable[[int], Awaitable[None]]) -> float:
    """Run job(0..n-1) with `concurrency` workers; returns operations per second."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await job(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - start)


# ---------------------------------------------------------------------------- raw client


async def raw_client(url: str, n: int, concurrency: int, run: str) -> dict[str, float]:
    out: dict[str, float] = {}
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:
        base = f"{url}/api/v1/namespaces/default/configmaps"

        async def create(i: int) -> None:
            async with session.post(base, data=orjson.dumps(configmap(i, run)), headers=headers) as resp:
                if resp.status != 201:
                    raise SystemExit(f"create failed: {resp.status} {await resp.text()}")
                await resp.read()

        out["create"] = await run_concurrently(n, concurrency, create)

        async def get(i: int) -> None:
            async with session.get(f"{base}/{run}-{i % n}") as resp:
                assert resp.status == 200
                await resp.read()

        out["get"] = await run_concurrently(n, concurrency, get)

        lists = max(20, n // 50)

        async def list_shard(i: int) -> None:
            async with session.get(f"{base}?labelSelector=bench%3D{run},shard%3D{i % 10}&limit=100") as resp:
                assert resp.status == 200
                await resp.read()

        out["list (100 items)"] = await run_concurrently(lists, concurrency, list_shard)
    return out


async def watch_fanout(url: str, watchers: int, updates: int, run: str) -> float:
    """Events delivered per second, summed over `watchers` concurrent watches."""
    base = f"{url}/api/v1/namespaces/default/configmaps"
    received = 0
    expected = watchers * updates
    done = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=watchers + 16)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{base}?labelSelector=bench%3D{run}&limit=1") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        ready = 0
        all_ready = asyncio.Event()

        async def watch() -> None:
            nonlocal received, ready
            async with session.get(f"{base}?watch=1&resourceVersion={rv}&labelSelector=fan%3D{run}") as resp:
                ready += 1
                if ready == watchers:
                    all_ready.set()
                async for line in resp.content:
                    if line.strip():
                        received += 1
                        if received >= expected:
                            done.set()
                            return
                    if done.is_set():
                        return

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.wait_for(all_ready.wait(), 30)
        start = time.perf_counter()
        body = configmap(0, f"{run}-fan")
        body["metadata"]["labels"]["fan"] = run
        async with session.post(base, json=body) as resp:
            assert resp.status == 201
        for i in range(1, updates):
            patch = orjson.dumps({"data": {"index": str(i)}})
            async with session.patch(
                f"{base}/{run}-fan-0", data=patch, headers={"Content-Type": "application/merge-patch+json"}
            ) as resp:
                assert resp.status == 200
        await asyncio.wait_for(done.wait(), 120)
        elapsed = time.perf_counter() - start
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return received / elapsed


# ---------------------------------------------------------------------------- kubernetes-asyncio


async def asyncio_client(kubeconfig: Path, n: int, concurrency: int, run: str) -> dict[str, float]:
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config

    out: dict[str, float] = {}
    api_client = await k8s_config.new_client_from_config(config_file=str(kubeconfig))
    api_client.rest_client.pool_manager.connector._limit = concurrency  # one pool sized for the workers
    try:
        core = k8s.CoreV1Api(api_client)

        async def create(i: int) -> None:
            await core.create_namespaced_config_map("default", configmap(i, run))

        out["create"] = await run_concurrently(n, concurrency, create)

        async def get(i: int) -> None:
            await core.read_namespaced_config_map(f"{run}-{i % n}", "default")

        out["get"] = await run_concurrently(n, concurrency, get)
        lists = max(20, n // 50)

        async def list_shard(i: int) -> None:
            await core.list_namespaced_config_map("default", label_selector=f"bench={run},shard={i % 10}", limit=100)

        out["list (100 items)"] = await run_concurrently(lists, concurrency, list_shard)
    finally:
        await api_client.close()
    return out


async def asyncio_watch_fanout(kubeconfig: Path, url: str, watchers: int, updates: int, run: str) -> float:
    """Events/s delivered to `watchers` kubernetes-asyncio Watch streams (typed decoding)."""
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config
    from kubernetes_asyncio import watch as k8s_watch

    api_client = await k8s_config.new_client_from_config(config_file=str(kubeconfig))
    api_client.rest_client.pool_manager.connector._limit = watchers + 16
    received = 0
    expected = watchers * updates
    done = asyncio.Event()
    ready = 0
    all_ready = asyncio.Event()
    try:
        core = k8s.CoreV1Api(api_client)
        rv = (await core.list_namespaced_config_map("default", limit=1)).metadata.resource_version

        async def watch() -> None:
            nonlocal received, ready
            watcher = k8s_watch.Watch()
            async with watcher:
                stream = watcher.stream(
                    core.list_namespaced_config_map,
                    "default",
                    resource_version=rv,
                    label_selector=f"fan={run}",
                    timeout_seconds=300,
                )
                ready += 1
                if ready == watchers:
                    all_ready.set()
                async for _ in stream:
                    received += 1
                    if received >= expected:
                        done.set()
                    if done.is_set():
                        return

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.wait_for(all_ready.wait(), 30)
        await asyncio.sleep(0.2)  # the streams are opened lazily, on their first read
        start = time.perf_counter()
        headers = {"Content-Type": "application/merge-patch+json"}
        async with aiohttp.ClientSession() as session:
            body = configmap(0, f"{run}-fan")
            body["metadata"]["labels"]["fan"] = run
            async with session.post(f"{url}/api/v1/namespaces/default/configmaps", json=body) as resp:
                assert resp.status == 201
            for i in range(1, updates):
                async with session.patch(
                    f"{url}/api/v1/namespaces/default/configmaps/{run}-fan-0",
                    data=orjson.dumps({"data": {"index": str(i)}}),
                    headers=headers,
                ) as resp:
                    assert resp.status == 200
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - start
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await api_client.close()
    return received / elapsed


async def trivial_creates(n: int, concurrency: int) -> float:
    proc, url = start_trivial()
    try:
        await wait_ready(url, proc)
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def create(i: int) -> None:
                async with session.post(
                    f"{url}/api/v1/namespaces/default/configmaps", data=orjson.dumps(configmap(i, "t")), headers=headers
                ) as resp:
                    await resp.read()

            return await run_concurrently(n, concurrency, create)
    finally:
        proc.terminate()
        proc.wait(10)


# ---------------------------------------------------------------------- CPU per CRD write


def wd_body(name: str, replicas: int) -> dict[str, Any]:
    """A WorkloadDeployment as the federation writes one, labelled (`workload_deployment`)."""
    wd = workload_deployment(name, "DFW", replicas)
    wd["metadata"]["labels"] = {"app": "bench"}
    return wd


# what a cell reports for a copy of generation 2 with 3 replicas (bench_fanout's echo cells)
STATUS = echo_status({"metadata": {"generation": 2}, "spec": {"replicas": 3}})


async def crd_write_costs(url: str, pid: int, n: int, concurrency: int) -> dict[str, float]:
    """Server CPU-milliseconds per request, per kind of custom-resource write."""
    crd = yaml.safe_load(WD_CRD.read_text())
    wds = "/apis/compute.datumapis.com/v1alpha/namespaces/default/workloaddeployments"
    out: dict[str, float] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def send(method: str, path: str, body: Any, ctype: str, query: str = "", ok: int = 200) -> None:
            async with session.request(
                method, url + path + query, data=orjson.dumps(body), headers={"Content-Type": ctype}
            ) as resp:
                if resp.status not in (ok, 201 if ok == 200 else ok):
                    raise SystemExit(f"{method} {path} failed: {resp.status} {await resp.text()}")
                await resp.read()

        await send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, "application/json", ok=201)
        for _ in range(200):  # the CRD is served once it is Established
            async with session.get(url + wds) as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.05)

        apply = "?fieldManager=bench-federator&force=true"
        status_apply = "?fieldManager=bench-status&force=true"
        phases: list[tuple[str, Callable[[int], Awaitable[None]]]] = [
            ("create (POST)", lambda i: send("POST", wds, wd_body(f"c-{i}", 2), "application/json", ok=201)),
            (
                "server-side apply, creating",
                lambda i: send("PATCH", f"{wds}/a-{i}", wd_body(f"a-{i}", 2), "application/apply-patch+yaml", apply),
            ),
            (
                "server-side apply, replicas 2 -> 3",
                lambda i: send("PATCH", f"{wds}/a-{i}", wd_body(f"a-{i}", 3), "application/apply-patch+yaml", apply),
            ),
            (
                "merge patch of spec.replicas",
                lambda i: send(
                    "PATCH",
                    f"{wds}/c-{i}",
                    {"spec": {"replicas": 3, "scaleSettings": {"minReplicas": 3}}},
                    "application/merge-patch+json",
                ),
            ),
            (
                "status merge patch",
                lambda i: send("PATCH", f"{wds}/c-{i}/status", {"status": STATUS}, "application/merge-patch+json"),
            ),
            (
                "status server-side apply",
                lambda i: send(
                    "PATCH",
                    f"{wds}/a-{i}/status",
                    {
                        "apiVersion": "compute.datumapis.com/v1alpha",
                        "kind": "WorkloadDeployment",
                        "metadata": {"name": f"a-{i}", "namespace": "default"},
                        "status": STATUS,
                    },
                    "application/apply-patch+yaml",
                    status_apply,
                ),
            ),
        ]
        for label, job in phases:
            before = cpu_seconds(pid)
            await run_concurrently(n, concurrency, job)
            out[label] = (cpu_seconds(pid) - before) / n * 1000
    return out


async def crd_writes_only(n: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_embedded(Path(tmp) / "kubeconfig")
        try:
            await wait_ready(url, proc)
            costs = await crd_write_costs(url, proc.pid, n, concurrency)
        finally:
            proc.terminate()
            proc.communicate(timeout=15)
    print_crd_costs(costs, n, concurrency)


async def start_costs(starts: int) -> list[float]:
    """The server process's CPU-seconds from its start until it serves /version, once per
    start: the tests and the benchmarks start hundreds of these processes."""
    costs = []
    for _ in range(starts):
        with tempfile.TemporaryDirectory() as tmp:
            proc, url = start_embedded(Path(tmp) / "kubeconfig")
            try:
                await wait_ready(url, proc)
                costs.append(cpu_seconds(proc.pid))
            finally:
                proc.terminate()
                proc.communicate(timeout=15)
    return costs


def print_start_costs(costs: list[float]) -> None:
    print(
        f"API server process start until it serves: {statistics.median(costs):.2f} CPU-s "
        f"(median of {len(costs)}; {min(costs):.2f}-{max(costs):.2f})"
    )


def print_crd_costs(costs: dict[str, float], n: int, concurrency: int) -> None:
    print(f"API server CPU per WorkloadDeployment write ({n} requests per kind, concurrency {concurrency}):")
    for label, ms in costs.items():
        print(f"  {label:<40}{ms:8.2f} ms CPU/request")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark still runs")
    parser.add_argument("--objects", type=int, default=0, help="objects per phase (default 5000, smoke 200)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=0, help="concurrent watches (default 50, smoke 5)")
    parser.add_argument("--crd-writes", action="store_true", help="only the server's CPU per custom-resource write")
    parser.add_argument("--starts", type=int, default=0, help="only the CPU of N process starts (a full run: 5)")
    args = parser.parse_args()
    crd_n = 50 if args.smoke else 400
    if args.starts:
        print_start_costs(await start_costs(args.starts))
        return
    if args.crd_writes:
        await crd_writes_only(args.objects or crd_n, min(args.concurrency, 16))
        return
    n = args.objects or (200 if args.smoke else 5000)
    watchers = args.watchers or (5 if args.smoke else 50)
    updates = 20 if args.smoke else 400

    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        proc, url = start_embedded(kubeconfig)
        try:
            await wait_ready(url, proc)
            raw = await raw_client(url, n, args.concurrency, "raw")
            fan = await watch_fanout(url, watchers, updates, "fan")
            typed = await asyncio_client(kubeconfig, max(n // 5, 100), args.concurrency, "typed")
            typed_fan = await asyncio_watch_fanout(kubeconfig, url, watchers, max(updates // 4, 10), "tfan")
            crd_costs = await crd_write_costs(url, proc.pid, crd_n, min(args.concurrency, 16))
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=15)
            if proc.returncode not in (0, -15):
                print(err.decode(), file=sys.stderr)
        trivial = await trivial_creates(n, args.concurrency)
    starts = await start_costs(2 if args.smoke else 5)

    print(
        f"embedded API server, {os.cpu_count()} cores, {n} objects (~0.6 KB ConfigMaps), "
        f"concurrency {args.concurrency}{' [smoke]' if args.smoke else ''}"
    )
    print(f"{'operation':<20}{'raw aiohttp/s':>16}{'kubernetes-asyncio/s':>22}{'raw/k8s-asyncio':>17}")
    for op in ("create", "get", "list (100 items)"):
        print(f"{op:<20}{raw[op]:>16.0f}{typed[op]:>22.0f}{raw[op] / typed[op]:>16.1f}x")
    print(
        f"watch fan-out: {fan:.0f} events/s delivered across {watchers} watchers ({updates} changes); "
        f"kubernetes-asyncio Watch (typed decoding): {typed_fan:.0f} events/s ({fan / typed_fan:.1f}x)"
    )
    print(f"trivial aiohttp JSON store (reference ceiling): {trivial:.0f} creates/s")
    print(
        f"embedded creates vs trivial store: {raw['create'] / trivial:.2f}x; "
        f"vs the {TARGET_CREATES:.0f}/s target: {raw['create'] / TARGET_CREATES:.2f}x"
    )
    print_crd_costs(crd_costs, crd_n, min(args.concurrency, 16))
    print_start_costs(starts)


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())  # the clients on uvloop too, like the server: measure the server, not the instrument
