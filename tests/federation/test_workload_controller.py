"""The management-mode workload controller: a Workload's placements and city codes become
WorkloadDeployments, following the registered cells."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from federation.api.constants import Finalizer, Label
from tests.support import Plane, eventually, fleet, management_settings, running

from .test_federator import TEMPLATE, WDs
from .test_location_placement import NET_VERSION, NETWORKING, location

GROUP, VERSION = "compute.datumapis.com", "v1alpha"


def workload(name: str, cities: list[str], min_replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": copy.deepcopy(TEMPLATE),
            "placements": [{"name": "edge", "cityCodes": cities, "scaleSettings": {"minReplicas": min_replicas}}],
        },
    }


def workloads(plane: Plane) -> list[dict[str, Any]]:
    return plane.list("workloads", "default", group=GROUP, version=VERSION)


async def test_wds_follow_placements_and_registered_cells(tmp_path: Path) -> None:
    cells = (("dfw-1", "DFW"), ("lhr-1", "LHR"))
    async with (
        fleet(tmp_path, projects=("acme/web",), cells=cells) as f,
        running(management_settings(tmp_path / "management.kubeconfig")) as _mgr,
    ):
        project = Plane(f.server("web"))
        created = project.create("workloads", workload("api", ["DFW", "LHR", "NRT"], 2), group=GROUP, version=VERSION)
        wds = WDs(f, "web")

        def names() -> set[str]:
            return {o["metadata"]["name"] for o in wds.list("default") if not o["metadata"].get("deletionTimestamp")}

        await eventually(lambda: names() == {"api-edge-dfw", "api-edge-lhr"}, "one WD per served city")
        dfw = wds.get("default", "api-edge-dfw")
        assert dfw is not None
        assert dfw["spec"]["cityCode"] == "DFW" and dfw["spec"]["placementName"] == "edge"
        assert dfw["spec"]["workloadRef"] == {"name": "api", "uid": created["metadata"]["uid"]}
        assert dfw["spec"]["scaleSettings"] == {"minReplicas": 2, "instanceManagementPolicy": "OrderedReady"}
        assert "replicas" not in dfw["spec"], "spec.replicas belongs to the scale subresource"
        assert dfw["metadata"]["labels"][str(Label.WORKLOAD_UID)] == created["metadata"]["uid"]
        (ref,) = dfw["metadata"]["ownerReferences"]
        assert ref == {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workload", "name": "api",
                       "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip

        def status() -> dict[str, Any]:
            (wl,) = workloads(project)
            return wl.get("status") or {}

        await eventually(lambda: status().get("deployments") == 2, "status counts the deployments")
        # NRT has no cell: the placement says so, as a WD of a city without cells does
        # (issue 18 item 5), with a Warning Event
        placement = status()["placements"][0]
        (available,) = placement["conditions"]
        assert (available["type"], available["status"], available["reason"]) == (
            "Available",
            "False",
            "NoMatchingLocation",
        )
        assert available["message"].startswith("no registered cell serves NRT; ")

        def warned() -> list[dict[str, Any]]:
            return [e for e in project.list("events", "default") if e.get("reason") == "NoMatchingLocation"
                    and e["involvedObject"]["name"] == "api"]  # fmt: skip

        await eventually(warned, "a NoMatchingLocation Event on the Workload")
        assert "placement edge: no registered cell serves NRT" in warned()[0]["message"]
        # a cell registered later for NRT gets its WD without a restart
        await f.add_cell("nrt-1", "NRT")
        await eventually(lambda: "api-edge-nrt" in names(), "the NRT deployment")
        await eventually(lambda: status()["placements"][0]["conditions"][0]["reason"] != "NoMatchingLocation", "served")
        # a city dropped from the placement loses its WD
        (wl,) = workloads(project)
        wl["spec"]["placements"][0]["cityCodes"] = ["DFW"]
        project.update("workloads", wl, group=GROUP, version=VERSION)
        await eventually(lambda: names() == {"api-edge-dfw"}, "only DFW left")


async def test_deleting_the_workload_waits_for_its_deployments(tmp_path: Path) -> None:
    async with (
        fleet(tmp_path, projects=("acme/web",), cells=(("dfw-1", "DFW"),)) as f,
        running(management_settings(tmp_path / "management.kubeconfig")) as _mgr,
    ):
        project = Plane(f.server("web"))
        project.create("workloads", workload("api", ["DFW"]), group=GROUP, version=VERSION)
        wds = WDs(f, "web")
        await eventually(lambda: wds.get("default", "api-edge-dfw") is not None, "the deployment")
        await eventually(lambda: WDs(f, "dfw-1").list() != [], "its copy in the cell")
        (wl,) = workloads(project)
        assert Finalizer.WORKLOAD_CONTROLLER in wl["metadata"]["finalizers"]
        project.delete("workloads", "default", "api", group=GROUP, version=VERSION)
        await eventually(lambda: workloads(project) == [], "the Workload gone once its deployments are")
        assert wds.list("default") == []
        assert WDs(f, "dfw-1").list() == [], "and their copies in the cell"


async def test_placements_by_location_make_location_deployments(tmp_path: Path) -> None:
    """`locations` and `locationSelector` give WDs with `spec.locationRef`, named by the
    lowercase Location; a Location whose city has no cell, or none at all, gets no WD and
    is named in the placement's NoMatchingLocation; a new Location a selector matches gets
    its WD without any edit of the Workload."""
    cells = (("dfw-1", "DFW"), ("lhr-1", "LHR"))
    async with (
        fleet(tmp_path, projects=("acme/web",), cells=cells) as f,
        running(management_settings(tmp_path / "management.kubeconfig")) as _mgr,
    ):
        mgmt = Plane(f.management)
        for name, city in (("DFW-A", "dfw"), ("lhr", "LHR"), ("nrt", "NRT")):
            mgmt.create("locations", location(name.lower(), city), group=NETWORKING, version=NET_VERSION)
        wl = workload("api", ["DFW"])
        wl["spec"]["placements"] = [
            {"name": "named", "locations": [{"name": "dfw-a"}, {"name": "nrt"}], "scaleSettings": {"minReplicas": 1}},
            {"name": "picked", "scaleSettings": {"minReplicas": 1},
             "locationSelector": {"matchLabels": {str(Label.TOPOLOGY_CITY_CODE): "lhr"}}},
        ]  # fmt: skip
        project = Plane(f.server("web"))
        project.create("workloads", wl, group=GROUP, version=VERSION)
        wds = WDs(f, "web")

        def names() -> set[str]:
            return {o["metadata"]["name"] for o in wds.list("default") if not o["metadata"].get("deletionTimestamp")}

        await eventually(lambda: names() == {"api-named-dfw-a", "api-picked-lhr"}, "one WD per served Location")
        named = wds.get("default", "api-named-dfw-a")
        assert named is not None
        assert named["spec"]["locationRef"] == {"name": "dfw-a"} and "cityCode" not in named["spec"]
        assert named["metadata"]["labels"][str(Label.TOPOLOGY_LOCATION)] == "dfw-a"
        # and the federator places it through the Location, on the DFW cell
        await eventually(lambda: WDs(f, "dfw-1").list() != [], "the location WD reached dfw-1")

        def unplaced() -> str:
            (found,) = [w for w in workloads(project) if w["metadata"]["name"] == "api"]
            for p in (found.get("status") or {}).get("placements") or []:
                if p["name"] == "named":
                    return str(p["conditions"][0]["message"])
            return ""

        await eventually(lambda: "Location nrt (NRT)" in unplaced(), "nrt named: its city has no cell")
        # a second LHR Location: the selector matches it, its WD appears
        mgmt.create("locations", location("lhr-b", "lhr"), group=NETWORKING, version=NET_VERSION)
        await eventually(lambda: names() == {"api-named-dfw-a", "api-picked-lhr", "api-picked-lhr-b"}, "lhr-b selected")
