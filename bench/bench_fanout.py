"""Benchmark: fan-out convergence, writes against the ideal, CPU per WD, and the API
servers' own write capacity.

P projects x W WorkloadDeployments are created in the project control planes (N in flight);
C = 3 cells (dfw-1 and dfw-2 serve DFW, lhr-1 serves LHR) receive them, every other WD
going to DFW (2 copies, its replicas divided between them) and the rest to LHR (1 copy).
Then every WD's spec.replicas is changed, then every WD is deleted. Every server and every
manager is its own process: one management-mode `federation-manager run` and one cell-mode
`run` per cell. Per phase (create, update, delete):

- wall time until every copy is in its cells as the phase wants it (present with the
  WD's replicas divided between them, or gone), and until every project WD's status
  reflects its cells (`status.observedGeneration == metadata.generation`, which the
  projector only sets once every target cell has observed the spec), or is gone;
- the management manager's writes (its own request counter) against the ideal: on create
  a finalizer, one copy per target cell and one status per WD; on update one write per
  changed copy and one status per WD; on delete one delete per copy and the finalizer's
  release per WD; with and without its Events; downstream namespaces (amortised) and
  Instances projected into the projects (replicas > 0 only) counted apart; every
  resource's writes per WD (the projects' are the manager's alone, the cells' include
  the cell managers');
- CPU-seconds per WD of the management manager, the cell managers and the API servers,
  and of this process (its client, the echo cells, its watches); and what all of those
  but the operator used, over the machine's cores: the wall time the phase would take if
  the operator cost nothing, on this machine, where the servers share the cores with it
  (it is why a ratio to another operator's time has a floor here that no operator's own
  CPU can move; the servers' part grows with the writes, which are ideal).

Convergence is read from watches (`harness.Follower`: one per cell on the copies, one per
project on the WDs), each event decoded once and counted into the phase's progress as it
arrives (`Progress`), so a phase is done at the event that completes it. (Until stop 33
that progress was recomputed from every copy and WD every 20 ms while the watches showed
changes; until issue 22's stop 32 this program LISTed every copy and WD every 100 ms;
at 400 WDs one such check cost this process ~80 ms of CPU, taken from the 2 cores the
measured processes share.)

At the end, the achieved write rate of the create phase against the servers' capacity
for the same kinds of writes, measured by a raw aiohttp client (concurrency 64) after the
managers have stopped: copy creates into the cells, finalizer patches and status patches.

Shapes: `default` (10 x 500, 64 in flight, 0 -> 1 replicas, 8 workers per controller) and
`kopf` (issue 22's side-by-side: 2 projects x 200 WDs over 2 namespaces, 16 in flight,
replicas 2 -> 3, the manager's shipped worker counts).

Cells (`--cells`): `managers` (the default) runs a cell-mode `federation-manager run` per
cell, so every copy becomes Instances and pods (the embedded kubelet) and the cells report
what those do: the whole system. `echo` isolates the federation path, like for like with an
operator that only writes copies (issue 22's kopf figures): instead of the cell managers,
one light task per cell in this process (an aiohttp watch on the cell's WD copies) answers
each copy's new generation with one status write — `observedGeneration` = the copy's
generation, every replica counted ready, `Available` and `ReplicasReady` True — which is
what the status projector needs to call the copy observed (`fleet.aggregate`). Cell CPU
is then the echo's share of this process and is not reported; its status writes are the
cells' `workloaddeployments/status` writes.

`--operator kopf` runs issue 22's comparison in place of the management manager: the naive
operator a Python user would write today with kopf, one process per project
(bench/kopf_operator.py; `pip install -e .[bench]` installs kopf), with `--cells echo`, on the same servers and
work, so the two are compared in the same conditions; its writes are the servers' counts
less the benchmark's and the echo cells'.

Run: python bench/bench_fanout.py [--shape default|kopf] [--cells managers|echo] [--operator ours|kopf]
     [--projects P] [--wds W] [--in-flight N] [--workers K] [--create-only] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import os
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
from harness import (
    TRACING_MODES,
    WDS,
    Fleet,
    Follower,
    Manager,
    Proc,
    Report,
    cell_manager,
    cpu_seconds,
    echo_status,
    fleet,
    management,
    report,
    set_tracing,
    spawn_script,
    wd_path,
    workload_deployment,
)

from kubeplane.freeport import free_port

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
WD_RESOURCE = f"{WDS}.compute.datumapis.com"
PHASE_TIMEOUT = 600.0


def city_of(i: int) -> str:
    return "DFW" if i % 2 == 0 else "LHR"


@dataclass(frozen=True)
class Shape:
    projects: int
    wds: int
    namespaces: int
    in_flight: int
    replicas: int
    updated_replicas: int
    workers: int  # per management controller; 0: the manager's shipped default

    def namespace_of(self, i: int) -> str:
        return "default" if self.namespaces == 1 else f"ns-{i % self.namespaces}"

    @property
    def namespace_names(self) -> list[str]:
        return sorted({self.namespace_of(i) for i in range(self.namespaces)})

    def copies_per_project(self) -> int:
        return sum(2 if city_of(i) == "DFW" else 1 for i in range(self.wds))


SHAPES = {
    # the project's own: many WDs at once, 0 replicas (federation only, no Instances)
    "default": Shape(projects=10, wds=500, namespaces=1, in_flight=64, replicas=0, updated_replicas=1, workers=8),
    # issue 22's side-by-side with a kopf operator: 2 projects x 200 WDs over 2 namespaces,
    # 16 creates in flight, then spec.replicas 2 -> 3 on all, then delete
    "kopf": Shape(projects=2, wds=200, namespaces=2, in_flight=16, replicas=2, updated_replicas=3, workers=0),
}


# ---------------------------------------------------------------------- echo cells
ECHO_WRITERS = 16  # concurrent status writes per echo cell
LIVENESS_EVERY = 0.1  # how often the managers' processes are checked alive while a phase runs


class EchoCell:
    """A minimal cell controller: hears the cell's WD copies from the cell's `Follower` and
    writes each new generation's status once (`echo_status`). Events for one copy coalesce:
    a copy waits in `pending` once, and its writer reports the newest generation seen."""

    def __init__(self, f: Fleet, cell: str, follower: Follower) -> None:
        self.f, self.cell = f, cell
        self.latest: dict[tuple[str, str], dict[str, Any]] = {}  # the newest copy seen, per key
        self.answered: dict[tuple[str, str], int] = {}  # the generation whose status was written
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.queued: set[tuple[str, str]] = set()
        self.status_writes = 0
        follower.listeners.append(self.seen)

    def seen(self, kind: str, copy: dict[str, Any]) -> None:
        meta = copy["metadata"]
        key = (meta["namespace"], meta["name"])
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            self.latest.pop(key, None)
            self.answered.pop(key, None)
            return
        self.latest[key] = copy
        generation = meta.get("generation")
        observed = (copy.get("status") or {}).get("observedGeneration")
        if observed != generation and self.answered.get(key) != generation and key not in self.queued:
            self.queued.add(key)
            self.queue.put_nowait(key)

    async def writer(self) -> None:
        while True:
            key = await self.queue.get()
            self.queued.discard(key)
            copy = self.latest.get(key)
            if copy is None:
                continue
            generation = copy["metadata"].get("generation")
            try:
                await self.f.request(
                    self.cell,
                    "PATCH",
                    wd_path(key[0], key[1], "status"),
                    {"status": echo_status(copy)},
                    content_type="application/merge-patch+json",
                )
            except RuntimeError as exc:  # the copy went meanwhile (404): nothing to report
                if ": 404 " not in str(exc):
                    raise
                continue
            self.status_writes += 1
            self.answered[key] = generation

    async def run(self) -> None:
        await asyncio.gather(*(self.writer() for _ in range(ECHO_WRITERS)))


async def gather_limited(limit: int, calls: list[Callable[[], Awaitable[Any]]]) -> None:
    sem = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with sem:
            await call()

    await asyncio.gather(*(one(c) for c in calls))


def wd_calls(f: Fleet, s: Shape, projects: list[str], phase: str) -> list[Callable[[], Awaitable[Any]]]:
    calls: list[Callable[[], Awaitable[Any]]] = []
    for p in projects:
        for i in range(s.wds):
            ns, name = s.namespace_of(i), f"wd-{i:05d}"
            if phase == "create":
                body = workload_deployment(name, city_of(i), s.replicas, ns)
                calls.append(functools.partial(f.request, p, "POST", wd_path(ns), body))
            elif phase == "update":
                patch = {"spec": {"replicas": s.updated_replicas, "scaleSettings": {"minReplicas": s.updated_replicas}}}
                calls.append(
                    functools.partial(
                        f.request, p, "PATCH", wd_path(ns, name), patch, content_type="application/merge-patch+json"
                    )
                )
            else:
                calls.append(functools.partial(f.request, p, "DELETE", wd_path(ns, name)))
    return calls


class Progress:
    """One phase's convergence, kept up to date from the watches' events (each `Follower`'s
    listeners) so a check costs O(1): counting what is done per event instead of walking
    every copy and WD per check (at 2,000 WDs a walk of 5,000 objects every 20 ms, CPU taken
    from the cores the measured processes share); a phase is done at the event that
    completes it, not at the next poll.

    Copies (`copies_done`): every copy gone on delete; otherwise every WD's copies present
    with its replicas divided between them (a WD's copies share a downstream namespace and
    name across the cells of its city). Statuses (`statuses_done`): every project WD gone on
    delete; otherwise every WD's `status.observedGeneration` at its generation, on update a
    generation past the one it had when the phase began (`generations`), so a watch that has
    not shown the benchmark's own writes yet does not count as converged."""

    def __init__(self, w: Watches, s: Shape, projects: list[str], phase: str) -> None:
        self.phase = phase
        self.expected_copies = s.copies_per_project() * len(projects)
        self.expected_wds = s.wds * len(projects)
        self.replicas = s.replicas if phase == "create" else s.updated_replicas
        self.generations = w.generations()
        # copies: each one's replicas per (cell, key); per key the copies and their replicas'
        # sum; how many keys have the sum wanted
        self.copy_replicas: dict[tuple[str, str, str], int] = {}
        self.per_wd: dict[tuple[str, str], tuple[int, int]] = {}  # key -> (copies, replicas)
        self.wds_placed = 0
        # statuses: the project WDs present, and those whose status reflects their cells
        self.present: set[tuple[str, str, str]] = set()
        self.reflected: set[tuple[str, str, str]] = set()
        self.listening: list[tuple[Follower, Callable[[str, dict[str, Any]], None]]] = []
        # when each became done, on the clock of `time.perf_counter`, from `start()` on: read
        # at the event that completed it, not at the next poll
        self.started: float | None = None
        self.copies_at: float | None = None
        self.statuses_at: float | None = None
        for cell, follower in w.cells.items():
            self._listen(follower, functools.partial(self._copy, cell))
        for project, follower in w.projects.items():
            self._listen(follower, functools.partial(self._wd, project))

    def _listen(self, follower: Follower, listener: Callable[[str, dict[str, Any]], None]) -> None:
        for obj in follower.objects.values():
            listener("ADDED", obj)
        follower.listeners.append(listener)
        self.listening.append((follower, listener))

    def start(self) -> None:
        self.started = time.perf_counter()
        self._check()

    def _check(self) -> None:
        if self.started is None:
            return
        if self.copies_at is None and self.copies_done():
            self.copies_at = time.perf_counter() - self.started
        if self.statuses_at is None and self.statuses_done():
            self.statuses_at = time.perf_counter() - self.started

    def close(self) -> None:
        """Stop listening (the next phase has its own)."""
        for follower, listener in self.listening:
            follower.listeners.remove(listener)

    def _copy(self, cell: str, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        before = self.copy_replicas.pop((cell, *key), None)
        after = None if kind == "DELETED" else int((obj.get("spec") or {}).get("replicas") or 0)
        if after is not None:
            self.copy_replicas[(cell, *key)] = after
        copies, replicas = self.per_wd.get(key, (0, 0))
        was = copies > 0 and replicas == self.replicas
        copies += (after is not None) - (before is not None)
        replicas += (after or 0) - (before or 0)
        if copies:
            self.per_wd[key] = (copies, replicas)
        else:
            self.per_wd.pop(key, None)
        self.wds_placed += int(copies > 0 and replicas == self.replicas) - int(was)
        self._check()

    def _wd(self, project: str, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (project, meta.get("namespace") or "", meta["name"])
        if kind == "DELETED":
            self.present.discard(key)
            self.reflected.discard(key)
            self._check()
            return
        self.present.add(key)
        generation = meta.get("generation")
        current = (obj.get("status") or {}).get("observedGeneration") == generation and not (
            self.phase == "update" and generation == self.generations.get(key)
        )
        if current:
            self.reflected.add(key)
        else:
            self.reflected.discard(key)
        self._check()

    def copies_done(self) -> bool:
        if self.phase == "delete":
            return not self.copy_replicas
        return (
            len(self.copy_replicas) >= self.expected_copies
            and len(self.per_wd) == self.expected_wds
            and self.wds_placed == self.expected_wds
        )

    def statuses_done(self) -> bool:
        if self.phase == "delete":
            return not self.present
        return len(self.present) >= self.expected_wds and len(self.reflected) == len(self.present)


def attributed(writes: dict[str, dict[str, int]], projects: list[str]) -> tuple[int, int]:
    """(downstream namespace writes, Event writes in the projects): only the management
    manager writes either, so the servers' counters attribute them exactly."""
    namespaces = sum(
        n
        for cluster, per in writes.items()
        if cluster not in projects
        for resource, n in per.items()
        if resource == "namespaces"
    )
    events = sum(
        n
        for cluster, per in writes.items()
        if cluster in projects
        for resource, n in per.items()
        if resource.startswith("events")
    )
    return namespaces, events


async def raw_capacity(f: Fleet, project: str, wds: int, total: int, concurrency: int = 64) -> float:
    """Writes/s the servers take from a raw client issuing the same kinds of writes: copy
    creates into the cells, finalizer patches and status patches on project WDs (made first,
    in their own namespace, so whatever the phases left behind does not matter)."""
    sem = asyncio.Semaphore(concurrency)
    cells = [c for c, _ in CELLS]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-raw"}}
    for cluster in (*cells, project):
        await f.apply(cluster, "/api/v1/namespaces/bench-raw", namespace)
    await gather_limited(
        concurrency,
        [
            functools.partial(
                f.request,
                project,
                "POST",
                wd_path("bench-raw"),
                workload_deployment(f"wd-{i:05d}", "DFW", 0, "bench-raw"),
            )
            for i in range(wds)
        ],
    )

    async def one(i: int) -> None:
        async with sem:
            kind = i % 3
            if kind == 0:
                cell = cells[i % len(cells)]
                await f.request(
                    cell, "POST", wd_path("bench-raw"), workload_deployment(f"raw-{i:06d}", "DFW", 0, "bench-raw")
                )
            else:
                name = f"wd-{(i // 3) % wds:05d}"
                if kind == 1:
                    await f.request(
                        project,
                        "PATCH",
                        wd_path("bench-raw", name),
                        {"metadata": {"annotations": {"bench/raw": str(i)}}},
                        content_type="application/merge-patch+json",
                    )
                else:
                    await f.request(
                        project,
                        "PATCH",
                        wd_path("bench-raw", name, "status"),
                        {"status": {"replicas": i % 7}},
                        content_type="application/merge-patch+json",
                    )

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(total)))
    return total / (time.perf_counter() - started)


