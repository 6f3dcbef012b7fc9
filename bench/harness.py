"""What the federation benchmarks share: embedded API servers and managers as separate
processes (so the manager's CPU is its own and the servers' is theirs), a raw aiohttp
client for setup and for measuring the servers' own write capacity, the servers' request
counters (through their `/_embedded/` admin endpoints), process CPU and RSS from /proc,
and figures printed as a table and written as JSON with the command that reproduces them.

Not a benchmark itself (no `bench_` prefix): `bench_fanout.py`, `bench_status_latency.py`,
`bench_idle.py`, `bench_manager_memory.py`, `bench_churn.py` and `bench_rollout.py` use it."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from federation.api.constants import CLUSTER_INVENTORY_GROUP, REGISTRATION_NAMESPACE  # noqa: E402
from federation.join import compute_crds, inventory_crds  # noqa: E402
from federation.registration import cell_profile, kubeconfig_secret, project_profile  # noqa: E402
from kubeplane.freeport import free_port  # noqa: E402

RESULTS = Path(os.environ.get("BENCH_RESULTS") or REPO / "bench" / "results")  # BENCH_RESULTS: elsewhere
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
GROUP, VERSION = "compute.datumapis.com", "v1alpha"
WDS = "workloaddeployments"


# ---------------------------------------------------------------------- processes
def cpu_seconds(pid: int) -> float:
    """User + system CPU a process (not its children) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def wakeups(pid: int) -> int:
    """Times a process has gone to sleep waiting for something (its voluntary context
    switches, of its main thread: the event loop's): one per wait that found nothing ready."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no voluntary_ctxt_switches")


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def open_sockets(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            continue
    return count


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{tail}")


# every process spawned and not yet stopped by `stopping_spawned`: a benchmark that fails
# half-way (a manager that cannot bind its port, a check that raises) leaves none running
_SPAWNED: list[Proc] = []


def _spawn(name: str, command: Sequence[str], workdir: Path) -> Proc:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    spawned = Proc(name, proc, log)
    _SPAWNED.append(spawned)
    return spawned


def spawn(name: str, args: Sequence[str], workdir: Path) -> Proc:
    return _spawn(name, [sys.executable, "-m", "federation.cli", *args], workdir)


def spawn_script(name: str, script: Path, args: Sequence[str], workdir: Path) -> Proc:
    """A Python program of the benchmarks' own (not the product) as its own process."""
    return _spawn(name, [sys.executable, str(script), *args], workdir)


@contextmanager
def stopping_spawned() -> Iterator[None]:
    """Every process spawned inside the block is stopped when it ends, however it ends: the
    last spawned first (managers before the servers they talk to)."""
    mark = len(_SPAWNED)
    try:
        yield
    finally:
        started, _SPAWNED[mark:] = _SPAWNED[mark:], []
        for proc in reversed(started):
            proc.stop()


# ---------------------------------------------------------------------- API servers
@dataclass
class Server:
    name: str
    proc: Proc
    kubeconfig: Path
    url: str = ""


