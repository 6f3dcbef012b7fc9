"""The comparison for issue 22: the naive operator a Python user would write today with kopf
(https://kopf.readthedocs.io), one process per project cluster, plain aiohttp clients for
the cells. It is not the product and knows nothing of it; `bench_fanout.py --operator kopf`
runs one per project in place of the management manager, on the same servers, with the
same echo cells, creates, updates and deletes.

What it does, the obvious way:
- kopf handles the project's WorkloadDeployments (all namespaces, kopf's defaults: its
  finalizer, its last-handled-configuration annotation, an Event per handler outcome);
- on create, update and resume, the WD's city code names its cells (`--cell name=URL,CITY`);
  each gets its namespace `<project>-<namespace>` (created once per process) and a copy,
  written with one server-side apply (the copy's replicas are the WD's divided between
  the city's cells, as the federation does); on delete, each cell's copy is deleted;
- one watch per cell on this project's copies (label `bench.kopf/project`) keeps them in
  memory; when every copy of a WD's current generation is observed by its cell, the WD's
  status is written once (observedGeneration, replica counters, Available).

Run: python bench/kopf_operator.py --project NAME --server URL --cell dfw-1=URL,DFW ..."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import sys
from typing import Any

import aiohttp
import kopf
import orjson

GROUP, VERSION, PLURAL = "compute.datumapis.com", "v1alpha", "workloaddeployments"
PROJECT_LABEL = "bench.kopf/project"
UPSTREAM_NS, UPSTREAM_NAME, UPSTREAM_GENERATION = "bench.kopf/namespace", "bench.kopf/name", "bench.kopf/generation"
TIMEOUT = aiohttp.ClientTimeout(total=30)

args: argparse.Namespace
cells: dict[str, tuple[str, str]] = {}  # cell -> (server URL, city)
session: aiohttp.ClientSession
namespaces_made: set[tuple[str, str]] = set()
copies: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}  # cell -> (upstream ns, name) -> copy
wanted: dict[tuple[str, str], tuple[int, list[str]]] = {}  # WD -> (generation, target cells)
reported: dict[tuple[str, str], int] = {}  # WD -> generation whose status was written
watchers: list[asyncio.Task[None]] = []  # one per cell, held here so they are not collected and end at cleanup


def copy_path(cell: str, namespace: str, name: str = "", sub: str = "") -> str:
    url = f"{cells[cell][0]}/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    return url + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


async def call(method: str, url: str, body: Any = None, content_type: str = "application/json", **params: str) -> Any:
    data = orjson.dumps(body) if body is not None else None
    headers = {"Content-Type": content_type}
    async with session.request(method, url, data=data, params=params, headers=headers, timeout=TIMEOUT) as resp:
        raw = await resp.read()
        if resp.status >= 300:
            raise kopf.TemporaryError(f"{method} {url}: {resp.status} {raw[:200]!r}", delay=1)
        return orjson.loads(raw) if raw else None


def targets(spec: Any) -> list[str]:
    city = spec.get("cityCode")
    return sorted(name for name, (_, c) in cells.items() if c == city)


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    return kopf.ConnectionInfo(server=args.server, insecure=True)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    global session
    settings.posting.level = logging.INFO  # kopf's default, said: an Event per handler outcome
    session = aiohttp.ClientSession()
    for cell in cells:
        watchers.append(asyncio.get_running_loop().create_task(watch_copies(cell), name=f"watch-{cell}"))


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    for task in watchers:
        task.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await session.close()


async def ensure_namespace(cell: str, name: str) -> None:
    if (cell, name) in namespaces_made:
        return
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    url, headers = f"{cells[cell][0]}/api/v1/namespaces", {"Content-Type": "application/json"}
    async with session.post(url, data=orjson.dumps(body), headers=headers, timeout=TIMEOUT) as resp:
        if resp.status not in (201, 409):
            raise kopf.TemporaryError(f"namespace {name} in {cell}: {resp.status}", delay=1)
    namespaces_made.add((cell, name))


async def write_copy(cell: str, spec: Any, meta: Any, replicas: int) -> None:
    namespace = f"{args.project}-{meta['namespace']}"
    await ensure_namespace(cell, namespace)
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "WorkloadDeployment",
        "metadata": {
            "name": meta["name"],
            "namespace": namespace,
            "labels": {PROJECT_LABEL: args.project},
            "annotations": {
                UPSTREAM_NS: meta["namespace"],
                UPSTREAM_NAME: meta["name"],
                UPSTREAM_GENERATION: str(meta["generation"]),
            },
        },
        "spec": {**dict(spec), "replicas": replicas},
    }
    await call(
        "PATCH",
        copy_path(cell, namespace, meta["name"]),
        body,
        "application/apply-patch+yaml",
        fieldManager="kopf-operator",
        force="true",
    )


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
async def place(spec: Any, meta: Any, **_: Any) -> None:
    chosen = targets(spec)
    if not chosen:
        raise kopf.PermanentError(f"no cell serves city {spec.get('cityCode')!r}")
    total = int(spec.get("replicas") or 0)
    shares = [total // len(chosen) + (1 if i < total % len(chosen) else 0) for i in range(len(chosen))]
    wanted[(meta["namespace"], meta["name"])] = (int(meta["generation"]), chosen)
    await asyncio.gather(*(write_copy(cell, spec, meta, n) for cell, n in zip(chosen, shares, strict=True)))
    await report(meta["namespace"], meta["name"])  # copies already observed (a resume) report at once


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def remove(spec: Any, meta: Any, **_: Any) -> None:
    namespace = f"{args.project}-{meta['namespace']}"
    for cell in targets(spec):
        async with session.delete(copy_path(cell, namespace, meta["name"]), timeout=TIMEOUT) as resp:
            if resp.status not in (200, 202, 404):
                raise kopf.TemporaryError(f"delete copy in {cell}: {resp.status}", delay=1)
    wanted.pop((meta["namespace"], meta["name"]), None)
    reported.pop((meta["namespace"], meta["name"]), None)


async def report(namespace: str, name: str) -> None:
    """The WD's status, once every target copy of its current generation is observed."""
    key = (namespace, name)
    generation, chosen = wanted.get(key, (0, []))
    if not chosen or reported.get(key) == generation:
        return
    seen = [copies.get(cell, {}).get(key) for cell in chosen]
    if any(
        c is None
        or c["metadata"].get("annotations", {}).get(UPSTREAM_GENERATION) != str(generation)
        or (c.get("status") or {}).get("observedGeneration") != c["metadata"].get("generation")
        for c in seen
    ):
        return
    reported[key] = generation

    def total(field: str) -> int:
        return sum(int(((c or {}).get("status") or {}).get(field) or 0) for c in seen)

    status = {
        "observedGeneration": generation,
        "replicas": total("replicas"),
        "currentReplicas": total("currentReplicas"),
        "desiredReplicas": total("desiredReplicas"),
        "readyReplicas": total("readyReplicas"),
        "updatedReplicas": total("updatedReplicas"),
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "CopiesAvailable",
                "message": f"{len(seen)} copies observed",
                "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "observedGeneration": generation,
            }
        ],
    }
    url = f"{args.server}/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
    try:
        await call("PATCH", url, {"status": status}, "application/merge-patch+json")
    except kopf.TemporaryError:
        reported.pop(key, None)  # written again on the copies' next event
        raise


