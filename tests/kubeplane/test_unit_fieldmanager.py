"""Field sets, managedFields encoding and server-side apply merging (structured-merge-diff
semantics) in isolation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.builtin_schemas import SCHEMAS
from kubeplane.errors import APIError
from kubeplane.fieldmanager import Encodings, FieldManager, from_fields_v1, members, path_string, to_fields_v1

NOW = "2024-01-01T00:00:00Z"
CM = SCHEMAS["ConfigMap"]
POD = SCHEMAS["Pod"]


def apply(
    fm: FieldManager, live: dict[str, Any] | None, config: dict[str, Any], manager: str, force: bool = False
) -> dict[str, Any]:
    return fm.apply(
        copy.deepcopy(live) if live is not None else None,
        copy.deepcopy(config),
        manager=manager,
        subresource="",
        api_version="v1",
        force=force,
        now=NOW,
        resource="configmaps",
        group="",
    )


def owned(obj: dict[str, Any]) -> dict[str, Any]:
    return {m["manager"]: m["fieldsV1"] for m in obj["metadata"].get("managedFields") or []}


def cm(data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}
    if data is not None:
        out["data"] = data
    return out


def test_fields_v1_round_trip() -> None:
    paths = {
        ("f:data", "f:a"),
        ("f:spec", "f:containers", 'k:{"name":"x"}'),
        ("f:spec", "f:containers", 'k:{"name":"x"}', "f:image"),
    }
    tree = to_fields_v1(paths)
    assert tree == {
        "f:data": {"f:a": {}},
        "f:spec": {"f:containers": {'k:{"name":"x"}': {".": {}, "f:image": {}}}},
    }
    assert from_fields_v1(tree) == paths
    assert path_string(("f:spec", "f:containers", 'k:{"name":"x"}', "f:image")) == '.spec.containers[name="x"].image'
    assert path_string(("f:metadata", "f:finalizers", 'v:"a"')) == '.metadata.finalizers[="a"]'


def test_members_follow_the_schema() -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x/y"]},
        "spec": {
            "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}],
            "nodeSelector": {"k": "v"},
        },
    }
    got = set(members(pod, POD))
    assert ("f:metadata", "f:labels", "f:a") in got
    assert ("f:metadata", "f:finalizers", 'v:"x/y"') in got
    assert ("f:spec", "f:containers", 'k:{"name":"c"}', "f:image") in got
    # a list-map key left out takes its schema default (protocol: TCP)
    assert ("f:spec", "f:containers", 'k:{"name":"c"}', "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}') in got
    # an atomic map is one member
    assert ("f:spec", "f:nodeSelector") in got and ("f:spec", "f:nodeSelector", "f:k") not in got
    assert not any(p[:2] == ("f:metadata", "f:name") for p in got)


def test_update_moves_ownership_of_changed_fields() -> None:
    fm = FieldManager(CM, has_status=False)
    first = cm({"a": "1", "b": "2"})
    fm.update(None, first, manager="creator", subresource="", api_version="v1", now=NOW)
    second = copy.deepcopy(first)
    second["data"]["a"] = "changed"
    fm.update(first, second, manager="editor", subresource="", api_version="v1", now=NOW)
    fields = owned(second)
    assert fields["editor"] == {"f:data": {"f:a": {}}}
    assert "f:a" not in fields["creator"]["f:data"] and "f:b" in fields["creator"]["f:data"]
    # removing a field takes it from its owner; a manager left with nothing disappears
    third = copy.deepcopy(second)
    del third["data"]["a"]
    fm.update(second, third, manager="remover", subresource="", api_version="v1", now=NOW)
    assert set(owned(third)) == {"creator"}


def test_apply_conflicts_force_and_shared_ownership() -> None:
    fm = FieldManager(CM, has_status=False)
    live = apply(fm, None, cm({"a": "1", "b": "2"}), "alice")
    assert owned(live) == {"alice": {"f:data": {"f:a": {}, "f:b": {}}}}
    with pytest.raises(APIError) as info:
        apply(fm, live, cm({"a": "9"}), "bob")
    err = info.value
    assert err.code == 409 and err.reason == "Conflict"
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert err.details["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]
    forced = apply(fm, live, cm({"a": "9"}), "bob", force=True)
    assert forced["data"] == {"a": "9", "b": "2"}
    assert owned(forced) == {"alice": {"f:data": {"f:b": {}}}, "bob": {"f:data": {"f:a": {}}}}
    shared = apply(fm, forced, cm({"b": "2"}), "carol")
    assert owned(shared)["carol"] == {"f:data": {"f:b": {}}} and owned(shared)["alice"] == {"f:data": {"f:b": {}}}


def test_apply_removes_what_a_manager_stops_applying() -> None:
    fm = FieldManager(CM, has_status=False)
    live = apply(fm, None, cm({"a": "1", "b": "2"}, labels={"team": "x"}), "alice")
    live = apply(fm, live, cm({"a": "1"}), "alice")
    assert live["data"] == {"a": "1"} and "labels" not in live["metadata"]
    # a field someone else also owns stays
    live = apply(fm, live, cm({"a": "1"}), "bob")
    live = apply(fm, live, cm(), "alice")
    assert live["data"] == {"a": "1"} and set(owned(live)) == {"bob"}
    # when its last owner lets go it goes, and the map that held it with it...
    gone = apply(fm, live, cm(), "bob")
    assert "data" not in gone
    # ...unless someone applies the (empty) map itself: removing bob's field is then no conflict
    live = apply(fm, live, cm({}), "alice")
    kept = apply(fm, live, cm(), "bob")
    assert kept["data"] == {} and owned(kept) == {"alice": {"f:data": {}}}


def test_apply_merges_keyed_lists_and_is_idempotent() -> None:
    fm = FieldManager(POD, has_status=True)
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 80}]}]},
    }
    live = apply(fm, None, config, "deployer")
    # the server defaults the port's protocol; re-applying the same config must not duplicate the port
    live["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    again = apply(fm, live, config, "deployer")
    assert again["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    other = copy.deepcopy(config)
    other["spec"]["containers"] = [{"name": "b", "image": "j"}]
    both = apply(fm, again, other, "second")
    assert [c["name"] for c in both["spec"]["containers"]] == ["a", "b"]
    # status is not touched by an apply to the main resource
    with_status = copy.deepcopy(both)
    with_status["status"] = {"phase": "Running"}
    config_with_status = copy.deepcopy(config)
    config_with_status["status"] = {"phase": "Hacked"}
    out = apply(fm, with_status, config_with_status, "deployer")
    assert out["status"] == {"phase": "Running"}


def test_apply_rejects_managed_fields_in_the_request() -> None:
    fm = FieldManager(CM, has_status=False)
    with pytest.raises(APIError) as info:
        apply(fm, None, cm({"a": "1"}, managedFields=[]), "alice")
    assert info.value.code == 400


def test_the_remembered_members_and_encodings_drop_the_oldest_first() -> None:
    """Both memories are bounded and drop the entry remembered first (what a write asks for next
    is what was written last); a dropped one is walked or decoded again, never answered wrong."""
    fm = FieldManager(CM, has_status=False)
    fm.REMEMBERED = 3
    objs = [cm({"k": str(i)}, name=f"c{i}") for i in range(4)]
    for obj in objs:
        fm._stored_members(obj, "")
    assert [key[0] for key in fm._remembered] == [id(o) for o in objs[1:]]
    assert fm._stored_members(objs[0], "") == members(objs[0], CM)  # walked again

    known = Encodings()
    known.LIMIT = 2
    trees: list[dict[str, Any]] = [{"f:data": {f"f:k{i}": {}}} for i in range(3)]
    for tree in trees:
        known.add(tree, frozenset(from_fields_v1(tree)))
    assert known.lookup(trees[0]) is None
    found = known.lookup(trees[2])
    assert found is not None and found[1] == {("f:data", "f:k2")}