class Fleet:
    """API server processes for management, projects and cells, with a raw HTTP client."""

    def __init__(self, workdir: Path, session: aiohttp.ClientSession) -> None:
        self.workdir = workdir
        self.session = session
        self.servers: dict[str, Server] = {}
        self.cities: dict[str, str] = {}
        self.projects: dict[str, str] = {}  # bare name → org/project

    async def start(self, name: str) -> Server:
        kubeconfig = self.workdir / f"{name}.kubeconfig"
        proc = spawn(
            f"apiserver-{name}",
            ["apiserver", "--port", "0", "--kubeconfig", str(kubeconfig), "--name", name, "--bookmark-interval", "30"],
            self.workdir,
        )
        server = Server(name, proc, kubeconfig)
        deadline = time.monotonic() + 60
        while True:  # the file appears before it is fully written
            loaded = yaml.safe_load(kubeconfig.read_text()) if kubeconfig.exists() else None
            if isinstance(loaded, dict) and loaded.get("clusters"):
                break
            proc.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"apiserver {name} did not start")
            await asyncio.sleep(0.05)
        server.url = loaded["clusters"][0]["cluster"]["server"]
        self.servers[name] = server
        return server

    async def start_all(self, names: Iterable[str]) -> None:
        await asyncio.gather(*(self.start(n) for n in names))

    # -------------------------------------------------------------- raw requests
    async def request(
        self,
        cluster: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Any:
        url = self.servers[cluster].url + path
        data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        async with self.session.request(
            method, url, data=data, params=query, headers={"Content-Type": content_type}
        ) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{cluster}: {method} {path}: {resp.status} {raw[:300]!r}")
            return orjson.loads(raw) if raw else None

    async def apply(self, cluster: str, path: str, obj: dict[str, Any]) -> Any:
        return await self.request(
            cluster,
            "PATCH",
            path,
            orjson.dumps(obj),
            content_type="application/apply-patch+yaml",
            query={"fieldManager": "bench", "force": "true"},
        )

    async def counters(self, cluster: str) -> dict[str, dict[str, int]]:
        result: dict[str, dict[str, int]] = await self.request(cluster, "GET", "/_embedded/counters")
        return result

    async def writes(self, cluster: str) -> int:
        verbs = ("create", "update", "patch", "delete", "deletecollection")
        return sum(n for per in (await self.counters(cluster)).values() for v, n in per.items() if v in verbs)

    async def total_writes(self) -> int:
        return sum(await asyncio.gather(*(self.writes(n) for n in self.servers)))

    async def writes_by_resource(self) -> dict[str, dict[str, int]]:
        verbs = ("create", "update", "patch", "delete", "deletecollection")
        out: dict[str, dict[str, int]] = {}
        for name in self.servers:
            for resource, per in (await self.counters(name)).items():
                n = sum(c for v, c in per.items() if v in verbs)
                if n:
                    out.setdefault(name, {})[resource] = n
        return out

    async def reset_counters(self) -> None:
        await asyncio.gather(*(self.request(n, "DELETE", "/_embedded/counters") for n in self.servers))

    # -------------------------------------------------------------- setup
    async def install_crds(self) -> None:
        for name in self.servers:
            # what each kind of cluster serves, as `join` and `up` install it
            wanted = inventory_crds() if name == "management" else compute_crds()
            for crd in wanted:
                await self.apply(
                    name, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}", crd
                )
            for crd in wanted:
                await self.wait_established(name, crd["metadata"]["name"])

    async def wait_established(self, cluster: str, crd: str) -> None:
        for _ in range(600):
            obj = await self.request(cluster, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
            if any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (obj.get("status") or {}).get("conditions") or []
            ):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{cluster}: CRD {crd} not established")

    async def register(self) -> None:
        await self.apply(
            "management",
            f"/api/v1/namespaces/{REGISTRATION_NAMESPACE}",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REGISTRATION_NAMESPACE}},
        )
        for name in self.servers:
            if name == "management":
                continue
            kubeconfig = yaml.safe_load(self.servers[name].kubeconfig.read_text())
            secret = kubeconfig_secret(name, kubeconfig)
            profile = (
                cell_profile(name, self.cities[name]) if name in self.cities else project_profile(self.projects[name])
            )
            await self.apply(
                "management", f"/api/v1/namespaces/{REGISTRATION_NAMESPACE}/secrets/{name}-kubeconfig", secret
            )
            await self.apply(
                "management",
                f"/apis/{CLUSTER_INVENTORY_GROUP}/v1alpha1/namespaces/{REGISTRATION_NAMESPACE}/clusterprofiles/{name}",
                profile,
            )

    async def unregister(self, name: str) -> None:
        for path in (
            f"/apis/{CLUSTER_INVENTORY_GROUP}/v1alpha1/namespaces/{REGISTRATION_NAMESPACE}/clusterprofiles/{name}",
            f"/api/v1/namespaces/{REGISTRATION_NAMESPACE}/secrets/{name}-kubeconfig",
        ):
            await self.request("management", "DELETE", path)

    async def list(self, cluster: str, path: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"limit": "1000", **({"continue": token} if token else {})}
            page = await self.request(cluster, "GET", path, query=query)
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items


