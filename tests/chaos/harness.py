"""The fault matrix's bed (issue 15 item 2): the deployed shape — `federation-manager
apiserver` processes with TLS and enforced RBAC, a management-mode `run` and one cell-mode
`run` per cell, every manager with exactly its shipped roles, clusters registered by
ClusterProfile — and what a scenario needs on top:

- faults through each server's `/_embedded/` admin endpoints (errors, latency, dropped
  watches, expired history, pauses);
- convergence judged over the whole federation by the invariant checker
  (`federation.ops.invariants`, what `federation-manager check` runs) plus settled status;
- the managers' writes told apart from the test's own (kubectl as the admin) by the
  servers' per-user request counters;
- one row of the report per scenario (`record`), printed at the end of the test run.

Every scenario runs: converge → check invariants (zero violations) → zero manager writes
over an idle window."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from federation.ops.invariants import Report, check
from federation.ops.snapshot import Snapshot, load_snapshot, management_config
from kubeplane.testing import kubectl_path
from mcruntime.connection import from_kubeconfig_file
from mcruntime.errors import APIError, TransportError
from mcruntime.transport import Transport
from tests.support.processes import DeployedFleet, Process, deployed_fleet, free_port

ADMIN = "kubernetes-admin"  # the test's own identity (the servers' admin token)
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
CELLS: tuple[tuple[str, str], ...] = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
PROJECTS = ("acme/web", "acme/shop")
GROUP = "compute.datumapis.com"
IDLE_WINDOW = 10.0
QUIET = 2.0  # seconds without a manager write that, with a clean federation, count as converged
REPORT_ENV = "CHAOS_REPORT"  # where rows go (tests/conftest.py sets it for the run)
# every scenario: marked, kubectl-driven, and given room (each brings up a whole federation)
CHAOS = [pytest.mark.chaos, pytest.mark.kubectl, pytest.mark.slow, pytest.mark.timeout(600)]


# ---------------------------------------------------------------------- objects


def wd(
    name: str, city: str, replicas: int, *, image: str = "docker.io/library/nginx:1.27", **extra: Any
) -> dict[str, Any]:
    """A project WorkloadDeployment (the README example's shape)."""
    spec: dict[str, Any] = {
        "workloadRef": {"name": name, "uid": "00000000-0000-0000-0000-0000000000c1"},
        "placementName": "edge",
        "cityCode": city,
        "replicas": replicas,
        "scaleSettings": {"minReplicas": 1},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "runtime": {
                    "resources": {"instanceType": "datumcloud/d1-standard-2"},
                    "sandbox": {"containers": [{"name": "main", "image": image}]},
                },
                "networkInterfaces": [{"network": {"name": "default"}}],
            },
        },
    }
    spec.update(extra)
    return {
        "apiVersion": f"{GROUP}/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def manifests(objs: Sequence[Mapping[str, Any]]) -> str:
    return yaml.safe_dump_all(list(objs), sort_keys=False)


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def desired_replicas(obj: Mapping[str, Any]) -> int:
    spec = obj.get("spec") or {}
    n = spec.get("replicas")
    return int(n if n is not None else (spec.get("scaleSettings") or {}).get("minReplicas") or 0)


def unsettled(snapshot: Snapshot) -> list[str]:
    """What keeps a federation whose WDs can all become Ready from being settled: a project
    WD whose status has not observed its generation or is short of Ready, updated
    Instances; a cell Instance that is not Ready."""
    out: list[str] = []
    for project in snapshot.projects.values():
        for obj in project.workload_deployments:
            m = obj["metadata"]
            if m.get("deletionTimestamp"):
                out.append(f"{project.name}/{m['namespace']}/{m['name']}: still being deleted")
                continue
            status = obj.get("status") or {}
            want = desired_replicas(obj)
            where = f"{project.name}/{m['namespace']}/{m['name']}"
            if status.get("observedGeneration") != m.get("generation"):
                out.append(f"{where}: observedGeneration {status.get('observedGeneration')} of {m.get('generation')}")
            for counter in ("replicas", "readyReplicas", "updatedReplicas"):
                if (status.get(counter) or 0) != want:
                    out.append(f"{where}: {counter} {status.get(counter)} of {want}")
    for cell in snapshot.cells.values():
        for inst in cell.instances:
            ready = _conditions(inst).get("Ready", {})
            if ready.get("status") != "True" or inst["metadata"].get("deletionTimestamp"):
                out.append(f"{cell.name}: Instance {inst['metadata']['name']} not Ready ({ready.get('reason')})")
    return out


# ---------------------------------------------------------------------- the report


@dataclass
class Row:
    scenario: str
    faults: str
    converge_seconds: float  # from the end of the faults to a converged, violation-free federation
    manager_writes: int  # every write the managers sent during the scenario
    idle_writes: int | None  # manager writes over the idle window after convergence (must be 0; None: no idle window)
    violations: int  # invariant violations after convergence (must be 0)


def record(row: Row) -> None:
    """Append the scenario's row to the run's report (printed at the end of the run)."""
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(row)) + "\n")


