"""A converged cell costs no write request: every cell controller (WorkloadDeployments,
Instances, the pod runtime, quota grants) compares with its cache and stays silent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support import all_idle

from .cellbed import NS, QUOTA_GROUP, VERSION, cell, workload_deployment

pytestmark = pytest.mark.slow

IDLE_WINDOW = 30.0  # seconds: longer than any requeue tier a converged Instance could still be on


async def test_zero_writes_when_idle(tmp_path: Path) -> None:
    async with cell(tmp_path, feature_gates="PodRuntime=true,QuotaGate=true") as c:
        budget = {
            "apiVersion": f"{QUOTA_GROUP}/{VERSION}",
            "kind": "ResourceBudget",
            "metadata": {"name": "project", "namespace": NS},
            "spec": {"hard": {"cpu": "8", "memory": "16Gi"}},
        }
        c.plane.create("resourcebudgets", budget, group=QUOTA_GROUP, version=VERSION)
        metrics = [{"resource": {"name": "cpu", "target": {"averageUtilization": 60}}}]
        c.create_wd(workload_deployment("api", 2, ordinal_start=4, maxReplicas=4, metrics=metrics))
        c.create_wd(workload_deployment("web", 1))
        await c.converged("api", {"api-4", "api-5"})
        await c.converged("web", {"web-0"})
        assert c.hpa("api") is not None and len(c.claims()) == 3
        assert await all_idle(c.manager)
        counters = c.server.plane.counters
        before, writes_before = counters.snapshot(), counters.writes()
        await anyio.sleep(IDLE_WINDOW)
        changed = _diff(before, counters.snapshot())
        assert writes_before > 0 and counters.writes() == writes_before, f"requests while idle: {changed}"
        reads = {res: verbs for res, verbs in changed.items() if {"get", "list"} & set(verbs)}
        assert not reads, f"no read requests either (the caches answer): {reads}"


def _diff(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for res, verbs in after.items():
        for verb, n in verbs.items():
            if n != before.get(res, {}).get(verb, 0):
                out.setdefault(res, {})[verb] = n - before.get(res, {}).get(verb, 0)
    return out
