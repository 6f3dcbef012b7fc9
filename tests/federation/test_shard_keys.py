"""federation/fleet/sharding.py, the pure part: the ring key of a WD (its Workload's when a
Workload controls it, so the two share a shard) and what the sharder caches of every WD
and Workload (`assignment_identity`)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.api.constants import Label
from federation.fleet.sharding import assignment_identity, controlling_workload, wd_hash_key, workload_hash_key

GROUP = "compute.datumapis.com"


def wd(name: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "ownerReferences": list(refs)},
        "spec": {"replicas": 3},
    }


def ref(kind: str, name: str, *, controller: bool = True, api_version: str = f"{GROUP}/v1alpha") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": controller}


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (wd("api"), f"web/{GROUP}/WorkloadDeployment/default/api"),
        (wd("app-edge-dfw", ref("Workload", "app")), f"web/{GROUP}/Workload/default/app"),
        # not the controller, or not a Workload of this group: the WD's own key
        (wd("x", ref("Workload", "app", controller=False)), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("Workload", "app", api_version="other.io/v1")), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("ReplicaSet", "rs")), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("ReplicaSet", "rs", controller=False), ref("Workload", "w")), f"web/{GROUP}/Workload/default/w"),
    ],
)
def test_a_wd_hashes_with_the_workload_that_controls_it(obj: dict[str, Any], key: str) -> None:
    assert wd_hash_key("web", obj) == key


def test_a_workload_and_its_wds_share_a_key() -> None:
    workload = {"metadata": {"name": "app", "namespace": "default"}}
    assert workload_hash_key("web", workload) == wd_hash_key("web", wd("app-edge-dfw", ref("Workload", "app")))
    assert workload_hash_key("shop", workload) != workload_hash_key("web", workload)  # projects hash apart
    assert controlling_workload(wd("api")) is None


def test_the_sharder_caches_what_the_assignment_reads_only() -> None:
    obj = wd("app-edge-dfw", ref("Workload", "app"), ref("Other", "o", controller=False))
    obj["metadata"].update(
        uid="u1",
        resourceVersion="7",
        labels={str(Label.SHARD): "a", str(Label.DRAIN): "true", "app": "web"},
        annotations={"big": "x" * 1000},
        finalizers=["f"],
    )
    obj["status"] = {"replicas": 3}
    slim = assignment_identity(obj)
    assert slim == {
        "metadata": {
            "name": "app-edge-dfw",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {str(Label.SHARD): "a", str(Label.DRAIN): "true"},
            "ownerReferences": [ref("Workload", "app")],
        }
    }
    assert wd_hash_key("web", slim) == wd_hash_key("web", obj)  # decided the same from what is cached
    assert assignment_identity({"metadata": {"name": "n"}}) == {"metadata": {"name": "n"}}