# ---------------------------------------------------------------------- the bed


class Chaos:
    def __init__(self, fleet: DeployedFleet, transports: dict[str, Transport], cell_args: Sequence[str]) -> None:
        self.fleet = fleet
        self.transports = transports
        self.cell_args = list(cell_args)
        self.written_at_start: dict[str, int] = {}

    # -- processes
    def management_args(self, *extra: str) -> list[str]:
        f = self.fleet
        return ["--enable-management-controllers", f"--kubeconfig={f.manager_kubeconfig('management')}",
                "--health-probe-bind-address=0", "--metrics-bind-address=0", *extra]  # fmt: skip

    async def start_management(self, *extra: str, name: str = "management") -> Process:
        return await self.fleet.run_manager(name, *self.management_args(*extra))

    async def start_cell(self, cell: str) -> Process:
        f = self.fleet
        return await f.run_manager(
            f"cell-{cell}", "--enable-cell-controllers", f"--kubeconfig={f.manager_kubeconfig(cell)}",
            f"--site-name={cell}", f"--city-code={f.cities[cell]}", "--feature-gates=PodRuntime=true",
            "--health-probe-bind-address=0", "--metrics-bind-address=0", *self.cell_args,
        )  # fmt: skip

    @property
    def clusters(self) -> list[str]:
        return list(self.fleet.servers)

    # -- admin endpoints
    async def admin(self, cluster: str, method: str, path: str, body: Any = None, *, within: float = 10.0) -> Any:
        return await self.transports[cluster].request_json(
            method, path, verb="admin", body=body, within=within, fail_fast=False
        )

    async def each(self, clusters: Sequence[str], method: str, path: str, body: Any = None) -> None:
        async with anyio.create_task_group() as tg:
            for cluster in clusters:
                tg.start_soon(self.admin, cluster, method, path, body)

    async def faults(self, clusters: Sequence[str], **settings: Any) -> None:
        await self.each(clusters, "PUT", "/_embedded/faults", settings)

    async def clear_faults(self, clusters: Sequence[str] | None = None) -> None:
        await self.each(self.clusters if clusters is None else clusters, "DELETE", "/_embedded/faults")

    async def drop_watches(self, clusters: Sequence[str] | None = None) -> None:
        await self.each(self.clusters if clusters is None else clusters, "POST", "/_embedded/watches/drop")

    async def expire_history(self, clusters: Sequence[str] | None = None) -> None:
        await self.each(self.clusters if clusters is None else clusters, "POST", "/_embedded/history/expire")

    async def pause(self, cluster: str, seconds: float) -> None:
        """The server refuses connections for `seconds` (state kept), then serves again."""
        await self.admin(cluster, "POST", "/_embedded/pause", {"seconds": seconds})

    # -- counters
    async def writes_by_user(self, cluster: str) -> dict[str, dict[str, int]]:
        """user → resource → writes, on one server."""
        counts: dict[str, dict[str, dict[str, int]]] = await self.admin(cluster, "GET", "/_embedded/counters?by=user")
        return {
            user: {res: sum(n for verb, n in verbs.items() if verb in WRITE_VERBS) for res, verbs in per.items()}
            for user, per in counts.items()
        }

    async def manager_writes(self, *, leases: bool = True) -> dict[str, dict[str, int]]:
        """cluster → resource → writes by anyone but the test (the managers' identities);
        without `leases`, leader election's Lease renewals are left out."""
        out: dict[str, dict[str, int]] = {}

        async def one(cluster: str) -> None:
            for user, per in (await self.writes_by_user(cluster)).items():
                if user == ADMIN:
                    continue
                for res, n in per.items():
                    if n and (leases or not res.startswith("leases.")):
                        out.setdefault(cluster, {})[res] = out.get(cluster, {}).get(res, 0) + n

        async with anyio.create_task_group() as tg:
            for cluster in self.clusters:
                tg.start_soon(one, cluster)
        return out

    async def total_manager_writes(self) -> int:
        return sum(n for per in (await self.manager_writes()).values() for n in per.values())

    async def idle_writes(self, window: float = IDLE_WINDOW, *, leases: bool = False) -> dict[str, dict[str, int]]:
        """The managers' writes over `window` seconds in which the test writes nothing."""
        before = await self.manager_writes(leases=leases)
        await anyio.sleep(window)
        after = await self.manager_writes(leases=leases)
        diff: dict[str, dict[str, int]] = {}
        for cluster, per in after.items():
            for res, n in per.items():
                d = n - before.get(cluster, {}).get(res, 0)
                if d:
                    diff.setdefault(cluster, {})[res] = d
        return diff

    # -- user actions (kubectl as the admin; retried while a fault refuses them)
    async def kubectl(self, cluster: str, *args: str, stdin: str | None = None, within: float = 60.0) -> str:
        """kubectl, retried until it succeeds: the faults hit the test's requests too, and a
        user would simply run the command again. Only idempotent commands go through here."""
        last = ""
        with anyio.move_on_after(within):
            while True:
                result = await self.fleet.kubectl(cluster).run(*args, stdin=stdin, within=within)
                if result.returncode == 0:
                    return result.stdout
                last = result.stderr
                await anyio.sleep(0.5)
        raise AssertionError(f"kubectl {' '.join(args)} against {cluster} kept failing for {within}s: {last}")

    async def apply(self, cluster: str, objs: Sequence[Mapping[str, Any]]) -> None:
        await self.kubectl(cluster, "apply", "-f", "-", stdin=manifests(objs))

    async def patch(self, cluster: str, kind_name: str, patch: Mapping[str, Any], *args: str) -> None:
        await self.kubectl(cluster, "patch", kind_name, "--type", "merge", "-p", json.dumps(patch), *args)

    async def roll(self, cluster: str, *names: str, at: str) -> None:
        """A `restartedAt` roll of the named WDs (one kubectl call)."""
        patch = {"spec": {"template": {"metadata": {"annotations": {f"{GROUP}/restartedAt": at}}}}}
        await self.patch(cluster, "wd", patch, *names)

    async def get_json(self, cluster: str, *args: str) -> Any:
        return json.loads(await self.kubectl(cluster, "get", *args, "-o", "json"))

    # -- convergence
    async def snapshot(self) -> Snapshot:
        config = await management_config(kubeconfig=self.fleet.kubeconfig("management"))
        return await load_snapshot(config, read_timeout=10.0)

    async def problems(
        self, settled: Callable[[Snapshot], list[str]] = unsettled, moving: Callable[[str], bool] | None = None
    ) -> tuple[list[str], Report]:
        snapshot = await self.snapshot()
        report = check(snapshot)
        if moving is not None:
            # the snapshot is not atomic across clusters: what is still legitimately changing
            # (a WD growing one Instance at a time) shows transient differences between them
            report = Report(tuple(v for v in report.violations if not moving(str(v))), report.unchecked)
        found = [str(v) for v in report.violations] + [f"unchecked: {u}" for u in report.unchecked]
        return found + settled(snapshot), report

    async def converge(
        self,
        within: float = 120.0,
        settled: Callable[[Snapshot], list[str]] = unsettled,
        *,
        moving: Callable[[str], bool] | None = None,
        quiet: float = QUIET,
    ) -> tuple[float, Report]:
        """Wait until the invariant checker finds nothing (about what is not `moving`),
        `settled` holds, and the managers then stay quiet (no write, Leases aside) for
        `quiet` seconds with the federation still clean — a clean snapshot alone can catch
        a moment in the middle of work. Returns the time until that clean snapshot and its
        report; fails listing every remaining problem. `quiet=0` for a federation that
        keeps legitimately moving."""
        start = time.monotonic()
        problems: list[str] = ["not read yet"]
        with anyio.move_on_after(within):
            while True:
                began = time.monotonic()
                problems, report = await self._read_problems(settled, moving)
                if not problems:
                    clean_at = time.monotonic() - start
                    if quiet <= 0:
                        return clean_at, report
                    before = await self.manager_writes(leases=False)
                    await anyio.sleep(quiet)
                    if await self.manager_writes(leases=False) == before:
                        problems, report = await self._read_problems(settled, moving)
                        if not problems:
                            return clean_at, report
                    else:
                        problems = [f"clean, but the managers still wrote within {quiet:.0f}s"]
                # a whole-federation read is not free: the test must not starve the managers it measures
                await anyio.sleep(max(0.5, 2 * (time.monotonic() - began)))
        raise AssertionError(f"not converged after {within}s:\n  " + "\n  ".join(problems[:40] + self.exited()))

    def exited(self) -> list[str]:
        """Every manager process that is no longer running, with the end of its output: a
        manager that exited (or was killed by the scenario) explains what it left undone."""
        out = []
        for name, process in self.fleet.managers.items():
            if process.proc.returncode is not None:
                tail = " | ".join(process.output().strip().splitlines()[-3:])
                out.append(f"manager {name} exited with {process.proc.returncode}: {tail}")
        return out

    async def _read_problems(
        self, settled: Callable[[Snapshot], list[str]], moving: Callable[[str], bool] | None
    ) -> tuple[list[str], Report]:
        try:
            return await self.problems(settled, moving)
        except (APIError, TransportError, OSError) as exc:  # a server still paused or refusing
            return [f"snapshot failed: {exc}"], Report((), ())

    async def finish(
        self, scenario: str, faults: str, converge_seconds: float, report: Report, *, idle_window: float = IDLE_WINDOW
    ) -> Row:
        """The common tail: zero violations, zero manager writes over an idle window, one
        report row. `converge_seconds` is measured by the scenario from the end of its faults."""
        assert not report.violations, "\n".join(map(str, report.violations))
        idle = await self.idle_writes(idle_window)
        writes = await self.total_manager_writes()
        row = Row(scenario, faults, round(converge_seconds, 1), writes, sum(sum(p.values()) for p in idle.values()),
                  len(report.violations))  # fmt: skip
        record(row)
        assert not idle, f"{scenario}: manager writes over a {idle_window:.0f}s idle window: {idle}"
        return row


