"""CRDs and custom resources through kubernetes-asyncio: registration and discovery,
CustomObjectsApi CRUD, schema validation with field causes, defaulting, pruning, 415 for
strategic merge, generation rules, the status and scale subresources, CRD deletion.

The generated API classes are typed `Any` here: their annotations do not admit the dict bodies
and `_content_type` overrides that the client accepts at run time."""

from __future__ import annotations

import copy
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from .conftest import GROUP, WIDGET_CRD, Obj, eventually, widget
from .test_client_core import api_error

MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
NS = "default"


async def _established(ext: client.ApiextensionsV1Api, name: str) -> None:
    async def check() -> bool:
        crd = await ext.read_custom_resource_definition(name)
        conds = {c.type: c.status for c in (crd.status.conditions or [])}
        return conds.get("Established") == "True"

    await eventually(check, f"CRD {name} to be Established")


async def test_crd_lifecycle_serves_and_unserves_the_kind(k8s: ApiClient) -> None:
    ext: Any = client.ApiextensionsV1Api(k8s)
    objs: Any = client.CustomObjectsApi(k8s)
    created = await ext.create_custom_resource_definition(copy.deepcopy(WIDGET_CRD))
    assert created.metadata.generation == 1
    assert created.spec.names.list_kind == "WidgetList" and created.spec.conversion.strategy == "None"
    await _established(ext, "widgets.example.com")
    crd = await ext.read_custom_resource_definition("widgets.example.com")
    assert crd.status.accepted_names.kind == "Widget" and crd.status.stored_versions == ["v1"]

    groups = {g.name: g for g in (await client.ApisApi(k8s).get_api_versions()).groups}
    assert groups[GROUP].preferred_version.group_version == "example.com/v1"
    resources = (await objs.get_api_resources(GROUP, "v1")).resources
    by_name = {r.name: r for r in resources}
    assert by_name["widgets"].kind == "Widget" and by_name["widgets"].namespaced
    assert by_name["widgets"].short_names == ["wd"] and by_name["widgets"].categories == ["all"]
    assert by_name["widgets/status"].verbs == ["get", "patch", "update"]
    assert by_name["widgets/scale"].group == "autoscaling" and by_name["widgets/scale"].kind == "Scale"

    await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("one"))
    listed = await objs.list_namespaced_custom_object(GROUP, "v1", NS, "widgets")
    assert listed["kind"] == "WidgetList" and listed["apiVersion"] == "example.com/v1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]

    # a CRD must be named <plural>.<group> and carry a schema for each version
    bad = copy.deepcopy(WIDGET_CRD)
    bad["metadata"]["name"] = "wrong.example.com"
    err = await api_error(ext.create_custom_resource_definition(bad), 422, "Invalid")
    assert any(c["field"] == "metadata.name" for c in err["details"]["causes"])
    no_schema = copy.deepcopy(WIDGET_CRD)
    no_schema["metadata"]["name"] = "others.example.com"
    no_schema["spec"]["names"] = {"plural": "others", "kind": "Other"}
    del no_schema["spec"]["versions"][0]["schema"]
    err = await api_error(ext.create_custom_resource_definition(no_schema), 422, "Invalid")
    assert any(c["field"] == "spec.versions[0].schema.openAPIV3Schema" for c in err["details"]["causes"])

    # deleting the CRD deletes the instances, then the CRD, then the API
    await ext.delete_custom_resource_definition("widgets.example.com")

    async def gone() -> bool:
        try:
            await ext.read_custom_resource_definition("widgets.example.com")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(gone, "the CRD to be deleted")
    err = await api_error(objs.list_namespaced_custom_object(GROUP, "v1", NS, "widgets"), 404, "NotFound")
    assert err["message"] == "the server could not find the requested resource"
    remaining = {g.name for g in (await client.ApisApi(k8s).get_api_versions()).groups}
    assert GROUP not in remaining


