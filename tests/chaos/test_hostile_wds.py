"""1,000 schema-valid but hostile WorkloadDeployments in one project: unknown cities, zero
and 1,000 replicas, unpullable and crashing images, maximum-length names, hundreds of
labels. Each shows a clear condition in the project, every manager stays up, the
federation's invariants hold, and the managers' request rate stays within a per-object
budget (no hot loop), measured by the servers' counters."""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from federation.ops.snapshot import Snapshot

from .harness import CHAOS, Chaos, Row, chaos_fleet, record, wd

pytestmark = CHAOS

MAX_NAME = 253  # a custom resource's name is a DNS subdomain
# Requests of every verb per WD per minute, averaged over the 1,000. What the managers
# legitimately do meanwhile sets the floor, and it moves with the machine's speed (3 to 7
# in CI-like runs): the 1,000-replica WD gains a few Instances a second (each ~25 requests
# across cell and project as it goes Pending → Running → Ready), and 100 crash loops
# restart with a growing back-off. A broad hot loop — every WD, or even a sixth of them,
# reconciling once a second — adds 10 or more; reads beyond the odd uncached GET would mean
# a cache bypassed. (A slow loop on one object is below this average: the idle windows of
# the other scenarios are what catch those.)
BUDGET_PER_OBJECT_PER_MINUTE = 15.0
WINDOW = 30.0


def _cities() -> list[str]:
    letters = string.ascii_uppercase
    return [f"Q{a}{b}" for a in letters for b in letters][:400]


def hostile() -> tuple[list[dict[str, Any]], dict[str, Callable[[Mapping[str, Any]], str]]]:
    """The 1,000 WDs, and per name prefix what its project status must say (a check that
    returns "" when it does, else what is wrong)."""
    objs: list[dict[str, Any]] = []
    for i, city in enumerate(_cities()):
        objs.append(wd(f"nowhere-{i:03d}", city, 1))
    for i in range(200):
        objs.append(wd(f"zero-{i:03d}", "DFW", 0))
    objs.append(wd("big", "LHR", 1000))
    for i in range(100):
        objs.append(wd(f"pull-{i:03d}", "DFW", 1, image="registry.example/unpullable:1"))
    for i in range(100):
        objs.append(wd(f"crash-{i:03d}", "LHR", 1, image="registry.example/crasher:1"))
    for i in range(99):
        prefix = f"long-{i:03d}-"
        objs.append(wd(prefix + "x" * (MAX_NAME - len(prefix)), "DFW", 1))
    for i in range(100):
        obj = wd(f"labels-{i:03d}", "DFW", 1)
        obj["metadata"]["labels"] = {f"tenant.example/k{j:03d}": f"v{j}" for j in range(300)}
        obj["spec"]["template"]["metadata"]["labels"].update({f"k{j:03d}": f"v{j}" for j in range(100)})
        objs.append(obj)
    assert len(objs) == 1000

    def cond(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
        return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})

    def says(kind: str, state: str, reason: str | None, *words: str) -> Callable[[Mapping[str, Any]], str]:
        def check(status: Mapping[str, Any]) -> str:
            c = cond(status, kind)
            ok = c.get("status") == state and (reason is None or c.get("reason") == reason)
            ok = ok and all(w in str(c.get("message", "")) for w in words)
            return "" if ok else f"{kind}={c.get('status')}/{c.get('reason')}: {c.get('message')!r}"

        return check

    expectations: dict[str, Callable[[Mapping[str, Any]], str]] = {
        "nowhere-": says("Available", "False", "NoMatchingLocation", "Q"),
        "zero-": says("Available", "True", "ScaledToZero", "replicas is 0"),
        "big": says("ReplicasReady", "False", None, "of 1000"),
        "pull-": says("Available", "False", "ImageUnavailable", "cell dfw-"),
        "crash-": says("Available", "False", "InstanceCrashing", "cell lhr-1"),
        "long-": says("Available", "False", "ConfigurationError", "label value"),
        "labels-": says("ReplicasReady", "True", "ReplicasAvailable"),
    }
    return objs, expectations


