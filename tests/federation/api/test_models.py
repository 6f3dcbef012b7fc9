"""Wire round trips and the model-level behaviour controllers rely on."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from federation.api import (
    API_VERSION,
    CLUSTER_INVENTORY_API_VERSION,
    Annotation,
    ClusterProfile,
    ClusterRole,
    Instance,
    KubeModel,
    Label,
    ObjectMeta,
    Workload,
    WorkloadDeployment,
    WorkloadDeploymentStatus,
    downstream_namespace_name,
    instance_name,
    kubeconfig_secret_name,
    workload_deployment_name,
    workload_deployment_selector,
)
from federation.api.workloaddeployment import HorizontalScaleSettings

from . import objects
from .conftest import REPO, load_docs

CASES: list[tuple[type[KubeModel], Callable[[], dict[str, Any]]]] = [
    (WorkloadDeployment, objects.workload_deployment),
    (Instance, objects.instance),
    (Workload, objects.workload),
    (ClusterProfile, objects.cluster_profile),
]


@pytest.mark.parametrize(("model", "make"), CASES, ids=[m.__name__ for m, _ in CASES])
def test_wire_json_round_trips_unchanged(model: type[KubeModel], make: Callable[[], dict[str, Any]]) -> None:
    wire = make()
    text = json.dumps(wire)
    parsed = model.model_validate_json(text)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == wire
    assert parsed.to_wire() == wire
    # and again from the dump: nothing drifts on a second pass
    assert model.from_wire(parsed.to_wire()).to_wire() == wire


def test_attributes_are_snake_case_and_irregular_wire_names_survive() -> None:
    wd = WorkloadDeployment.from_wire(objects.workload_deployment())
    assert wd.spec.city_code == "DFW"
    assert wd.spec.scale_settings.min_replicas == 2
    assert wd.status is not None and wd.status.updated_replicas == 3
    inst = Instance.from_wire(objects.instance())
    assert inst.status is not None
    assignments = inst.status.network_interfaces[0].assignments
    assert assignments is not None and assignments.network_ip == "10.128.0.7"
    rule = inst.spec.network_interfaces[0].network_policy
    assert rule is not None and rule.ingress[0].from_[0].ip_block is not None
    assert rule.ingress[0].from_[0].ip_block.except_ == ["10.1.0.0/16"]
    cluster = ClusterProfile.from_wire(objects.cluster_profile())
    assert cluster.status is not None and cluster.status.credential_providers[0].cluster is not None
    assert cluster.status.credential_providers[0].cluster.certificate_authority_data == "LS0tLS1CRUdJTi0tLS0t"


def test_objects_built_in_python_serialise_with_wire_names_and_without_empty_fields() -> None:
    wd = WorkloadDeployment.from_wire(objects.workload_deployment())
    built = WorkloadDeployment(
        metadata=ObjectMeta(name="web-edge-dfw", namespace="default"),
        spec=wd.spec.model_copy(update={"replicas": None}),
    )
    wire = built.to_wire()
    assert wire["apiVersion"] == API_VERSION and wire["kind"] == "WorkloadDeployment"
    assert wire["metadata"] == {"name": "web-edge-dfw", "namespace": "default"}  # no empty labels/finalizers
    assert "replicas" not in wire["spec"]  # None is absent, not null
    assert "status" not in wire
    # Counters are always written (like Go's non-omitempty int32), so a fresh status is complete.
    assert WorkloadDeploymentStatus().to_wire() == {
        "replicas": 0,
        "currentReplicas": 0,
        "updatedReplicas": 0,
        "desiredReplicas": 0,
        "readyReplicas": 0,
    }


def test_unknown_fields_are_dropped_like_a_pruning_api_server() -> None:
    wire = objects.workload_deployment()
    wire["spec"]["somethingNew"] = {"a": 1}
    wire["status"]["somethingElse"] = True
    out = WorkloadDeployment.from_wire(wire).to_wire()
    assert "somethingNew" not in out["spec"] and "somethingElse" not in out["status"]


def test_kind_and_api_version_are_checked() -> None:
    wire = objects.instance()
    with pytest.raises(ValidationError, match="kind"):
        WorkloadDeployment.from_wire({**objects.workload_deployment(), "kind": "Instance"})
    with pytest.raises(ValidationError, match="apiVersion"):
        Instance.from_wire({**wire, "apiVersion": "compute.datumapis.com/v1"})
    assert ClusterProfile.from_wire(objects.cluster_profile()).api_version == CLUSTER_INVENTORY_API_VERSION


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("spec", "cityCode"), "", "spec.cityCode"),
        (("spec", "replicas"), -1, "spec.replicas"),
        (("spec", "scaleSettings", "minReplicas"), -1, "spec.scaleSettings.minReplicas"),
        (("spec", "template", "spec", "networkInterfaces"), [], "spec.template.spec.networkInterfaces"),
    ],
)
def test_models_validate_what_the_crd_validates(path: tuple[str, ...], value: Any, field: str) -> None:
    wire = objects.workload_deployment()
    node = wire
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ValidationError, match=re.escape(field)):
        WorkloadDeployment.from_wire(wire)


def test_exactly_one_of_location_ref_or_city_code() -> None:
    wire = objects.workload_deployment()
    del wire["spec"]["cityCode"]
    with pytest.raises(ValidationError, match=re.escape("exactly one of spec.locationRef or spec.cityCode")):
        WorkloadDeployment.from_wire(wire)
    wire["spec"]["locationRef"] = {"name": "dfw"}
    assert WorkloadDeployment.from_wire(wire).to_wire()["spec"]["locationRef"] == {"name": "dfw"}
    wire["spec"]["cityCode"] = "DFW"
    with pytest.raises(ValidationError, match=re.escape("exactly one of spec.locationRef or spec.cityCode")):
        WorkloadDeployment.from_wire(wire)


def test_spec_is_optional_as_upstream() -> None:
    wire = {k: v for k, v in objects.workload_deployment().items() if k != "spec"}
    assert WorkloadDeployment.from_wire(wire).spec is None


def test_desired_replicas_falls_back_to_min_replicas() -> None:
    wd = WorkloadDeployment.from_wire(objects.workload_deployment())
    assert wd.spec is not None
    assert wd.spec.desired_replicas == 3
    assert wd.spec.model_copy(update={"replicas": None}).desired_replicas == 2
    assert wd.spec.model_copy(update={"replicas": 0}).desired_replicas == 0  # explicit zero is not "unset"


def test_autoscaling_needs_both_max_replicas_and_metrics() -> None:
    with_metrics = HorizontalScaleSettings.model_validate(objects.workload_deployment()["spec"]["scaleSettings"])
    assert with_metrics.autoscaling
    assert not with_metrics.model_copy(update={"metrics": []}).autoscaling
    assert not with_metrics.model_copy(update={"max_replicas": None}).autoscaling


def test_cluster_profile_registration_conventions() -> None:
    project = ClusterProfile.from_wire(objects.cluster_profile())
    assert project.cluster_name == "web"
    assert project.cluster_role is ClusterRole.PROJECT
    assert project.kubeconfig_secret_name == "web-kubeconfig"  # default <name>-kubeconfig
    cell = ClusterProfile.from_wire(
        {
            **objects.cluster_profile(),
            "metadata": {
                "name": "cell-dfw",
                "namespace": "federation-system",
                "labels": {Label.CLUSTER_ROLE: "cell", Label.TOPOLOGY_CITY_CODE: "DFW"},
                "annotations": {Annotation.KUBECONFIG_SECRET: "dfw-credentials"},
            },
        }
    )
    assert cell.cluster_role is ClusterRole.CELL and cell.city_code == "DFW"
    assert cell.kubeconfig_secret_name == "dfw-credentials"
    unknown = copy.deepcopy(objects.cluster_profile())
    unknown["metadata"]["labels"][Label.CLUSTER_ROLE] = "hub"
    assert ClusterProfile.from_wire(unknown).cluster_role is None
    assert kubeconfig_secret_name("x", {}) == "x-kubeconfig"


def test_names_by_convention() -> None:
    assert workload_deployment_name("web", "edge", "DFW") == "web-edge-dfw"
    assert instance_name("web-edge-dfw", 4) == "web-edge-dfw-4"
    assert downstream_namespace_name("0f9c1a52") == "ns-0f9c1a52"
    assert workload_deployment_selector("web-edge-dfw") == f"{Label.WORKLOAD_DEPLOYMENT_NAME}=web-edge-dfw"
    with pytest.raises(ValueError, match="placement target"):
        workload_deployment_name("w", "p", "")
    with pytest.raises(ValueError, match="ordinal"):
        instance_name("w", -1)
    with pytest.raises(ValueError, match="UID"):
        downstream_namespace_name("")


def test_label_keys_are_the_documented_strings() -> None:
    # The constants are usable as plain strings (dict keys, label selectors, JSON).
    labels = {Label.CITY_CODE: "DFW"}
    assert json.dumps(labels) == '{"compute.datumapis.com/city-code": "DFW"}'
    key: str = Label.UPSTREAM_CLUSTER_NAME
    assert key == "meta.datumapis.com/upstream-cluster-name"
    assert Label.TOPOLOGY_CITY_CODE.meaning


SAMPLE_MODELS: dict[str, type[KubeModel]] = {
    "Workload": Workload,
    "WorkloadDeployment": WorkloadDeployment,
    "ClusterProfile": ClusterProfile,
}


def test_samples_are_valid_objects_of_their_models() -> None:
    seen = set()
    for path in sorted((REPO / "config" / "samples").glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_docs(path.read_text()):
            model = SAMPLE_MODELS.get(doc["kind"])
            if model is None:
                continue
            seen.add(doc["kind"])
            parsed = model.from_wire(doc)
            assert parsed.to_wire() == doc, path.name
    assert seen == set(SAMPLE_MODELS)
    workload = Workload.from_wire(load_docs((REPO / "config/samples/compute_v1alpha_workload.yaml").read_text())[0])
    assert len(workload.spec.placements[0].city_codes or []) == 2  # "a Workload placed in two cities"