@dataclass
class Phase:
    name: str
    sent_s: float  # the benchmark's own creates, updates or deletes all answered
    copies_s: float
    statuses_s: float
    manager_writes: int
    ideal: int
    namespaces: int
    events: int
    cpu_manager: float
    cpu_cells: float
    cpu_servers: float
    cpu_benchmark: float  # this process: its client, the echo cells, the watches it reads convergence from
    project_writes: dict[str, int]
    cell_writes: dict[str, int]
    reconciles: dict[str, float]  # per controller of the management manager


def ideal_writes(phase: str, wds: int, copies: int) -> int:
    """The fewest writes the management manager can make: on create a finalizer, one copy per
    target cell and one status per WD; on update one write per changed copy and one status
    per WD; on delete one delete per copy and the finalizer's release per WD."""
    return {"create": 2 * wds + copies, "update": copies + wds, "delete": copies + wds}[phase]


class KopfOperators:
    """Issue 22's comparison (`--operator kopf`): one `kopf_operator.py` process per project
    in place of the management manager. kopf counts no requests of its own, so its writes
    are the servers' counters less the benchmark's and the echo cells' (`kopf_writes`)."""

    def __init__(self, f: Fleet, projects: list[str], workdir: Path) -> None:
        self.procs: list[Proc] = []
        self.ports: list[int] = []
        cells = [f"--cell={c}={f.servers[c].url},{city}" for c, city in CELLS]
        for p in projects:
            port = free_port()
            args = [
                f"--project={p}",
                f"--server={f.servers[p].url}",
                *cells,
                f"--liveness=http://127.0.0.1:{port}/healthz",
            ]
            self.procs.append(spawn_script(f"kopf-{p}", Path(__file__).with_name("kopf_operator.py"), args, workdir))
            self.ports.append(port)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def check_alive(self) -> None:
        for p in self.procs:
            p.check_alive()

    def stop(self) -> None:
        for p in self.procs:
            p.stop()

    async def wait_ready(self, session: aiohttp.ClientSession, within: float = 120.0) -> None:
        started = time.monotonic()
        for port in self.ports:
            while True:
                self.check_alive()
                try:
                    async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                if time.monotonic() - started > within:
                    raise RuntimeError(f"the kopf operators were not live within {within}s")
                await asyncio.sleep(0.1)