class Follower:
    """One cluster's objects of one collection as its watch shows them: LIST, then WATCH from
    that resourceVersion, resumed where it was when a stream ends. Convergence is read from
    `objects` (each event decoded once) instead of LISTing every object again per check: a
    full LIST of a few thousand objects costs this process ~80 ms of CPU, and on a 2-core
    machine the benchmark's own CPU slows what it measures. `listeners` hear every event
    (kind, object)."""

    def __init__(self, f: Fleet, cluster: str, path: str) -> None:
        self.f, self.cluster, self.path = f, cluster, path
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> newest object
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.synced = asyncio.Event()  # the first LIST is in

    def _seen(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        for listener in self.listeners:
            listener(kind, obj)

    async def run(self) -> None:
        page = await self.f.request(self.cluster, "GET", self.path)
        for obj in page.get("items") or []:
            self._seen("ADDED", obj)
        version = page["metadata"]["resourceVersion"]
        self.synced.set()
        url = self.f.servers[self.cluster].url + self.path
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        while True:
            query = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
            async with self.f.session.get(url, params=query, timeout=timeout) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"{self.cluster}: watch {self.path}: {resp.status} {await resp.text()}")
                buffer = b""
                async for chunk in resp.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = orjson.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            raise RuntimeError(f"{self.cluster}: watch {self.path}: {obj}")
                        version = (obj.get("metadata") or {}).get("resourceVersion") or version
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self._seen(event["type"], obj)


def wd_path(namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
    path = f"/apis/{GROUP}/{VERSION}"
    if namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{WDS}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def instances_path(namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
    return wd_path(namespace, name, sub).replace(f"/{WDS}", "/instances")


TEMPLATE = {
    "metadata": {"labels": {"app": "bench"}},
    "spec": {
        "runtime": {
            "resources": {"instanceType": "datumcloud/d1-standard-2"},
            "sandbox": {"containers": [{"name": "app", "image": "docker.io/library/nginx:1.27"}]},
        },
        "networkInterfaces": [{"network": {"name": "default"}}],
    },
}


def workload_deployment(name: str, city: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "WorkloadDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "workloadRef": {"name": name, "uid": "00000000-0000-0000-0000-00000000b0b0"},
            "placementName": "bench",
            "cityCode": city,
            "replicas": replicas,
            "scaleSettings": {"minReplicas": replicas},
            "template": TEMPLATE,
        },
    }


def echo_status(copy: dict[str, Any]) -> dict[str, Any]:
    """What a cell that runs every replica at once would report for `copy`: its generation
    observed, every desired replica ready, both conditions True."""
    generation = int(copy["metadata"].get("generation") or 1)
    spec = copy.get("spec") or {}
    replicas = int(spec.get("replicas") or (spec.get("scaleSettings") or {}).get("minReplicas") or 0)

    def condition(type_: str, reason: str) -> dict[str, Any]:
        return {
            "type": type_,
            "status": "True",
            "reason": reason,
            "message": f"{replicas}/{replicas} instances ready",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": generation,
        }

    return {
        "observedGeneration": generation,
        "replicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "desiredReplicas": replicas,
        "conditions": [
            condition("Available", "StableInstanceFound" if replicas else "ScaledToZero"),
            condition("ReplicasReady", "ReplicasAvailable"),
        ],
    }


@asynccontextmanager
async def fleet(workdir: Path, *, projects: Sequence[str], cells: Sequence[tuple[str, str]]) -> AsyncIterator[Fleet]:
    """Start the servers (in parallel), install the CRDs, register cells and projects."""
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    connector = aiohttp.TCPConnector(limit=256)
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(
            aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120))
        )
        f = Fleet(workdir, session)
        # the servers, and every manager or operator the benchmark starts beside them
        stack.enter_context(stopping_spawned())
        f.cities = dict(cells)
        for path in projects:
            f.projects[path.split("/")[-1]] = path
        await f.start_all(["management", *f.projects, *f.cities])
        await f.install_crds()
        await f.register()
        yield f


