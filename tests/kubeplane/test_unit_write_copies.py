"""A write copies the stored object once, and what it stores shares nothing with anything else.

- A status write (server-side apply or a merge patch of the status alone) stores the one
  private copy it made of the stored object, rather than copying the stored object again;
  the bytes stored are those the second copy gave (key order included), and a status write
  that also names other fields (or removes the status) still changes the status alone.
- Server-side apply copies only what it applies: nothing of the live object (its metadata,
  managedFields, status, or all of it on a status apply) is copied again; a write to the main
  resource that leaves the status alone keeps the status it copied rather than copying it back.
- Every kind of write leaves the object stored before it as it was, and the object it stores
  shares no dict or list with the one before, with the request body or with the response
  (what stored objects, watch-event payloads and response bodies rely on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubeplane import fieldmanager, objectapi, store
from kubeplane.crds import types_for
from kubeplane.objectapi import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, WriteOptions
from kubeplane.registry import ResourceType
from kubeplane.server import ControlPlane
from kubeplane.store import Entry

Obj = dict[str, Any]
WD_CRD = Path(__file__).resolve().parents[2] / "config/crd/compute/compute.datumapis.com_workloaddeployments.yaml"
API_VERSION = "compute.datumapis.com/v1alpha"


def plane_with_wds() -> tuple[ControlPlane, ResourceType]:
    plane = ControlPlane(kubelet=False, garbage_collector=False)
    crd = plane.api.create(
        plane.crds.crd_rt, "", yaml.safe_load(WD_CRD.read_text()), WriteOptions(field_manager="test")
    )
    rts = types_for(crd.obj)
    for rt in rts:
        plane.registry.add(rt)
    (rt,) = [rt for rt in rts if rt.api_version == API_VERSION]
    return plane, rt


def wd(name: str = "wd", replicas: int = 2) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadDeployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "workloadRef": {"name": name, "uid": "00000000-0000-0000-0000-00000000b0b0"},
            "placementName": "bench",
            "cityCode": "DFW",
            "replicas": replicas,
            "scaleSettings": {"minReplicas": replicas},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "runtime": {
                        "resources": {"instanceType": "datumcloud/d1-standard-2"},
                        "sandbox": {"containers": [{"name": "app", "image": "docker.io/library/nginx:1.27"}]},
                    },
                    "networkInterfaces": [{"network": {"name": "default"}}],
                },
            },
        },
    }


def status(generation: int = 1, replicas: int = 2) -> Obj:
    condition = {
        "type": "Available",
        "status": "True",
        "reason": "ReplicasReady",
        "message": f"{replicas}/{replicas} instances ready",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": generation,
    }
    return {
        "observedGeneration": generation,
        "replicas": replicas,
        "readyReplicas": replicas,
        "conditions": [condition],
    }


def status_apply(name: str = "wd", **fields: Any) -> Obj:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": API_VERSION, "kind": "WorkloadDeployment", "metadata": meta, **fields}


def opts(manager: str = "test", *, force: bool = False) -> WriteOptions:
    return WriteOptions(field_manager=manager, force=force)


def containers(value: Any) -> Iterator[Any]:
    """Every dict and list in `value`, itself included."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from containers(item)


def shared(a: Any, b: Any) -> list[Any]:
    ids = {id(c) for c in containers(b)}
    return [c for c in containers(a) if id(c) in ids]


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[Obj]:
    """The objects Entry.copy returns, as they are made."""
    made: list[Obj] = []
    real = Entry.copy

    def counted(self: Entry) -> Obj:
        out = real(self)
        made.append(out)
        return out

    monkeypatch.setattr(store.Entry, "copy", counted)
    return made


def expected_status_write(old: Entry, new: Entry, new_status: Obj | None) -> bytes:
    """What copying the stored object and setting the status gives, with the new entry's
    resourceVersion and managedFields: the bytes the write must have stored."""
    want = orjson.loads(old.raw)
    if new_status is None:
        want.pop("status", None)
    else:
        want["status"] = new_status
    want["metadata"]["managedFields"] = new.obj["metadata"]["managedFields"]
    want["metadata"]["resourceVersion"] = new.obj["metadata"]["resourceVersion"]
    return orjson.dumps(want)


# ------------------------------------------------------------ status writes copy once


def test_a_status_apply_copies_the_stored_object_once(copies: list[Obj]) -> None:
    plane, rt = plane_with_wds()
    old = plane.api.create(rt, "default", wd(), opts())
    copies.clear()
    new = plane.api.patch(
        rt, "default", "wd", APPLY_PATCH, status_apply(status=status()), opts("st", force=True), subresource="status"
    )
    assert len(copies) == 1
    assert new.raw == expected_status_write(old, new, status())
    assert new.obj["metadata"]["generation"] == 1


