"""JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane import patches
from kubeplane.builtin_schemas import SCHEMAS
from kubeplane.errors import APIError
from kubeplane.patches import json_patch, merge_patch, strategic_merge_patch

POD = SCHEMAS["Pod"]


def test_merge_patch_rfc7386() -> None:
    # the RFC's examples
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": "b", "b": "c"}, {"a": None}) == {"b": "c"}
    assert merge_patch({"a": ["b"]}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "c"}, {"a": ["b"]}) == {"a": ["b"]}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
    original = {"a": {"b": 1}}
    merge_patch(original, {"a": {"b": 2}})
    assert original == {"a": {"b": 1}}


def test_patches_copy_their_values_without_deepcopy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A merge patch's and a JSON patch's values are copied into the result (the result shares no
    dict or list with the patch), by json_copy rather than copy.deepcopy's memo and dispatch."""

    def refused(value: Any, memo: Any = None) -> Any:
        raise AssertionError("copy.deepcopy called")

    monkeypatch.setattr(patches.copy, "deepcopy", refused)
    conditions = [{"type": "Ready", "status": "True"}]
    patch = {"status": {"conditions": conditions, "replicas": 2}}
    merged = merge_patch({"spec": {"a": 1}, "status": {"replicas": 1}}, patch)
    assert merged == {"spec": {"a": 1}, "status": {"conditions": conditions, "replicas": 2}}
    merged["status"]["conditions"][0]["status"] = "False"
    assert conditions == [{"type": "Ready", "status": "True"}]
    ops = [{"op": "add", "path": "/status/conditions", "value": conditions}]
    patched = json_patch({"status": {}}, ops)
    patched["status"]["conditions"].append({"type": "Other"})
    assert conditions == [{"type": "Ready", "status": "True"}]


def test_json_patch_operations() -> None:
    doc: dict[str, Any] = {"a": {"b": [1, 2]}, "c": "x"}
    ops = [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "replace", "path": "/c", "value": "y"},
        {"op": "copy", "from": "/c", "path": "/d"},
        {"op": "move", "from": "/a/b", "path": "/e"},
        {"op": "test", "path": "/e", "value": [1, 9, 2, 3]},
        {"op": "remove", "path": "/a"},
        {"op": "add", "path": "/k~1with~0tilde", "value": True},
    ]
    assert json_patch(copy.deepcopy(doc), ops) == {"c": "y", "d": "y", "e": [1, 9, 2, 3], "k/with~tilde": True}


@pytest.mark.parametrize(
    ("ops", "code"),
    [
        ([{"op": "test", "path": "/c", "value": "nope"}], 422),
        ([{"op": "remove", "path": "/missing"}], 422),
        ([{"op": "replace", "path": "/missing", "value": 1}], 422),
        ([{"op": "add", "path": "/a/b/9", "value": 1}], 422),
        ([{"op": "add", "path": "/x/y", "value": 1}], 422),
        ([{"op": "add", "path": "/c"}], 422),
        ([{"op": "move", "path": "/c"}], 422),
        ([{"op": "frobnicate", "path": "/c"}], 400),
        ([{"path": "/c"}], 400),
        ([{"op": "add", "value": 1}], 400),
        ({"op": "add"}, 400),
    ],
)
def test_json_patch_failures(ops: Any, code: int) -> None:
    with pytest.raises(APIError) as info:
        json_patch({"a": {"b": [1]}, "c": "x"}, ops)
    assert info.value.code == code


def _pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": list(containers)}}


def test_strategic_merge_keys_containers_env_and_ports() -> None:
    live = _pod(
        {
            "name": "a",
            "image": "i:1",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
        },
        {"name": "b", "image": "j:1"},
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "i:2",
                    "env": [{"name": "Y", "value": "20"}, {"name": "Z", "value": "3"}],
                    "ports": [{"containerPort": 81}],
                }
            ]
        }
    }
    out = strategic_merge_patch(live, patch, POD)
    a, b = out["spec"]["containers"]
    assert a["image"] == "i:2" and b == {"name": "b", "image": "j:1"}
    assert a["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "20"}, {"name": "Z", "value": "3"}]
    assert [p["containerPort"] for p in a["ports"]] == [80, 81]
    assert live["spec"]["containers"][0]["image"] == "i:1"  # the input is not modified


def test_strategic_merge_directives() -> None:
    live = _pod({"name": "a", "image": "i", "env": [{"name": "X"}, {"name": "Y"}]}, {"name": "b", "image": "j"})
    # $patch: delete on a keyed item, null removes a field
    out = strategic_merge_patch(
        live, {"spec": {"containers": [{"name": "b", "$patch": "delete"}, {"name": "a", "env": None}]}}, POD
    )
    assert out["spec"]["containers"] == [{"name": "a", "image": "i"}]
    # $patch: replace on a list replaces it whole
    out = strategic_merge_patch(
        live, {"spec": {"containers": [{"name": "c", "image": "k"}, {"$patch": "replace"}]}}, POD
    )
    assert out["spec"]["containers"] == [{"name": "c", "image": "k"}]
    # $patch: replace on a map replaces the map
    out = strategic_merge_patch(
        {"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"c": "3", "$patch": "replace"}}}, POD
    )
    assert out["metadata"]["labels"] == {"c": "3"}
    # $setElementOrder reorders by key
    out = strategic_merge_patch(
        live, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": []}}, POD
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]
    # $deleteFromPrimitiveList on a set-like list of strings
    out = strategic_merge_patch(
        {"metadata": {"finalizers": ["x", "y", "z"]}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["y"]}}, POD
    )
    assert out["metadata"]["finalizers"] == ["x", "z"]
    # $retainKeys keeps only the listed keys
    out = strategic_merge_patch({"spec": {"a": 1, "b": 2}}, {"spec": {"$retainKeys": ["b"], "b": 3}}, POD)
    assert out["spec"] == {"b": 3}


def test_strategic_merge_without_merge_key_replaces_lists_and_reports_errors() -> None:
    live = _pod({"name": "a", "image": "i", "args": ["1", "2"]})
    out = strategic_merge_patch(live, {"spec": {"containers": [{"name": "a", "args": ["3"]}]}}, POD)
    assert out["spec"]["containers"][0]["args"] == ["3"]
    with pytest.raises(APIError) as info:
        strategic_merge_patch(live, {"spec": {"containers": [{"image": "no-name"}]}}, POD)
    assert info.value.code == 422
    with pytest.raises(APIError) as info:
        strategic_merge_patch(live, {"$patch": "explode"}, POD)
    assert info.value.code == 422
    with pytest.raises(APIError) as info:
        strategic_merge_patch(live, ["not", "a", "map"], POD)  # type: ignore[arg-type]
    assert info.value.code == 400
