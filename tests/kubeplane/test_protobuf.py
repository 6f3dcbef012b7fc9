"""Kubernetes protobuf request bodies.

Two halves: the real kubectl against the embedded server (every `kubectl create <kind>`
that sends protobuf must store exactly what the same command's JSON form stores), and
hand-encoded bodies for the wire-format edge cases, written with the tiny encoder below."""

from __future__ import annotations

import copy
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.errors import APIError
from kubeplane.protobuf import KINDS, PROTOBUF, REGISTRY, decode
from kubeplane.protobuf.decoder import MAX_DEPTH, Decoder, ProtobufError
from kubeplane.protobuf.descriptors import Registry
from kubeplane.testing import Kubectl
from kubeplane.tls import make_serving_cert

PB_HEADER = f"Content-Type: {PROTOBUF}"

# ---------------------------------------------------------------------- encoder


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers are 10-byte two's complement varints
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def vi(number: int, value: int | bool) -> bytes:
    return tag(number, 0) + varint(int(value))


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return tag(number, 2) + varint(len(data)) + data


def m(number: int, *parts: bytes) -> bytes:
    return ld(number, b"".join(parts))


def dbl(number: int, value: float) -> bytes:
    return tag(number, 1) + struct.pack("<d", value)


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return m(number, ld(1, key), ld(2, value))


def qty_entry(number: int, key: str, quantity: str) -> bytes:
    return m(number, ld(1, key), m(2, ld(1, quantity)))


def int_or_string(number: int, value: int | str) -> bytes:
    if isinstance(value, int):
        return m(number, vi(1, 0), vi(2, value), ld(3, ""))
    return m(number, vi(1, 1), vi(2, 0), ld(3, value))


def timestamp(number: int, seconds: int, nanos: int = 0) -> bytes:
    return m(number, vi(1, seconds), vi(2, nanos))


def meta(name: str, *more: bytes) -> bytes:
    # like gogo, write the always-present empty strings and the empty creationTimestamp
    base = ld(1, name) + ld(2, "") + ld(3, "") + ld(4, "") + ld(5, "") + ld(6, "") + vi(7, 0) + ld(8, b"")
    return m(1, base, *more)


def envelope(api_version: str, kind: str, *parts: bytes) -> bytes:
    return b"k8s\x00" + m(1, ld(1, api_version), ld(2, kind)) + m(2, *parts) + ld(3, "") + ld(4, "")


def decode_error(body: bytes) -> APIError:
    with pytest.raises(APIError) as info:
        decode(body)
    return info.value


# ---------------------------------------------------------------------- kubectl vs JSON


@dataclass(frozen=True)
class Case:
    id: str
    resource: str
    args: tuple[str, ...]  # "{name}" and "{ns}" are filled in per variant
    namespaced: bool = True
    protobuf: bool = True  # whether kubectl v1.32 sends this request body as protobuf
    ignore: tuple[str, ...] = ()  # dotted paths the server assigns per object


CASES = [
    Case("configmap", "configmap", ("create", "configmap", "{name}", "--from-literal=a=b", "--from-literal=c=d")),
    Case("configmap-binary", "configmap", ("create", "configmap", "{name}", "--from-file=blob={binfile}")),
    Case("configmap-env-file", "configmap", ("create", "configmap", "{name}", "--from-env-file={envfile}")),
    Case("secret-generic", "secret", ("create", "secret", "generic", "{name}", "--from-literal=k=v")),
    Case("secret-tls", "secret", ("create", "secret", "tls", "{name}", "--cert={certfile}", "--key={keyfile}")),
    Case(
        "secret-docker-registry",
        "secret",
        (
            "create",
            "secret",
            "docker-registry",
            "{name}",
            "--docker-server=registry.example",
            "--docker-username=u",
            "--docker-password=p",
        ),
    ),
    Case("namespace", "namespace", ("create", "namespace", "{name}"), namespaced=False),
    Case("serviceaccount", "serviceaccount", ("create", "serviceaccount", "{name}")),
    Case(
        "run",
        "pod",
        ("run", "{name}", "--image=nginx", "--labels=a=b", "--env=X=1", "--port=80", "--restart=Never"),
        protobuf=False,
        ignore=("status",),
    ),
    Case("deployment", "deployment", ("create", "deployment", "{name}", "--image=nginx", "--replicas=2")),
    Case(
        "deployment-port-zero-replicas",
        "deployment",
        ("create", "deployment", "{name}", "--image=nginx", "--port=8080", "--replicas=0"),
    ),
    Case(
        "deployment-two-images",
        "deployment",
        ("create", "deployment", "{name}", "--image=nginx", "--image=busybox"),
    ),
    Case(
        "role",
        "role",
        (
            "create",
            "role",
            "{name}",
            "--verb=get",
            "--verb=list",
            "--resource=pods",
            "--resource=deployments.apps",
            "--resource-name=one",
        ),
    ),
    Case(
        "clusterrole",
        "clusterrole",
        ("create", "clusterrole", "{name}", "--verb=get", "--non-resource-url=/logs/*"),
        namespaced=False,
    ),
    Case(
        "clusterrole-aggregation",
        "clusterrole",
        ("create", "clusterrole", "{name}", "--aggregation-rule=rbac.example.com/aggregate-to-view=true"),
        namespaced=False,
    ),
    Case(
        "rolebinding",
        "rolebinding",
        (
            "create",
            "rolebinding",
            "{name}",
            "--role=reader",
            "--user=alice",
            "--group=devs",
            "--serviceaccount={ns}:robot",
        ),
    ),
    Case(
        "clusterrolebinding",
        "clusterrolebinding",
        ("create", "clusterrolebinding", "{name}", "--clusterrole=view", "--user=alice"),
        namespaced=False,
    ),
    Case(
        "service-clusterip",
        "service",
        ("create", "service", "clusterip", "{name}", "--tcp=80:8080", "--tcp=443:8443"),
        ignore=("spec.clusterIP", "spec.clusterIPs"),
    ),
    Case(
        "service-headless",
        "service",
        ("create", "service", "clusterip", "{name}", "--clusterip=None", "--tcp=80:8080"),
    ),
    Case(
        "service-nodeport",
        "service",
        ("create", "service", "nodeport", "{name}", "--tcp=80:8080"),
        ignore=("spec.clusterIP", "spec.clusterIPs", "spec.ports.nodePort"),
    ),
    Case(
        "service-externalname",
        "service",
        ("create", "service", "externalname", "{name}", "--external-name=example.com"),
        ignore=("spec.clusterIP", "spec.clusterIPs"),  # the embedded server allocates one (a real one does not)
    ),
    Case("quota", "resourcequota", ("create", "quota", "{name}", "--hard=pods=3,requests.cpu=500m,limits.memory=1Gi")),
    Case("quota-scoped", "resourcequota", ("create", "quota", "{name}", "--hard=pods=3", "--scopes=BestEffort")),
]


