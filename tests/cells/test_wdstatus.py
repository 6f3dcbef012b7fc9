"""wd_status: counters and conditions of a cell WorkloadDeployment from its Instances."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cells.wdstatus import rejected_status, wd_status
from tests.cells.builders import cond, instance
from tests.federation.api.objects import workload_deployment

CUR = "cur"
T0 = "2025-01-01T00:00:00Z"
T1 = "2025-01-01T00:01:00Z"


def wd(replicas: int = 3, *, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out = workload_deployment()  # generation 3, name web-edge-dfw
    out["spec"]["replicas"] = replicas
    out["status"] = {"location": {"name": "dfw-1", "namespace": "datum-cloud"}, "conditions": conditions or []}
    return out


def inst(
    ordinal: int,
    *,
    hash_: str = CUR,
    ready: bool = True,
    programmed: bool = True,
    deleting: bool = False,
    reason: str = "Provisioning",
    message: str = "",
    gates: tuple[str, ...] = (),
) -> dict[str, Any]:
    conds = [
        cond("Programmed", "True" if programmed else "False", "Programmed" if programmed else "PendingProgramming"),
        cond("Ready", "True", "Available") if ready else cond("Ready", "False", reason, message),
    ]
    return instance(
        f"web-edge-dfw-{ordinal}", template_hash=hash_, conditions=tuple(conds), deleting=deleting, gates=gates
    )


def counters(status: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return (
        status["replicas"],
        status["currentReplicas"],
        status["updatedReplicas"],
        status["readyReplicas"],
        status["desiredReplicas"],
    )


def conds_of(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


CASES: list[tuple[str, int, list[dict[str, Any]], tuple[int, ...], dict[str, tuple[str, str, str]]]] = [
    (
        "converged",
        3,
        [inst(0), inst(1), inst(2)],
        (3, 3, 3, 3, 3),
        {
            "Available": ("True", "StableInstanceFound", "3 of 3 Instances ready"),
            "ReplicasReady": ("True", "ReplicasAvailable", "3 of 3 Instances ready"),
        },
    ),
    (
        "nothing yet",
        3,
        [],
        (0, 0, 0, 0, 3),
        {
            "Available": ("False", "InstancesProvisioning", "0 of 3 Instances ready"),
            "ReplicasReady": ("False", "InstancesProvisioning", "0 of 3 Instances ready"),
        },
    ),
    (
        "rolling: one deleting, one old, one new",
        3,
        [inst(0, hash_="old"), inst(1, hash_="old", deleting=True), inst(2, ready=False, reason="Provisioning")],
        (3, 1, 1, 1, 3),
        {
            "Available": ("True", "StableInstanceFound", "1 of 3 Instances ready"),
            "ReplicasReady": (
                "False",
                "InstancesProvisioning",
                "1 of 3 Instances ready; web-edge-dfw-2: Provisioning",
            ),
        },
    ),
    (
        "updated but not programmed is not current",
        2,
        [inst(0), inst(1, programmed=False, ready=False, reason="PendingProgramming", message="no Pod yet")],
        (2, 1, 2, 1, 2),
        {
            "Available": ("True", "StableInstanceFound", "1 of 2 Instances ready"),
            "ReplicasReady": (
                "False",
                "InstancesProvisioning",
                "1 of 2 Instances ready; web-edge-dfw-1: PendingProgramming: no Pod yet",
            ),
        },
    ),
    (
        "image unavailable surfaces with its message",
        2,
        [
            inst(0, ready=False, reason="Provisioning", message="creating"),
            inst(1, ready=False, reason="ImageUnavailable", message="container web: Back-off pulling image"),
        ],
        (2, 2, 2, 0, 2),
        {
            "Available": (
                "False",
                "ImageUnavailable",
                "0 of 2 Instances ready; web-edge-dfw-1: ImageUnavailable: container web: Back-off pulling image",
            ),
            "ReplicasReady": (
                "False",
                "ImageUnavailable",
                "0 of 2 Instances ready; web-edge-dfw-1: ImageUnavailable: container web: Back-off pulling image",
            ),
        },
    ),
    (
        "equal priority: lowest ordinal wins",
        3,
        [
            inst(10, ready=False, reason="InstanceCrashing", message="b"),
            inst(9, ready=False, reason="ImageUnavailable", message="a"),
        ],
        (2, 2, 2, 0, 3),
        {
            "Available": (
                "False",
                "ImageUnavailable",
                "0 of 3 Instances ready; web-edge-dfw-9: ImageUnavailable: a",
            ),
            "ReplicasReady": (
                "False",
                "ImageUnavailable",
                "0 of 3 Instances ready; web-edge-dfw-9: ImageUnavailable: a",
            ),
        },
    ),
    (
        "quota blocks everything",
        2,
        [
            inst(0, ready=False, reason="PendingQuota", message="cpu 2 > 1", gates=("Quota",)),
            inst(1, ready=False, reason="PendingQuota", message="cpu 2 > 1", gates=("Quota",)),
        ],
        (2, 2, 2, 0, 2),
        {
            "Available": (
                "False",
                "QuotaNotGranted",
                "0 of 2 Instances ready; 2 waiting for quota; web-edge-dfw-0: PendingQuota: cpu 2 > 1",
            ),
            "ReplicasReady": (
                "False",
                "QuotaExceeded",
                "0 of 2 Instances ready; 2 waiting for quota; web-edge-dfw-0: PendingQuota: cpu 2 > 1",
            ),
        },
    ),
    (
        "quota blocks some, a crash is more blocking: its reason is the headline",
        3,
        [
            inst(0),
            inst(1, ready=False, reason="PendingQuota"),
            inst(2, ready=False, reason="InstanceCrashing", message="x"),
        ],
        (3, 3, 3, 1, 3),
        {
            "Available": ("True", "StableInstanceFound", "1 of 3 Instances ready"),
            "ReplicasReady": (
                "False",
                "InstanceCrashing",
                "1 of 3 Instances ready; 1 waiting for quota; web-edge-dfw-2: InstanceCrashing: x",
            ),
        },
    ),
    (
        "crashing with some ready: Available stays True, ReplicasReady names the crash",
        2,
        [inst(0), inst(1, ready=False, reason="InstanceCrashing", message="exit 1")],
        (2, 2, 2, 1, 2),
        {
            "Available": ("True", "StableInstanceFound", "1 of 2 Instances ready"),
            "ReplicasReady": (
                "False",
                "InstanceCrashing",
                "1 of 2 Instances ready; web-edge-dfw-1: InstanceCrashing: exit 1",
            ),
        },
    ),
    (
        "network failure outranks a crash",
        2,
        [
            inst(0, ready=False, reason="InstanceCrashing", message="exit 1"),
            inst(1, ready=False, reason="NetworkFailedToCreate", message="no subnet"),
        ],
        (2, 2, 2, 0, 2),
        {
            "Available": (
                "False",
                "NetworkFailedToCreate",
                "0 of 2 Instances ready; web-edge-dfw-1: NetworkFailedToCreate: no subnet",
            ),
            "ReplicasReady": (
                "False",
                "NetworkFailedToCreate",
                "0 of 2 Instances ready; web-edge-dfw-1: NetworkFailedToCreate: no subnet",
            ),
        },
    ),
    (
        "scale down in progress: surplus is still ready",
        1,
        [inst(0), inst(1), inst(2, deleting=True)],
        (3, 2, 2, 2, 1),
        {
            "Available": ("True", "StableInstanceFound", "2 of 1 Instances ready"),
            "ReplicasReady": ("True", "ReplicasAvailable", "2 of 1 Instances ready"),
        },
    ),
    (
        "zero desired, none left",
        0,
        [],
        (0, 0, 0, 0, 0),
        {
            "Available": ("True", "ScaledToZero", "no Instances desired (replicas is 0)"),
            "ReplicasReady": ("True", "ReplicasAvailable", "0 of 0 Instances ready"),
        },
    ),
    (
        "deleting ready instance is not counted ready",
        1,
        [inst(0, deleting=True)],
        (1, 0, 0, 0, 1),
        {
            "Available": ("False", "InstancesProvisioning", "0 of 1 Instances ready"),
            "ReplicasReady": ("False", "InstancesProvisioning", "0 of 1 Instances ready"),
        },
    ),
]


@pytest.mark.parametrize(
    ("replicas", "instances", "expected_counters", "expected_conditions"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_wd_status(
    replicas: int,
    instances: list[dict[str, Any]],
    expected_counters: tuple[int, ...],
    expected_conditions: dict[str, tuple[str, str, str]],
) -> None:
    status = wd_status(wd(replicas), instances, CUR, now=T0)
    assert counters(status) == expected_counters
    assert conds_of(status) == expected_conditions
    assert status["observedGeneration"] == 3
    assert status["selector"] == "compute.datumapis.com/workload-deployment-name=web-edge-dfw"
    assert status["location"] == {"name": "dfw-1", "namespace": "datum-cloud"}  # not ours: kept
    assert all(c["observedGeneration"] == 3 and c["lastTransitionTime"] == T0 for c in status["conditions"])


def test_replicas_fall_back_to_min_replicas() -> None:
    w = wd()
    del w["spec"]["replicas"]
    assert wd_status(w, [], CUR, now=T0)["desiredReplicas"] == 2


def test_same_inputs_give_an_identical_status_so_no_write_is_needed() -> None:
    instances = [inst(0), inst(1, ready=False)]
    first = wd_status(wd(2), instances, CUR, now=T0)
    stored = wd(2)
    stored["status"] = copy.deepcopy(first)
    again = wd_status(stored, instances, CUR, now=T1)  # later clock, nothing changed
    assert again == first


def test_transition_time_moves_only_when_a_status_changes() -> None:
    stored = wd(2)
    stored["status"] = wd_status(stored, [inst(0), inst(1, ready=False)], CUR, now=T0)
    # readiness count changes the message, not the status of Available (still True)
    after = wd_status(stored, [inst(0), inst(1)], CUR, now=T1)
    times = {c["type"]: c["lastTransitionTime"] for c in after["conditions"]}
    assert times == {"Available": T0, "ReplicasReady": T1}


def test_input_is_not_mutated_and_order_does_not_matter() -> None:
    w = wd(3)
    instances = [
        inst(2, ready=False, reason="ImageUnavailable"),
        inst(0),
        inst(1, ready=False, reason="ImageUnavailable"),
    ]
    before = copy.deepcopy((w, instances))
    forward = wd_status(w, instances, CUR, now=T0)
    assert (w, instances) == before
    assert wd_status(w, list(reversed(instances)), CUR, now=T0) == forward


@pytest.mark.parametrize(
    ("edit", "now", "current_hash", "message"),
    [
        (lambda w: None, "", CUR, "now: required"),
        (lambda w: None, T0, "", "current template hash: required"),
        (lambda w: w["metadata"].pop("generation"), T0, CUR, r"metadata\.generation: required"),
        (lambda w: w["status"].update(conditions=["x"]), T0, CUR, r"status\.conditions: expected a list of objects"),
        (lambda w: w["spec"].update(replicas=-2), T0, CUR, r"spec\.replicas: must be >= 0"),
    ],
)
def test_bad_input_is_named(edit: Any, now: str, current_hash: str, message: str) -> None:
    w = wd()
    edit(w)
    with pytest.raises(ValueError, match=message):
        wd_status(w, [], current_hash, now=now)


def test_a_rejected_spec_is_observed_and_says_why() -> None:
    w = wd(2)
    status = rejected_status(w, [inst(0), inst(1, ready=False)], "metadata.name: too long", now=T0)
    assert status["observedGeneration"] == w["metadata"]["generation"]
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (2, 1, 0)
    assert status["location"] == {"name": "dfw-1", "namespace": "datum-cloud"}, "fields it does not own are kept"
    by_type = {c["type"]: c for c in status["conditions"]}
    for kind in ("Available", "ReplicasReady"):
        assert (by_type[kind]["status"], by_type[kind]["reason"]) == ("False", "ConfigurationError")
        assert by_type[kind]["message"] == "spec rejected by the cell: metadata.name: too long"
    w["status"] = status
    assert rejected_status(w, [inst(0), inst(1, ready=False)], "metadata.name: too long", now=T1) == status


def suspended_wd(replicas: int = 3, value: str | None = "true") -> dict[str, Any]:
    out = wd(replicas)
    if value is not None:
        out["metadata"].setdefault("annotations", {})["compute.datumapis.com/suspended"] = value
    return out


def stopped(ordinal: int, *, suspended: bool = True, ready: bool = False) -> dict[str, Any]:
    out = inst(ordinal, ready=ready, reason="Suspended", message="suspended")
    out["status"]["suspended"] = suspended
    return out


@pytest.mark.parametrize(
    ("instances", "message"),
    [
        ([inst(0), inst(1), inst(2)], "suspended: 0 of 3 Instances stopped (they stay; resumed in order)"),
        ([inst(0), inst(1), stopped(2)], "suspended: 1 of 3 Instances stopped (they stay; resumed in order)"),
        ([stopped(0), stopped(1), stopped(2)], "suspended: 3 of 3 Instances stopped (they stay; resumed in order)"),
        ([], "suspended: 0 of 0 Instances stopped (they stay; resumed in order)"),
    ],
    ids=["just suspended", "stopping from the top", "all stopped", "none yet"],
)
def test_a_suspended_wd_says_so_in_status_and_both_conditions(instances: list[dict[str, Any]], message: str) -> None:
    status = wd_status(suspended_wd(), instances, CUR, now=T0)
    assert status["suspended"] is True
    assert conds_of(status) == {
        "Available": ("False", "Suspended", message),
        "ReplicasReady": ("False", "Suspended", message),
    }
    assert status["replicas"] == len(instances)  # the Instances stay, counted as they are
    assert status["desiredReplicas"] == 3


def test_a_resumed_wd_says_suspended_false_and_one_never_suspended_has_no_field() -> None:
    suspended = wd_status(suspended_wd(), [stopped(0)], CUR, now=T0)
    resumed_wd = suspended_wd(value="false")
    resumed_wd["status"] = suspended
    resumed = wd_status(resumed_wd, [stopped(0, suspended=False)], CUR, now=T1)
    assert resumed["suspended"] is False
    assert conds_of(resumed)["Available"][1] == "InstancesProvisioning"
    gone = suspended_wd(value=None)
    gone["status"] = suspended
    assert wd_status(gone, [inst(0), inst(1), inst(2)], CUR, now=T1)["suspended"] is False
    assert "suspended" not in wd_status(wd(), [inst(0)], CUR, now=T0)


def test_a_suspended_wd_written_again_is_identical() -> None:
    first = wd_status(suspended_wd(), [stopped(0)], CUR, now=T0)
    again = suspended_wd()
    again["status"] = first
    assert wd_status(again, [stopped(0)], CUR, now=T1) == first


@pytest.mark.parametrize("value", ["True", "yes", "1", ""])
def test_an_unreadable_suspended_annotation_is_named(value: str) -> None:
    with pytest.raises(ValueError, match=r"compute.datumapis.com/suspended.*neither \"true\""):
        wd_status(suspended_wd(value=value), [], CUR, now=T0)
