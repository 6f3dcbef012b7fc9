"""A user editing or deleting by hand what the managers own: a downstream copy (spec
edited; another deleted), cell Instances (one deleted, one's spec edited), projections in
the project (one deleted, one relabelled). Everything is put back, then the federation
is quiet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .harness import CHAOS, Chaos, chaos_fleet, wd

pytestmark = CHAOS

IMAGE = "/spec/template/spec/runtime/sandbox/containers/0/image"


async def copy_of(chaos: Chaos, cell: str, name: str) -> dict[str, Any]:
    (found,) = [c for c in (await chaos.get_json(cell, "wd", "-A"))["items"] if c["metadata"]["name"] == name]
    return dict(found)


async def test_hand_edits_are_put_back(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:
        await chaos.apply("web", [wd("api", "DFW", 3), wd("front", "LHR", 2)])
        await chaos.converge()
        front, api = await copy_of(chaos, "lhr-1", "front"), await copy_of(chaos, "dfw-2", "api")
        edit = [{"op": "replace", "path": IMAGE, "value": "evil:latest"}, {"op": "replace", "path": "/spec/replicas",
                                                                          "value": 7}]  # fmt: skip
        await chaos.kubectl("lhr-1", "patch", "wd", "front", "-n", front["metadata"]["namespace"], "--type", "json",
                            "-p", json.dumps(edit))  # fmt: skip
        await chaos.kubectl("dfw-2", "delete", "wd", "api", "-n", api["metadata"]["namespace"], "--wait=false")
        first, second = [i["metadata"] for i in (await chaos.get_json("dfw-1", "instances", "-A"))["items"][:2]]
        await chaos.kubectl("dfw-1", "delete", "instance", first["name"], "-n", first["namespace"], "--wait=false")
        await chaos.kubectl("dfw-1", "patch", "instance", second["name"], "-n", second["namespace"], "--type", "json",
                            "-p", json.dumps([{"op": "replace", "value": "evil:latest",
                                               "path": "/spec/runtime/sandbox/containers/0/image"}]))  # fmt: skip
        projections = [p["metadata"]["name"] for p in (await chaos.get_json("web", "instances"))["items"]]
        await chaos.kubectl("web", "delete", "instance", projections[0], "--wait=false")
        await chaos.kubectl("web", "label", "instance", projections[1], "app=forged", "--overwrite")
        took, report = await chaos.converge()
        restored = await copy_of(chaos, "lhr-1", "front")
        assert restored["spec"]["replicas"] == 2
        assert restored["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["image"] != "evil:latest"
        for inst in (await chaos.get_json("dfw-1", "instances", "-A"))["items"]:
            assert inst["spec"]["runtime"]["sandbox"]["containers"][0]["image"] != "evil:latest"
        relabelled = await chaos.get_json("web", "instance", projections[1])
        assert relabelled["metadata"]["labels"]["app"] != "forged"
        # a 30 s idle window here: every manager (projector included) with copies, Instances,
        # Pods and projections in place sends nothing
        await chaos.finish("hand edits", "a copy edited, another deleted; a cell Instance deleted, another edited; "
                           "a projection deleted, another relabelled", took, report, idle_window=30.0)  # fmt: skip