def _drop(obj: Any, path: list[str]) -> None:
    if isinstance(obj, list):
        for item in obj:
            _drop(item, path)
    elif isinstance(obj, dict) and path:
        if len(path) == 1:
            obj.pop(path[0], None)
        else:
            _drop(obj.get(path[0]), path[1:])


def normalize(obj: dict[str, Any], case: Case, names: dict[str, str]) -> dict[str, Any]:
    """What must not differ between two objects made by the same command: everything but
    identity, times and whatever the server assigns."""
    out = copy.deepcopy(obj)
    md = out["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "name", "namespace"):
        md.pop(key, None)
    for item in md.get("managedFields", []):
        item.pop("time", None)
    for path in case.ignore:
        _drop(out, path.split("."))
    text = json.dumps(out, sort_keys=True)
    for old, new in names.items():
        text = text.replace(old, new)
    result: dict[str, Any] = json.loads(text)
    return result


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_kubectl_protobuf_create_matches_json(
    apiserver: EmbeddedAPIServer, kubectl: Kubectl, tmp_path: Path, case: Case
) -> None:
    files = {name: tmp_path / name for name in ("binfile", "envfile", "certfile", "keyfile")}
    files["binfile"].write_bytes(b"\x00\x01\xfe\xffnot utf-8\x80")
    files["envfile"].write_text("A=1\nB=two words\n")
    cert = make_serving_cert(["tls.example"])
    files["certfile"].write_bytes(cert.cert_pem)
    files["keyfile"].write_bytes(cert.key_pem)
    variants = {"pb": ("viapb", f"{case.id}-viapb"), "json": ("viajson", f"{case.id}-viajson")}
    for ns, _ in variants.values():
        await kubectl("create", "namespace", ns)
    if case.resource == "rolebinding":
        for ns, _ in variants.values():
            await kubectl("create", "role", "reader", "--verb=get", "--resource=pods", "-n", ns)

    def argv(ns: str, name: str) -> list[str]:
        args = [a.format(name=name if not case.namespaced else case.id, ns=ns, **files) for a in case.args]
        return [*args, "-n", ns] if case.namespaced else args

    ns, name = variants["pb"]
    direct = await kubectl.run(*argv(ns, name), "-v=8")
    direct.check()
    # -v=8 logs the request headers: confirm which body format this command really sends
    assert (PB_HEADER in direct.stderr) == case.protobuf, direct.stderr

    ns, name = variants["json"]
    as_json = await kubectl(*argv(ns, name), "--dry-run=client", "-o", "json")
    created = await kubectl.run("create", "-f", "-", *(["-n", ns] if case.namespaced else []), "-v=8", stdin=as_json)
    created.check()
    assert PB_HEADER not in created.stderr

    stored = {}
    for key, (ns, name) in variants.items():
        obj_name = name if not case.namespaced else case.id
        where = ["-n", ns] if case.namespaced else []
        stored[key] = json.loads(await kubectl("get", case.resource, obj_name, *where, "-o", "json"))
    # object names first: they contain the namespace names
    names = {variants["pb"][1]: "NAME", variants["json"][1]: "NAME", "viapb": "NS", "viajson": "NS"}
    assert normalize(stored["pb"], case, names) == normalize(stored["json"], case, names)


RICH_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "rich", "labels": {"app": "rich"}, "annotations": {"note": "x"}},
    "spec": {
        "volumes": [
            {
                "name": "cfg",
                "configMap": {
                    "name": "settings",
                    "items": [{"key": "a", "path": "a.txt", "mode": 256}],
                    "defaultMode": 420,
                    "optional": True,
                },
            },
            {"name": "sec", "secret": {"secretName": "creds", "optional": False}},
            {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
            {
                "name": "proj",
                "projected": {
                    "defaultMode": 288,
                    "sources": [
                        {"serviceAccountToken": {"audience": "api", "expirationSeconds": 3600, "path": "token"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "labels",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"},
                                    },
                                    {
                                        "path": "cpu",
                                        "resourceFieldRef": {
                                            "containerName": "app",
                                            "resource": "limits.cpu",
                                            "divisor": "1m",
                                        },
                                    },
                                ]
                            }
                        },
                        {"configMap": {"name": "settings", "items": [{"key": "b", "path": "b"}]}},
                    ],
                },
            },
            {
                "name": "eph",
                "ephemeral": {
                    "volumeClaimTemplate": {
                        "metadata": {"labels": {"t": "v"}},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "storageClassName": "fast",
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                },
            },
            {"name": "csi", "csi": {"driver": "x.csi.example", "readOnly": True, "volumeAttributes": {"k": "v"}}},
        ],
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "workingDir": "/srv",
                "ports": [
                    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                    {"containerPort": 9090, "hostPort": 9090, "protocol": "UDP", "hostIP": "0.0.0.0"},
                ],
                "envFrom": [
                    {"prefix": "CFG_", "configMapRef": {"name": "settings", "optional": True}},
                    {"secretRef": {"name": "creds"}},
                ],
                "env": [
                    {"name": "PLAIN", "value": "v"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k", "optional": True}}},
                ],
                "resources": {
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                    "requests": {"cpu": "250m", "memory": "128Mi"},
                },
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
                    {"name": "scratch", "mountPath": "/tmp", "subPath": "x", "mountPropagation": "None"},
                ],
                "livenessProbe": {
                    "httpGet": {
                        "path": "/healthz",
                        "port": "http",
                        "scheme": "HTTP",
                        "httpHeaders": [{"name": "X-A", "value": "b"}],
                    },
                    "initialDelaySeconds": 5,
                    "periodSeconds": 10,
                    "timeoutSeconds": 2,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                    "terminationGracePeriodSeconds": 10,
                },
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
                "startupProbe": {"exec": {"command": ["cat", "/ready"]}, "failureThreshold": 30},
                "lifecycle": {"postStart": {"exec": {"command": ["echo", "hi"]}}, "preStop": {"sleep": {"seconds": 5}}},
                "securityContext": {
                    "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                    "runAsUser": 0,
                    "runAsNonRoot": False,
                    "readOnlyRootFilesystem": True,
                    "allowPrivilegeEscalation": False,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "stdin": True,
                "tty": True,
            },
            {"name": "grpc", "image": "grpc", "readinessProbe": {"grpc": {"port": 9000, "service": ""}}},
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 0,
        "activeDeadlineSeconds": 600,
        "dnsPolicy": "None",
        "dnsConfig": {
            "nameservers": ["1.1.1.1"],
            "searches": ["svc.local"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
        "nodeSelector": {"disk": "ssd"},
        "serviceAccountName": "default",
        "automountServiceAccountToken": False,
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a.local", "b.local"]}],
        "hostname": "rich",
        "subdomain": "sub",
        "securityContext": {
            "fsGroup": 2000,
            "runAsGroup": 3000,
            "supplementalGroups": [4000, 5000],
            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}],
            "fsGroupChangePolicy": "OnRootMismatch",
        },
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}
                ],
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "rich"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        },
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoExecute", "tolerationSeconds": 0},
            {"operator": "Exists"},
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["rich"]}]},
                "minDomains": 2,
            }
        ],
        "readinessGates": [{"conditionType": "example.com/ready"}],
        "os": {"name": "linux"},
    },
}