Operator = Manager | KopfOperators


def operator_pids(op: Operator) -> list[int]:
    return op.pids if isinstance(op, KopfOperators) else [op.pid]


def check_alive(op: Operator) -> None:
    if isinstance(op, KopfOperators):
        op.check_alive()
    else:
        op.proc.check_alive()


def kopf_writes(writes: dict[str, dict[str, int]], projects: list[str], wds: int) -> int:
    """The operators' writes: every project and cell write, less the benchmark's own (one per
    project WD) and the echo cells' status writes."""
    total = 0
    for cluster, per in writes.items():
        if cluster in projects or cluster in dict(CELLS):
            total += sum(
                n for resource, n in per.items() if not (cluster in dict(CELLS) and resource.endswith("/status"))
            )
    return total - wds


@dataclass
class Watches:
    """What the benchmark follows to see convergence: each cell's copies, each project's WDs."""

    cells: dict[str, Follower]
    projects: dict[str, Follower]

    def all(self) -> list[Follower]:
        return [*self.cells.values(), *self.projects.values()]

    def generations(self) -> dict[tuple[str, str, str], int]:
        return {
            (project, ns, name): wd["metadata"].get("generation")
            for project, follower in self.projects.items()
            for (ns, name), wd in follower.objects.items()
        }


async def run_phase(
    f: Fleet, s: Shape, projects: list[str], phase: str, mgr: Operator, cells: list[Manager], w: Watches
) -> Phase:
    await f.reset_counters()
    progress = Progress(w, s, projects, phase)
    server_pids = [srv.proc.pid for srv in f.servers.values()]
    sent_before, reconciled_before = 0, {}
    if isinstance(mgr, Manager):
        async with aiohttp.ClientSession() as session:
            sent_before = await mgr.write_requests(session)
            reconciled_before = await mgr.reconciles(session)
    cpu = (
        sum(map(cpu_seconds, operator_pids(mgr))),
        sum(map(cpu_seconds, (c.pid for c in cells))),
        sum(map(cpu_seconds, server_pids)),
    )
    cpu_benchmark = time.process_time()
    started = time.perf_counter()
    progress.start()
    try:
        await gather_limited(s.in_flight, wd_calls(f, s, projects, phase))
        sent_at = time.perf_counter() - started
        while progress.copies_at is None or progress.statuses_at is None:
            check_alive(mgr)
            for m in cells:
                m.proc.check_alive()
            if time.perf_counter() - started > PHASE_TIMEOUT:
                raise RuntimeError(
                    f"{phase} did not converge within {PHASE_TIMEOUT}s (copies done: {progress.copies_at is not None}, "
                    f"statuses done: {progress.statuses_at is not None}); the managers' logs are in {f.workdir}"
                )
            await asyncio.sleep(LIVENESS_EVERY)
    finally:
        progress.close()
    copies_at, statuses_at = progress.copies_at, progress.statuses_at
    cpu_after = (
        sum(map(cpu_seconds, operator_pids(mgr))),
        sum(map(cpu_seconds, (c.pid for c in cells))),
        sum(map(cpu_seconds, server_pids)),
    )
    cpu_after_benchmark = time.process_time()
    writes = await f.writes_by_resource()
    if isinstance(mgr, Manager):
        async with aiohttp.ClientSession() as session:
            sent = await mgr.write_requests(session) - sent_before
            reconciled = await mgr.reconciles(session)
    else:
        sent, reconciled = kopf_writes(writes, projects, s.wds * len(projects)), {}
    namespaces, events = attributed(writes, projects)
    project_writes: dict[str, int] = {}
    cell_writes: dict[str, int] = {}
    for cluster, per in writes.items():
        target = project_writes if cluster in projects else cell_writes if cluster in f.cities else None
        if target is None:
            continue  # the management cluster: leases, registration
        for resource, n in per.items():
            target[resource] = target.get(resource, 0) + n
    # the benchmark's own create, patch or delete of each project WD is not the manager's
    wds = s.wds * len(projects)
    project_writes[WD_RESOURCE] = project_writes.get(WD_RESOURCE, 0) - wds
    return Phase(
        phase,
        sent_at,
        copies_at,
        statuses_at,
        sent,
        ideal_writes(phase, wds, s.copies_per_project() * len(projects)),
        namespaces,
        events,
        cpu_after[0] - cpu[0],
        cpu_after[1] - cpu[1],
        cpu_after[2] - cpu[2],
        cpu_after_benchmark - cpu_benchmark,
        project_writes,
        cell_writes,
        {name: n - reconciled_before.get(name, 0.0) for name, n in reconciled.items()},
    )


