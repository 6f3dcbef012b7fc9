"""Partition-safe deletion: a cell unreachable past the grace during a deletion does not
hold the project WD; the Warning Event names the cell; a fresh WD of the same name made
while the cell is still away is never mistaken for the old one; the orphan is swept when
the cell is back (DESIGN §3 Federator 6)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from .harness import CHAOS, chaos_fleet, wd

pytestmark = CHAOS

GRACE = 4.0
PAUSE = 30.0


async def test_a_cell_unreachable_during_a_deletion(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path, management=(f"--cell-unreachable-grace={GRACE}",)) as chaos:
        await chaos.apply("web", [wd("api", "DFW", 3), wd("front", "LHR", 1)])
        await chaos.converge()
        old = await chaos.get_json("web", "wd", "api")
        paused_at = time.monotonic()
        await chaos.pause("dfw-2", PAUSE)
        await anyio.sleep(1)  # the cell is refusing connections now
        await chaos.kubectl("web", "delete", "wd", "api", "--wait=true", f"--timeout={PAUSE - 10:.0f}s")
        released = time.monotonic() - paused_at
        assert released < PAUSE - 2, "the deletion completed while dfw-2 was still away"
        events = await chaos.get_json("web", "events", "--field-selector", "reason=CellUnreachable")
        assert any("dfw-2" in e["message"] for e in events["items"]), events["items"]
        # a fresh WD of the same name while the orphan waits in dfw-2
        await chaos.apply("web", [wd("api", "DFW", 3)])
        fresh = await chaos.get_json("web", "wd", "api")
        assert fresh["metadata"]["uid"] != old["metadata"]["uid"]
        await anyio.sleep(max(0.0, PAUSE - (time.monotonic() - paused_at)))
        took, report = await chaos.converge()
        # the fresh WD's copies carry its UID in both DFW cells; the old one is gone everywhere
        for cell in ("dfw-1", "dfw-2"):
            copies = (await chaos.get_json(cell, "wd", "-A"))["items"]
            uids = {c["metadata"]["annotations"]["meta.datumapis.com/upstream-uid"] for c in copies
                    if c["metadata"]["name"] == "api"}  # fmt: skip
            assert uids == {fresh["metadata"]["uid"]}, (cell, uids)
        await chaos.finish(
            "cell away during deletion",
            f"dfw-2 paused {PAUSE:.0f}s (grace {GRACE:.0f}s) while its WD is deleted and re-created",
            took, report,
        )  # fmt: skip