async def test_kubectl_debug_copy_round_trips_a_rich_pod_spec(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    """`kubectl debug --copy-to` reads a pod (JSON) into client-go's Go structs and creates
    the copy through the typed client (protobuf): every PodSpec field the copy keeps must
    come back exactly as the JSON-created original stored it."""
    await kubectl("create", "-f", "-", stdin=json.dumps(RICH_POD))
    keep = ["--keep-labels", "--keep-annotations", "--keep-liveness", "--keep-readiness", "--keep-startup"]
    result = await kubectl.run(
        "debug", "rich", "--copy-to=rich-copy", "--set-image=app=nginx:1.28", *keep, "--attach=false", "-v=8"
    )
    result.check()
    assert PB_HEADER in result.stderr
    original = json.loads(await kubectl("get", "pod", "rich", "-o", "json"))
    copied = json.loads(await kubectl("get", "pod", "rich-copy", "-o", "json"))
    expected = copy.deepcopy(original["spec"])
    expected["containers"][0]["image"] = "nginx:1.28"
    # encoding/json writes the template's zero creationTimestamp as null, as a real server shows it
    expected["volumes"][5]["ephemeral"]["volumeClaimTemplate"]["metadata"]["creationTimestamp"] = None
    assert copied["spec"] == expected
    assert copied["metadata"]["labels"] == original["metadata"]["labels"]
    assert copied["metadata"]["annotations"] == original["metadata"]["annotations"]


async def test_kubectl_autoscale_sends_autoscaling_v1_protobuf(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    """kubectl v1.32 autoscale posts an autoscaling/v1 HorizontalPodAutoscaler as protobuf;
    the server stores it as autoscaling/v2 and serves both versions of the same object."""
    await kubectl("create", "deployment", "web", "--image=nginx")
    result = await kubectl.run("autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=50", "-v=8")
    result.check()
    assert PB_HEADER in result.stderr
    assert "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers" in result.stderr
    v1 = json.loads(await kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json"))
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["maxReplicas"] == 3
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    v2 = json.loads(await kubectl("get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "json"))
    assert v2["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    ]
    assert v2["metadata"]["uid"] == v1["metadata"]["uid"]


async def test_kubectl_debug_node_creates_pod_from_protobuf(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}}')
    result = await kubectl.run("debug", "node/node1", "--image=busybox", "--attach=false", "-v=8")
    result.check()
    assert PB_HEADER in result.stderr
    pods = json.loads(await kubectl("get", "pods", "-o", "json"))["items"]
    (pod,) = [p for p in pods if p["metadata"]["name"].startswith("node-debugger-node1-")]
    spec = pod["spec"]
    assert spec["nodeName"] == "node1"
    assert spec["hostPID"] is True
    assert spec["hostNetwork"] is True
    assert spec["volumes"][0]["name"] == "host-root"
    assert spec["volumes"][0]["hostPath"]["path"] == "/"
    assert spec["containers"][0]["volumeMounts"] == [{"name": "host-root", "mountPath": "/host"}]
    assert spec["tolerations"] == [{"operator": "Exists"}]


async def test_kubectl_drain_deletes_with_protobuf_delete_options(
    apiserver: EmbeddedAPIServer, kubectl: Kubectl
) -> None:
    await kubectl("create", "-f", "-", stdin='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}}')
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "onnode"},
        "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    await kubectl("create", "-f", "-", stdin=json.dumps(pod))
    result = await kubectl.run(
        "drain", "node1", "--disable-eviction", "--force", "--grace-period=0", "--timeout=20s", "-v=8"
    )
    result.check()
    # the typed client's DELETE carries a protobuf DeleteOptions{gracePeriodSeconds: 0}
    assert "DELETE " in result.stderr
    assert PB_HEADER in result.stderr
    gone = await kubectl.run("get", "pod", "onnode")
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr


# ---------------------------------------------------------------------- decoding: shapes


def test_decode_pod_nested_repeated_maps_and_metadata() -> None:
    fields_v1 = b'{"f:metadata":{"f:labels":{".":{}}}}'
    body = envelope(
        "v1",
        "Pod",
        meta(
            "web",
            entry(11, "app", "web"),
            entry(11, "tier", "front"),
            entry(12, "note", ""),
            m(13, ld(5, "apps/v1"), ld(1, "ReplicaSet"), ld(3, "web-1"), ld(4, "uid-1"), vi(6, True), vi(7, False)),
            ld(14, "example.com/cleanup"),
            ld(14, "example.com/other"),
            m(
                17,
                ld(1, "kubectl"),
                ld(2, "Update"),
                ld(3, "v1"),
                timestamp(4, 1700000000),
                ld(6, "FieldsV1"),
                m(7, ld(1, fields_v1)),
                ld(8, ""),
            ),
        ),
        m(
            2,
            m(
                2,
                ld(1, "app"),
                ld(2, "nginx:1.27"),
                ld(4, "--port=80"),
                ld(4, "--verbose"),
                m(6, ld(1, "http"), vi(2, 0), vi(3, 80), ld(4, "TCP"), ld(5, "")),
                m(6, ld(1, ""), vi(2, 0), vi(3, 0), ld(4, "UDP"), ld(5, "")),
                m(7, ld(1, "X"), ld(2, "1")),
                m(7, ld(1, "FROM"), ld(2, ""), m(3, m(3, m(1, ld(1, "cfg")), ld(2, "key"), vi(3, False)))),
                m(8, qty_entry(1, "cpu", "500m"), qty_entry(1, "memory", "1Gi"), qty_entry(2, "cpu", "250m")),
                m(
                    10,
                    m(1, m(2, ld(1, "/healthz"), int_or_string(2, "http"), ld(3, ""), ld(4, "HTTP"))),
                    vi(2, 3),
                    vi(3, 0),
                    vi(4, 10),
                ),
                vi(16, False),
            ),
            m(2, ld(1, "sidecar"), ld(2, "busybox"), ld(3, "sleep"), ld(3, "3600"), m(8)),
            ld(3, "Never"),
            vi(4, 0),
            m(7, ld(1, "disk"), ld(2, "ssd")),
        ),
        m(3),
    )
    assert decode(body) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web",
            "creationTimestamp": None,
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": ""},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-1",
                    "uid": "uid-1",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
            "finalizers": ["example.com/cleanup", "example.com/other"],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2023-11-14T22:13:20Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}},
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.27",
                    "args": ["--port=80", "--verbose"],
                    "ports": [
                        {"name": "http", "containerPort": 80, "protocol": "TCP"},
                        {"containerPort": 0, "protocol": "UDP"},
                    ],
                    "env": [
                        {"name": "X", "value": "1"},
                        {
                            "name": "FROM",
                            "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "key", "optional": False}},
                        },
                    ],
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m"}},
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                        "initialDelaySeconds": 3,
                        "periodSeconds": 10,
                    },
                },
                {"name": "sidecar", "image": "busybox", "command": ["sleep", "3600"], "resources": {}},
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"disk": "ssd"},
        },
        "status": {},
    }