async def watch_copies(cell: str) -> None:
    """This project's copies in one cell: LIST, then WATCH, each event reporting its WD."""
    base = f"{cells[cell][0]}/apis/{GROUP}/{VERSION}/{PLURAL}"
    selector = f"{PROJECT_LABEL}={args.project}"
    known = copies.setdefault(cell, {})
    while True:
        try:
            page = await call("GET", base, labelSelector=selector)
            for c in page.get("items") or []:
                known[_upstream(c)] = c
            version = page["metadata"]["resourceVersion"]
            params = {"watch": "true", "labelSelector": selector, "resourceVersion": version}
            async with session.get(base, params=params, timeout=aiohttp.ClientTimeout(total=None)) as resp:
                async for line in resp.content:
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    c = event["object"]
                    if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    key = _upstream(c)
                    if event["type"] == "DELETED":
                        known.pop(key, None)
                        continue
                    known[key] = c
                    try:
                        await report(*key)
                    except kopf.TemporaryError as exc:  # written again on the copies' next event
                        logging.warning("status of %s/%s: %s", *key, exc)
        except (aiohttp.ClientError, kopf.TemporaryError) as exc:
            logging.warning("watch of %s restarts: %s", cell, exc)
            await asyncio.sleep(1)


def _upstream(c: dict[str, Any]) -> tuple[str, str]:
    annotations = c["metadata"].get("annotations") or {}
    return annotations.get(UPSTREAM_NS, ""), annotations.get(UPSTREAM_NAME, "")


def main() -> None:
    global args
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", required=True, help="the project cluster's bare name")
    parser.add_argument("--server", required=True, help="the project API server's URL")
    parser.add_argument("--cell", action="append", default=[], help="name=URL,CITY (repeated)")
    parser.add_argument("--liveness", default="", help="kopf's liveness endpoint, e.g. http://127.0.0.1:8080/healthz")
    args = parser.parse_args()
    for item in args.cell:
        name, _, rest = item.partition("=")
        url, _, city = rest.rpartition(",")
        cells[name] = (url, city)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    kopf.run(clusterwide=True, standalone=True, liveness_endpoint=args.liveness or None)


if __name__ == "__main__":
    main()
