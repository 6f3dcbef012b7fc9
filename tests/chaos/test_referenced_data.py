"""Referenced data in the deployed shape (every manager with exactly its shipped roles):
a ConfigMap and a Secret referenced by WDs in both cities; a source edited while a cell
is away and a reference dropped; the federation converges with the companion invariants
(`missing-companion`, `unreferenced-companion`) clean, ReferencedDataReady True on every
project WD, and no manager write over the idle window."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import anyio

from .harness import CHAOS, chaos_fleet, wd

pytestmark = CHAOS

PAUSE = 8.0


def referencing(name: str, city: str, replicas: int) -> dict[str, Any]:
    obj = wd(name, city, replicas)
    container = obj["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["env"] = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    container["envFrom"] = [{"configMapRef": {"name": "app-config"}}]
    return obj


SOURCES = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "namespace": "default"},
     "data": {"MODE": "fast"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "default"},
     "data": {"password": base64.b64encode(b"chaos").decode()}},
]  # fmt: skip


async def test_companions_converge_under_a_pause_and_a_dropped_reference(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:
        await chaos.apply("web", [*SOURCES, referencing("api", "DFW", 3), referencing("front", "LHR", 1)])
        await chaos.converge()
        paused_at = time.monotonic()
        await chaos.pause("dfw-2", PAUSE)
        await anyio.sleep(1)
        await chaos.patch("web", "configmap/app-config", {"data": {"MODE": "slow"}})
        # front no longer needs the ConfigMap: its LHR companion is reclaimed
        front = referencing("front", "LHR", 1)
        del front["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["envFrom"]
        await chaos.apply("web", [front])
        await anyio.sleep(max(0.0, PAUSE - (time.monotonic() - paused_at)))
        took, report = await chaos.converge()
        for cell in ("dfw-1", "dfw-2"):
            items = (await chaos.get_json(cell, "configmaps", "-A", "-l", "compute.datumapis.com/referenced-data"))[
                "items"
            ]
            assert [i["data"] for i in items] == [{"MODE": "slow"}], (cell, items)
        lhr = (await chaos.get_json("lhr-1", "configmaps", "-A", "-l", "compute.datumapis.com/referenced-data"))[
            "items"
        ]
        assert lhr == [], "front's ConfigMap companion reclaimed"
        for name in ("api", "front"):
            conds = {c["type"]: c for c in (await chaos.get_json("web", "wd", name))["status"]["conditions"]}
            assert conds["ReferencedDataReady"]["status"] == "True", conds
        await chaos.finish(
            "referenced data", f"dfw-2 paused {PAUSE:.0f}s while a source is edited and a reference dropped",
            took, report,
        )  # fmt: skip