def test_a_status_merge_patch_copies_the_stored_object_once(copies: list[Obj]) -> None:
    plane, rt = plane_with_wds()
    old = plane.api.create(rt, "default", wd(), opts())
    copies.clear()
    new = plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": status()}, opts("cell"), subresource="status")
    assert len(copies) == 1
    assert new.raw == expected_status_write(old, new, status())
    again = plane.api.patch(
        rt, "default", "wd", MERGE_PATCH, {"status": status(2, 3)}, opts("cell"), subresource="status"
    )
    assert len(copies) == 2
    assert again.raw == expected_status_write(new, again, status(2, 3))


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        # names spec and metadata besides the status: those are the stored object's still
        (MERGE_PATCH, {"metadata": {"labels": {"app": "other"}}, "spec": {"replicas": 9}, "status": status()}),
        (APPLY_PATCH, status_apply(spec={"replicas": 9}, status=status())),
        (JSON_PATCH, [{"op": "add", "path": "/status", "value": status()}]),
    ],
    ids=["merge-with-spec-and-labels", "apply-with-spec", "json-patch"],
)
def test_a_status_write_changes_the_status_alone(content_type: str, body: Any) -> None:
    plane, rt = plane_with_wds()
    old = plane.api.create(rt, "default", wd(), opts())
    new = plane.api.patch(rt, "default", "wd", content_type, body, opts("st", force=True), subresource="status")
    assert new.raw == expected_status_write(old, new, status())
    assert new.obj["metadata"]["generation"] == 1


def test_a_status_merge_patch_that_removes_the_status_keeps_the_rest() -> None:
    plane, rt = plane_with_wds()
    plane.api.create(rt, "default", wd(), opts())
    old = plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": status()}, opts("cell"), subresource="status")
    new = plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": None}, opts("cell"), subresource="status")
    assert "status" not in new.obj
    assert new.raw == expected_status_write(old, new, None)


def test_a_status_write_over_an_object_stored_in_another_key_order_keeps_that_order() -> None:
    """(An object written by an embedded controller, or restored, need not have apiVersion, kind
    and metadata first: the status write's bytes are still the stored object's, copied.)"""
    plane, rt = plane_with_wds()
    created = plane.api.create(rt, "default", wd(), opts())
    reordered = {"spec": created.obj["spec"], **{k: v for k, v in created.obj.items() if k != "spec"}}
    changed = orjson.loads(orjson.dumps(reordered))
    changed["spec"]["replicas"] = 3
    old = plane.api.commit_internal(rt, created, changed, "controller")
    assert next(iter(old.obj)) == "spec"
    new = plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": status()}, opts("cell"), subresource="status")
    assert new.raw == expected_status_write(old, new, status())
    applied = plane.api.patch(
        rt,
        "default",
        "wd",
        APPLY_PATCH,
        status_apply(status=status(1, 3)),
        opts("st", force=True),
        subresource="status",
    )
    assert applied.raw == expected_status_write(new, applied, status(1, 3))


@pytest.mark.parametrize(
    ("content_type", "body", "copies_status"),
    [
        (MERGE_PATCH, {"spec": {"replicas": 3}}, False),
        (APPLY_PATCH, wd(replicas=3), False),
        # a body that names the status (or another patch type): the stored status is copied back
        (MERGE_PATCH, {"spec": {"replicas": 3}, "status": {"replicas": 9}}, True),
        (JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 3}], True),
    ],
    ids=["merge", "apply", "merge-naming-status", "json-patch"],
)
def test_a_main_resource_write_keeps_the_status_it_copied(
    monkeypatch: pytest.MonkeyPatch, content_type: str, body: Any, copies_status: bool
) -> None:
    plane, rt = plane_with_wds()
    plane.api.create(rt, "default", wd(), opts())
    old = plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": status()}, opts("cell"), subresource="status")
    copied = count_json_copies(monkeypatch, objectapi)
    new = plane.api.patch(rt, "default", "wd", content_type, body, opts("fed", force=True))
    assert any(value is old.obj["status"] for value in copied) is copies_status
    assert new.obj["spec"]["replicas"] == 3 and new.obj["metadata"]["generation"] == 2
    assert orjson.dumps(new.obj["status"]) == orjson.dumps(old.obj["status"])
    assert list(new.obj) == list(old.obj)
    assert shared(new.obj, old.obj) == []


# ------------------------------------------------------------ apply copies what it applies