def test_decode_bytes_fields_are_base64() -> None:
    secret = envelope(
        "v1",
        "Secret",
        meta("s"),
        entry(2, "bin", b"\x00\xff\xfe"),
        entry(2, "empty", b""),
        entry(4, "plain", "text"),
        ld(3, "Opaque"),
    )
    assert decode(secret) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s", "creationTimestamp": None},
        "data": {"bin": "AP/+", "empty": ""},
        "stringData": {"plain": "text"},
        "type": "Opaque",
    }
    cm = envelope("v1", "ConfigMap", meta("c"), vi(4, False), entry(3, "blob", b"\x80abc"), entry(2, "k", "v"))
    assert decode(cm)["binaryData"] == {"blob": "gGFiYw=="}
    assert decode(cm)["immutable"] is False  # *bool: an explicit false is data


def test_decode_time_and_micro_time() -> None:
    event = envelope(
        "v1",
        "Event",
        meta("e"),
        m(2, ld(1, "Pod"), ld(2, "default"), ld(3, "web")),
        ld(3, "Started"),
        m(5, ld(1, "kubelet"), ld(2, "")),
        timestamp(6, 1700000000, 999_999_999),  # metav1.Time keeps whole seconds
        m(7),  # zero Time: JSON null
        timestamp(10, 1700000000, 123_456_789),  # MicroTime keeps microseconds
        m(11, vi(1, 2), timestamp(2, 1700000001, 5_000)),
        ld(14, ""),
        ld(15, ""),
    )
    assert decode(event) == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "e", "creationTimestamp": None},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
        "reason": "Started",
        "source": {"component": "kubelet"},
        "firstTimestamp": "2023-11-14T22:13:20Z",
        "lastTimestamp": None,
        "eventTime": "2023-11-14T22:13:20.123456Z",
        "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:21.000005Z"},
        "reportingComponent": "",
        "reportingInstance": "",
    }
    # Go's zero time.Time written explicitly is null too; early years keep 4 digits
    lease = envelope(
        "coordination.k8s.io/v1",
        "Lease",
        meta("l"),
        m(2, ld(1, "me"), vi(2, 15), timestamp(3, -62135596800), timestamp(4, -62104060800, 1000), vi(5, 0)),
    )
    assert decode(lease)["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": None,
        "renewTime": "0002-01-01T00:00:00.000001Z",
        "leaseTransitions": 0,
    }