def short(resource: str) -> str:
    return resource.replace(".compute.datumapis.com", "")


def report_phase(rep: Report, p: Phase, wds: int, *, cells_cpu: bool = True) -> None:
    gone = p.name == "delete"
    rep.add(f"{p.name}: time until the benchmark's own {wds} writes are answered", p.sent_s, "s", "a floor")
    rep.add(f"{p.name}: time until every copy is {'gone' if gone else 'in its cells'}", p.copies_s, "s")
    rep.add(
        f"{p.name}: time until every {'project WD is gone' if gone else 'status reflects its cells'}", p.statuses_s, "s"
    )
    # the ideal counts WD writes; Instances projected into the projects (replicas > 0) apart
    projected = sum(n for resource, n in p.project_writes.items() if resource.startswith("instances"))
    core = p.manager_writes - p.namespaces - projected
    rep.add(f"{p.name}: projected Instance writes per WD", projected / wds, "writes")
    rep.add(f"{p.name}: manager writes / ideal, with Events", core / p.ideal, "x", f"ideal {p.ideal / wds:.2f}/WD")
    rep.add(f"{p.name}: manager writes / ideal, without Events", (core - p.events) / p.ideal, "x", "<= 1.1x")
    rep.add(f"{p.name}: Events written per WD", p.events / wds, "events", "<= 1")
    rep.add(f"{p.name}: downstream namespace writes", p.namespaces, "writes")
    for resource, n in sorted(p.project_writes.items()):
        rep.add(f"{p.name}:   project {short(resource)} per WD", n / wds, "writes", "manager only")
    for resource, n in sorted(p.cell_writes.items()):
        writers = "manager + cell managers" if cells_cpu else "manager + echo cells"
        rep.add(f"{p.name}:   cell {short(resource)} per WD", n / wds, "writes", writers)
    rep.add(f"{p.name}: manager CPU per WD", p.cpu_manager / wds * 1000, "ms")
    for name, count in sorted(p.reconciles.items()):
        rep.add(f"{p.name}:   {name} reconciles per WD", count / wds, "reconciles", "management manager")
    if cells_cpu:
        rep.add(f"{p.name}: cell managers' CPU per WD", p.cpu_cells / wds * 1000, "ms")
    rep.add(f"{p.name}: API servers' CPU per WD", p.cpu_servers / wds * 1000, "ms")
    rep.add(f"{p.name}: the benchmark's own CPU per WD", p.cpu_benchmark / wds * 1000, "ms", "", "client, echo, watch")
    cores = len(os.sched_getaffinity(0))
    others = p.cpu_servers + p.cpu_cells + p.cpu_benchmark
    rep.add(f"{p.name}: everything but the operator, CPU / {cores} cores", others / cores, "s", "", "a floor here")