@asynccontextmanager
async def chaos_fleet(
    workdir: Path,
    *,
    cells: Sequence[tuple[str, str]] = CELLS,
    projects: Sequence[str] = PROJECTS,
    management: Sequence[str] | None = (),
    cell_args: Sequence[str] = (),
) -> AsyncIterator[Chaos]:
    """The deployed shape under RBAC with every manager running (`management=None`: the
    scenario starts management itself)."""
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; the fault matrix drives it as a user would")
    async with deployed_fleet(workdir, projects=projects, cells=cells, rbac=True) as f, AsyncExitStack() as stack:
        transports: dict[str, Transport] = {}
        for name in f.servers:
            transport = Transport(await from_kubeconfig_file(f.kubeconfig(name)), cluster=name)
            await stack.enter_async_context(transport)
            transports[name] = transport
        chaos = Chaos(f, transports, cell_args)
        for cell, _city in cells:
            await chaos.start_cell(cell)
        if management is not None:
            await chaos.start_management(*management)
        yield chaos
        await chaos.clear_faults()


def free_address() -> str:
    return f"127.0.0.1:{free_port()}"


async def concurrently(*steps: Callable[[], Awaitable[Any]]) -> None:
    async with anyio.create_task_group() as tg:
        for step in steps:
            tg.start_soon(step)