# ---------------------------------------------------------------------- managers
class Manager:
    """`federation-manager run` as its own process, with /readyz on a free port."""

    def __init__(self, name: str, proc: Proc, health_port: int, metrics_port: int) -> None:
        self.name = name
        self.proc = proc
        self.health_port = health_port
        self.metrics_port = metrics_port

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def wait_ready(self, session: aiohttp.ClientSession, within: float = 300.0) -> float:
        """Seconds until /readyz answers 200."""
        started = time.monotonic()
        while time.monotonic() - started < within:
            self.proc.check_alive()
            try:
                async with session.get(f"http://127.0.0.1:{self.health_port}/readyz") as resp:
                    if resp.status == 200:
                        return time.monotonic() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.name} not ready within {within}s")

    async def metric(self, session: aiohttp.ClientSession, name: str) -> float:
        async with session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as resp:
            text = await resp.text()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") or line.startswith(name + " ")
        )

    async def reconciles(self, session: aiohttp.ClientSession) -> dict[str, float]:
        """Reconciles so far per controller (its own controller_runtime_reconcile_total)."""
        async with session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as resp:
            text = await resp.text()
        found: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("controller_runtime_reconcile_total{") and 'controller="' in line:
                name = line.split('controller="', 1)[1].split('"', 1)[0]
                found[name] = found.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return found

    async def work(self, session: aiohttp.ClientSession) -> tuple[float, float]:
        """(reconciles of every controller, API requests of every verb) so far."""
        reconciles = sum((await self.reconciles(session)).values())
        return reconciles, await self.metric(session, "rest_client_requests_total")

    async def write_requests(self, session: aiohttp.ClientSession) -> int:
        """Write requests this manager has sent (its own rest_client_requests_total)."""
        async with session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as resp:
            text = await resp.text()
        total = 0
        for line in text.splitlines():
            if line.startswith("rest_client_requests_total{") and any(
                f'verb="{v}"' in line for v in ("create", "update", "patch", "delete")
            ):
                total += int(float(line.rsplit(" ", 1)[1]))
        return total


TRACING_MODES = ("off", "noop", "file")


def set_tracing(mode: str, workdir: Path) -> None:
    """The managers this benchmark spawns trace (issue 25's cost figures): `off` (the
    default: no --tracing), `noop` (--tracing, every span made and sampled, exported
    nowhere: OTEL_TRACES_EXPORTER=none), `file` (--tracing plus the JSON-lines span file
    `up` uses, in the work dir, appended to by every manager). Set through the environment the managers
    inherit."""
    for key in ("FEDERATION_TRACING", "OTEL_TRACES_EXPORTER", "FEDERATION_TRACES_FILE"):
        os.environ.pop(key, None)
    if mode == "off":
        return
    os.environ.update(FEDERATION_TRACING="true", OTEL_TRACES_EXPORTER="none")
    if mode == "file":
        os.environ["FEDERATION_TRACES_FILE"] = str(workdir / "traces" / "spans.jsonl")


def start_manager(name: str, workdir: Path, *args: str) -> Manager:
    health, metrics = free_port(), free_port()
    proc = spawn(
        name,
        [
            "run",
            *args,
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            "--log-level=WARNING",
        ],
        workdir,
    )
    return Manager(name, proc, health, metrics)


def management(f: Fleet, *extra: str) -> Manager:
    return start_manager(
        "manager-management",
        f.workdir,
        "--enable-management-controllers",
        f"--kubeconfig={f.servers['management'].kubeconfig}",
        *extra,
    )


def cell_manager(f: Fleet, cell: str, *extra: str) -> Manager:
    return start_manager(
        f"manager-{cell}",
        f.workdir,
        "--enable-cell-controllers",
        f"--kubeconfig={f.servers[cell].kubeconfig}",
        f"--site-name={cell}",
        f"--city-code={f.cities[cell]}",
        f"--local-cluster-name={cell}",
        *extra,
    )


# ---------------------------------------------------------------------- figures
@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: str = ""
    note: str = ""


@dataclass
class Report:
    benchmark: str
    command: str
    parameters: dict[str, Any]
    figures: list[Figure] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str, target: str = "", note: str = "") -> None:
        self.figures.append(Figure(name, value, unit, target, note))
        print(f"  {name:<58} {value:>14,.3f} {unit:<10} {target:<18} {note}", flush=True)

    def write(self) -> Path:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{self.benchmark}.json"
        path.write_text(json.dumps({**asdict(self), "figures": [asdict(f) for f in self.figures]}, indent=2))
        print(f"  figures written to {path}; rerun with: {self.command}", flush=True)
        return path


def report(benchmark: str, parameters: dict[str, Any]) -> Report:
    command = "python " + " ".join(shlex.quote(a) for a in [f"bench/{benchmark}.py", *sys.argv[1:]])
    print(f"{benchmark}: {', '.join(f'{k}={v}' for k, v in parameters.items())}", flush=True)
    print(f"  {'figure':<58} {'value':>14} {'unit':<10} {'target':<18} note", flush=True)
    return Report(benchmark, command, parameters)


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")
