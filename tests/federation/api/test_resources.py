"""The `Resource` addresses the controllers use name exactly what the shipped CRDs serve
(group, served version, plural, kind, scope): a typo here would be a 404 at run time."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from federation.api import resources
from mcruntime.resources import Resource

CRD_DIR = Path(__file__).resolve().parents[3] / "config" / "crd"
BUNDLES = ("compute", "locations")  # the datumapis.com kinds: compute in projects and cells, Locations in management


def served() -> dict[str, dict[str, object]]:
    out = {}
    for path in sorted(p for bundle in BUNDLES for p in (CRD_DIR / bundle).glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        out[f"{spec['names']['plural']}.{spec['group']}"] = {
            "group": spec["group"],
            "versions": {v["name"] for v in spec["versions"] if v.get("served")},
            "kind": spec["names"]["kind"],
            "namespaced": spec["scope"] == "Namespaced",
        }
    return out


OURS = [r for r in vars(resources).values() if isinstance(r, Resource) and r.group.endswith("datumapis.com")]


def test_every_compute_kind_has_its_address() -> None:
    assert {r.qualified for r in OURS} == set(served())


@pytest.mark.parametrize("resource", OURS, ids=lambda r: r.qualified)
def test_the_address_matches_the_crd(resource: Resource) -> None:
    crd = served()[resource.qualified]
    assert resource.group == crd["group"]
    assert resource.version in crd["versions"]  # type: ignore[operator]
    assert resource.kind == crd["kind"]
    assert resource.namespaced == crd["namespaced"]
    where = "/namespaces/ns" if resource.namespaced else ""
    assert resource.path("ns" if resource.namespaced else None, "x", "status") == (
        f"/apis/{resource.group}/{resource.version}{where}/{resource.plural}/x/status"
    )
