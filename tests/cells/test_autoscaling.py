"""The HorizontalPodAutoscaler a cell WorkloadDeployment owns: when, what, and whose."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from cells.autoscaling import autoscaler_for, is_controlled_by_wd, wants_autoscaler

CPU = {"resource": {"name": "cpu", "target": {"averageUtilization": 70}}}
MEMORY = {"resource": {"name": "memory", "target": {"averageValue": "1Gi"}}}


def wd(**scale: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "api", "namespace": "ns-1", "uid": "wd-uid"},
        "spec": {
            "workloadRef": {"name": "web", "uid": "w-uid"},
            "placementName": "edge",
            "cityCode": "dfw",
            "scaleSettings": {"minReplicas": 2, **scale},
        },
    }


@pytest.mark.parametrize(
    ("scale", "wanted"),
    [
        ({}, False),
        ({"maxReplicas": 5}, False),
        ({"metrics": [CPU]}, False),
        ({"maxReplicas": 5, "metrics": []}, False),
        ({"maxReplicas": 5, "metrics": [CPU]}, True),
    ],
)
def test_wants_an_autoscaler_only_with_max_replicas_and_metrics(scale: dict[str, Any], wanted: bool) -> None:
    assert wants_autoscaler(wd(**scale)) is wanted


def test_the_autoscaler_targets_the_scale_subresource_and_is_owned_by_the_deployment() -> None:
    assert autoscaler_for(wd(maxReplicas=5, metrics=[CPU, MEMORY])) == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "api",
            "namespace": "ns-1",
            "labels": {
                "services.miloapis.com/service-name": "compute.datumapis.com",
                "compute.datumapis.com/workload-deployment-name": "api",
                "compute.datumapis.com/workload-deployment-uid": "wd-uid",
                "compute.datumapis.com/workload-name": "web",
                "compute.datumapis.com/placement-name": "edge",
                "compute.datumapis.com/city-code": "dfw",
            },
            "ownerReferences": [
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "WorkloadDeployment",
                    "name": "api",
                    "uid": "wd-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "compute.datumapis.com/v1alpha",
                "kind": "WorkloadDeployment",
                "name": "api",
            },
            "minReplicas": 2,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                },
                {
                    "type": "Resource",
                    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
                },
            ],
        },
    }


@pytest.mark.parametrize(
    ("scale", "field"),
    [
        ({"minReplicas": 0, "maxReplicas": 3, "metrics": [CPU]}, "spec.scaleSettings.minReplicas"),
        ({"maxReplicas": 1, "metrics": [CPU]}, "spec.scaleSettings.maxReplicas"),
        ({"maxReplicas": 3, "metrics": [{"pods": {}}]}, "spec.scaleSettings.metrics[0].resource"),
        ({"maxReplicas": 3, "metrics": ["cpu"]}, "spec.scaleSettings.metrics[0]"),
        (
            {"maxReplicas": 3, "metrics": [{"resource": {"name": "cpu", "target": {"value": "1"}}}]},
            "spec.scaleSettings.metrics[0].resource.target.value",
        ),
        (
            {"maxReplicas": 3, "metrics": [{"resource": {"name": "cpu", "target": {}}}]},
            "spec.scaleSettings.metrics[0].resource.target",
        ),
        (
            {
                "maxReplicas": 3,
                "metrics": [
                    CPU,
                    {"resource": {"name": "cpu", "target": {"averageUtilization": 1, "averageValue": "1"}}},
                ],
            },
            "spec.scaleSettings.metrics[1].resource.target",
        ),
        (
            {"maxReplicas": 3, "metrics": [{"resource": {"name": "cpu", "target": {"averageUtilization": 0}}}]},
            "spec.scaleSettings.metrics[0].resource.target.averageUtilization",
        ),
        (
            {"maxReplicas": 3, "metrics": [{"resource": {"target": {"averageUtilization": 5}}}]},
            "spec.scaleSettings.metrics[0].resource.name",
        ),
    ],
)
def test_what_an_autoscaler_cannot_do_is_an_error_naming_the_field(scale: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(field)):
        autoscaler_for(wd(**scale))


def test_an_autoscaler_placed_by_location_carries_the_location_and_the_copys_city() -> None:
    by_location = wd(maxReplicas=5, metrics=[CPU])
    del by_location["spec"]["cityCode"]
    by_location["spec"]["locationRef"] = {"name": "dfw-a"}
    by_location["metadata"]["labels"] = {"topology.datum.net/city-code": "DFW"}
    labels = autoscaler_for(by_location)["metadata"]["labels"]
    assert labels["topology.datum.net/location"] == "dfw-a"
    assert labels["compute.datumapis.com/city-code"] == "DFW"


def test_only_an_autoscaler_the_deployment_controls_is_its_own() -> None:
    deployment = wd(maxReplicas=5, metrics=[CPU])
    ours = autoscaler_for(deployment)
    assert is_controlled_by_wd(ours, deployment)
    foreign = copy.deepcopy(ours)
    del foreign["metadata"]["ownerReferences"]
    assert not is_controlled_by_wd(foreign, deployment)
    other = copy.deepcopy(ours)
    other["metadata"]["ownerReferences"][0]["uid"] = "a-previous-api"
    assert not is_controlled_by_wd(other, deployment)
    not_controller = copy.deepcopy(ours)
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert not is_controlled_by_wd(not_controller, deployment)