@pytest.fixture
def fm_copies(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values the field manager copies (its own calls of json_copy, not their recursion)."""
    return count_json_copies(monkeypatch, fieldmanager)


def count_json_copies(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[Any]:
    """The values `module` passes to its own `json_copy` from now on, in order."""
    copied: list[Any] = []
    real = module.json_copy

    def counted(value: Any) -> Any:
        copied.append(value)
        return real(value)

    monkeypatch.setattr(module, "json_copy", counted)
    return copied


@pytest.mark.parametrize(
    ("subresource", "body"),
    [
        ("status", status_apply(status=status())),
        ("", status_apply(metadata={"name": "wd", "namespace": "default", "finalizers": ["example.com/keep"]})),
        ("", wd(replicas=3)),
    ],
    ids=["status", "finalizer", "spec"],
)
def test_an_apply_copies_only_what_it_applies(fm_copies: list[Any], subresource: str, body: Obj) -> None:
    plane, rt = plane_with_wds()
    plane.api.create(rt, "default", wd(), opts())
    plane.api.patch(rt, "default", "wd", MERGE_PATCH, {"status": status()}, opts("cell"), subresource="status")
    fm_copies.clear()
    plane.api.patch(rt, "default", "wd", APPLY_PATCH, body, opts("applier", force=True), subresource=subresource)
    from_body = {id(c) for c in containers(body)}
    # every dict or list it copied is a part of the applied configuration, none of the live object
    assert [v for v in fm_copies if isinstance(v, (dict, list)) and id(v) not in from_body] == []


def test_an_apply_without_a_stored_object_leaves_live_as_it_was() -> None:
    """(fm.apply's other contract: given no stored object, `live` is the caller's and is copied.)"""
    _, rt = plane_with_wds()
    fm = fieldmanager.FieldManager(rt.schema, has_status=True)
    live = orjson.loads(orjson.dumps({**wd(), "status": status()}))
    live["metadata"]["managedFields"] = [
        {
            "manager": "x",
            "operation": "Update",
            "apiVersion": API_VERSION,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
        }
    ]
    before = orjson.dumps(live)
    for subresource, body in (("status", status_apply(status=status(2, 3))), ("", wd(replicas=3))):
        merged = fm.apply(
            live,
            body,
            manager="m",
            subresource=subresource,
            api_version=API_VERSION,
            force=True,
            now="2026-01-01T00:00:00Z",
            resource="workloaddeployments",
            group="compute.datumapis.com",
        )
        assert orjson.dumps(live) == before
        assert shared(merged, live) == []


# ------------------------------------------------------------ what is stored is its own


def writes(plane: ControlPlane, rt: ResourceType) -> list[tuple[str, Callable[[], Entry], Any]]:
    api = plane.api

    def step(label: str, call: Callable[[Any], Entry], body: Any) -> tuple[str, Callable[[], Entry], Any]:
        return label, lambda: call(body), body

    status_body = {"status": status()}
    put_body: Obj = {}
    return [
        step("create", lambda b: api.create(rt, "default", b, opts()), wd()),
        step("apply create", lambda b: api.patch(rt, "default", "a", APPLY_PATCH, b, opts("fed", force=True)), wd("a")),
        step(
            "finalizer apply",
            lambda b: api.patch(rt, "default", "wd", APPLY_PATCH, b, opts("fin", force=True)),
            status_apply(metadata={"name": "wd", "namespace": "default", "finalizers": ["example.com/keep"]}),
        ),
        step(
            "status merge patch",
            lambda b: api.patch(rt, "default", "wd", MERGE_PATCH, b, opts("cell"), subresource="status"),
            status_body,
        ),
        step(
            "status apply",
            lambda b: api.patch(rt, "default", "a", APPLY_PATCH, b, opts("st", force=True), subresource="status"),
            status_apply("a", status=status()),
        ),
        step(
            "apply update", lambda b: api.patch(rt, "default", "a", APPLY_PATCH, b, opts("fed", force=True)), wd("a", 3)
        ),
        step(
            "merge patch",
            lambda b: api.patch(rt, "default", "wd", MERGE_PATCH, b, opts()),
            {"spec": {"replicas": 3, "scaleSettings": {"minReplicas": 3}}},
        ),
        step("update", lambda b: api.update(rt, "default", "wd", b, opts()), put_body),
        step(
            "status update", lambda b: api.update(rt, "default", "wd", b, opts("cell"), subresource="status"), put_body
        ),
    ]


def test_every_write_stores_an_object_of_its_own() -> None:
    plane, rt = plane_with_wds()
    steps = writes(plane, rt)
    for label, call, body in steps:
        if label in ("update", "status update"):  # a PUT of the object read back, changed
            current = plane.api.get(rt, "default", "wd").copy()
            current["spec"]["replicas"] = 4
            current.setdefault("status", {})["replicas"] = 4
            body.clear()
            body.update(current)
        name = "a" if label.startswith(("apply", "status apply")) else "wd"
        before = plane.api.store_for(rt).get("default", name)
        before_bytes = orjson.dumps(before.obj) if before is not None else b""
        written = call()
        stored = plane.api.get(rt, "default", name)
        assert stored is written, label
        event = plane.db.store(rt.storage_key, rt.namespaced).log.events[-1]
        assert event.entry is stored, label  # the watch payload: the stored entry's bytes
        assert stored.raw == orjson.dumps(stored.obj), label
        if before is not None:
            assert orjson.dumps(before.obj) == before_bytes == before.raw, label
            assert shared(stored.obj, before.obj) == [], label
        if label in ("create", "update", "status update"):
            continue  # (a create or PUT stores its body: the HTTP layer decodes one per request)
        # a patch is merged into a copy: changing its body afterwards changes nothing stored
        assert shared(stored.obj, body) == [], label
        for c in containers(body):
            if isinstance(c, dict):
                c["changed"] = True
        assert stored.raw == orjson.dumps(stored.obj), label
