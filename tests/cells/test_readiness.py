"""derive_ready / gates_to_remove: the Instance's Ready condition and its gates."""

from __future__ import annotations

from typing import Any

import pytest

from cells.readiness import derive_ready, gates_to_remove, is_ready, ready_with
from tests.cells.builders import cond, instance

G = 2  # the Instance's generation in these tables


def programmed(
    status: str = "True", reason: str = "Programmed", message: str = "Pod created", gen: int | None = G
) -> dict[str, Any]:
    return cond("Programmed", status, reason, message, gen)


def available(
    status: str = "True", reason: str = "Available", message: str = "Pod ready", gen: int | None = G
) -> dict[str, Any]:
    return cond("Available", status, reason, message, gen)


def quota(
    status: str = "True", reason: str = "QuotaAvailable", message: str = "granted", gen: int | None = G
) -> dict[str, Any]:
    return cond("QuotaGranted", status, reason, message, gen)


DEFAULTS = (
    cond("Programmed", "Unknown", "Pending", "Waiting for controller", None),
    cond("Available", "Unknown", "Pending", "Waiting for controller", None),
    cond("Ready", "Unknown", "Pending", "Waiting for controller", None),
    cond("QuotaGranted", "Unknown", "PendingEvaluation", "Waiting for quota evaluation", None),
)


def ready_of(*conditions: dict[str, Any], gates: tuple[str, ...] = ()) -> tuple[str, str, str]:
    result = derive_ready(instance(generation=G, gates=gates, conditions=conditions))
    assert result["type"] == "Ready"
    assert result["observedGeneration"] == G
    return result["status"], result["reason"], result["message"]


