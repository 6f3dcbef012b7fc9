"""A restart changes nothing that did not change (issue 18 item 6): the management manager
is restarted again and again over a converged federation, cell managers running, and once
it has resynced the managers have written nothing at all (the servers' request counters
per user). A restart once deleted and recreated Instance projections: a cell's view of
downstream namespaces had listed but its Instances had not, and the Instance projector
took "not cached yet" for "gone" (`fleetview.cell_synced` now waits for every view)."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.support import eventually

from .harness import CELLS, CHAOS, PROJECTS, Chaos, chaos_fleet, wd

pytestmark = CHAOS

RESTARTS = 5


async def resynced(chaos: Chaos) -> bool:
    """The management manager says every cell and project is ready again."""
    out = chaos.fleet.managers["management"].output()
    names = [cell for cell, _city in CELLS] + [p.split("/")[-1] for p in PROJECTS]
    return all(f"cluster {name} is ready" in out for name in names)


async def test_restarting_the_manager_over_a_converged_federation_writes_nothing(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:
        await chaos.apply("web", [wd(f"api-{i}", "DFW", 3) for i in range(6)] + [wd("front", "LHR", 2)])
        await chaos.apply("shop", [wd(f"store-{i}", "DFW", 2) for i in range(4)])
        await chaos.converge(within=240)
        for restart in range(RESTARTS):
            before = await chaos.manager_writes(leases=False)
            assert await chaos.fleet.managers["management"].stop(signal.SIGTERM) == 0
            await chaos.start_management()
            await eventually(lambda: resynced(chaos), f"restart {restart + 1}: the manager resynced", within=120)
            await chaos.converge()
            after = await chaos.manager_writes(leases=False)
            changed = {
                cluster: {res: n - before.get(cluster, {}).get(res, 0) for res, n in per.items()
                          if n != before.get(cluster, {}).get(res, 0)}
                for cluster, per in after.items()
            }  # fmt: skip
            changed = {cluster: per for cluster, per in changed.items() if per}
            assert not changed, f"restart {restart + 1} of {RESTARTS}: writes after the resync: {changed}"
