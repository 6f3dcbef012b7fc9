"""Placement by location (issue 20 point 1): a WorkloadDeployment naming a Location
(`spec.locationRef`) places on the cells of the city the Location's topology names, read
from the management cluster; a Location change re-plans it; an unknown Location is
reported (Available=False/NoMatchingLocation naming it, with an Event), never a crash
or a retry loop. Management, project `acme/web`, cells dfw-1, dfw-2 (DFW), lhr-1 (LHR)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from federation.api.constants import Label
from tests.federation.test_federator import WDs, federation, shares, workload_deployment
from tests.support import Fleet, Plane, eventually

NETWORKING, NET_VERSION = "networking.datumapis.com", "v1alpha"


def location(name: str, city: str | None) -> dict[str, Any]:
    topology = {"topology.datum.net/region": "somewhere"}
    if city is not None:
        topology[str(Label.TOPOLOGY_CITY_CODE)] = city
    return {
        "apiVersion": f"{NETWORKING}/{NET_VERSION}",
        "kind": "Location",
        "metadata": {"name": name},
        "spec": {"locationClassName": "datum-managed", "topology": topology, "provider": {"gcp": {
            "projectId": "p", "region": "r", "zone": "z"}}},
    }  # fmt: skip


def locations(f: Fleet) -> Plane:
    return Plane(f.management)


def by_location(name: str, where: str, replicas: int = 3) -> dict[str, Any]:
    wd = workload_deployment(name, "unused", replicas)
    del wd["spec"]["cityCode"]
    wd["spec"]["locationRef"] = {"name": where}
    return wd


def available(f: Fleet, name: str) -> dict[str, Any] | None:
    wd = WDs(f, "web").get("default", name)
    for cond in ((wd or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "Available":
            return dict(cond)
    return None


async def test_a_location_places_on_its_citys_cells_and_follows_the_location(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        locations(f).create("locations", location("dfw", "dfw"), group=NETWORKING, version=NET_VERSION)
        web = WDs(f, "web")
        web.create(by_location("api", "dfw"))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (1, 2)}, "2 + 1 in the DFW cells")
        project_ns = Plane(f.server("web")).get("namespaces", "", "default")
        for cell in ("dfw-1", "dfw-2"):
            copy_ = WDs(f, cell).get(f"ns-{project_ns['metadata']['uid']}", "api")
            assert copy_ is not None
            assert copy_["metadata"]["labels"] == {
                str(Label.TOPOLOGY_CITY_CODE): "dfw",  # the Location's city, as it writes it
                str(Label.TOPOLOGY_LOCATION): "dfw",
                str(Label.UPSTREAM_NAMESPACE): "default",
            }
            assert copy_["spec"]["locationRef"] == {"name": "dfw"} and "cityCode" not in copy_["spec"]
        # the Location now names LHR: the WD re-plans onto lhr-1 (and leaves the DFW cells)
        current = locations(f).get("locations", "", "dfw", group=NETWORKING, version=NET_VERSION)
        moved = copy.deepcopy(current)
        moved["spec"]["topology"][str(Label.TOPOLOGY_CITY_CODE)] = "LHR"
        locations(f).update("locations", moved, group=NETWORKING, version=NET_VERSION)
        await eventually(lambda: shares(f, "api") == {"lhr-1": (3, 0)}, "all 3 in lhr-1 after the Location moved")


async def test_an_unknown_location_says_no_matching_location_until_it_exists(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        web = WDs(f, "web")
        web.create(by_location("api", "mars", replicas=2))

        def says_mars() -> bool:
            cond = available(f, "api")
            return (
                cond is not None
                and cond["status"] == "False"
                and cond["reason"] == "NoMatchingLocation"
                and "Location 'mars' does not exist" in cond["message"]
            )

        await eventually(says_mars, "Available=False/NoMatchingLocation naming mars")

        def warned() -> bool:
            events = Plane(f.server("web")).list("events", "default")
            return any(e["reason"] == "NoMatchingLocation" and "'mars'" in e["message"] for e in events)

        await eventually(warned, "a NoMatchingLocation Event naming mars")
        assert shares(f, "api") == {}
        # a Location without a city: still nowhere, and the message says why
        locations(f).create("locations", location("mars", None), group=NETWORKING, version=NET_VERSION)

        def says_no_city() -> bool:
            cond = available(f, "api")
            return cond is not None and "Location 'mars' has no topology.datum.net/city-code" in cond["message"]

        await eventually(says_no_city, "NoMatchingLocation: mars has no city")
        # the Location gets a city: the WD places there, without any edit of the WD
        current = locations(f).get("locations", "", "mars", group=NETWORKING, version=NET_VERSION)
        current["spec"]["topology"][str(Label.TOPOLOGY_CITY_CODE)] = "LHR"
        locations(f).update("locations", current, group=NETWORKING, version=NET_VERSION)
        await eventually(lambda: shares(f, "api") == {"lhr-1": (2, 0)}, "placed in lhr-1 once mars is in LHR")


async def test_lower_and_upper_case_city_codes_both_place(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        web = WDs(f, "web")
        web.create(workload_deployment("lower", "dfw", 2))
        web.create(workload_deployment("upper", "DFW", 2))
        await eventually(lambda: shares(f, "lower") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "lower-case dfw placed")
        await eventually(lambda: shares(f, "upper") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "upper-case DFW placed")