def test_decode_int_or_string_both_forms() -> None:
    svc = envelope(
        "v1",
        "Service",
        meta("s"),
        m(
            2,
            m(1, ld(1, "a"), ld(2, "TCP"), vi(3, 80), int_or_string(4, 8080), vi(5, 0)),
            m(1, ld(1, "b"), ld(2, "TCP"), vi(3, 81), int_or_string(4, "metrics"), vi(5, 0)),
            m(1, ld(1, "c"), ld(2, "TCP"), vi(3, 82), int_or_string(4, 0), vi(5, 0)),
        ),
    )
    assert [p["targetPort"] for p in decode(svc)["spec"]["ports"]] == [8080, "metrics", 0]
    deploy = envelope(
        "apps/v1",
        "Deployment",
        meta("d"),
        m(2, vi(1, 0), m(4, ld(1, "RollingUpdate"), m(2, int_or_string(1, 0), int_or_string(2, "25%")))),
    )
    assert decode(deploy)["spec"] == {
        "replicas": 0,  # *int32: scale-to-zero survives
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
    }
    bad = envelope("v1", "Service", meta("s"), m(2, m(1, m(4, vi(1, 7)))))
    err = decode_error(bad)
    assert err.code == 400
    assert "IntOrString type 7" in err.message


def test_decode_quantities() -> None:
    quota = envelope(
        "v1",
        "ResourceQuota",
        meta("q"),
        m(2, qty_entry(1, "pods", "3"), qty_entry(1, "requests.cpu", "500m"), qty_entry(1, "limits.memory", "1Gi")),
        m(3),
    )
    assert decode(quota)["spec"] == {"hard": {"pods": "3", "requests.cpu": "500m", "limits.memory": "1Gi"}}
    # a Quantity message without its string is the zero quantity
    empty = envelope("v1", "ResourceQuota", meta("q"), m(2, m(1, ld(1, "pods"), m(2))))
    assert decode(empty)["spec"] == {"hard": {"pods": "0"}}


def test_decode_raw_extension_json_and_nested_protobuf() -> None:
    registry = Registry()
    registry.add_table("test", {"Holder": "1 object Raw; 2 label string"})
    decoder = Decoder(registry, lambda raw, _depth: decode(raw))
    holder = registry.get("test.Holder")
    as_json = m(1, ld(1, b'{"kind":"Thing","spec":{"size":3}}')) + ld(2, "x")
    assert decoder.message(holder, as_json, "", 0) == {"object": {"kind": "Thing", "spec": {"size": 3}}, "label": "x"}
    nested = envelope("v1", "ConfigMap", meta("inner"), entry(2, "a", "b"))
    assert decoder.message(holder, m(1, ld(1, nested)), "", 0) == {
        "object": {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "inner", "creationTimestamp": None},
            "data": {"a": "b"},
        }
    }
    assert decoder.message(holder, m(1), "", 0) == {"object": None}
    with pytest.raises(ProtobufError, match="embedded JSON does not parse"):
        decoder.message(holder, m(1, ld(1, b"{not json")), "", 0)


