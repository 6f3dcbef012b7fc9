"""The Instance projection's pure rules (federation/fleet/projection.py), shared by the
Instance projector and `check`: ordinal parsing and the choice among same-named Instances."""

from __future__ import annotations

from typing import Any

import pytest

from federation.api.constants import Annotation, Label
from federation.fleet.projection import CELL_ANNOTATION, Source, choose, holds_ordinal, instance_ordinal, projection

WD = {"apiVersion": "compute.datumapis.com/v1alpha", "kind": "WorkloadDeployment",
      "metadata": {"name": "api", "namespace": "default", "uid": "wd-uid"}}  # fmt: skip


def instance(index: Any = None, *, deleting: bool = False) -> dict[str, Any]:
    labels = {} if index is None else {str(Label.INSTANCE_INDEX): index}
    meta: dict[str, Any] = {"name": "api-1", "namespace": "ns-x", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {}}


def copy_holding(start: int, replicas: int) -> dict[str, Any]:
    return {"metadata": {"annotations": {str(Annotation.ORDINAL_START): str(start)}}, "spec": {"replicas": replicas}}


@pytest.mark.parametrize(
    ("index", "ordinal"),
    [("3", 3), ("0", 0), (None, None), ("x", None), ("", None)],
)
def test_instance_ordinal(index: Any, ordinal: int | None) -> None:
    assert instance_ordinal(instance(index)) == ordinal


@pytest.mark.parametrize(
    ("index", "copy", "held"),
    [
        ("1", copy_holding(0, 2), True),
        ("2", copy_holding(0, 2), False),
        ("2", copy_holding(2, 1), True),
        (None, copy_holding(0, 2), False),
        ("1", {"metadata": {}, "spec": {}}, False),  # unreadable share holds nothing
    ],
)
def test_holds_ordinal(index: Any, copy: dict[str, Any], held: bool) -> None:
    assert holds_ordinal(copy, instance(index)) is held


@pytest.mark.parametrize(
    ("sources", "chosen"),
    [
        pytest.param([], None, id="none"),
        pytest.param([("dfw-2", False, False), ("dfw-1", True, False)], "dfw-1", id="in-share-first"),
        pytest.param([("dfw-1", True, True), ("dfw-2", True, False)], "dfw-2", id="then-not-deleting"),
        pytest.param([("dfw-2", True, False), ("dfw-1", True, False)], "dfw-1", id="then-cell-name"),
        pytest.param([("dfw-1", False, False), ("dfw-2", True, True)], "dfw-2", id="share-beats-deleting"),
    ],
)
def test_choose_among_same_named_instances(sources: list[tuple[str, bool, bool]], chosen: str | None) -> None:
    found = choose(Source(cell, instance("1", deleting=deleting), WD, in_share) for cell, in_share, deleting in sources)
    assert (found.cell if found is not None else None) == chosen


def test_projection_names_its_cell_and_its_project_wd() -> None:
    shown = projection(Source("dfw-1", instance("1"), WD, True))
    assert shown["metadata"]["namespace"] == "default"
    assert shown["metadata"]["annotations"] == {CELL_ANNOTATION: "dfw-1"}
    assert shown["metadata"]["labels"][str(Label.WORKLOAD_DEPLOYMENT_UID)] == "wd-uid"
    assert shown["metadata"]["ownerReferences"][0]["uid"] == "wd-uid"
