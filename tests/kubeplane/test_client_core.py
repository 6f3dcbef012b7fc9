"""kubernetes-asyncio against discovery, /version and the built-in kinds: namespaces,
configmaps, secrets, pods, events (core/v1 and events.k8s.io/v1), leases, HPAs; object
metadata, generateName, namespace admission, name validation and Status errors.

The generated API classes are typed `Any` here: their annotations do not admit the dict bodies
and `_content_type` overrides that the client accepts at run time."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from .conftest import configmap, eventually, namespace

UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


async def api_error(call: Awaitable[Any], code: int, reason: str) -> dict[str, Any]:
    """Await a call that must fail with a Kubernetes Status of `code`/`reason`; return the Status."""
    with pytest.raises(ApiException) as info:
        await call
    exc = info.value
    assert exc.status == code, (exc.status, exc.body)
    body: dict[str, Any] = json.loads(exc.body or "null")
    assert body["kind"] == "Status" and body["status"] == "Failure", body
    assert body["code"] == code and body["reason"] == reason, body
    return body


async def test_discovery_and_version(k8s: ApiClient) -> None:
    core = await client.CoreApi(k8s).get_api_versions()
    assert core.versions == ["v1"]
    groups = {g.name: g for g in (await client.ApisApi(k8s).get_api_versions()).groups}
    for name, preferred in (
        ("apiextensions.k8s.io", "v1"),
        ("autoscaling", "v2"),
        ("coordination.k8s.io", "v1"),
        ("events.k8s.io", "v1"),
    ):
        assert groups[name].preferred_version.version == preferred
    resources = {r.name: r for r in (await client.CoreV1Api(k8s).get_api_resources()).resources}
    assert resources["configmaps"].kind == "ConfigMap" and resources["configmaps"].namespaced
    assert resources["configmaps"].short_names == ["cm"]
    assert sorted(resources["configmaps"].verbs) == sorted(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    )
    assert not resources["namespaces"].namespaced and resources["namespaces"].short_names == ["ns"]
    assert resources["pods/status"].verbs == ["get", "patch", "update"]
    lease_res = {r.name: r for r in (await client.CoordinationV1Api(k8s).get_api_resources()).resources}
    assert lease_res["leases"].kind == "Lease" and lease_res["leases"].namespaced
    hpa_res = {r.name: r for r in (await client.AutoscalingV2Api(k8s).get_api_resources()).resources}
    assert hpa_res["horizontalpodautoscalers"].short_names == ["hpa"]
    assert hpa_res["horizontalpodautoscalers/status"].kind == "HorizontalPodAutoscaler"
    crd_res = {r.name: r for r in (await client.ApiextensionsV1Api(k8s).get_api_resources()).resources}
    assert crd_res["customresourcedefinitions"].short_names == ["crd", "crds"]
    assert not crd_res["customresourcedefinitions"].namespaced

    version = await client.VersionApi(k8s).get_code()
    assert (version.major, version.minor) == ("1", "32") and version.git_version.startswith("v1.32.")


async def test_fresh_cluster_namespaces_and_namespace_lifecycle(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    names = [ns.metadata.name for ns in (await core.list_namespace()).items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    for ns in (await core.list_namespace()).items:
        assert ns.status.phase == "Active" and ns.spec.finalizers == ["kubernetes"]

    created = await core.create_namespace(namespace("team"))
    assert created.metadata.labels == {"kubernetes.io/metadata.name": "team"}
    # namespaced objects need an existing namespace...
    err = await api_error(core.create_namespaced_config_map("absent", configmap("c")), 404, "NotFound")
    assert err["message"] == 'namespaces "absent" not found'
    # ...that is not terminating
    await core.create_namespaced_config_map("team", configmap("held", finalizers=["example.com/hold"]))
    await core.delete_namespace("team")
    terminating = await core.read_namespace("team")
    assert terminating.status.phase == "Terminating" and terminating.metadata.deletion_timestamp is not None
    err = await api_error(core.create_namespaced_config_map("team", configmap("late")), 403, "Forbidden")
    assert "unable to create new content in namespace team because it is being terminated" in err["message"]
    assert err["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    await core.patch_namespaced_config_map(
        "held", "team", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
    )

    async def gone() -> bool:
        try:
            await core.read_namespace("team")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(gone, "namespace team to be removed once its content is gone")
    err = await api_error(core.delete_namespace("default"), 403, "Forbidden")
    assert err["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'


async def test_object_metadata_resource_versions_and_generate_name(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    a = await core.create_namespaced_config_map("default", configmap("a", {"k": "v"}))
    b = await core.create_namespaced_config_map("default", configmap("b"))
    assert UID.match(a.metadata.uid) and a.metadata.uid != b.metadata.uid
    assert a.metadata.creation_timestamp is not None and a.metadata.namespace == "default"
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.metadata.generation is None
    a.data["k"] = "w"
    replaced = await core.replace_namespaced_config_map("a", "default", a)
    assert int(replaced.metadata.resource_version) > int(b.metadata.resource_version)
    assert replaced.metadata.uid == a.metadata.uid
    assert replaced.metadata.creation_timestamp == a.metadata.creation_timestamp
    # dry-run updates answer the would-be object and change nothing
    replaced.data["k"] = "dry"
    dry = await core.replace_namespaced_config_map("a", "default", replaced, dry_run="All")
    assert dry.data == {"k": "dry"} and dry.metadata.resource_version == replaced.metadata.resource_version
    assert (await core.read_namespaced_config_map("a", "default")).data == {"k": "w"}
    listing = await core.list_namespaced_config_map("default")
    assert int(listing.metadata.resource_version) >= int(replaced.metadata.resource_version)
    # system metadata sent by a client is ignored
    forged = configmap("c", uid="not-a-uid", creationTimestamp="2000-01-01T00:00:00Z", generation=7)
    c = await core.create_namespaced_config_map("default", forged)
    assert c.metadata.uid != "not-a-uid" and c.metadata.creation_timestamp.year > 2000
    assert c.metadata.generation is None
    # resourceVersion must not be set on create
    await api_error(
        core.create_namespaced_config_map("default", configmap("d", resourceVersion="5")), 400, "BadRequest"
    )

    gen = await core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    assert re.match(r"^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$", gen.metadata.name)
    assert gen.metadata.generate_name == "gen-"
    # neither name nor generateName
    err = await api_error(core.create_namespaced_config_map("default", {"metadata": {}}), 422, "Invalid")
    assert err["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }
    ]


async def test_name_validation_and_status_errors(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    err = await api_error(core.create_namespaced_config_map("default", configmap("UPPER")), 422, "Invalid")
    assert err["message"].startswith('ConfigMap "UPPER" is invalid: metadata.name: Invalid value: "UPPER": ')
    assert err["details"]["name"] == "UPPER" and err["details"]["kind"] == "ConfigMap"
    assert err["details"]["causes"][0]["field"] == "metadata.name"
    assert err["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    await api_error(core.create_namespace(namespace("has.dot")), 422, "Invalid")
    await api_error(core.create_namespace(namespace("x" * 64)), 422, "Invalid")
    await api_error(core.create_namespaced_secret("default", {"metadata": {"name": "-bad-"}}), 422, "Invalid")

    await core.create_namespaced_config_map("default", configmap("dup"))
    err = await api_error(core.create_namespaced_config_map("default", configmap("dup")), 409, "AlreadyExists")
    assert err["message"] == 'configmaps "dup" already exists'
    assert err["details"] == {"name": "dup", "kind": "configmaps"}
    err = await api_error(core.read_namespaced_config_map("nope", "default"), 404, "NotFound")
    assert err["message"] == 'configmaps "nope" not found'
    assert err["details"] == {"name": "nope", "kind": "configmaps"}
    err = await api_error(core.read_namespaced_secret("nope", "default"), 404, "NotFound")
    assert err["message"] == 'secrets "nope" not found'
    stale = await core.read_namespaced_config_map("dup", "default")
    await core.patch_namespaced_config_map("dup", "default", {"data": {"x": "1"}})
    stale.data = {"y": "2"}
    err = await api_error(core.replace_namespaced_config_map("dup", "default", stale), 409, "Conflict")
    assert err["message"] == (
        'Operation cannot be fulfilled on configmaps "dup": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    # a body whose name disagrees with the URL
    err = await api_error(core.replace_namespaced_config_map("dup", "default", configmap("other")), 400, "BadRequest")
    assert "does not match the name on the URL" in err["message"]


async def test_secrets_and_pods(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    secret = await core.create_namespaced_secret(
        "default", {"metadata": {"name": "s"}, "stringData": {"user": "admin"}, "data": {"raw": "eA=="}}
    )
    assert secret.type == "Opaque" and secret.data == {"user": "YWRtaW4=", "raw": "eA=="}
    assert secret.string_data is None
    await api_error(
        core.create_namespaced_secret("default", {"metadata": {"name": "b"}, "data": {"k": "not base64!"}}),
        400,
        "BadRequest",
    )
    secret.type = "kubernetes.io/tls"
    err = await api_error(core.replace_namespaced_secret("s", "default", secret), 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == "type"

    pod = await core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "p", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
        },
    )
    spec = pod.spec
    assert spec.restart_policy == "Always" and spec.dns_policy == "ClusterFirst"
    assert spec.termination_grace_period_seconds == 30 and spec.scheduler_name == "default-scheduler"
    container = spec.containers[0]
    assert container.image_pull_policy == "IfNotPresent" and container.ports[0].protocol == "TCP"
    assert container.termination_message_path == "/dev/termination-log"
    err = await api_error(
        core.create_namespaced_pod("default", {"metadata": {"name": "q"}, "spec": {"containers": []}}), 422, "Invalid"
    )
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"} in err["details"][
        "causes"
    ]
    # only a few pod spec fields are mutable
    await core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}})
    assert (await core.read_namespaced_pod("p", "default")).spec.containers[0].image == "nginx:1.28"
    err = await api_error(
        core.patch_namespaced_pod("p", "default", {"spec": {"restartPolicy": "Never"}}), 422, "Invalid"
    )
    assert "pod updates may not change fields other than" in err["message"]


async def test_events_through_both_apis_are_the_same_objects(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    events: Any = client.EventsV1Api(k8s)
    await core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "from-core"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started",
            "message": "core message",
            "type": "Normal",
            "source": {"component": "kubelet"},
            "count": 3,
            "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:00:05Z",
            # an eventTime makes it readable as events.k8s.io/v1 (whose client model requires one)
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "action": "Start",
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
        },
    )
    await events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "from-events"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "q", "namespace": "default"},
            "reason": "Scheduled",
            "note": "events message",
            "type": "Warning",
            "action": "Binding",
            "reportingController": "scheduler",
            "reportingInstance": "scheduler-1",
        },
    )
    core_list = {e.metadata.name: e for e in (await core.list_namespaced_event("default")).items}
    ev_list = {e.metadata.name: e for e in (await events.list_namespaced_event("default")).items}
    assert set(core_list) == set(ev_list) == {"from-core", "from-events"}
    # the core view of the events.k8s.io object...
    as_core = core_list["from-events"]
    assert as_core.involved_object.name == "q" and as_core.message == "events message"
    assert as_core.reporting_component == "scheduler" and as_core.type == "Warning"
    # ...and the events.k8s.io view of the core object
    as_new = ev_list["from-core"]
    assert as_new.regarding.name == "p" and as_new.note == "core message"
    assert as_new.deprecated_count == 3 and as_new.deprecated_source.component == "kubelet"
    assert as_new.reporting_controller == "kubelet"
    assert as_new.metadata.uid == core_list["from-core"].metadata.uid
    assert as_new.metadata.resource_version == core_list["from-core"].metadata.resource_version
    # a change through one API is seen through the other
    await core.patch_namespaced_event("from-core", "default", {"message": "edited"})
    assert (await events.read_namespaced_event("from-core", "default")).note == "edited"
    await core.delete_namespaced_event("from-events", "default")
    await api_error(events.read_namespaced_event("from-events", "default"), 404, "NotFound")
    # field selectors on event fields, in each API's own terms
    picked = await core.list_namespaced_event("default", field_selector="involvedObject.name=p,reason=Started")
    assert [e.metadata.name for e in picked.items] == ["from-core"]
    picked_new = await events.list_namespaced_event("default", field_selector="regarding.name=p")
    assert [e.metadata.name for e in picked_new.items] == ["from-core"]

    # validation: core/v1 keeps the legacy rules, events.k8s.io/v1 adds the strict ones
    odd = await core.create_namespaced_event(
        "default", {"metadata": {"name": "odd"}, "involvedObject": {"kind": "Pod", "name": "p"}, "type": "Odd"}
    )
    assert odd.type == "Odd"
    err = await api_error(
        core.create_namespaced_event(
            "default", {"metadata": {"name": "elsewhere"}, "involvedObject": {"namespace": "kube-system"}}
        ),
        422,
        "Invalid",
    )
    assert err["details"]["causes"][0]["field"] == "involvedObject.namespace"
    err = await api_error(
        events.create_namespaced_event(
            "default", {"metadata": {"name": "bad"}, "eventTime": "2024-01-01T00:00:00.000000Z", "type": "Odd"}
        ),
        422,
        "Invalid",
    )
    fields = {c["field"] for c in err["details"]["causes"]}
    assert fields == {"reportingController", "reportingInstance", "action", "reason", "type"}
    err = await api_error(
        events.patch_namespaced_event(
            "from-core", "default", {"note": "again"}, _content_type="application/merge-patch+json"
        ),
        422,
        "Invalid",
    )
    assert err["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "again": field is immutable', "field": "message"}
    ]


async def test_leases_and_horizontal_pod_autoscalers(k8s: ApiClient) -> None:
    leases: Any = client.CoordinationV1Api(k8s)
    lease = await leases.create_namespaced_lease(
        "kube-node-lease",
        {
            "metadata": {"name": "node-a"},
            "spec": {
                "holderIdentity": "node-a",
                "leaseDurationSeconds": 40,
                "renewTime": "2024-01-01T00:00:00.000000Z",
            },
        },
    )
    assert lease.spec.holder_identity == "node-a" and lease.spec.lease_duration_seconds == 40
    lease.spec.holder_identity = "node-b"
    lease.spec.lease_transitions = 1
    updated = await leases.replace_namespaced_lease("node-a", "kube-node-lease", lease)
    assert updated.spec.holder_identity == "node-b" and updated.spec.lease_transitions == 1
    # leader election relies on conflicts: a second writer with the old resourceVersion loses
    lease.spec.holder_identity = "node-c"
    await api_error(leases.replace_namespaced_lease("node-a", "kube-node-lease", lease), 409, "Conflict")
    err = await api_error(
        leases.create_namespaced_lease("default", {"metadata": {"name": "x"}, "spec": {"leaseDurationSeconds": 0}}),
        422,
        "Invalid",
    )
    assert err["details"]["causes"][0]["field"] == "spec.leaseDurationSeconds"
    assert [x.metadata.name for x in (await leases.list_lease_for_all_namespaces()).items] == ["node-a"]

    hpas: Any = client.AutoscalingV2Api(k8s)
    hpa = await hpas.create_namespaced_horizontal_pod_autoscaler(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 4,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                    }
                ],
            },
        },
    )
    assert hpa.metadata.generation == 1
    assert hpa.spec.metrics[0].resource.target.average_utilization == 60
    status = {"status": {"currentReplicas": 2, "desiredReplicas": 3}}
    await hpas.patch_namespaced_horizontal_pod_autoscaler_status("web", "default", status)
    got = await hpas.read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert got.status.current_replicas == 2 and got.metadata.generation == 1
    await hpas.patch_namespaced_horizontal_pod_autoscaler("web", "default", {"spec": {"maxReplicas": 6}})
    got = await hpas.read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert got.spec.max_replicas == 6 and got.metadata.generation == 2 and got.status.current_replicas == 2
    err = await api_error(
        hpas.create_namespaced_horizontal_pod_autoscaler(
            "default",
            {
                "metadata": {"name": "bad"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "minReplicas": 5, "maxReplicas": 2},
            },
        ),
        422,
        "Invalid",
    )
    assert err["details"]["causes"][0]["field"] == "spec.maxReplicas"