def test_decode_custom_resource_definition_schema() -> None:
    string_schema = m(1, ld(5, "string"))
    props = b"".join(
        [
            m(29, ld(1, "size"), m(2, ld(5, "integer"), m(8, ld(1, b"3")), dbl(11, 1.0), dbl(9, 10.5))),
            m(29, ld(1, "tags"), m(2, ld(5, "array"), m(24, string_schema), ld(42, "set"))),
            m(29, ld(1, "pair"), m(2, ld(5, "array"), m(24, m(2, ld(5, "string")), m(2, ld(5, "integer"))))),
            m(29, ld(1, "mode"), m(2, ld(5, "string"), m(20, ld(1, b'"a"')), m(20, ld(1, b'"b"')))),
            m(29, ld(1, "labels"), m(2, ld(5, "object"), m(30, vi(1, False), m(2, ld(5, "string"))))),
            m(29, ld(1, "free"), m(2, ld(5, "object"), m(30, vi(1, True)), vi(38, True))),
            m(29, ld(1, "dep"), m(2, ld(5, "object"), m(32, ld(1, "a"), m(2, ld(2, "b"), ld(2, "c"))))),
        ]
    )
    spec_schema = m(2, ld(5, "object"), props, m(44, ld(1, "self.size <= 10"), ld(2, ""), ld(3, ""), ld(5, "")))
    schema = m(1, ld(5, "object"), m(29, ld(1, "spec"), spec_schema))
    version = m(7, ld(1, "v1"), vi(2, True), vi(3, True), vi(7, False), m(4, schema), m(5, m(1)))
    crd = envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        meta("widgets.example.com"),
        m(
            2,
            ld(1, "example.com"),
            m(3, ld(1, "widgets"), ld(2, ""), ld(4, "Widget"), ld(5, "")),
            ld(4, "Namespaced"),
            version,
            vi(10, False),
        ),
    )
    decoded = decode(crd)
    assert decoded["spec"]["names"] == {"plural": "widgets", "kind": "Widget"}
    v1 = decoded["spec"]["versions"][0]
    assert v1["subresources"] == {"status": {}}
    assert (v1["name"], v1["served"], v1["storage"]) == ("v1", True, True)
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [{"rule": "self.size <= 10"}]
    assert spec["properties"] == {
        "size": {"type": "integer", "default": 3, "maximum": 10.5, "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "additionalProperties": True, "x-kubernetes-preserve-unknown-fields": True},
        "dep": {"type": "object", "dependencies": {"a": ["b", "c"]}},
    }


def test_decode_zero_values_follow_the_json_tags() -> None:
    pod = envelope(
        "v1",
        "Pod",
        meta("p"),
        m(
            2,
            m(2, ld(1, ""), ld(2, ""), m(6, ld(1, ""), vi(2, 0), vi(3, 0), ld(4, ""), ld(5, "")), vi(16, False)),
            vi(21, False),  # *bool automountServiceAccountToken=false
            vi(25, 0),  # *int32 priority=0
            vi(11, False),  # plain bool hostNetwork=false: omitted like `omitempty`
            ld(8, ""),
            m(14, vi(2, 0), vi(3, False)),
        ),
    )
    assert decode(pod)["spec"] == {
        "containers": [{"name": "", "ports": [{"containerPort": 0}]}],
        "automountServiceAccountToken": False,
        "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
        "priority": 0,
    }


def test_decode_negative_integers_and_packed_repeated_scalars() -> None:
    unpacked = m(14, vi(4, 1000), vi(4, -2), vi(2, -1))
    packed = m(14, ld(4, varint(1000) + varint(-2)), vi(2, -1))
    for ctx in (unpacked, packed):
        body = envelope("v1", "Pod", meta("p"), m(2, ctx, vi(25, -5)))
        spec = decode(body)["spec"]
        assert spec["securityContext"] == {"runAsUser": -1, "supplementalGroups": [1000, -2]}
        assert spec["priority"] == -5


def test_decode_inline_structs() -> None:
    pod = envelope(
        "v1",
        "Pod",
        meta("p"),
        m(
            2,
            m(1, ld(1, "cfg"), m(2, m(19, m(1, ld(1, "settings")), vi(3, 420), m(2, ld(1, "a"), ld(2, "a.txt"))))),
            m(1, ld(1, "tmp"), m(2, m(2, ld(1, "Memory"), m(2, ld(1, "64Mi"))))),
            m(2, ld(1, "c"), m(19, ld(1, "P_"), m(3, m(1, ld(1, "creds")), vi(2, True)))),
            m(34, m(1, ld(1, "debug"), ld(2, "busybox"), vi(16, True)), ld(2, "c")),
            m(2, ld(1, "probe"), m(11, m(1, m(3, int_or_string(1, 8080), ld(2, ""))), vi(6, 3))),
        ),
    )
    spec = decode(pod)["spec"]
    assert spec["volumes"] == [
        {
            "name": "cfg",
            "configMap": {"name": "settings", "items": [{"key": "a", "path": "a.txt"}], "defaultMode": 420},
        },
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
    ]
    assert spec["containers"][0]["envFrom"] == [{"prefix": "P_", "secretRef": {"name": "creds", "optional": True}}]
    assert spec["containers"][1]["readinessProbe"] == {"tcpSocket": {"port": 8080}, "failureThreshold": 3}
    assert spec["ephemeralContainers"] == [
        {"name": "debug", "image": "busybox", "stdin": True, "targetContainerName": "c"}
    ]


def test_decode_delete_options_from_any_group_version() -> None:
    for api_version in ("v1", "apps/v1", "meta.k8s.io/v1"):
        body = envelope(api_version, "DeleteOptions", vi(1, 0), m(2, ld(1, "uid-1")), ld(4, "Foreground"), ld(5, "All"))
        assert decode(body) == {
            "kind": "DeleteOptions",
            "apiVersion": api_version,
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "uid-1"},
            "propagationPolicy": "Foreground",
            "dryRun": ["All"],
        }


