"""Benchmark: the API client's CPU per request (the manager's request path).

An embedded API server runs as its own process (so its CPU is not counted); this process
sends requests to it through one client and reports the client process's CPU per request
(user + system, `time.process_time`), and requests per second:

- `transport`: `mcruntime.transport.Transport`, what the manager uses (GET of one object,
  and a merge PATCH of it: a write with a JSON body);
- `aiohttp`: a plain `aiohttp.ClientSession` doing the same (the least an aiohttp-based
  client can cost, and what the transport was built on before issue 22);

each one request at a time and 16 at a time, and the transport's CPU against aiohttp's.
`--repo PATH` imports `mcruntime` from another checkout (to measure the transport before
a change with the same server, e.g. `--repo ../main`). The event loop is uvloop, as in
`federation-manager run`. Figures go to bench/results/bench_transport.json (as
bench/harness.py writes them; not with `--repo`).

Run: .venv/bin/python bench/bench_transport.py [--requests N] [--repeat R] [--clients transport,aiohttp]
     [--repo PATH] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
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
import uvloop
import yaml

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("BENCH_RESULTS") or REPO / "bench" / "results")  # as bench/harness.py
CM = "/api/v1/namespaces/default/configmaps"
NAME = "bench"
PATCH_QUERY = {"fieldManager": "bench"}

Calls = tuple[dict[str, Callable[[int], Awaitable[Any]]], Callable[[], Awaitable[None]]]


async def _measure(call: Callable[[int], Awaitable[Any]], requests: int, concurrency: int) -> tuple[float, float]:
    """CPU µs per request and requests per second over `requests` calls, `concurrency` at a time."""
    per_worker = requests // concurrency

    async def worker(w: int) -> None:
        for i in range(per_worker):
            await call(w * per_worker + i)

    for i in range(min(200, requests)):  # warm: connections open, code paths hot
        await call(i)
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    done = per_worker * concurrency
    return cpu / done * 1e6, done / wall


async def _transport_calls(url: str) -> Calls:
    from mcruntime.connection import ConnectionConfig
    from mcruntime.transport import Transport

    transport = Transport(ConnectionConfig.insecure(url), cluster="bench")
    await transport.open()
    path = f"{CM}/{NAME}"

    async def get(_: int) -> Any:
        return await transport.request_json("GET", path, verb="get")

    async def patch(i: int) -> Any:
        body = orjson.dumps({"data": {"n": str(i)}})
        return await transport.request_json(
            "PATCH", path, verb="patch", query=PATCH_QUERY, body=body, content_type="application/merge-patch+json"
        )

    return {"get": get, "patch": patch}, transport.aclose


async def _aiohttp_calls(url: str) -> Calls:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        headers={"Accept": "application/json"},
        skip_auto_headers=("Accept-Encoding",),
    )
    timeout = aiohttp.ClientTimeout(total=30)
    full = f"{url}{CM}/{NAME}"

    async def get(_: int) -> Any:
        async with session.get(full, timeout=timeout) as resp:
            return orjson.loads(await resp.read())

    async def patch(i: int) -> Any:
        body = orjson.dumps({"data": {"n": str(i)}})
        headers = {"Content-Type": "application/merge-patch+json"}
        async with session.patch(full, data=body, params=PATCH_QUERY, headers=headers, timeout=timeout) as resp:
            return orjson.loads(await resp.read())

    return {"get": get, "patch": patch}, session.close


CLIENTS = {"transport": _transport_calls, "aiohttp": _aiohttp_calls}


def _start_server(workdir: Path) -> subprocess.Popen[bytes]:
    """An embedded API server of this checkout as its own process (not through harness.py,
    which imports this checkout's mcruntime: `--repo` must be able to bring another's)."""
    kubeconfig = workdir / "bench.kubeconfig"
    log = (workdir / "apiserver.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "federation.cli", "apiserver", "--port", "0", "--kubeconfig", str(kubeconfig)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    return proc


async def _server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    kubeconfig = workdir / "bench.kubeconfig"
    proc = _start_server(workdir)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        loaded = yaml.safe_load(kubeconfig.read_text()) if kubeconfig.exists() else None
        if isinstance(loaded, dict) and loaded.get("clusters"):
            return proc, str(loaded["clusters"][0]["cluster"]["server"])
        await asyncio.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the API server did not start; see {workdir / 'apiserver.log'}")


def write_results(args: argparse.Namespace, figures: list[dict[str, Any]]) -> None:
    """The figures as bench/harness.py's `Report.write` stores them (harness.py itself is not
    imported: it loads this checkout's mcruntime, which `--repo` must be free to replace)."""
    command = "python " + " ".join(shlex.quote(a) for a in ["bench/bench_transport.py", *sys.argv[1:]])
    parameters = {"requests": args.requests, "repeat": args.repeat, "clients": args.clients}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "bench_transport.json"
    result = {"benchmark": "bench_transport", "command": command, "parameters": parameters, "figures": figures}
    path.write_text(json.dumps(result, indent=2))
    print(f"figures written to {path}; rerun with: {command}")


