"""Patches through kubernetes-asyncio: JSON merge, JSON patch (with test), strategic merge
for built-ins (lists merged by key), server-side apply with field managers and conflicts,
optimistic concurrency on patches, dry-run.

The generated API classes are typed `Any` here: their annotations do not admit the dict bodies
and `_content_type` overrides that the client accepts at run time."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from .conftest import configmap
from .test_client_core import api_error

MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _fields(cm: Any) -> dict[tuple[str, str], Any]:
    return {(m.manager, m.operation): m for m in cm.metadata.managed_fields or []}


async def test_merge_json_and_strategic_patches(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    await core.create_namespaced_config_map("default", configmap("c", {"a": "1", "b": "2"}, labels={"x": "y"}))
    got = await core.patch_namespaced_config_map("c", "default", {"data": {"a": None, "c": "3"}}, _content_type=MERGE)
    assert got.data == {"b": "2", "c": "3"}
    ops = [
        {"op": "test", "path": "/data/b", "value": "2"},
        {"op": "move", "from": "/data/b", "path": "/data/moved"},
        {"op": "copy", "from": "/data/c", "path": "/data/copied"},
        {"op": "add", "path": "/metadata/annotations", "value": {"note": "n"}},
    ]
    got = await core.patch_namespaced_config_map("c", "default", ops)
    assert got.data == {"c": "3", "moved": "2", "copied": "3"} and got.metadata.annotations == {"note": "n"}
    err = await api_error(
        core.patch_namespaced_config_map("c", "default", [{"op": "test", "path": "/data/c", "value": "9"}]),
        422,
        "Invalid",
    )
    assert "test failed" in err["message"]
    err = await api_error(
        core.patch_namespaced_config_map("c", "default", [{"op": "remove", "path": "/data/absent"}]), 422, "Invalid"
    )
    await api_error(
        core.patch_namespaced_config_map("c", "default", [{"op": "explode", "path": "/data"}]), 400, "BadRequest"
    )
    # strategic merge patch (the client's default for a dict body on built-ins)
    got = await core.patch_namespaced_config_map(
        "c", "default", {"data": {"s": "1"}, "metadata": {"labels": {"z": "w"}}}
    )
    assert got.data == {"c": "3", "moved": "2", "copied": "3", "s": "1"}
    assert got.metadata.labels == {"x": "y", "z": "w"}
    # a patch that carries a stale resourceVersion is a conflict; the current one succeeds
    stale = {"metadata": {"resourceVersion": "2"}, "data": {"q": "1"}}
    await api_error(core.patch_namespaced_config_map("c", "default", stale, _content_type=MERGE), 409, "Conflict")
    stale_json = [{"op": "replace", "path": "/metadata/resourceVersion", "value": "2"}]
    await api_error(core.patch_namespaced_config_map("c", "default", stale_json), 409, "Conflict")
    fresh = {"metadata": {"resourceVersion": got.metadata.resource_version}, "data": {"q": "1"}}
    got = await core.patch_namespaced_config_map("c", "default", fresh, _content_type=MERGE)
    assert got.data["q"] == "1"
    await api_error(core.patch_namespaced_config_map("missing", "default", {"data": {}}), 404, "NotFound")
    # dry-run patches answer the result without storing it
    dry = await core.patch_namespaced_config_map("c", "default", {"data": {"dry": "1"}}, dry_run="All")
    assert dry.data["dry"] == "1"
    assert "dry" not in (await core.read_namespaced_config_map("c", "default")).data


async def test_strategic_merge_keys_lists_by_name(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    await core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {"name": "a", "image": "img:1", "env": [{"name": "X", "value": "1"}]},
                    {"name": "b", "image": "img:1"},
                ],
                "tolerations": [{"key": "k", "operator": "Exists"}],
            },
        },
    )
    patch: dict[str, Any] = {"spec": {"containers": [{"name": "b", "image": "img:2"}]}}
    got = await core.patch_namespaced_pod("p", "default", patch)
    assert [(c.name, c.image) for c in got.spec.containers] == [("a", "img:1"), ("b", "img:2")]
    assert got.spec.containers[0].env[0].name == "X"
    # the same body as a JSON merge patch replaces the list wholesale (and is then refused: a pod's
    # containers cannot be removed)
    err = await api_error(core.patch_namespaced_pod("p", "default", patch, _content_type=MERGE), 422, "Invalid")
    assert "pod updates may not change fields" in err["message"]

    apps: Any = client.AppsV1Api(k8s)
    await apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "img:1",
                                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                                "ports": [{"containerPort": 80}],
                                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                            }
                        ],
                        "volumes": [{"name": "v", "emptyDir": {}}],
                    },
                },
            },
        },
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "env": [{"name": "B", "$patch": "delete"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 8080, "name": "alt"}],
                        }
                    ],
                    "volumes": [{"name": "w", "configMap": {"name": "cfg"}}],
                }
            }
        }
    }
    got = await apps.patch_namespaced_deployment("d", "default", patch)
    container = got.spec.template.spec.containers[0]
    assert [(e.name, e.value) for e in container.env] == [("A", "1"), ("C", "3")]
    assert [p.container_port for p in container.ports] == [80, 8080]
    assert [v.name for v in got.spec.template.spec.volumes] == ["v", "w"]
    assert container.volume_mounts[0].mount_path == "/v"


async def test_server_side_apply(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    body = configmap("s", {"a": "1", "b": "2"})
    got = await core.patch_namespaced_config_map("s", "default", body, field_manager="alice", _content_type=APPLY)
    assert got.data == {"a": "1", "b": "2"}
    alice = _fields(got)[("alice", "Apply")]
    assert alice.fields_v1 == {"f:data": {"f:a": {}, "f:b": {}}} and alice.fields_type == "FieldsV1"
    assert alice.api_version == "v1" and alice.time is not None

    conflicting = configmap("s", {"a": "x"})
    err = await api_error(
        core.patch_namespaced_config_map("s", "default", conflicting, field_manager="bob", _content_type=APPLY),
        409,
        "Conflict",
    )
    assert err["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert err["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]
    got = await core.patch_namespaced_config_map(
        "s", "default", conflicting, field_manager="bob", force=True, _content_type=APPLY
    )
    assert got.data == {"a": "x", "b": "2"}
    managers = _fields(got)
    assert managers[("alice", "Apply")].fields_v1 == {"f:data": {"f:b": {}}}
    assert managers[("bob", "Apply")].fields_v1 == {"f:data": {"f:a": {}}}

    # an Update writer takes ownership of what it changes, and apply then conflicts with it
    got = await core.patch_namespaced_config_map("s", "default", {"data": {"b": "3"}}, field_manager="editor")
    managers = _fields(got)
    assert "f:b" in managers[("editor", "Update")].fields_v1["f:data"]
    assert ("alice", "Apply") not in managers  # its only field moved away
    err = await api_error(
        core.patch_namespaced_config_map(
            "s", "default", configmap("s", {"b": "4"}), field_manager="alice", _content_type=APPLY
        ),
        409,
        "Conflict",
    )
    assert err["details"]["causes"][0]["message"] == 'conflict with "editor" using v1'

    # apply creates objects that do not exist yet, and honours dry-run
    await core.patch_namespaced_config_map(
        "fresh", "default", configmap("fresh", {"k": "v"}), field_manager="alice", _content_type=APPLY, dry_run="All"
    )
    await api_error(core.read_namespaced_config_map("fresh", "default"), 404, "NotFound")
    created = await core.patch_namespaced_config_map(
        "fresh", "default", configmap("fresh", {"k": "v"}), field_manager="alice", _content_type=APPLY
    )
    assert created.metadata.uid and created.data == {"k": "v"}
    # ... but not with a uid: a uid in an applied configuration is a precondition, and an
    # object that does not exist has none (kube-apiserver's TestCreateOnApplyFailsWithUID)
    with_uid = configmap("ghost", {"k": "v"})
    with_uid["metadata"]["uid"] = created.metadata.uid
    err = await api_error(
        core.patch_namespaced_config_map("ghost", "default", with_uid, field_manager="alice", _content_type=APPLY),
        409,
        "Conflict",
    )
    assert "Precondition failed: UID in precondition" in err["message"], err
    await api_error(core.read_namespaced_config_map("ghost", "default"), 404, "NotFound")
    # force is only for apply: the PatchOptions are invalid
    err = await api_error(
        core.patch_namespaced_config_map("s", "default", {"data": {"z": "1"}}, force=True, _content_type=MERGE),
        422,
        "Invalid",
    )
    assert err["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'
    )
    # apply bodies need apiVersion and kind
    await api_error(
        core.patch_namespaced_config_map(
            "s", "default", {"metadata": {"name": "s"}, "data": {}}, field_manager="alice", _content_type=APPLY
        ),
        400,
        "BadRequest",
    )
