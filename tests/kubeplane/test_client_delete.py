"""Deletion through kubernetes-asyncio: finalizers and deletionTimestamp, preconditions,
deletecollection with selectors, dry-run, and the watch events deletion produces.

The generated API classes are typed `Any` here: their annotations do not admit the dict bodies
and `_content_type` overrides that the client accepts at run time."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient

from .conftest import GROUP, Obj, configmap, widget
from .test_client_core import api_error

MERGE = "application/merge-patch+json"


async def test_finalizers_and_deletion_timestamp(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    created = await core.create_namespaced_config_map("default", configmap("f", finalizers=["example.com/one"]))
    rv = created.metadata.resource_version
    # an object with finalizers is only marked: the response is the object itself (which the
    # generated client would squeeze into a V1Status, so it is read raw)
    resp = await core.delete_namespaced_config_map("f", "default", _preload_content=False)
    marked = json.loads(await resp.read())
    assert resp.status == 200 and marked["kind"] == "ConfigMap"
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert int(marked["metadata"]["resourceVersion"]) > int(rv)
    live = await core.read_namespaced_config_map("f", "default")
    assert live.metadata.deletion_timestamp is not None and live.metadata.finalizers == ["example.com/one"]
    err = await api_error(
        core.patch_namespaced_config_map(
            "f", "default", {"metadata": {"finalizers": ["example.com/one", "example.com/two"]}}, _content_type=MERGE
        ),
        422,
        "Invalid",
    )
    assert err["details"]["causes"][0]["field"] == "metadata.finalizers"

    w = watch.Watch()
    async with w.stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=marked["metadata"]["resourceVersion"],
        timeout_seconds=1,
    ) as s:
        await core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": None}}, _content_type=MERGE)
        events = [(e["type"], e["object"].metadata.name) async for e in s]
    # removing the last finalizer deletes the object: one DELETED event
    assert events == [("DELETED", "f")]
    await api_error(core.read_namespaced_config_map("f", "default"), 404, "NotFound")

    # without finalizers a delete is immediate and answers a Status (for configmaps)
    await core.create_namespaced_config_map("default", configmap("g"))
    status = await core.delete_namespaced_config_map("g", "default")
    assert status.status == "Success" and status.details.name == "g" and status.details.kind == "configmaps"
    await api_error(core.delete_namespaced_config_map("g", "default"), 404, "NotFound")


async def test_delete_preconditions_and_dry_run(k8s: ApiClient, widgets: Obj) -> None:
    core: Any = client.CoreV1Api(k8s)
    cm = await core.create_namespaced_config_map("default", configmap("p"))
    wrong_uid = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="0000"))
    err = await api_error(core.delete_namespaced_config_map("p", "default", body=wrong_uid), 409, "Conflict")
    assert err["message"] == (
        'Operation cannot be fulfilled on configmaps "p": Precondition failed: UID in precondition: 0000, '
        f"UID in object meta: {cm.metadata.uid}"
    )
    wrong_rv = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1"))
    err = await api_error(core.delete_namespaced_config_map("p", "default", body=wrong_rv), 409, "Conflict")
    assert "Precondition failed: ResourceVersion in precondition: 1" in err["message"]
    # dry-run delete: answered, nothing deleted
    await core.delete_namespaced_config_map("p", "default", dry_run="All")
    assert (await core.read_namespaced_config_map("p", "default")).metadata.uid == cm.metadata.uid
    right = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=cm.metadata.uid, resource_version=cm.metadata.resource_version)
    )
    await core.delete_namespaced_config_map("p", "default", body=right)
    await api_error(core.read_namespaced_config_map("p", "default"), 404, "NotFound")

    # custom resources answer the deleted object itself
    objs: Any = client.CustomObjectsApi(k8s)
    created = await objs.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    await api_error(
        objs.delete_namespaced_custom_object(
            GROUP, "v1", "default", "widgets", "w", body={"preconditions": {"uid": "nope"}}
        ),
        409,
        "Conflict",
    )
    gone = await objs.delete_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    assert gone["kind"] == "Widget" and gone["metadata"]["uid"] == created["metadata"]["uid"]
    await api_error(objs.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w"), 404, "NotFound")


async def test_delete_collection_with_selectors(k8s: ApiClient, widgets: Obj) -> None:
    core: Any = client.CoreV1Api(k8s)
    for name, labels in (("a", {"t": "1"}), ("b", {"t": "1"}), ("c", {"t": "2"}), ("d", {})):
        await core.create_namespaced_config_map("default", configmap(name, labels=labels))
    await core.create_namespaced_config_map("default", configmap("e", labels={"t": "1"}, finalizers=["example.com/x"]))
    await core.delete_collection_namespaced_config_map("default", label_selector="t=1")
    remaining = await core.list_namespaced_config_map("default")
    assert [(i.metadata.name, i.metadata.deletion_timestamp is not None) for i in remaining.items] == [
        ("c", False),
        ("d", False),
        ("e", True),
    ]
    await core.delete_collection_namespaced_config_map("default", field_selector="metadata.name=c")
    assert [i.metadata.name for i in (await core.list_namespaced_config_map("default")).items] == ["d", "e"]
    await core.delete_collection_namespaced_config_map("default", dry_run="All")
    assert [i.metadata.name for i in (await core.list_namespaced_config_map("default")).items] == ["d", "e"]

    objs: Any = client.CustomObjectsApi(k8s)
    for name, size in (("s1", "small"), ("s2", "small"), ("l1", "large")):
        await objs.create_namespaced_custom_object(
            GROUP, "v1", "default", "widgets", widget(name, size=size, labels={"size": size})
        )
    await objs.delete_collection_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", label_selector="size=small"
    )
    left = await objs.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert [i["metadata"]["name"] for i in left["items"]] == ["l1"]