CASES: list[tuple[str, tuple[dict[str, Any], ...], tuple[str, ...], tuple[str, str, str]]] = [
    # (id, conditions, gates, expected (status, reason, message))
    ("ready", (programmed(), available()), (), ("True", "Available", "Pod ready")),
    ("ready with quota granted", (programmed(), available(), quota()), (), ("True", "Available", "Pod ready")),
    (
        "ready with default quota (not evaluated)",
        (programmed(), available(), DEFAULTS[3]),
        (),
        ("True", "Available", "Pod ready"),
    ),
    ("ready, empty message", (programmed(), available(message="")), (), ("True", "Available", "Instance is available")),
    ("all defaults: unknown", DEFAULTS, (), ("Unknown", "Pending", "Waiting for controller")),
    ("no conditions at all: unknown", (), (), ("Unknown", "Pending", "Programmed not reported yet")),
    (
        "defaults with quota gate: unknown, pending quota",
        DEFAULTS,
        ("Quota",),
        ("Unknown", "PendingQuota", "Waiting for quota evaluation"),
    ),
    (
        "defaults with network gate: unknown, gates",
        DEFAULTS,
        ("Network",),
        ("Unknown", "SchedulingGatesPresent", "waiting for scheduling gates: Network"),
    ),
    # each reason from its source, with that source's message
    (
        "network failed (7) beats image (5)",
        (
            programmed("False", "NetworkFailedToCreate", "subnet exhausted"),
            available("False", "ImageUnavailable", "pull failed"),
        ),
        (),
        ("False", "NetworkFailedToCreate", "subnet exhausted"),
    ),
    (
        "image unavailable (5) beats pending quota (3)",
        (
            programmed(),
            available("False", "ImageUnavailable", "container web: Back-off pulling image"),
            quota("False", "QuotaExceeded", "cpu"),
        ),
        (),
        ("False", "ImageUnavailable", "container web: Back-off pulling image"),
    ),
    (
        "crashing",
        (programmed(), available("False", "InstanceCrashing", "container web: back-off 10s")),
        (),
        ("False", "InstanceCrashing", "container web: back-off 10s"),
    ),
    (
        "configuration error",
        (programmed(), available("False", "ConfigurationError", "secret missing")),
        (),
        ("False", "ConfigurationError", "secret missing"),
    ),
    (
        "pending quota (3) beats provisioning (1)",
        (programmed(), available("False", "Provisioning", "creating"), quota("False", "QuotaExceeded", "cpu 3 > 2")),
        (),
        ("False", "PendingQuota", "cpu 3 > 2"),
    ),
    (
        "pending quota (3) beats gates (0)",
        (DEFAULTS[0], DEFAULTS[1], quota("Unknown", "PendingEvaluation", "evaluating")),
        ("Quota",),
        ("Unknown", "PendingQuota", "evaluating"),
    ),
    (
        "provisioning (1) beats not programmed (0)",
        (programmed("False", "PendingProgramming", "no Pod yet"), available("False", "Provisioning", "creating")),
        (),
        ("False", "Provisioning", "creating"),
    ),
    (
        "starting maps to provisioning",
        (programmed(), available("False", "Starting", "containers starting")),
        (),
        ("False", "Provisioning", "containers starting"),
    ),
    (
        "not programmed, other reasons pass as PendingProgramming",
        (programmed("False", "ProgrammingInProgress", "working"), available("Unknown", "Pending", "")),
        (),
        ("False", "PendingProgramming", "working"),
    ),
    (
        "programmed waiting for quota",
        (programmed("False", "PendingQuota", "programming waits"), available("Unknown", "Pending", "")),
        (),
        ("False", "PendingQuota", "programming waits"),
    ),
    (
        "quota pending from QuotaGranted wins the tie with Programmed's PendingQuota",
        (programmed("False", "PendingQuota", "programming waits"), quota("False", "QuotaExceeded", "cpu")),
        (),
        ("False", "PendingQuota", "cpu"),
    ),
    (
        "stopped passes through (0)",
        (programmed(), available("False", "Stopped", "stopped by user")),
        (),
        ("False", "Stopped", "stopped by user"),
    ),
    (
        "quota gate, QuotaGranted not there yet",
        (programmed("False", "PendingProgramming", "no Pod"), available("Unknown", "Pending", "")),
        ("Network", "Quota"),
        ("False", "PendingQuota", "QuotaGranted not reported yet"),
    ),
    (
        "tie at 0: gates beat not programmed",
        (programmed("False", "PendingProgramming", "no Pod"), available("Unknown", "Pending", "")),
        ("Network",),
        ("False", "SchedulingGatesPresent", "waiting for scheduling gates: Network"),
    ),
    (
        "everything true but a gate remains",
        (programmed(), available(), quota()),
        ("Quota",),
        ("False", "SchedulingGatesPresent", "waiting for scheduling gates: Quota"),
    ),
    (
        "quota denied, gate gone, runtime fine",
        (programmed(), available(), quota("False", "QuotaExceeded", "memory 4Gi > 2Gi")),
        (),
        ("False", "PendingQuota", "memory 4Gi > 2Gi"),
    ),
    # generations: a True observed at an older generation does not count
    (
        "stale available",
        (programmed(), available(gen=G - 1)),
        (),
        ("False", "Provisioning", "Available was last observed at generation 1, the Instance is at generation 2"),
    ),
    (
        "stale programmed",
        (programmed(gen=G - 1), available()),
        (),
        (
            "False",
            "PendingProgramming",
            "Programmed was last observed at generation 1, the Instance is at generation 2",
        ),
    ),
    (
        "true without observedGeneration",
        (programmed(gen=None), available()),
        (),
        (
            "False",
            "PendingProgramming",
            "Programmed was last observed at generation None, the Instance is at generation 2",
        ),
    ),
    (
        "stale quota grant",
        (programmed(), available(), quota(gen=G - 1)),
        (),
        ("False", "PendingQuota", "QuotaGranted was last observed at generation 1, the Instance is at generation 2"),
    ),
    (
        "stale False keeps its reason",
        (programmed(), available("False", "ImageUnavailable", "pull failed", gen=G - 1)),
        (),
        ("False", "ImageUnavailable", "pull failed"),
    ),
]