async def main(args: argparse.Namespace) -> None:
    s: Shape = args.shape_
    projects = [f"p{i:02d}" for i in range(s.projects)]
    params = {
        "shape": args.shape,
        **asdict(s),
        "cells": f"{len(CELLS)} ({args.cells})",
        "operator": args.operator,
        "tracing": args.tracing,
    }
    rep = report("bench_fanout", params)
    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        set_tracing(args.tracing, Path(tmp))
        async with fleet(Path(tmp), projects=[f"bench/{p}" for p in projects], cells=CELLS) as f:
            for p in projects:
                for ns in s.namespace_names:
                    if ns != "default":
                        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                        await f.apply(p, f"/api/v1/namespaces/{ns}", body)
            w = Watches(
                {c: Follower(f, c, wd_path()) for c, _ in CELLS}, {p: Follower(f, p, wd_path()) for p in projects}
            )
            tasks: list[asyncio.Task[None]] = [  # the watches, then the echo cells
                asyncio.create_task(follower.run(), name=f"follow-{follower.cluster}") for follower in w.all()
            ]
            if args.cells == "echo":
                cells: list[Manager] = []
                tasks += [asyncio.create_task(EchoCell(f, c, w.cells[c]).run(), name=f"echo-{c}") for c, _ in CELLS]
            else:
                cells = [cell_manager(f, c) for c, _ in CELLS]
            mgr: Operator = (
                KopfOperators(f, projects, Path(tmp))
                if args.operator == "kopf"
                else management(f, *([f"--workers={s.workers}"] if s.workers else []))
            )
            try:
                async with aiohttp.ClientSession() as session:
                    for m in (mgr, *cells):
                        await m.wait_ready(session)
                for follower in w.all():
                    await follower.synced.wait()
                total_wds = s.projects * s.wds
                rep.add("WDs federated", total_wds, "WDs")
                rep.add("copies in cells", s.copies_per_project() * s.projects, "copies")
                phases = ["create", "update", "delete"] if not args.create_only else ["create"]
                done: list[Phase] = []
                for name in phases:
                    for task in tasks:
                        if task.done():
                            task.result()  # a watch or echo cell that failed says why
                    phase = await run_phase(f, s, projects, name, mgr, cells, w)
                    report_phase(rep, phase, total_wds, cells_cpu=args.cells == "managers")
                    done.append(phase)
                create = done[0]
                rep.add("converged WDs per second (create)", total_wds / create.statuses_s, "WD/s")
                rep.add(
                    "manager CPU-seconds per converged WD (all phases)",
                    sum(p.cpu_manager for p in done) / total_wds,
                    "s",
                )
            finally:  # a failed or terminated run stops its managers too (the fleet stops the servers)
                if isinstance(mgr, KopfOperators):
                    mgr.stop()
                else:
                    mgr.proc.stop()
                for m in cells:
                    m.proc.stop()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            achieved = create.manager_writes / create.statuses_s
            capacity = await raw_capacity(f, projects[0], max(s.wds, 20), max(3000, 3 * (create.manager_writes // 3)))
            rep.add("achieved manager write rate (create)", achieved, "writes/s")
            rep.add("servers' capacity for the same writes (raw aiohttp, c=64)", capacity, "writes/s")
            rep.add("achieved / capacity", achieved / capacity, "x", ">= 0.5x")
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="default", help="preset sizes (see SHAPES)")
    parser.add_argument("--projects", type=int, help="override the shape's projects")
    parser.add_argument("--wds", type=int, help="override the shape's WorkloadDeployments per project")
    parser.add_argument("--in-flight", type=int, help="override the shape's concurrent creates/updates/deletes")
    parser.add_argument("--workers", type=int, help="override the shape's workers per management controller")
    parser.add_argument(
        "--cells",
        choices=("managers", "echo"),
        default="managers",
        help="what runs the cells: cell-mode managers (Instances, pods) or an echo of each copy's status",
    )
    parser.add_argument(
        "--operator",
        choices=("ours", "kopf"),
        default="ours",
        help="what federates: the management manager, or issue 22's comparison, a naive kopf operator per project"
        " (bench/kopf_operator.py; needs `pip install kopf` and --cells echo)",
    )
    parser.add_argument("--tracing", choices=TRACING_MODES, default="off", help="the managers' tracing (cost figures)")
    parser.add_argument("--create-only", action="store_true", help="skip the update and delete phases")
    parser.add_argument("--smoke", action="store_true", help="2 projects x 20 WDs, to check the benchmark runs")
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    if args.smoke:
        shape = replace(shape, projects=2, wds=20)
    for field_ in ("projects", "wds", "in_flight", "workers"):
        if getattr(args, field_) is not None:
            shape = replace(shape, **{field_: getattr(args, field_)})
    args.shape_ = shape
    if args.operator == "kopf" and args.cells != "echo":
        parser.error("--operator kopf federates copies only: run it with --cells echo")
    if args.operator == "kopf" and importlib.util.find_spec("kopf") is None:
        parser.error("--operator kopf needs kopf: pip install -e .[bench]")
    return args


if __name__ == "__main__":
    # a terminated benchmark still stops its servers and managers (the fleet's exit does)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    import uvloop

    from mcruntime.gcpause import tune_for_serving

    # this process's own CPU is taken from the cores the measured processes share: its
    # collector tuned as theirs (the fan-out at 400 WDs: 0.3 of its 2.2 CPU-s went to ~510
    # collections with Python's thresholds)
    tune_for_serving()
    uvloop.run(main(parse(sys.argv[1:])))  # the client and echo cells on uvloop, like the manager and servers
