"""Manifests of both upstream eras apply under kubectl's strict validation, keep every
field they set (nothing pruned), and malformed placements are refused naming the field.

The manifests (manifests/*.yaml) were written for these tests from upstream Datum's
public CRDs, samples and e2e suites (docs/api.md, Compatibility notes)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .conftest import REPO, dump_docs, load_docs

pytestmark = pytest.mark.kubectl

MANIFESTS = Path(__file__).parent / "manifests"
ERAS = ("citycode-era.yaml", "locationref-era.yaml")


def _docs(name: str) -> list[dict[str, Any]]:
    return load_docs((MANIFESTS / name).read_text())


def _contains(stored: Any, written: Any, path: str = "") -> None:
    """Every field the manifest wrote is in the stored object with the same value
    (the server may add defaults, never drop or change what was written)."""
    if isinstance(written, dict):
        assert isinstance(stored, dict), f"{path}: {stored!r}"
        for key, value in written.items():
            assert key in stored, f"{path}.{key} was pruned"
            _contains(stored[key], value, f"{path}.{key}")
    elif isinstance(written, list):
        assert isinstance(stored, list) and len(stored) == len(written), f"{path}: {stored!r}"
        for i, (s, w) in enumerate(zip(stored, written, strict=True)):
            _contains(s, w, f"{path}[{i}]")
    else:
        assert stored == written, f"{path}: stored {stored!r}, written {written!r}"


async def _get(kubectl: Kubectl, doc: dict[str, Any]) -> dict[str, Any]:
    kind, meta = doc["kind"], doc["metadata"]
    where = ["-n", meta["namespace"]] if "namespace" in meta else []
    stored: dict[str, Any] = json.loads(await kubectl("get", kind.lower(), meta["name"], *where, "-o", "json"))
    return stored


@pytest.mark.parametrize("era", ERAS)
async def test_a_manifest_of_each_era_applies_strictly_and_keeps_every_field(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl, era: str
) -> None:
    docs = _docs(era)
    out = await kubectl("apply", "--validate=strict", "-f", str(MANIFESTS / era))
    assert out.count("created") == len(docs), out
    for doc in docs:
        _contains((await _get(kubectl, doc))["spec"], doc["spec"], f"{doc['kind']}/{doc['metadata']['name']}.spec")


async def test_era_details_city_code_as_written_defaults_and_the_location_column(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl
) -> None:
    for era in ERAS:
        await kubectl("apply", "--validate=strict", "-f", str(MANIFESTS / era))
    old = await _get(kubectl, _docs("citycode-era.yaml")[0])
    assert old["spec"]["cityCode"] == "dfw", "stored as the user wrote it"
    # upstream's interface defaults are applied by the server, identically in every cluster
    assert old["spec"]["template"]["spec"]["networkInterfaces"] == [
        {"name": "eth0", "network": {"name": "test-network"}, "ipFamilies": ["IPv6"], "reclaimPolicy": "Delete"}
    ]
    location = json.loads(await kubectl("get", "locations", "-o", "json"))["items"]
    assert [loc["metadata"].get("namespace") for loc in location] == [None], "Locations are cluster-scoped"
    table = await kubectl("get", "locations")
    assert table.split("\n")[0].split()[:3] == ["NAME", "CLASS", "CITY"]
    assert table.split("\n")[1].split()[:3] == ["gcp-us-south1-a", "datum-managed", "DFW"]
    wds = await kubectl("get", "wd", "test-refdata-wd", "-n", "default")
    assert wds.split("\n")[0].split()[-1] == "LOCATION" and wds.split("\n")[1].split()[-1] == "gcp-us-south1-a"


def _wd(**placement: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_docs("citycode-era.yaml")[0])
    doc["metadata"]["name"] = "bad-wd"
    del doc["spec"]["cityCode"]
    doc["spec"].update(placement)
    return doc


def _workload(**placement: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_docs("locationref-era.yaml")[2])
    doc["metadata"]["name"] = "bad-workload"
    placements = doc["spec"]["placements"]
    del placements[0]["locations"]
    placements[0].update(placement)
    return doc


WD_ONE = 'spec: Invalid value: "object": exactly one of spec.locationRef or spec.cityCode must be set'
PLACEMENT_ONE = (
    'spec.placements[0]: Invalid value: "object": exactly one of locations, locationSelector or cityCodes must be set'
)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_wd(cityCode="DFW", locationRef={"name": "gcp-us-south1-a"}), WD_ONE),
        (_wd(), WD_ONE),
        (_wd(locationRef={"name": "dfw", "namespace": "x"}), 'unknown field "spec.locationRef.namespace"'),
        (_wd(locationRef={"name": ""}), "spec.locationRef.name: Invalid value"),
        (_workload(cityCodes=["DFW"], locations=[{"name": "dfw"}]), PLACEMENT_ONE),
        (_workload(), PLACEMENT_ONE),
        (
            _workload(locationSelector={}),
            'spec.placements[0].locationSelector: Invalid value: "object": locationSelector must not be empty',
        ),
    ],
    ids=[
        "wd-both",
        "wd-neither",
        "wd-ref-namespace",
        "wd-ref-empty",
        "placement-two",
        "placement-none",
        "empty-selector",
    ],
)
async def test_bad_placements_are_refused_naming_the_field(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl, doc: dict[str, Any], message: str
) -> None:
    result = await kubectl.run("apply", "--validate=strict", "-f", "-", stdin=dump_docs([doc]))
    assert result.returncode != 0, result.stdout
    assert message in result.stderr, result.stderr


async def test_template_rules_are_enforced(compute_cluster: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    doc = copy.deepcopy(_docs("locationref-era.yaml")[1])
    await kubectl("apply", "--validate=strict", "-f", "-", stdin=dump_docs([doc]))
    nic = doc["spec"]["template"]["spec"]["networkInterfaces"][0]
    for field, value, message in (
        ("reclaimPolicy", "Delete", "reclaimPolicy is immutable"),
        ("ipFamilies", ["IPv6"], "ipFamilies is immutable"),
        ("addresses", [{"class": "private"}], "addresses cannot be set, changed or cleared after creation"),
    ):
        edited = copy.deepcopy(doc)
        edited["spec"]["template"]["spec"]["networkInterfaces"][0] = {**nic, field: value}
        result = await kubectl.run("apply", "--validate=strict", "-f", "-", stdin=dump_docs([edited]))
        assert result.returncode != 0 and message in result.stderr, (field, result.stderr)
    fresh = copy.deepcopy(doc)
    fresh["metadata"]["name"] = "fresh"
    container = fresh["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["securityContext"]["capabilities"]["add"] = ["ALL"]
    fresh["spec"]["template"]["spec"]["networkInterfaces"][0]["ipFamilies"] = ["IPv4", "IPv4"]
    result = await kubectl.run("apply", "--validate=strict", "-f", "-", stdin=dump_docs([fresh]))
    assert result.returncode != 0
    assert "ALL cannot be added" in result.stderr and "each IP family may be listed at most once" in result.stderr


async def test_the_shipped_samples_still_apply_strictly(compute_cluster: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    for name in ("compute_v1alpha_workload.yaml", "compute_v1alpha_workloaddeployment.yaml"):
        await kubectl("apply", "--validate=strict", "-f", str(REPO / "config" / "samples" / name))