def clear_conditions(expectations: Mapping[str, Callable[[Mapping[str, Any]], str]]) -> Callable[[Snapshot], list[str]]:
    def unclear(snapshot: Snapshot) -> list[str]:
        out: list[str] = []
        for project in snapshot.projects.values():
            for obj in project.workload_deployments:
                name = obj["metadata"]["name"]
                status = obj.get("status") or {}
                if status.get("observedGeneration") != obj["metadata"].get("generation"):
                    out.append(f"{name[:40]}: status has not observed generation {obj['metadata'].get('generation')}")
                    continue
                prefix = next(p for p in expectations if name.startswith(p))
                problem = expectations[prefix](status)
                if problem:
                    out.append(f"{name[:40]}: {problem}")
        return out

    return unclear


async def manager_requests(chaos: Chaos) -> Counter[str]:
    """Every request the managers sent, by `cluster resource verb`, over all servers."""
    out: Counter[str] = Counter()
    for cluster in chaos.clusters:
        counts: dict[str, dict[str, dict[str, int]]] = await chaos.admin(cluster, "GET", "/_embedded/counters?by=user")
        for user, per in counts.items():
            if user != "kubernetes-admin":
                for resource, verbs in per.items():
                    for verb, n in verbs.items():
                        out[f"{cluster} {resource} {verb}"] += n
    return out


async def test_a_thousand_hostile_workload_deployments(tmp_path: Path) -> None:
    objs, expectations = hostile()
    async with chaos_fleet(tmp_path) as chaos:
        for i in range(0, len(objs), 250):
            await chaos.apply("web", objs[i : i + 250])
        # the 1,000-replica WD grows one Instance at a time for minutes (OrderedReady): its
        # condition is checked, the invariants over everything else
        took, report = await chaos.converge(
            within=420,
            settled=clear_conditions(expectations),
            moving=lambda v: "WorkloadDeployment default/big" in v,
            quiet=0,  # never quiet while it grows: the request budget below stands in for the idle window
        )
        assert not report.violations, "\n".join(map(str, report.violations))
        # no hot loop: the managers' requests over a window, per object, within the budget
        before = await manager_requests(chaos)
        await anyio.sleep(WINDOW)
        during = await manager_requests(chaos)
        during.subtract(before)
        per_minute = sum(during.values()) * 60.0 / WINDOW
        per_object = per_minute / len(objs)
        top = ", ".join(f"{what}: {n}" for what, n in during.most_common(8))
        for name, process in chaos.fleet.managers.items():
            assert process.proc.returncode is None, f"{name} exited:\n{process.output()[-3000:]}"
        # the user sees why in the project: a crashing Instance's projection says so
        crashing = await chaos.get_json("web", "instance", "crash-000-0")
        ready = next(c for c in crashing["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "InstanceCrashing"), ready
        assert "restarting failed container" in ready["message"], ready
        # (the 1,000-replica WD is still growing, one Instance at a time: the federation is
        # checked once it converged, not again while it moves)
        writes = await chaos.total_manager_writes()
        record(Row("1,000 hostile WDs", f"unknown cities, 0 and 1,000 replicas, bad images, {MAX_NAME}-char names, "
                   f"300 labels; {per_object:.2f} requests/object/min (budget {BUDGET_PER_OBJECT_PER_MINUTE:.0f})",
                   round(took, 1), writes, None, len(report.violations)))  # fmt: skip
        reads = sum(n for what, n in during.items() if what.endswith((" get", " list")))
        print(f"requests over {WINDOW:.0f}s, most frequent: {top}; reads {reads}")
        assert reads <= 0.02 * sum(during.values()), f"{reads} reads over the window: the managers read from caches"
        assert per_object <= BUDGET_PER_OBJECT_PER_MINUTE, (
            f"{per_minute:.0f} requests/min for {len(objs)} objects: {top}"
        )