async def test_custom_object_crud_validation_and_defaults(k8s: ApiClient, widgets: Obj) -> None:
    objs: Any = client.CustomObjectsApi(k8s)
    created = await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("w", code="abc"))
    assert created["spec"] == {"size": "small", "code": "abc", "replicas": 1, "color": "blue"}
    meta = created["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    got = await objs.get_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w")
    assert got == created

    bad = widget("bad", size="huge", replicas=20, code="TOO-LONG", color=["x"])
    err = await api_error(objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", bad), 422, "Invalid")
    assert err["details"]["kind"] == "Widget" and err["details"]["group"] == GROUP and err["details"]["name"] == "bad"
    causes = {(c["field"], c["reason"]) for c in err["details"]["causes"]}
    assert causes == {
        ("spec.size", "FieldValueNotSupported"),
        ("spec.replicas", "FieldValueInvalid"),
        ("spec.code", "FieldValueTooLong"),
        ("spec.code", "FieldValueInvalid"),
        ("spec.color", "FieldValueInvalid"),
    }
    err = await api_error(
        objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", {**widget("r"), "spec": {}}), 422, "Invalid"
    )
    assert err["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}
    ]
    # apiVersion/kind must be present and right for custom resources
    no_kind = widget("nk")
    del no_kind["kind"]
    await api_error(objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", no_kind), 400, "BadRequest")
    wrong = {**widget("wk"), "kind": "Gadget"}
    await api_error(objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", wrong), 400, "BadRequest")

    # unknown fields are pruned (and reported when asked to be strict)
    extra = widget("x")
    extra["spec"]["unknown"] = 1
    extra["topLevel"] = True
    kept = await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", extra)
    assert "unknown" not in kept["spec"] and "topLevel" not in kept
    strict = widget("y")
    strict["spec"]["unknown"] = 1
    err = await api_error(
        objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", strict, field_validation="Strict"),
        400,
        "BadRequest",
    )
    assert 'unknown field "spec.unknown"' in err["message"]

    # replace: full validation, defaults re-applied, optimistic concurrency
    got["spec"] = {"size": "medium"}
    replaced = await objs.replace_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w", got)
    assert replaced["spec"] == {"size": "medium", "replicas": 1, "color": "blue"}
    assert replaced["metadata"]["generation"] == 2
    err = await api_error(objs.replace_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w", got), 409, "Conflict")
    assert err["message"].startswith('Operation cannot be fulfilled on widgets.example.com "w"')
    # without a resourceVersion a replace is refused (custom resources allow no unconditional update)
    err = await api_error(
        objs.replace_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w", widget("w", size="large")),
        422,
        "Invalid",
    )
    assert err["details"] == {
        "name": "w",
        "kind": "widgets",
        "group": GROUP,
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0x0: must be specified for an update",
                "field": "metadata.resourceVersion",
            }
        ],
    }
    # patches: merge and JSON patch; strategic merge is 415 for custom resources
    patched = await objs.patch_namespaced_custom_object(
        GROUP, "v1", NS, "widgets", "w", {"spec": {"tags": ["a"]}}, _content_type=MERGE
    )
    assert patched["spec"]["tags"] == ["a"] and patched["metadata"]["generation"] == 3
    patched = await objs.patch_namespaced_custom_object(
        GROUP, "v1", NS, "widgets", "w", [{"op": "add", "path": "/spec/tags/-", "value": "b"}]
    )
    assert patched["spec"]["tags"] == ["a", "b"]
    err = await api_error(
        objs.patch_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w", {"spec": {}}, _content_type=SMP),
        415,
        "UnsupportedMediaType",
    )
    assert err["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    err = await api_error(
        objs.patch_namespaced_custom_object(
            GROUP, "v1", NS, "widgets", "w", {"spec": {"replicas": 99}}, _content_type=MERGE
        ),
        422,
        "Invalid",
    )
    assert err["details"]["causes"][0]["field"] == "spec.replicas"
    # server-side apply of a custom resource
    applied = await objs.patch_namespaced_custom_object(
        GROUP, "v1", NS, "widgets", "w", widget("w", size="medium", code="zz"), field_manager="ops", _content_type=APPLY
    )
    assert applied["spec"]["code"] == "zz"
    entry = next(m for m in applied["metadata"]["managedFields"] if m["manager"] == "ops")
    assert entry["operation"] == "Apply" and entry["fieldsV1"] == {"f:spec": {"f:code": {}, "f:size": {}}}
    # dry-run create is validated and defaulted but not stored
    dry = await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("dry"), dry_run="All")
    assert dry["spec"]["replicas"] == 1 and "resourceVersion" not in dry["metadata"]
    await api_error(objs.get_namespaced_custom_object(GROUP, "v1", NS, "widgets", "dry"), 404, "NotFound")
    await api_error(
        objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("dry2", size="bad"), dry_run="All"),
        422,
        "Invalid",
    )