def figure(name: str, value: float, unit: str) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "target": "", "note": ""}


async def main(args: argparse.Namespace) -> None:
    figures: list[dict[str, Any]] = []
    cpu_of: dict[tuple[str, str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as tmp:
        proc, url = await _server(Path(tmp))
        try:
            async with aiohttp.ClientSession() as setup:
                body = {"metadata": {"name": NAME}, "data": {"n": "0"}}
                async with setup.post(f"{url}{CM}", json=body) as resp:
                    if resp.status != 201:
                        raise SystemExit(f"creating the ConfigMap: {resp.status} {await resp.text()}")
            print(f"{'client':<10} {'request':<7} {'in flight':>9} {'CPU µs/request':>15} {'requests/s':>11}")
            for name in args.clients.split(","):
                calls, close = await CLIENTS[name](url)
                try:
                    for kind, call in calls.items():
                        for concurrency in (1, 16):
                            runs = [await _measure(call, args.requests, concurrency) for _ in range(args.repeat)]
                            cpu = statistics.median(r[0] for r in runs)
                            rate = statistics.median(r[1] for r in runs)
                            print(f"{name:<10} {kind:<7} {concurrency:>9} {cpu:>15.1f} {rate:>11.0f}")
                            cpu_of[name, kind, concurrency] = cpu
                            figures.append(figure(f"{name} {kind}, {concurrency} in flight: CPU", cpu, "µs/request"))
                            figures.append(figure(f"{name} {kind}, {concurrency} in flight: rate", rate, "requests/s"))
                finally:
                    await close()
        finally:
            proc.terminate()
            proc.wait(10)
    for (name, kind, concurrency), cpu in cpu_of.items():
        baseline = cpu_of.get(("aiohttp", kind, concurrency))
        if name == "transport" and baseline:
            ratio = cpu / baseline
            print(f"transport / aiohttp CPU, {kind}, {concurrency} in flight: {ratio:.2f}x")
            figures.append(figure(f"transport / aiohttp CPU, {kind}, {concurrency} in flight", ratio, "x"))
    if args.repo is None:
        write_results(args, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per measurement (default 3000)")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per figure; the median is shown")
    parser.add_argument("--clients", default="transport,aiohttp", help=f"comma-separated, of: {', '.join(CLIENTS)}")
    parser.add_argument("--repo", type=Path, help="import mcruntime from this checkout instead of this one")
    parser.add_argument("--smoke", action="store_true", help="200 requests, once: checks the benchmark runs")
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.requests, arguments.repeat = 208, 1
    if arguments.requests < 16 or arguments.repeat < 1:
        parser.error("--requests must be >= 16 and --repeat >= 1")
    if unknown := set(arguments.clients.split(",")) - set(CLIENTS):
        parser.error(f"--clients: unknown {', '.join(sorted(unknown))} (have: {', '.join(CLIENTS)})")
    if arguments.repo is not None:
        sys.path.insert(0, str(arguments.repo.resolve()))
    uvloop.run(main(arguments))
