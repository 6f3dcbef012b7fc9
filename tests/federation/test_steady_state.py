"""Level-triggered and quiet: after convergence the management-mode controllers send no
write request at all over a 30 s idle window (the embedded servers' request counters)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support import Plane, all_idle, eventually, fleet, management_settings, running

from .test_federator import WDs, shares, workload_deployment
from .test_workload_controller import GROUP, VERSION, workload

pytestmark = pytest.mark.slow

IDLE_WINDOW = 30.0


async def test_zero_writes_when_converged(tmp_path: Path) -> None:
    cells = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
    async with (
        fleet(tmp_path, projects=("acme/web", "acme/shop"), cells=cells) as f,
        running(management_settings(tmp_path / "management.kubeconfig")) as mgr,
    ):
        WDs(f, "web").create(workload_deployment("api", "DFW", 3))
        Plane(f.server("shop")).create("workloads", workload("store", ["DFW", "LHR"]), group=GROUP, version=VERSION)
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (1, 2)}, "api federated")
        await eventually(lambda: len(shares(f, "store-edge-lhr")) == 1, "the Workload's WDs federated")

        # no cell observes these copies: each status is written once, AwaitingPropagation,
        # after --awaiting-propagation-after (a delayed requeue all_idle does not see)
        def statuses_written() -> bool:
            wds = [*WDs(f, "web").list(), *WDs(f, "shop").list()]
            return bool(wds) and all((wd.get("status") or {}).get("conditions") for wd in wds)

        await eventually(statuses_written, "every WD's first status")
        assert await all_idle(mgr)
        servers = [f.management, *f.projects.values(), *f.cells.values()]
        before = [s.plane.counters.writes() for s in servers]
        await anyio.sleep(IDLE_WINDOW)
        after = [s.plane.counters.writes() for s in servers]
        detail = {s.name: s.plane.counters.snapshot() for s in servers}
        assert after == before, f"writes at steady state: {detail}"
