"""federation/fleet/locations.py: WorkloadDeployment targets and Workload placement targets
resolved through Locations (pure; table-driven and property tests)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from federation.fleet.locations import (
    CITY_CODE_KEY,
    ByCity,
    ByLocation,
    CityTarget,
    InvalidPlacementSpec,
    KnownLocation,
    LocationWithoutCity,
    PlacementTargets,
    UnknownLocation,
    known_location,
    placement_targets,
    resolve_city,
)
from federation.fleet.placement import city_key, same_city


def location(name: str, city: str | None, labels: dict[str, str] | None = None, **topology: str) -> dict[str, Any]:
    """A Location as the management cluster returns it."""
    topo = {CITY_CODE_KEY: city} if city is not None else {}
    topo.update({f"topology.datum.net/{k}": v for k, v in topology.items()})
    return {
        "apiVersion": "networking.datumapis.com/v1alpha",
        "kind": "Location",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "locationClassName": "datum-managed",
            "topology": topo,
            "provider": {"gcp": {"projectId": "p", "region": "us-south1", "zone": "us-south1-a"}},
        },
    }


KNOWN = [
    known_location(location("dfw", "DFW", region="us-south1")),
    known_location(location("gcp-us-south1-a", "dfw", region="us-south1")),
    known_location(location("lhr", "LHR", {"tier": "gold"}, region="europe-west2")),
    known_location(location("nowhere", None)),
]


def test_known_location_reads_city_from_topology_and_lays_topology_over_labels() -> None:
    loc = known_location(location("x", " ORD ", {"topology.datum.net/city-code": "stale", "team": "a"}))
    assert loc == KnownLocation("x", "ORD", {CITY_CODE_KEY: " ORD ", "team": "a"})
    assert known_location({"metadata": {"name": "bare"}}) == KnownLocation("bare", "", {})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"locationRef": {"name": "dfw"}}, CityTarget("DFW", "dfw")),
        (
            {"locationRef": {"name": "gcp-us-south1-a"}},
            CityTarget("dfw", "gcp-us-south1-a"),
        ),  # as the Location wrote it
        ({"cityCode": "DFW"}, CityTarget("DFW")),
        ({"cityCode": "dfw"}, CityTarget("dfw")),  # stored and returned as written
        ({"cityCode": "NRT"}, CityTarget("NRT")),  # no Location needed in the older era
        ({"locationRef": {"name": "ord"}}, UnknownLocation("spec.locationRef.name", "ord")),
        ({"locationRef": {"name": "nowhere"}}, LocationWithoutCity("spec.locationRef.name", "nowhere")),
        ({"locationRef": {}}, InvalidPlacementSpec("spec.locationRef.name", "required")),
        ({"cityCode": "  "}, InvalidPlacementSpec("spec.cityCode", "'  ' is not a city code")),
        (
            {"cityCode": "DFW", "locationRef": {"name": "dfw"}},
            InvalidPlacementSpec("spec", "exactly one of spec.locationRef or spec.cityCode must be set"),
        ),
        ({}, InvalidPlacementSpec("spec", "exactly one of spec.locationRef or spec.cityCode must be set")),
        (None, InvalidPlacementSpec("spec", "exactly one of spec.locationRef or spec.cityCode must be set")),
    ],
    ids=[
        "ref",
        "ref-lowercase-city",
        "city",
        "city-lowercase",
        "city-without-location",
        "unknown-location",
        "location-without-city",
        "ref-without-name",
        "blank-city",
        "both",
        "neither",
        "no-spec",
    ],
)
def test_resolve_city(spec: dict[str, Any] | None, expected: object) -> None:
    assert resolve_city(spec, KNOWN) == expected


def test_error_messages_name_the_field_and_the_location() -> None:
    unknown = resolve_city({"locationRef": {"name": "ord"}}, KNOWN)
    assert isinstance(unknown, UnknownLocation)
    assert unknown.message == "spec.locationRef.name: Location 'ord' does not exist in the management cluster"
    no_city = resolve_city({"locationRef": {"name": "nowhere"}}, KNOWN)
    assert isinstance(no_city, LocationWithoutCity)
    assert "spec.locationRef.name" in no_city.message and CITY_CODE_KEY in no_city.message


ONE = "exactly one of locations, locationSelector or cityCodes must be set"


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        (
            {"locations": [{"name": "dfw"}, {"name": "lhr"}, {"name": "dfw"}]},
            PlacementTargets((ByLocation("dfw"), ByLocation("lhr"))),
        ),
        (
            {"locations": [{"name": "dfw"}, {"name": "ord"}]},
            PlacementTargets((ByLocation("dfw"),), (UnknownLocation("p.locations[1].name", "ord"),)),
        ),
        (
            {"locationSelector": {"matchLabels": {CITY_CODE_KEY: "DFW"}}},
            PlacementTargets((ByLocation("dfw"), ByLocation("gcp-us-south1-a"))),  # city codes match case-insensitively
        ),
        (
            {
                "locationSelector": {
                    "matchExpressions": [{"key": CITY_CODE_KEY, "operator": "In", "values": ["lhr", "ORD"]}]
                }
            },
            PlacementTargets((ByLocation("lhr"),)),
        ),
        ({"locationSelector": {"matchLabels": {"tier": "gold"}}}, PlacementTargets((ByLocation("lhr"),))),
        (
            {"locationSelector": {"matchLabels": {"topology.datum.net/region": "us-south1"}}},
            PlacementTargets((ByLocation("dfw"), ByLocation("gcp-us-south1-a"))),
        ),
        (
            {"locationSelector": {"matchExpressions": [{"key": CITY_CODE_KEY, "operator": "DoesNotExist"}]}},
            PlacementTargets((ByLocation("nowhere"),)),
        ),
        ({"locationSelector": {"matchLabels": {CITY_CODE_KEY: "SYD"}}}, PlacementTargets()),
        (
            {"locationSelector": {}},
            PlacementTargets(
                errors=(
                    InvalidPlacementSpec("p.locationSelector", "must not be empty (it does not mean every location)"),
                )
            ),
        ),
        (
            {"locationSelector": {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}},
            PlacementTargets(
                errors=(InvalidPlacementSpec("p.locationSelector", "label selector: unknown operator 'Near'"),)
            ),
        ),
        ({"cityCodes": ["DFW", "lhr", "dfw"]}, PlacementTargets((ByCity("DFW"), ByCity("lhr")))),
        ({"cityCodes": ["SYD"]}, PlacementTargets((ByCity("SYD"),))),  # a city needs no Location
        (
            {"cityCodes": []},
            PlacementTargets(errors=(InvalidPlacementSpec("p.cityCodes", "must name at least one city"),)),
        ),
        ({}, PlacementTargets(errors=(InvalidPlacementSpec("p", ONE),))),
        (
            {"cityCodes": ["DFW"], "locations": [{"name": "dfw"}]},
            PlacementTargets(errors=(InvalidPlacementSpec("p", ONE),)),
        ),
    ],
    ids=[
        "locations-deduplicated",
        "unknown-location",
        "selector-city-any-case",
        "selector-in",
        "selector-on-label",
        "selector-on-topology",
        "selector-does-not-exist",
        "selector-matches-nothing",
        "empty-selector",
        "bad-operator",
        "cities-deduplicated-case-insensitively",
        "city-without-location",
        "no-cities",
        "none-set",
        "two-set",
    ],
)
def test_placement_targets(placement: dict[str, Any], expected: PlacementTargets) -> None:
    assert placement_targets(placement, KNOWN, where="p") == expected


# ----------------------------------------------------------------- properties

CITY = st.text(alphabet=st.characters(min_codepoint=ord("A"), max_codepoint=ord("Z")), min_size=3, max_size=3)
NAME = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)


@given(CITY)
def test_city_codes_match_whatever_the_case(city: str) -> None:
    assert same_city(city, city.lower()) and same_city(city.lower(), city.title())
    assert city_key(city) == city_key(city.lower())


@given(st.dictionaries(NAME, CITY, min_size=1, max_size=6), st.data())
def test_a_location_ref_resolves_to_its_locations_city(cities: dict[str, str], data: st.DataObject) -> None:
    known = [known_location(location(name, city)) for name, city in cities.items()]
    name = data.draw(st.sampled_from(sorted(cities)))
    assert resolve_city({"locationRef": {"name": name}}, known) == CityTarget(cities[name], name)


@given(st.dictionaries(NAME, CITY, max_size=6), st.data())
def test_selecting_by_city_picks_exactly_the_locations_in_that_city(
    cities: dict[str, str], data: st.DataObject
) -> None:
    known = [known_location(location(name, city)) for name, city in cities.items()]
    city = data.draw(CITY)
    spelled = data.draw(st.sampled_from([city, city.lower()]))
    got = placement_targets({"locationSelector": {"matchLabels": {CITY_CODE_KEY: spelled}}}, known)
    assert got.errors == ()
    assert {t.name for t in got.targets if isinstance(t, ByLocation)} == {n for n, c in cities.items() if c == city}


@given(st.lists(st.sampled_from(["DFW", "dfw", "Dfw", "LHR", "lhr", "NRT"]), min_size=1))
def test_city_codes_are_one_target_per_city_spelled_as_first_written(codes: list[str]) -> None:
    got = placement_targets({"cityCodes": codes}, [])
    firsts: dict[str, str] = {}
    for code in codes:
        firsts.setdefault(code.casefold(), code)
    assert got == PlacementTargets(tuple(ByCity(c) for c in firsts.values()))