@pytest.mark.parametrize(("conditions", "gates", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_derive_ready(
    conditions: tuple[dict[str, Any], ...], gates: tuple[str, ...], expected: tuple[str, str, str]
) -> None:
    assert ready_of(*conditions, gates=gates) == expected


@pytest.mark.parametrize(
    ("conditions", "gates", "removable"),
    [
        ((quota(),), ("Quota",), ["Quota"]),
        ((quota(gen=G - 1),), ("Quota",), []),
        ((quota("False", "QuotaExceeded"),), ("Quota",), []),
        ((quota("Unknown", "PendingEvaluation", gen=None),), ("Quota",), []),
        ((programmed(),), ("Network",), ["Network"]),
        ((programmed("False", "NetworkFailedToCreate"),), ("Network",), []),
        ((programmed(), quota()), ("Network", "Quota"), ["Network", "Quota"]),
        ((programmed(), quota()), ("Quota", "Network"), ["Quota", "Network"]),
        ((programmed(gen=G - 1), quota()), ("Network", "Quota"), ["Quota"]),
        ((programmed(), quota()), ("example.com/Custom",), []),
        ((quota(),), (), []),
    ],
)
def test_gates_to_remove(conditions: tuple[dict[str, Any], ...], gates: tuple[str, ...], removable: list[str]) -> None:
    assert gates_to_remove(instance(generation=G, gates=gates, conditions=conditions)) == removable


def test_is_ready_needs_the_current_generation() -> None:
    assert is_ready(instance(generation=G, conditions=(cond("Ready", "True", "Available", gen=G),)))
    assert not is_ready(instance(generation=G, conditions=(cond("Ready", "True", "Available", gen=G - 1),)))
    assert not is_ready(instance(generation=G, conditions=(cond("Ready", "False", "Provisioning", gen=G),)))
    assert not is_ready(instance(generation=G))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda i: i["status"].update(conditions="x"), r"status\.conditions: expected a list"),
        (lambda i: i["status"].update(conditions=["x"]), r"status\.conditions\[0\]: expected an object"),
        (lambda i: i["status"].update(conditions=[{"status": "True"}]), r"status\.conditions\[0\]\.type: required"),
        (lambda i: i["metadata"].pop("generation"), r"metadata\.generation: required"),
        (lambda i: i["metadata"].update(generation="2"), r"metadata\.generation: expected an integer"),
        (lambda i: i["spec"]["controller"].update(schedulingGates=[{}]), r"schedulingGates\[0\]\.name: required"),
        (
            lambda i: i["status"].update(conditions=[{"type": "Available", "status": "False"}]),
            r"status\.conditions\[Available\]\.reason: required",
        ),
    ],
)
def test_malformed_instances_are_named(edit: Any, field: str) -> None:
    inst = instance(generation=G)
    edit(inst)
    with pytest.raises(ValueError, match=field):
        derive_ready(inst)


def test_ready_with_derives_ready_from_conditions_about_to_be_stored() -> None:
    programmed = cond("Programmed", "True", "Programmed")
    available = cond("Available", "True", "Available", "Pod web-0 is ready")
    waiting = cond("QuotaGranted", "False", "QuotaExceeded", "needs cpu 1")
    inst = instance(conditions=(programmed, available, waiting))
    assert derive_ready(inst)["reason"] == "PendingQuota"
    granted = cond("QuotaGranted", "True", "QuotaAvailable")
    ready = ready_with(inst, [granted])
    assert (ready["status"], ready["reason"], ready["message"]) == ("True", "Available", "Pod web-0 is ready")
    assert inst["status"]["conditions"][2] is waiting, "the Instance itself is not changed"
    assert ready_with(inst, []) == derive_ready(inst)


SUSPENDED = "suspended: its WorkloadDeployment is suspended; the Instance stays, no Pod runs"
SUSPENSION_CASES: list[tuple[str, tuple[dict[str, Any], ...], tuple[str, ...], bool, tuple[str, str, str]]] = [
    # (id, conditions, gates, status.suspended, expected Ready)
    ("ready until suspended", (programmed(), available()), (), True, ("False", "Suspended", SUSPENDED)),
    ("stopped", (programmed(), available("False", "Suspended")), (), True, ("False", "Suspended", SUSPENDED)),
    ("beats a failure", (programmed(), available("False", "ImageUnavailable")), (), True,
     ("False", "Suspended", SUSPENDED)),
    ("beats pending quota and gates", (quota("False", "QuotaExceeded"),), ("Quota",), True,
     ("False", "Suspended", SUSPENDED)),
    ("beats all-unknown", DEFAULTS, (), True, ("False", "Suspended", SUSPENDED)),
    ("resumed, the Pod not back yet", (programmed(), available("False", "Suspended", "stopped")), (), False,
     ("False", "Provisioning", "stopped")),
    ("resumed and running", (programmed(), available()), (), False, ("True", "Available", "Pod ready")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("conditions", "gates", "suspended", "expected"),
    [c[1:] for c in SUSPENSION_CASES],
    ids=[c[0] for c in SUSPENSION_CASES],
)
def test_a_suspended_instance_is_not_ready_with_reason_suspended(
    conditions: tuple[dict[str, Any], ...], gates: tuple[str, ...], suspended: bool, expected: tuple[str, str, str]
) -> None:
    result = derive_ready(instance(generation=G, gates=gates, conditions=conditions, suspended=suspended))
    assert (result["status"], result["reason"], result["message"]) == expected
    assert result["observedGeneration"] == G