async def test_status_and_scale_subresources(k8s: ApiClient, widgets: Obj) -> None:
    objs: Any = client.CustomObjectsApi(k8s)
    await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("w", replicas=2))
    # status written on create or through the main resource is ignored
    body = widget("s")
    body["status"] = {"phase": "Bogus"}
    created = await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", body)
    assert "status" not in created

    status: Any = await objs.patch_namespaced_custom_object_status(
        GROUP,
        "v1",
        NS,
        "widgets",
        "w",
        {"status": {"phase": "Ready", "replicas": 2, "selector": "app=w"}, "spec": {"size": "large"}},
        _content_type=MERGE,
    )
    assert status["status"] == {"phase": "Ready", "replicas": 2, "selector": "app=w"}
    assert status["spec"]["size"] == "small" and status["metadata"]["generation"] == 1
    full = await objs.get_namespaced_custom_object_status(GROUP, "v1", NS, "widgets", "w")
    full["status"]["phase"] = "Degraded"
    replaced = await objs.replace_namespaced_custom_object_status(GROUP, "v1", NS, "widgets", "w", full)
    assert replaced["status"]["phase"] == "Degraded"
    err = await api_error(
        objs.replace_namespaced_custom_object_status(GROUP, "v1", NS, "widgets", "w", full), 409, "Conflict"
    )
    assert "the object has been modified" in err["message"]
    main = await objs.patch_namespaced_custom_object(
        GROUP, "v1", NS, "widgets", "w", {"status": {"phase": "Ignored"}}, _content_type=MERGE
    )
    assert main["status"]["phase"] == "Degraded" and main["metadata"]["generation"] == 1

    scale = await objs.get_namespaced_custom_object_scale(GROUP, "v1", NS, "widgets", "w")
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 2, "selector": "app=w"}
    scaled = await objs.patch_namespaced_custom_object_scale(
        GROUP, "v1", NS, "widgets", "w", {"spec": {"replicas": 4}}, _content_type=MERGE
    )
    assert scaled["spec"] == {"replicas": 4}
    scale = await objs.get_namespaced_custom_object_scale(GROUP, "v1", NS, "widgets", "w")
    scale["spec"]["replicas"] = 6
    replaced_scale = await objs.replace_namespaced_custom_object_scale(GROUP, "v1", NS, "widgets", "w", scale)
    assert replaced_scale["spec"] == {"replicas": 6}
    w = await objs.get_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w")
    assert w["spec"]["replicas"] == 6 and w["metadata"]["generation"] == 3
    assert w["metadata"]["resourceVersion"] == replaced_scale["metadata"]["resourceVersion"]
    await api_error(
        objs.replace_namespaced_custom_object_scale(GROUP, "v1", NS, "widgets", "w", scale), 409, "Conflict"
    )
    err = await api_error(
        objs.patch_namespaced_custom_object_scale(
            GROUP, "v1", NS, "widgets", "w", {"spec": {"replicas": 50}}, _content_type=MERGE
        ),
        422,
        "Invalid",
    )
    assert "spec.replicas" in err["message"]
    await api_error(
        objs.patch_namespaced_custom_object_scale(
            GROUP, "v1", NS, "widgets", "w", {"spec": {"replicas": -1}}, _content_type=MERGE
        ),
        422,
        "Invalid",
    )
    await api_error(objs.get_namespaced_custom_object_scale(GROUP, "v1", NS, "widgets", "nope"), 404, "NotFound")


async def test_cluster_scoped_custom_resources(k8s: ApiClient, gadgets: Obj) -> None:
    objs: Any = client.CustomObjectsApi(k8s)
    gadget: Obj = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"x": 1}}
    created = await objs.create_cluster_custom_object(GROUP, "v1", "gadgets", gadget)
    assert "namespace" not in created["metadata"] and created["metadata"]["generation"] == 1
    # no status subresource: status is ordinary content and changing it bumps generation
    patched = await objs.patch_cluster_custom_object(
        GROUP, "v1", "gadgets", "g", {"status": {"ok": True}}, _content_type=MERGE
    )
    assert patched["status"] == {"ok": True} and patched["metadata"]["generation"] == 2
    patched = await objs.patch_cluster_custom_object(
        GROUP, "v1", "gadgets", "g", {"metadata": {"labels": {"a": "b"}}}, _content_type=MERGE
    )
    assert patched["metadata"]["generation"] == 2
    await api_error(objs.get_cluster_custom_object_status(GROUP, "v1", "gadgets", "g"), 404, "NotFound")
    # a namespaced path for a cluster-scoped kind does not exist
    await api_error(objs.list_namespaced_custom_object(GROUP, "v1", NS, "gadgets"), 404, "NotFound")
    listed = await objs.list_cluster_custom_object(GROUP, "v1", "gadgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]


async def test_crd_storage_version_change(k8s: ApiClient, widgets: Obj) -> None:
    ext: Any = client.ApiextensionsV1Api(k8s)
    objs: Any = client.CustomObjectsApi(k8s)
    await objs.create_namespaced_custom_object(GROUP, "v1", NS, "widgets", widget("w"))
    crd = await ext.read_custom_resource_definition("widgets.example.com")
    v2 = copy.deepcopy(widgets["spec"]["versions"][0])
    v2["name"] = "v2"
    versions = [{**copy.deepcopy(widgets["spec"]["versions"][0]), "storage": False}, v2]
    patched = await ext.patch_custom_resource_definition(
        "widgets.example.com",
        {"metadata": {"resourceVersion": crd.metadata.resource_version}, "spec": {"versions": versions}},
        _content_type=MERGE,
    )
    assert patched.metadata.generation == 2 and patched.status.stored_versions == ["v1", "v2"]

    async def served() -> bool:
        try:
            await objs.list_namespaced_custom_object(GROUP, "v2", NS, "widgets")
        except ApiException:
            return False
        return True

    await eventually(served, "example.com/v2 to be served")
    as_v2 = await objs.get_namespaced_custom_object(GROUP, "v2", NS, "widgets", "w")
    assert as_v2["apiVersion"] == "example.com/v2" and as_v2["spec"]["size"] == "small"
    as_v1 = await objs.get_namespaced_custom_object(GROUP, "v1", NS, "widgets", "w")
    assert as_v1["apiVersion"] == "example.com/v1"
    assert as_v1["metadata"]["resourceVersion"] == as_v2["metadata"]["resourceVersion"]
    listed = await objs.list_namespaced_custom_object(GROUP, "v2", NS, "widgets")
    assert listed["apiVersion"] == "example.com/v2" and listed["items"][0]["apiVersion"] == "example.com/v2"
