"""The CRDs as the embedded API server enforces them: validation, defaults, printer
columns, the scale subresource; plus round trips of objects exactly as the server returns them."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest

from federation.api import ClusterProfile, Instance, WorkloadDeployment, default_instance_conditions
from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from . import objects

pytestmark = pytest.mark.kubectl

WDS = "/apis/compute.datumapis.com/v1alpha/namespaces/default/workloaddeployments"
INSTANCES = "/apis/compute.datumapis.com/v1alpha/namespaces/default/instances"
WORKLOADS = "/apis/compute.datumapis.com/v1alpha/namespaces/default/workloads"
PROFILES = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/default/clusterprofiles"


def _new(obj: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A create request: the object without server-set metadata and without status."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    obj["metadata"] = {"name": name or meta["name"], "namespace": "default", "labels": meta.get("labels", {})}
    obj.pop("status", None)
    return obj


async def _post(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(path, json=body) as resp:
        return resp.status, await resp.json()


def _causes(status: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["reason"] for c in status["details"]["causes"]}


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda s: s.pop("cityCode"), "spec", "FieldValueInvalid"),  # neither cityCode nor locationRef (CEL)
        (lambda s: s.update(cityCode=""), "spec.cityCode", "FieldValueInvalid"),
        (lambda s: s.update(replicas=-1), "spec.replicas", "FieldValueInvalid"),
        (lambda s: s["scaleSettings"].update(minReplicas=-1), "spec.scaleSettings.minReplicas", "FieldValueInvalid"),
        (lambda s: s["scaleSettings"].pop("minReplicas"), "spec.scaleSettings.minReplicas", "FieldValueRequired"),
    ],
    ids=["no-cityCode", "empty-cityCode", "negative-replicas", "negative-minReplicas", "no-minReplicas"],
)
async def test_invalid_workload_deployments_are_rejected_422_naming_the_field(
    compute_cluster: EmbeddedAPIServer, http: aiohttp.ClientSession, mutate: Any, field: str, reason: str
) -> None:
    valid = _new(objects.workload_deployment())
    code, created = await _post(http, WDS, valid)
    assert code == 201, created  # the same object without the defect is fine

    bad = _new(objects.workload_deployment(), name="broken")
    mutate(bad["spec"])
    code, status = await _post(http, WDS, bad)
    assert code == 422, status
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["details"]["kind"] == "WorkloadDeployment" and status["details"]["name"] == "broken"
    causes = _causes(status)
    if reason == "FieldValueRequired":
        # a Required error keeps the CRD's CEL rules from running; the apiserver reports that as a cause too
        assert causes.pop("<nil>") == "FieldValueInvalid", status
    assert causes == {field: reason}
    assert field in status["message"]


async def test_invalid_workload_and_cluster_profile_are_rejected(
    compute_cluster: EmbeddedAPIServer, http: aiohttp.ClientSession
) -> None:
    workload = _new(objects.workload())
    workload["spec"]["placements"] = []
    code, status = await _post(http, WORKLOADS, workload)
    assert code == 422 and "spec.placements" in _causes(status), status

    profile = _new(objects.cluster_profile())
    del profile["spec"]["clusterManager"]
    code, status = await _post(http, PROFILES, profile)
    # (the Required error keeps the CRD's CEL rules from running, which the apiserver reports as a cause too)
    assert code == 422, status
    assert _causes(status) == {"spec.clusterManager": "FieldValueRequired", "<nil>": "FieldValueInvalid"}, status


async def test_instance_status_defaults_to_unknown_conditions(
    compute_cluster: EmbeddedAPIServer, http: aiohttp.ClientSession
) -> None:
    # A status in a create request is dropped (status subresource); the schema default fills it.
    code, created = await _post(http, INSTANCES, {**_new(objects.instance()), "status": {"conditions": []}})
    assert code == 201, created
    async with http.get(f"{INSTANCES}/web-edge-dfw-2") as resp:
        stored = await resp.json()
    assert stored["status"] == {"conditions": [c.to_wire() for c in default_instance_conditions()]}
    # The model reads it back unchanged: it is a realistic server object.
    assert Instance.from_wire(stored).to_wire() == stored


async def test_server_objects_round_trip_through_the_models(
    compute_cluster: EmbeddedAPIServer, http: aiohttp.ClientSession
) -> None:
    code, created = await _post(http, WDS, _new(objects.workload_deployment()))
    assert code == 201, created
    status = {"status": objects.workload_deployment()["status"]}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{WDS}/web-edge-dfw/status", json=status, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        stored = await resp.json()
    assert stored["spec"]["scaleSettings"]["instanceManagementPolicy"] == "OrderedReady"
    assert stored["metadata"]["managedFields"]
    assert WorkloadDeployment.from_wire(stored).to_wire() == stored

    code, profile = await _post(http, PROFILES, _new(objects.cluster_profile()))
    assert code == 201, profile
    assert ClusterProfile.from_wire(profile).to_wire() == profile


async def test_kubectl_shows_the_printer_columns_and_scales(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl, http: aiohttp.ClientSession
) -> None:
    code, created = await _post(http, WDS, _new(objects.workload_deployment()))
    assert code == 201, created
    status = {
        "status": {
            "conditions": objects.workload_deployment()["status"]["conditions"],
            "replicas": 3,
            "readyReplicas": 2,
            "desiredReplicas": 4,
            "currentReplicas": 2,
            "updatedReplicas": 1,
            "selector": "compute.datumapis.com/workload-deployment-name=web-edge-dfw",
        }
    }
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{WDS}/web-edge-dfw/status", json=status, headers=headers) as resp:
        assert resp.status == 200, await resp.text()

    out = await kubectl("get", "workloaddeployments", "-n", "default")
    header, row = out.splitlines()
    assert header.split() == [
        *("NAME", "AGE", "AVAILABLE", "REASON", "REPLICAS", "READY", "DESIRED", "UP-TO-DATE", "LOCATION")
    ]
    cells = row.split()
    assert cells[0] == "web-edge-dfw"
    # Up-to-date is updatedReplicas; Location (spec.locationRef.name) is empty for a cityCode-era WD
    assert cells[2:8] == ["True", "StableInstanceFound", "3", "2", "4", "1"]

    assert "scaled" in await kubectl("scale", "workloaddeployment/web-edge-dfw", "-n", "default", "--replicas=5")
    assert (
        await kubectl("get", "workloaddeployment/web-edge-dfw", "-n", "default", "-o", "jsonpath={.spec.replicas}")
        == "5"
    )
    async with http.get(f"{WDS}/web-edge-dfw/scale") as resp:
        scale = await resp.json()
    assert scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 5}
    assert scale["status"] == {
        "replicas": 3,
        "selector": "compute.datumapis.com/workload-deployment-name=web-edge-dfw",
    }
    # kubectl scale --current-replicas is a precondition on the scale subresource
    result = await kubectl.run(
        "scale", "workloaddeployment/web-edge-dfw", "-n", "default", "--current-replicas=4", "--replicas=1"
    )
    assert result.returncode != 0
    assert (
        await kubectl("get", "workloaddeployment/web-edge-dfw", "-n", "default", "-o", "jsonpath={.spec.replicas}")
        == "5"
    )


async def test_instance_printer_columns(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl, http: aiohttp.ClientSession
) -> None:
    code, created = await _post(http, INSTANCES, _new(objects.instance()))
    assert code == 201, created
    out = await kubectl("get", "instances", "-n", "default", "-o", "wide")
    header = out.splitlines()[0]
    for column in ("NAME", "AGE", "READY", "REASON", "NETWORK IP", "EXTERNAL IP", "MESSAGE", "QUOTA"):
        assert column in header
    assert "Pending" in out and "PendingEvaluation" in out


async def test_kubectl_knows_the_short_names_and_the_compute_category(
    compute_cluster: EmbeddedAPIServer, kubectl: Kubectl, http: aiohttp.ClientSession
) -> None:
    for path, obj in ((WDS, objects.workload_deployment()), (WORKLOADS, objects.workload())):
        code, created = await _post(http, path, _new(obj))
        assert code == 201, created
    assert (await kubectl("get", "wd", "-n", "default", "-o", "name")).split() == [
        "workloaddeployment.compute.datumapis.com/web-edge-dfw"
    ]
    listed = (await kubectl("get", "compute", "-n", "default", "-o", "name")).split()
    assert "workloaddeployment.compute.datumapis.com/web-edge-dfw" in listed
    assert "workload.compute.datumapis.com/web" in listed
