"""PodRuntime: the Pod of a sandbox Instance, and Pod state → Programmed / Available.

The Pod statuses below are the shapes kubeplane's kubelet stand-in writes (ContainerCreating,
running, ImagePullBackOff for `unpullable` images, CrashLoopBackOff for `crasher` images,
Failed under restartPolicy Never), plus the other waiting reasons a real kubelet reports."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cells.podspec import (
    TEMPLATE_HASH_ANNOTATION,
    conditions_from_pod,
    pod_for,
    pod_matches,
    pod_template_hash,
    runtime_hash,
    wants_pod,
)
from tests.cells.builders import instance
from tests.federation.api.objects import instance as api_instance

NS = "ns-0f9c1a52-7e0b-4c1f-9d7e-2c7d5e8b9a10"


def test_pod_for_the_fixture_instance() -> None:
    inst = api_instance()
    pod = pod_for(inst, NS)
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-edge-dfw-2",
            "namespace": NS,
            "labels": inst["metadata"]["labels"],
            "annotations": {TEMPLATE_HASH_ANNOTATION: "7d9f8c6b5a"},
            "ownerReferences": [
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "Instance",
                    "name": "web-edge-dfw-2",
                    "uid": "5b1c3a2e-0000-4000-8000-000000000002",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "docker.io/library/nginx:1.27",
                    "command": ["nginx"],
                    "args": ["-g", "daemon off;"],
                    "env": [
                        {"name": "GREETING", "value": "hello"},
                        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    ],
                    "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "250m"}},
                }
            ],
            "restartPolicy": "Always",
            "imagePullSecrets": [{"name": "registry"}],
        },
    }


def test_pod_shares_nothing_with_the_cached_instance() -> None:
    inst = api_instance()
    before = copy.deepcopy(inst)
    pod = pod_for(inst, NS)
    pod["metadata"]["labels"]["x"] = "y"
    pod["spec"]["containers"][0]["env"][1]["valueFrom"]["secretKeyRef"]["key"] = "changed"
    pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "9"
    pod["spec"]["imagePullSecrets"][0]["name"] = "changed"
    assert inst == before


def test_minimal_container_maps_to_name_and_image_only() -> None:
    pod = pod_for(instance("web-0"), "ns-1")
    assert pod["spec"]["containers"] == [{"name": "web", "image": "nginx:1.27"}]
    assert "imagePullSecrets" not in pod["spec"]
    assert pod["metadata"]["labels"] == {}


def test_instance_without_a_template_hash_gets_one_from_its_spec() -> None:
    inst = instance("web-0")
    del inst["spec"]["controller"]
    first = runtime_hash(inst)
    assert pod_template_hash(pod_for(inst, "ns-1")) == first
    inst["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = "nginx:1.28"
    assert runtime_hash(inst) != first


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda i: i["spec"]["runtime"].pop("sandbox"), r"spec\.runtime\.sandbox: required"),
        (lambda i: i["spec"]["runtime"]["sandbox"].update(containers=[]), "at least one container"),
        (lambda i: i["spec"]["runtime"]["sandbox"].update(containers=["x"]), r"containers\[0\]: expected an object"),
        (lambda i: i["spec"]["runtime"]["sandbox"]["containers"][0].pop("image"), r"containers\[0\]\.image: required"),
        (
            lambda i: i["spec"]["runtime"]["sandbox"]["containers"][0].update(command="nginx"),
            r"containers\[0\]\.command: expected a list",
        ),
        (
            lambda i: i["spec"]["runtime"]["sandbox"]["containers"][0].update(args=[1]),
            r"containers\[0\]\.args: expected a list of strings",
        ),
        (
            lambda i: i["spec"]["runtime"]["sandbox"]["containers"][0].update(ports=[{"name": "http", "port": 0}]),
            r"containers\[0\]\.ports\[0\]\.port: expected a port number",
        ),
        (
            lambda i: i["spec"]["runtime"]["sandbox"]["containers"][0].update(ports=[{"port": 80}]),
            r"containers\[0\]\.ports\[0\]\.name: required",
        ),
        (lambda i: i["metadata"].pop("uid"), r"metadata\.uid: required"),
        (lambda i: i["metadata"].update(labels={"a": 1}), r"metadata\.labels: expected string keys and values"),
    ],
)
def test_pod_for_refuses_bad_instances_naming_the_field(edit: Any, message: str) -> None:
    inst = instance("web-0")
    edit(inst)
    with pytest.raises(ValueError, match=message):
        pod_for(inst, "ns-1")


def test_pod_for_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="namespace: required"):
        pod_for(instance("web-0"), "")


@pytest.mark.parametrize(
    ("gates", "deleting", "sandbox", "suspended", "wanted"),
    [
        ((), False, True, None, True),
        (("Quota",), False, True, None, False),
        ((), True, True, None, False),
        ((), False, False, None, False),  # a virtual machine: not this runtime's
        ((), False, True, True, False),  # suspended: its Pod is stopped
        ((), False, True, False, True),  # resumed
    ],
)
def test_wants_pod(gates: tuple[str, ...], deleting: bool, sandbox: bool, suspended: bool | None, wanted: bool) -> None:
    inst = instance("web-0", gates=gates, deleting=deleting, suspended=suspended)
    if not sandbox:
        inst["spec"]["runtime"]["virtualMachine"] = {"volumeAttachments": [{"name": "boot"}]}
        del inst["spec"]["runtime"]["sandbox"]
    assert wants_pod(inst) is wanted


def test_pod_matches_on_hash_and_controlling_instance() -> None:
    desired = pod_for(instance("web-0", template_hash="h1"), "ns-1")
    live = copy.deepcopy(desired)
    live["metadata"]["resourceVersion"] = "12"
    live["status"] = {"phase": "Running"}
    assert pod_matches(desired, live)
    assert not pod_matches(pod_for(instance("web-0", template_hash="h2"), "ns-1"), live)
    recreated = instance("web-0", template_hash="h1")
    recreated["metadata"]["uid"] = "uid-new"  # same name, new Instance: its old Pod must go
    assert not pod_matches(pod_for(recreated, "ns-1"), live)
    unannotated = copy.deepcopy(live)
    del unannotated["metadata"]["annotations"]
    assert not pod_matches(desired, unannotated)


# ------------------------------------------------------------------ Pod → conditions


def _pod_conditions(*, ready: bool, scheduled: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": "True" if ready else "False"},
        {"type": "ContainersReady", "status": "True" if ready else "False"},
        scheduled or {"type": "PodScheduled", "status": "True"},
    ]
    if not ready:
        for c in out[1:3]:
            c.update(reason="ContainersNotReady", message="containers with unready status: [web]")
    return out


def _waiting(reason: str, message: str = "", name: str = "web") -> dict[str, Any]:
    waiting: dict[str, Any] = {"reason": reason}
    if message:
        waiting["message"] = message
    return {
        "name": name,
        "image": "x",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": waiting},
    }


def _running(name: str = "web") -> dict[str, Any]:
    return {"name": name, "ready": True, "started": True, "state": {"running": {"startedAt": "2025-01-02T03:00:00Z"}}}


def pod(
    phase: str,
    containers: list[dict[str, Any]],
    *,
    ready: bool = False,
    scheduled: dict[str, Any] | None = None,
    deleting: bool = False,
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-0", "namespace": "ns-1", "uid": "pod-uid"}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-02T03:05:00Z"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": _pod_conditions(ready=ready, scheduled=scheduled),
        "containerStatuses": containers,
    }
    if init is not None:
        status["initContainerStatuses"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}


CRASH_LAST_STATE = {"terminated": {"exitCode": 1, "reason": "Error"}}

POD_CASES: list[tuple[str, dict[str, Any], tuple[str, str, str]]] = [
    ("ready", pod("Running", [_running()], ready=True), ("True", "Available", "Pod web-0 is ready")),
    (
        "stand-in: creating",
        pod("Pending", [_waiting("ContainerCreating")]),
        ("False", "Provisioning", "container web: ContainerCreating"),
    ),
    (
        "stand-in: unpullable image",
        pod("Pending", [_waiting("ImagePullBackOff", 'Back-off pulling image "example.com/unpullable:1"')]),
        ("False", "ImageUnavailable", 'container web: Back-off pulling image "example.com/unpullable:1"'),
    ),
    (
        "stand-in: crasher",
        pod(
            "Running",
            [
                {
                    **_waiting("CrashLoopBackOff", "back-off 20s restarting failed container=web"),
                    "restartCount": 1,
                    "lastState": CRASH_LAST_STATE,
                }
            ],
        ),
        ("False", "InstanceCrashing", "container web: back-off 20s restarting failed container=web"),
    ),
    (
        "stand-in: crasher under restartPolicy Never",
        pod("Failed", [{"name": "web", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]),
        ("False", "InstanceCrashing", "container web: exited with code 1 (Error)"),
    ),
    (
        "failed without container detail",
        {**pod("Failed", []), "status": {"phase": "Failed", "message": "Pod was evicted"}},
        ("False", "InstanceCrashing", "Pod was evicted"),
    ),
    (
        "err image pull",
        pod("Pending", [_waiting("ErrImagePull", "not found")]),
        ("False", "ImageUnavailable", "container web: not found"),
    ),
    (
        "invalid image name, no message",
        pod("Pending", [_waiting("InvalidImageName")]),
        ("False", "ImageUnavailable", "container web: InvalidImageName"),
    ),
    (
        "config error",
        pod("Pending", [_waiting("CreateContainerConfigError", 'secret "creds" not found')]),
        ("False", "ConfigurationError", 'container web: secret "creds" not found'),
    ),
    (
        "run container error",
        pod("Running", [_waiting("RunContainerError", "exec: nginx: not found")]),
        ("False", "ConfigurationError", "container web: exec: nginx: not found"),
    ),
    (
        "crashing (5) beats creating (1) in a later container",
        pod("Pending", [_waiting("ContainerCreating", name="a"), _waiting("CrashLoopBackOff", "boom", name="b")]),
        ("False", "InstanceCrashing", "container b: boom"),
    ),
    (
        "equal priority: the first container wins",
        pod(
            "Pending", [_waiting("ImagePullBackOff", "pull", name="a"), _waiting("CrashLoopBackOff", "boom", name="b")]
        ),
        ("False", "ImageUnavailable", "container a: pull"),
    ),
    (
        "an init container's problem counts",
        pod("Pending", [_waiting("PodInitializing")], init=[_waiting("ImagePullBackOff", "init pull", name="setup")]),
        ("False", "ImageUnavailable", "container setup: init pull"),
    ),
    (
        "terminated non-zero in a running pod",
        pod("Running", [{"name": "web", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]),
        ("False", "InstanceCrashing", "container web: exited with code 137 (OOMKilled)"),
    ),
    (
        "unschedulable",
        pod(
            "Pending",
            [],
            scheduled={
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient cpu.",
            },
        ),
        ("False", "Provisioning", "0/1 nodes are available: 1 Insufficient cpu."),
    ),
    (
        "running, not ready (probe)",
        pod("Running", [{**_running(), "ready": False}]),
        ("False", "Starting", "containers with unready status: [web]"),
    ),
    ("pending, nothing known", pod("Pending", []), ("False", "Provisioning", "Pod web-0 is pending")),
    (
        "terminating",
        pod("Running", [_running()], ready=True, deleting=True),
        ("False", "Stopping", "Pod web-0 is terminating"),
    ),
    ("succeeded", pod("Succeeded", []), ("False", "Stopped", "all containers of Pod web-0 exited")),
]


@pytest.mark.parametrize(("live", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_conditions_from_pod(live: dict[str, Any], expected: tuple[str, str, str]) -> None:
    programmed, available = conditions_from_pod(live, 3)
    assert programmed == {
        "type": "Programmed",
        "status": "True",
        "reason": "Programmed",
        "message": "Pod web-0 created",
        "observedGeneration": 3,
    }
    assert available["type"] == "Available"
    assert available["observedGeneration"] == 3
    assert (available["status"], available["reason"], available["message"]) == expected


def test_no_pod_yet() -> None:
    programmed, available = conditions_from_pod(None, 2)
    assert (programmed["status"], programmed["reason"], programmed["observedGeneration"]) == (
        "False",
        "PendingProgramming",
        2,
    )
    assert (available["status"], available["reason"]) == ("False", "Provisioning")


@pytest.mark.parametrize(
    ("live", "available"),
    [
        (pod("Running", [_running()], ready=True), ("Stopping", "suspended: Pod web-0 is stopping")),
        (pod("Running", [_running()], deleting=True), ("Stopping", "suspended: Pod web-0 is stopping")),
        (None, ("Suspended", "suspended: the Pod is stopped; the Instance stays")),
    ],
    ids=["pod still running", "pod terminating", "pod gone"],
)
def test_a_suspended_instance_is_programmed_and_not_available(
    live: dict[str, Any] | None, available: tuple[str, str]
) -> None:
    programmed, got = conditions_from_pod(live, 4, suspended=True)
    assert (programmed["status"], programmed["reason"], programmed["observedGeneration"]) == ("True", "Programmed", 4)
    assert (got["type"], got["status"], got["observedGeneration"]) == ("Available", "False", 4)
    assert (got["reason"], got["message"]) == available


@pytest.mark.parametrize("generation", [-1, "1", True, None])
def test_bad_generation_is_named(generation: Any) -> None:
    with pytest.raises(ValueError, match=r"metadata\.generation"):
        conditions_from_pod(None, generation)


def test_malformed_container_status_is_named() -> None:
    with pytest.raises(ValueError, match=r"status\.containerStatuses\[0\]: expected an object"):
        conditions_from_pod(pod("Pending", ["x"]), 1)  # type: ignore[list-item]
