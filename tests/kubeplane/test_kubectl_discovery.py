"""kubectl against discovery, /version, and get/describe of the built-in kinds."""

from __future__ import annotations

import json

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .conftest import configmap, manifests


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


async def test_api_resources_lists_builtins_with_kind_scope_short_names_and_verbs(kubectl: Kubectl) -> None:
    wide = _rows(await kubectl("api-resources", "-o", "wide", "--no-headers"))
    by_key = {(row[0], next(c for c in row if "/" in c or c == "v1")): row for row in wide}
    # name, shortnames, apiversion, namespaced, kind, verbs, categories
    assert by_key[("namespaces", "v1")][1:4] == ["ns", "v1", "false"]
    assert by_key[("configmaps", "v1")][1:5] == ["cm", "v1", "true", "ConfigMap"]
    assert by_key[("secrets", "v1")][1:4] == ["v1", "true", "Secret"]
    assert by_key[("pods", "v1")][1:5] == ["po", "v1", "true", "Pod"]
    assert by_key[("events", "v1")][1:5] == ["ev", "v1", "true", "Event"]
    assert by_key[("events", "events.k8s.io/v1")][4] == "Event"
    assert by_key[("leases", "coordination.k8s.io/v1")][1:4] == ["coordination.k8s.io/v1", "true", "Lease"]
    hpa = by_key[("horizontalpodautoscalers", "autoscaling/v2")]
    assert hpa[1:5] == ["hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"]
    crd = by_key[("customresourcedefinitions", "apiextensions.k8s.io/v1")]
    assert crd[1:5] == ["crd,crds", "apiextensions.k8s.io/v1", "false", "CustomResourceDefinition"]
    assert by_key[("configmaps", "v1")][5] == "create,delete,deletecollection,get,list,patch,update,watch"

    cluster_scoped = set((await kubectl("api-resources", "--namespaced=false", "-o", "name")).split())
    assert {"namespaces", "customresourcedefinitions.apiextensions.k8s.io"} <= cluster_scoped
    assert not {"configmaps", "pods", "leases.coordination.k8s.io"} & cluster_scoped

    versions = (await kubectl("api-versions")).split()
    for gv in ("v1", "apiextensions.k8s.io/v1", "autoscaling/v2", "coordination.k8s.io/v1", "events.k8s.io/v1"):
        assert gv in versions


async def test_raw_discovery_documents_and_version(kubectl: Kubectl) -> None:
    core = json.loads(await kubectl("get", "--raw", "/api"))
    assert core["kind"] == "APIVersions" and core["versions"] == ["v1"]
    groups = json.loads(await kubectl("get", "--raw", "/apis"))
    assert groups["kind"] == "APIGroupList"
    names = {g["name"]: g for g in groups["groups"]}
    assert names["autoscaling"]["preferredVersion"]["groupVersion"] == "autoscaling/v2"
    group = json.loads(await kubectl("get", "--raw", "/apis/coordination.k8s.io"))
    assert group["kind"] == "APIGroup" and group["versions"] == [
        {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}
    ]
    v1 = json.loads(await kubectl("get", "--raw", "/api/v1"))
    assert v1["kind"] == "APIResourceList" and v1["groupVersion"] == "v1"
    res = {r["name"]: r for r in v1["resources"]}
    assert res["pods"]["kind"] == "Pod" and res["pods"]["namespaced"] is True
    assert res["pods"]["shortNames"] == ["po"] and "watch" in res["pods"]["verbs"]
    assert res["pods/status"]["verbs"] == ["get", "patch", "update"] and res["pods/status"]["kind"] == "Pod"
    assert res["namespaces"]["namespaced"] is False
    assert res["namespaces/finalize"]["verbs"] == ["update"]

    version = json.loads(await kubectl("version", "-o", "json"))
    assert version["serverVersion"]["major"] == "1" and version["serverVersion"]["minor"] == "32"
    assert version["serverVersion"]["gitVersion"].startswith("v1.32.")
    raw = json.loads(await kubectl("get", "--raw", "/version"))
    assert raw == version["serverVersion"]


