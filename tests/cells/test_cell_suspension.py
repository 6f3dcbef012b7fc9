"""Suspension in a cell (issue 20 point 3): `compute.datumapis.com/suspended: "true"` on a
cell WD stops its Pods and keeps its Instances (each `status.suspended`, Ready and
Available False/Suspended), the WD says `status.suspended: true` and Suspended; quota
stays claimed; nothing is written while it stays suspended; removing the annotation
resumes the Instances in ordinal order, each once the lower ones are ready again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import all_idle, eventually

from .cellbed import NS, QUOTA_GROUP, VERSION, Cell, cell, history, workload_deployment
from .test_cell_idle import _diff
from .test_cell_quota import budget

pytestmark = pytest.mark.slow

SUSPENDED = "compute.datumapis.com/suspended"
NAMES = {"api-0", "api-1", "api-2"}
IDLE_WINDOW = 8.0  # seconds: every claim is granted, so no quota tier requeue is pending


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in (obj.get("status") or {}).get("conditions") or []}


def _suspended(c: Cell) -> dict[str, Any] | None:
    """The WD once everything says suspended: its status, its Instances, no Pod left."""
    wd = c.wd("api")
    instances = c.instances("api")
    if wd is None or set(instances) != NAMES or set(c.pods()) & NAMES:
        return None
    for inst in instances.values():
        conds = _conditions(inst)
        if not (inst["status"].get("suspended") is True and conds.get("Ready") == ("False", "Suspended")):
            return None
        if conds.get("Available") != ("False", "Suspended"):
            return None
    status = wd.get("status") or {}
    if status.get("suspended") is not True or status.get("readyReplicas") != 0:
        return None
    return wd


async def test_suspend_stops_pods_keeps_instances_and_resumes_in_order(tmp_path: Path) -> None:
    async with cell(tmp_path, feature_gates="PodRuntime=true,QuotaGate=true") as c:
        c.plane.create("resourcebudgets", budget("8", "16Gi"), group=QUOTA_GROUP, version=VERSION)
        c.create_wd(workload_deployment("api", 3))
        await c.converged("api")
        instance_uids = {n: o["metadata"]["uid"] for n, o in c.instances("api").items()}
        pod_uids = {n: p["metadata"]["uid"] for n, p in c.pods().items()}
        claims = {n: (o["metadata"]["uid"], _conditions(o)) for n, o in c.claims().items()}
        assert len(claims) == 3 and all(conds["Granted"][0] == "True" for _, conds in claims.values())
        used = _budget(c)["status"]["used"]

        # suspend, as a user (or the federator's copy) would: the annotation on the WD
        await c.kubectl("annotate", "wd", "api", "-n", NS, f"{SUSPENDED}=true")
        wd = await eventually(lambda: _suspended(c), "Pods stopped, Instances kept and suspended, WD suspended")
        assert {n: o["metadata"]["uid"] for n, o in c.instances("api").items()} == instance_uids, "Instances stay"
        assert _conditions(wd) == {"Available": ("False", "Suspended"), "ReplicasReady": ("False", "Suspended")}
        assert (wd["status"]["replicas"], wd["status"]["desiredReplicas"]) == (3, 3)
        table = await c.kubectl("get", "wd", "api", "-n", NS, "--no-headers")
        assert table.split()[2:4] == ["False", "Suspended"], table
        # quota is kept while suspended (as upstream): the same claims, still granted, the budget unchanged
        assert {n: (o["metadata"]["uid"], _conditions(o)) for n, o in c.claims().items()} == claims
        assert _budget(c)["status"]["used"] == used

        # suspended is a steady state: no request at all over an idle window
        assert await all_idle(c.manager)
        counters = c.server.plane.counters
        before, writes_before = counters.snapshot(), counters.writes()
        await anyio.sleep(IDLE_WINDOW)
        assert counters.writes() == writes_before, f"requests while suspended: {_diff(before, counters.snapshot())}"

        # resume: in ordinal order, each once every lower one is ready again
        async with history(c.server, NAMES) as seen:
            await c.kubectl("annotate", "wd", "api", "-n", NS, f"{SUSPENDED}-")
            wd = await c.converged("api")
        assert [name for name, _ in seen.resumed] == ["api-0", "api-1", "api-2"], seen.resumed
        for (name, ready_then), lower in zip(seen.resumed, (set(), {"api-0"}, {"api-0", "api-1"}), strict=True):
            assert lower <= ready_then, f"{name} resumed before {sorted(lower - ready_then)} was ready again"
        assert wd["status"]["suspended"] is False
        assert {n: o["metadata"]["uid"] for n, o in c.instances("api").items()} == instance_uids
        assert all(o["status"].get("suspended") is False for o in c.instances("api").values())
        assert not set(pod_uids.values()) & {p["metadata"]["uid"] for p in c.pods().values()}, "Pods started anew"
        assert {n: o["metadata"]["uid"] for n, o in c.claims().items()} == {n: uid for n, (uid, _) in claims.items()}


def _budget(c: Cell) -> dict[str, Any]:
    (found,) = c.plane.list("resourcebudgets", NS, group=QUOTA_GROUP, version=VERSION)
    return found
