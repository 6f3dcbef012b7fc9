"""The generated CRDs carry the compatibility contract (DESIGN.md §2) and are structural."""

from __future__ import annotations

from typing import Any

import pytest

from federation.api.crds import (
    ALL_CRDS,
    CLUSTER_PROFILE_CRD,
    INSTANCE_CRD,
    WORKLOAD_CRD,
    WORKLOAD_DEPLOYMENT_CRD,
    CRDDefinition,
    crd_manifest,
)


def _version(crd: CRDDefinition) -> dict[str, Any]:
    version: dict[str, Any] = crd_manifest(crd)["spec"]["versions"][0]
    return version


def _schema(crd: CRDDefinition) -> dict[str, Any]:
    schema: dict[str, Any] = _version(crd)["schema"]["openAPIV3Schema"]
    return schema


def _node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.split("."):
        while node.get("type") == "array":
            node = node["items"]
        node = node["properties"][part]
    return node


def _walk(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, node)]
    for name, child in (node.get("properties") or {}).items():
        out.extend(_walk(child, f"{path}.{name}"))
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out.extend(_walk(node[key], f"{path}[{key}]"))
    return out


@pytest.mark.parametrize("crd", ALL_CRDS, ids=lambda c: c.kind)
def test_schemas_are_structural(crd: CRDDefinition) -> None:
    for path, node in _walk(_schema(crd)):
        assert "$ref" not in node and "nullable" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            continue
        assert "anyOf" not in node and "oneOf" not in node, path
        if node.get("x-kubernetes-preserve-unknown-fields"):
            continue
        assert node.get("type") in {"object", "array", "string", "integer", "boolean", "number"}, path
        if node["type"] == "integer":
            assert node.get("format") in {"int32", "int64"}, f"{path}: integers carry their width"
        for name in node.get("required") or []:
            assert name in node["properties"], f"{path}: required {name} is not a property"


@pytest.mark.parametrize("crd", ALL_CRDS, ids=lambda c: c.kind)
def test_every_kind_has_a_status_subresource(crd: CRDDefinition) -> None:
    manifest = crd_manifest(crd)
    assert manifest["metadata"]["name"] == f"{crd.plural}.{crd.group}"
    # Locations are cluster-scoped upstream (a reference is a bare name); the rest are namespaced.
    assert manifest["spec"]["scope"] == ("Cluster" if crd.kind == "Location" else "Namespaced")
    assert _version(crd)["subresources"]["status"] == {}
    assert _version(crd)["served"] and _version(crd)["storage"]


def test_workload_deployment_contract() -> None:
    version = _version(WORKLOAD_DEPLOYMENT_CRD)
    assert version["name"] == "v1alpha"
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Age", ".metadata.creationTimestamp"),
        ("Available", '.status.conditions[?(@.type=="Available")].status'),
        ("Reason", '.status.conditions[?(@.type=="Available")].reason'),
        ("Replicas", ".status.replicas"),
        ("Ready", ".status.readyReplicas"),
        ("Desired", ".status.desiredReplicas"),
        ("Up-to-date", ".status.updatedReplicas"),
        ("Location", ".spec.locationRef.name"),
    ]
    schema = _schema(WORKLOAD_DEPLOYMENT_CRD)
    spec = _node(schema, "spec")
    assert set(spec["required"]) >= {"scaleSettings", "template"}
    assert "cityCode" not in spec["required"] and "locationRef" not in spec["required"]
    assert spec["x-kubernetes-validations"] == [
        {
            "rule": "has(self.locationRef) != has(self.cityCode)",
            "message": "exactly one of spec.locationRef or spec.cityCode must be set",
        }
    ]
    assert "spec" not in schema.get("required", [])  # optional, as upstream
    assert _node(schema, "spec.cityCode")["minLength"] == 1
    assert _node(schema, "spec.replicas")["minimum"] == 0
    assert "replicas" not in spec["required"]  # unset means scaleSettings.minReplicas
    assert _node(schema, "spec.scaleSettings")["required"] == ["minReplicas"]
    assert _node(schema, "spec.scaleSettings.minReplicas")["minimum"] == 0
    assert set(_node(schema, "spec.workloadRef")["required"]) == {"name", "uid"}
    status = _node(schema, "status")["properties"]
    assert {
        "replicas",
        "currentReplicas",
        "updatedReplicas",
        "desiredReplicas",
        "readyReplicas",
        "observedGeneration",
        "selector",
        "conditions",
    } <= set(status)
    assert status["selector"]["type"] == "string"  # the scale subresource wants the serialized form


def test_instance_contract() -> None:
    schema = _schema(INSTANCE_CRD)
    default = _node(schema, "status")["default"]
    assert [(c["type"], c["status"], c["reason"]) for c in default["conditions"]] == [
        ("Programmed", "Unknown", "Pending"),
        ("Available", "Unknown", "Pending"),
        ("Ready", "Unknown", "Pending"),
        ("QuotaGranted", "Unknown", "PendingEvaluation"),
    ]
    assert _node(schema, "spec.controller.schedulingGates")["x-kubernetes-list-map-keys"] == ["name"]
    assert _node(schema, "status.controller")["required"] == ["observedTemplateHash"]
    assert set(_node(schema, "spec.runtime.sandbox.containers")["items"]["properties"]) >= {
        "name",
        "image",
        "command",
        "args",
        "env",
        "resources",
        "ports",
    }
    conditions = _node(schema, "status.conditions")
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert sorted(conditions["items"]["required"]) == ["lastTransitionTime", "message", "reason", "status", "type"]
    assert [c["name"] for c in _version(INSTANCE_CRD)["additionalPrinterColumns"]][:3] == ["Age", "Ready", "Reason"]


def test_workload_contract() -> None:
    schema = _schema(WORKLOAD_CRD)
    placements = _node(schema, "spec.placements")
    assert placements["minItems"] == 1
    assert set(placements["items"]["required"]) == {"name", "scaleSettings"}
    assert [r["message"] for r in placements["items"]["x-kubernetes-validations"]] == [
        "exactly one of locations, locationSelector or cityCodes must be set"
    ]
    assert _node(schema, "spec.placements.cityCodes")["items"]["minLength"] == 1


def test_cluster_profile_uses_the_cluster_inventory_field_names() -> None:
    assert (CLUSTER_PROFILE_CRD.group, CLUSTER_PROFILE_CRD.version) == ("multicluster.x-k8s.io", "v1alpha1")
    schema = _schema(CLUSTER_PROFILE_CRD)
    assert schema["required"] == ["spec"]
    assert set(_node(schema, "spec")["properties"]) == {"displayName", "clusterManager"}
    assert _node(schema, "spec")["required"] == ["clusterManager"]
    manager = _node(schema, "spec.clusterManager")
    assert manager["x-kubernetes-validations"] == [
        {"message": "ClusterManager is immutable", "rule": "self == oldSelf"}
    ]
    assert set(_node(schema, "status")["properties"]) == {"conditions", "version", "properties", "credentialProviders"}
    assert set(_node(schema, "status.version")["properties"]) == {"kubernetes"}
    assert set(_node(schema, "status.properties")["items"]["required"]) == {"name", "value"}
    cluster = _node(schema, "status.credentialProviders.cluster")
    assert {"server", "certificate-authority-data", "insecure-skip-tls-verify", "tls-server-name"} <= set(
        cluster["properties"]
    )
    assert cluster["required"] == ["server"]