async def test_get_and_describe_builtins(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    objects = [
        configmap("app-config", {"a": "1", "b": "2"}, labels={"app": "web"}),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "type": "Opaque",
            "stringData": {"user": "admin"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80, "name": "http"}]}]
            },
        },
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader"},
            "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 15},
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 5,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                    }
                ],
            },
        },
    ]
    out = await kubectl("create", "-f", "-", stdin=manifests(*objects))
    assert out.split("\n")[:5] == [
        "configmap/app-config created",
        "secret/creds created",
        "pod/web-0 created",
        "lease.coordination.k8s.io/leader created",
        "horizontalpodautoscaler.autoscaling/web created",
    ]

    assert _rows(await kubectl("get", "configmaps", "app-config", "--no-headers"))[0][:2] == ["app-config", "2"]
    secret_row = _rows(await kubectl("get", "secret", "creds", "--no-headers"))[0]
    assert secret_row[:3] == ["creds", "Opaque", "1"]
    assert await kubectl("get", "secret", "creds", "-o", "jsonpath={.data.user}") == "YWRtaW4="
    pod_row = _rows(await kubectl("get", "po", "web-0", "--no-headers"))[0]
    assert pod_row[0] == "web-0" and pod_row[1].endswith("/1")  # its lifecycle is the kubelet stand-in's
    assert _rows(await kubectl("get", "leases", "--no-headers"))[0][:2] == ["leader", "replica-a"]
    hpa_row = _rows(await kubectl("get", "hpa", "web", "--no-headers"))[0]
    assert hpa_row[:5] == ["web", "Deployment/web", "<unknown>/80%", "2", "5"]
    ns_rows = _rows(await kubectl("get", "ns", "--no-headers"))
    assert [r[:2] for r in ns_rows] == [
        ["default", "Active"],
        ["kube-node-lease", "Active"],
        ["kube-public", "Active"],
        ["kube-system", "Active"],
    ]

    described = await kubectl("describe", "configmap", "app-config")
    assert "Name:         app-config" in described and "Labels:       app=web" in described
    assert "a:\n----\n1" in described
    described = await kubectl("describe", "pod", "web-0")
    assert "Image:" in described and "nginx:1.27" in described and "80/TCP" in described
    described = await kubectl("describe", "lease", "leader")
    assert "Holder Identity:" in described and "replica-a" in described
    described = await kubectl("describe", "hpa", "web")
    assert "Reference:" in described and "Deployment/web" in described
    assert "Min replicas:" in described and "Max replicas:" in described
    described = await kubectl("describe", "namespace", "default")
    assert "Status:       Active" in described

    # -o yaml/json, -o name and custom columns render the stored object
    got = json.loads(await kubectl("get", "cm", "app-config", "-o", "json"))
    assert got["data"] == {"a": "1", "b": "2"} and got["metadata"]["namespace"] == "default"
    names = (await kubectl("get", "cm,secret", "-o", "name")).split()
    assert "configmap/app-config" in names and "secret/creds" in names
    assert names.index("configmap/app-config") < names.index("secret/creds")
    cols = await kubectl("get", "pods", "-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image")
    assert _rows(cols) == [["NAME", "IMAGE"], ["web-0", "nginx:1.27"]]


async def test_events_seen_through_both_apis(kubectl: Kubectl) -> None:
    core_event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "core-ev"},
        "involvedObject": {"kind": "ConfigMap", "name": "cfg", "namespace": "default"},
        "reason": "Tested",
        "message": "from core",
        "type": "Normal",
        "source": {"component": "tester"},
        "count": 2,
    }
    new_event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "new-ev"},
        "regarding": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Scheduled",
        "note": "from events.k8s.io",
        "type": "Warning",
        "action": "Bind",
        "reportingController": "scheduler",
        "reportingInstance": "scheduler-1",
        "eventTime": "2024-01-01T00:00:00.000000Z",
    }
    out = await kubectl("create", "-f", "-", stdin=manifests(core_event, new_event))
    assert out.split("\n")[:2] == ["event/core-ev created", "event.events.k8s.io/new-ev created"]
    rows = _rows(await kubectl("get", "events", "--sort-by=.metadata.name", "--no-headers"))
    assert [r[1:4] for r in rows] == [["Normal", "Tested", "configmap/cfg"], ["Warning", "Scheduled", "pod/p1"]]
    as_core = json.loads(await kubectl("get", "events", "new-ev", "-o", "json"))
    assert as_core["apiVersion"] == "v1" and as_core["message"] == "from events.k8s.io"
    assert as_core["involvedObject"]["name"] == "p1" and as_core["reportingComponent"] == "scheduler"
    as_new = json.loads(await kubectl("get", "events.v1.events.k8s.io", "core-ev", "-o", "json"))
    assert as_new["apiVersion"] == "events.k8s.io/v1" and as_new["note"] == "from core"
    assert as_new["regarding"]["name"] == "cfg" and as_new["deprecatedCount"] == 2
    names = (await kubectl("get", "events.v1.events.k8s.io", "-o", "name")).split()
    assert names == ["event.events.k8s.io/core-ev", "event.events.k8s.io/new-ev"]
    picked = await kubectl("get", "events", "--field-selector", "involvedObject.kind=Pod", "-o", "name")
    assert picked.split() == ["event/new-ev"]
    described = await kubectl("describe", "events", "core-ev")
    assert "from core" in described and "Tested" in described
    # unknown fields in the events.k8s.io form are caught against that form, not the stored one
    bad = dict(new_event, metadata={"name": "bad-ev"}, message="core field name")
    res = await kubectl.run("create", "-f", "-", stdin=manifests(bad))
    assert res.returncode == 1 and 'strict decoding error: unknown field "message"' in res.stderr
    await kubectl("delete", "events.v1.events.k8s.io", "core-ev")
    assert (await kubectl("get", "events", "-o", "name")).split() == ["event/new-ev"]