def test_decode_hpa_autoscaling_v1_and_v2() -> None:
    v1 = envelope(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        meta("web"),
        m(2, m(1, ld(1, "Deployment"), ld(2, "web"), ld(3, "apps/v1")), vi(2, 1), vi(3, 3), vi(4, 50)),
        m(3, vi(3, 0), vi(4, 0)),
    )
    assert decode(v1)["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 50,
    }
    assert decode(v1)["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    target = m(2, ld(1, "Utilization"), vi(4, 50))
    v2 = envelope(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        meta("web"),
        m(
            2,
            m(1, ld(1, "Deployment"), ld(2, "web"), ld(3, "apps/v1")),
            vi(3, 3),
            m(4, ld(1, "Resource"), m(4, ld(1, "cpu"), target)),
            m(5, m(2, vi(3, 300), m(2, ld(1, "Pods"), vi(2, 1), vi(3, 60)))),
        ),
    )
    assert decode(v2)["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "maxReplicas": 3,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            }
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 300,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    }


def test_decode_events_v1_and_rbac() -> None:
    event = envelope(
        "events.k8s.io/v1",
        "Event",
        meta("e"),
        timestamp(2, 1700000000, 1000),
        ld(4, "ctl"),
        ld(5, "ctl-1"),
        ld(6, "Scale"),
        ld(7, "Scaled"),
        m(8, ld(1, "Deployment"), ld(3, "web")),
        ld(10, "scaled up"),
        ld(11, "Normal"),
        m(12),
        m(13),
        m(14),
        vi(15, 0),
    )
    assert decode(event) == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "e", "creationTimestamp": None},
        "eventTime": "2023-11-14T22:13:20.000001Z",
        "reportingController": "ctl",
        "reportingInstance": "ctl-1",
        "action": "Scale",
        "reason": "Scaled",
        "regarding": {"kind": "Deployment", "name": "web"},
        "note": "scaled up",
        "type": "Normal",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }
    role = envelope(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        meta("agg"),
        m(3, m(1, entry(1, "rbac.example.com/aggregate", "true"))),
    )
    assert decode(role)["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]
    }


def test_decode_merges_repeated_occurrences_of_a_message_field() -> None:
    # protobuf semantics: a singular message field seen twice is merged, last scalar wins
    body = envelope(
        "v1", "ConfigMap", m(1, ld(1, "first"), entry(11, "a", "1")), m(1, ld(1, "second"), entry(11, "b", "2"))
    )
    assert decode(body)["metadata"] == {"name": "second", "labels": {"a": "1", "b": "2"}}


def test_decode_map_entry_without_value_or_key() -> None:
    body = envelope("v1", "ConfigMap", meta("c"), m(2, ld(1, "novalue")), m(2, ld(2, "nokey")))
    assert decode(body)["data"] == {"novalue": "", "": "nokey"}


def test_every_served_kind_has_a_descriptor() -> None:
    for (api_version, kind), name in KINDS.items():
        assert REGISTRY.get(name).name.endswith(f".{kind}"), (api_version, kind)
        empty = decode(envelope(api_version, kind))
        assert {key: empty.pop(key) for key in ("kind", "apiVersion")} == {"kind": kind, "apiVersion": api_version}
        # what is left are the lists without `omitempty`, which JSON renders as null
        assert all(value is None for value in empty.values()), empty


# ---------------------------------------------------------------------- decoding: errors


def test_unknown_field_number_is_bad_request_naming_message_and_field() -> None:
    err = decode_error(envelope("v1", "ConfigMap", meta("c"), vi(99, 1)))
    assert err.code == 400
    assert err.reason == "BadRequest"
    assert "k8s.io.api.core.v1.ConfigMap" in err.message
    assert "unknown field number 99" in err.message
    nested = envelope("v1", "Pod", meta("p"), m(2, m(2, ld(1, "c"), m(6, vi(3, 80), vi(42, 1)))))
    err = decode_error(nested)
    assert "k8s.io.api.core.v1.ContainerPort at spec.containers[0].ports[0]" in err.message
    assert "unknown field number 42" in err.message


