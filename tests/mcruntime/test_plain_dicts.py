"""The runtime's per-event helpers read decoded JSON, plain dicts: they tell a dict without
the Mapping ABC's instance check (~1.5% of the management manager's CPU went to
`ABCMeta.__instancecheck__`), and any other Mapping (a read-only view, a model's own
mapping) reads exactly as before. The fleet's per-event readers of copies and WDs
(`federation/fleet`) read through the same `is_object`."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from federation.fleet.downstream import cell_owns_replicas, copy_ordinals
from federation.fleet.references import template_references
from mcruntime.controllerutil import controller_of, is_subset
from mcruntime.fields import get_mapping, get_objects, is_object
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.predicates import changed_beyond, not_status_only


class Frozen(Mapping[str, Any]):
    """A Mapping that is not a dict."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def wd(replicas: int, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "api", "generation": 1, "labels": {"app": "api"}, **meta},
        "spec": {"replicas": replicas, "template": {"containers": [{"name": "c", "image": "i"}]}},
    }


def modified(old: dict[str, Any], new: Any) -> ObjectEvent:
    event = ObjectEvent(EventType.MODIFIED, "ns/api", obj=new, old_raw=None)
    event._old = old  # (as the cache hands it: decoded once)
    return event


@pytest.mark.parametrize("as_mapping", [dict, MappingProxyType, Frozen])
def test_any_mapping_reads_as_an_object(as_mapping: Any) -> None:
    owner = {"uid": "u1", "controller": True, "kind": "Owner", "name": "o"}
    obj = {"metadata": {"labels": as_mapping({"a": "b"}), "ownerReferences": [as_mapping(owner)]}}
    assert dict(get_mapping(obj, "metadata.labels")) == {"a": "b"}
    assert [dict(r) for r in get_objects(obj, "metadata.ownerReferences")] == [owner]
    assert controller_of(obj) == owner
    desired = as_mapping({"spec": as_mapping({"replicas": 2})})
    assert is_subset(desired, {"spec": {"replicas": 2, "defaulted": True}})
    assert is_subset({"spec": {"replicas": 2}}, as_mapping({"spec": as_mapping({"replicas": 2, "x": 1})}))
    assert not is_subset({"spec": {"replicas": 2}}, as_mapping({"spec": as_mapping({"replicas": 3})}))
    assert not is_subset({"spec": {"replicas": 2}}, {"spec": [2]})
    old = wd(2)
    new = {**wd(2), "metadata": as_mapping({**old["metadata"], "labels": {"app": "web"}})}
    assert not_status_only(modified(old, new))
    assert changed_beyond(annotations=("x",))(modified(old, new))
    same = {**wd(2), "metadata": as_mapping(old["metadata"])}
    assert not not_status_only(modified(old, same))
    assert not changed_beyond(annotations=("x",))(modified(old, same))


def test_what_is_not_a_mapping_is_not_an_object() -> None:
    with pytest.raises(ValueError, match=r"metadata\.labels: expected an object, got list"):
        get_mapping({"metadata": {"labels": ["a"]}}, "metadata.labels")
    with pytest.raises(ValueError, match=r"metadata\.ownerReferences\[0\]: expected an object, got str"):
        get_objects({"metadata": {"ownerReferences": ["x"]}}, "metadata.ownerReferences")
    assert not is_subset({"a": 1}, [("a", 1)]) and not is_subset({"a": 1}, None)
    assert changed_beyond()(modified(wd(1), {**wd(1), "metadata": ["not", "an", "object"]}))


@pytest.mark.parametrize(
    ("value", "reads_as_object"),
    [
        ({}, True),
        ({"a": 1}, True),
        (MappingProxyType({"a": 1}), True),
        (Frozen({"a": 1}), True),
        ([], False),
        ([("a", 1)], False),
        ("a", False),
        (1, False),
        (1.5, False),
        (True, False),
        (None, False),
        (("a", 1), False),
        ({"a"}, False),
    ],
)
def test_is_object_is_any_mapping(value: Any, reads_as_object: bool) -> None:
    assert is_object(value) is reads_as_object
    assert is_object(value) is isinstance(value, Mapping)


def test_plain_dicts_take_no_abc_instance_check(monkeypatch: pytest.MonkeyPatch) -> None:
    checks: list[type] = []
    real = abc.ABCMeta.__instancecheck__

    def counting(cls: abc.ABCMeta, instance: Any) -> bool:
        if cls is Mapping:
            checks.append(type(instance))
        return real(cls, instance)

    old, new = wd(2), wd(3, labels={"app": "web"})
    owned = {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}}
    copy = {"metadata": {"annotations": {"compute.datumapis.com/ordinal-start": "2"}}, "spec": {"replicas": 1}}
    monkeypatch.setattr(abc.ABCMeta, "__instancecheck__", counting)
    assert is_subset(wd(2), wd(2, uid="x"))
    assert not is_subset(wd(2), wd(3))
    assert controller_of(owned) == {"uid": "u1", "controller": True}
    assert get_mapping(new, "metadata.labels") == {"app": "web"}
    assert not_status_only(modified(old, new))
    assert changed_beyond(finalizers=True, annotations=("x",))(modified(old, new))
    # the fleet's per-event readers of copies and WDs too
    assert copy_ordinals(copy) == range(2, 3)
    assert not cell_owns_replicas(wd(2))
    spec = {"runtime": {"sandbox": {"containers": [{"env": [{"valueFrom": {"configMapKeyRef": {"name": "cfg"}}}]}]}}}
    assert [r.name for r in template_references(spec)] == ["cfg"]
    monkeypatch.undo()
    assert checks == [], checks