def test_unsupported_kind_is_unsupported_media_type() -> None:
    err = decode_error(envelope("batch/v1", "Job", meta("j")))
    assert err.code == 415
    assert err.reason == "UnsupportedMediaType"
    assert "batch/v1, Kind=Job" in err.message
    gz = b"k8s\x00" + m(1, ld(1, "v1"), ld(2, "ConfigMap")) + m(2) + ld(3, "gzip")
    assert decode_error(gz).code == 415


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(envelope("v1", "ConfigMap", meta("c"), entry(2, "a", "b"))[:-9], "truncated", id="truncated"),
        pytest.param(envelope("v1", "ConfigMap", meta("c"))[:-1] + b"\x80", "truncated varint", id="cut-varint"),
        pytest.param(b'{"kind":"ConfigMap"}', "k8s\\x00", id="no-magic"),
        pytest.param(b"k8s\x00" + m(1, ld(2, "ConfigMap")), "apiVersion", id="no-apiversion"),
        pytest.param(b"k8s\x00" + m(1, ld(1, "v1")), "Kind", id="no-kind"),
        pytest.param(envelope("v1", "ConfigMap", m(1, vi(1, 5))), "wire type 0, expected 2", id="wire-type"),
        pytest.param(envelope("v1", "ConfigMap", m(1, ld(1, b"\xff\xfe"))), "UTF-8", id="utf8"),
        pytest.param(envelope("v1", "ConfigMap", tag(1, 3)), "wire type 3", id="group"),
        pytest.param(envelope("v1", "ConfigMap", tag(0, 0) + varint(1)), "field number 0", id="field-zero"),
        pytest.param(
            envelope(
                "apiextensions.k8s.io/v1", "CustomResourceDefinition", m(2, m(7, m(4, m(1, dbl(9, float("nan"))))))
            ),
            "nan",
            id="nan",
        ),
    ],
)
def test_malformed_bodies_are_bad_requests(body: bytes, fragment: str) -> None:
    err = decode_error(body)
    assert err.code == 400, err
    assert fragment in err.message


def test_hostile_nesting_is_bad_request_not_recursion_error() -> None:
    schema = b""
    for _ in range(MAX_DEPTH + 5):
        schema = m(28, schema)  # JSONSchemaProps.not, nested
    body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", m(2, m(7, m(4, m(1, schema)))))
    err = decode_error(body)
    assert err.code == 400
    assert "nested more than" in err.message


# ---------------------------------------------------------------------- over HTTP


async def send(apiserver: EmbeddedAPIServer, method: str, path: str, body: bytes) -> tuple[int, Any]:
    headers = {"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF},application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, apiserver.url + path, data=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def test_http_create_update_and_errors(apiserver: EmbeddedAPIServer) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    status, created = await send(apiserver, "POST", path, envelope("v1", "ConfigMap", meta("c"), entry(2, "a", "b")))
    assert status == 201, created
    assert created["data"] == {"a": "b"}
    rv = created["metadata"]["resourceVersion"]
    update = envelope("v1", "ConfigMap", meta("c", ld(6, rv)), entry(2, "a", "changed"))
    status, updated = await send(apiserver, "PUT", f"{path}/c", update)
    assert status == 200, updated
    assert updated["data"] == {"a": "changed"}

    status, err = await send(apiserver, "POST", path, envelope("v1", "ConfigMap", meta("d"))[:-3])
    assert (status, err["kind"], err["reason"]) == (400, "Status", "BadRequest")
    status, err = await send(apiserver, "POST", path, envelope("batch/v1", "Job", meta("j")))
    assert (status, err["reason"]) == (415, "UnsupportedMediaType")
    status, err = await send(apiserver, "POST", path, envelope("v1", "ConfigMap", meta("e"), vi(77, 1)))
    assert status == 400
    assert "unknown field number 77" in err["message"]


async def test_http_delete_with_protobuf_delete_options(apiserver: EmbeddedAPIServer) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    status, created = await send(apiserver, "POST", path, envelope("v1", "ConfigMap", meta("c")))
    assert status == 201
    uid = created["metadata"]["uid"]
    wrong = envelope("v1", "DeleteOptions", vi(1, 0), m(2, ld(1, "not-the-uid")))
    status, err = await send(apiserver, "DELETE", f"{path}/c", wrong)
    assert (status, err["reason"]) == (409, "Conflict"), err
    right = envelope("v1", "DeleteOptions", vi(1, 0), m(2, ld(1, uid)), ld(4, "Background"))
    status, body = await send(apiserver, "DELETE", f"{path}/c", right)
    assert status == 200, body
    status, _ = await send(apiserver, "DELETE", f"{path}/c", right)
    assert status == 404
    not_delete_options = envelope("v1", "ConfigMap", meta("x"))
    status, err = await send(apiserver, "DELETE", f"{path}/x", not_delete_options)
    assert status == 400


async def test_http_scale_to_zero_with_protobuf_scale(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    await kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    scale = envelope(
        "autoscaling/v1", "Scale", meta("web", ld(3, "default")), m(2, vi(1, 0)), m(3, vi(1, 0), ld(2, ""))
    )
    status, body = await send(apiserver, "PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", scale)
    assert status == 200, body
    assert body["spec"]["replicas"] == 0
    deploy = json.loads(await kubectl("get", "deployment", "web", "-o", "json"))
    assert deploy["spec"]["replicas"] == 0


async def test_http_create_crd_from_protobuf(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    schema = m(
        1,
        ld(5, "object"),
        m(29, ld(1, "spec"), m(2, ld(5, "object"), m(29, ld(1, "size"), m(2, ld(5, "integer"), m(8, ld(1, b"3")))))),
    )
    version = m(7, ld(1, "v1"), vi(2, True), vi(3, True), m(4, schema))
    names = m(3, ld(1, "widgets"), ld(2, "widget"), ld(4, "Widget"), ld(5, "WidgetList"))
    crd = envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        meta("widgets.example.com"),
        m(2, ld(1, "example.com"), names, ld(4, "Namespaced"), version),
    )
    status, body = await send(apiserver, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    stored = json.loads(await kubectl("get", "crd", "widgets.example.com", "-o", "json"))
    props = stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert props["spec"]["properties"]["size"] == {"type": "integer", "default": 3}
