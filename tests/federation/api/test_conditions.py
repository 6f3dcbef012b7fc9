"""Condition helpers: meta.SetStatusCondition semantics, on models and on plain JSON."""

from __future__ import annotations

from typing import Any

import pytest

from federation.api import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    ConditionStatus,
    InstanceCondition,
    InstanceReadyReason,
    default_instance_conditions,
    find_condition,
    find_condition_json,
    is_condition_current,
    is_condition_true,
    most_blocking_reason,
    ready_reason_priority,
    remove_condition,
    remove_condition_json,
    set_condition,
    set_condition_json,
)

T0, T1, T2 = "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"


def test_new_condition_is_added_with_transition_time_and_generation() -> None:
    conds: list[Condition] = []
    assert set_condition(conds, "Ready", FALSE, "Provisioning", "starting", observed_generation=2, now=T0)
    assert [c.to_wire() for c in conds] == [
        {
            "type": "Ready",
            "status": "False",
            "observedGeneration": 2,
            "lastTransitionTime": T0,
            "reason": "Provisioning",
            "message": "starting",
        }
    ]


def test_identical_write_reports_no_change_so_status_writes_can_be_skipped() -> None:
    conds: list[Condition] = []
    set_condition(conds, "Ready", FALSE, "Provisioning", "starting", observed_generation=2, now=T0)
    before = [c.model_copy() for c in conds]
    assert not set_condition(conds, "Ready", FALSE, "Provisioning", "starting", observed_generation=2, now=T1)
    assert conds == before


def test_transition_time_moves_only_when_status_changes() -> None:
    conds: list[Condition] = []
    set_condition(conds, "Ready", FALSE, "Provisioning", "starting", observed_generation=1, now=T0)
    # reason, message and generation change: reported as a change, but no transition
    assert set_condition(conds, "Ready", FALSE, "ImageUnavailable", "pull failed", observed_generation=2, now=T1)
    cond = find_condition(conds, "Ready")
    assert cond is not None
    assert (cond.reason, cond.message, cond.observed_generation, cond.last_transition_time) == (
        "ImageUnavailable",
        "pull failed",
        2,
        T0,
    )
    # status changes: a transition
    assert set_condition(conds, "Ready", TRUE, "Available", "", observed_generation=2, now=T2)
    cond = find_condition(conds, "Ready")
    assert cond is not None and cond.last_transition_time == T2 and cond.status == "True"


def test_only_generation_changing_is_a_change() -> None:
    conds: list[Condition] = []
    set_condition(conds, "Available", TRUE, "Available", observed_generation=1, now=T0)
    assert set_condition(conds, "Available", TRUE, "Available", observed_generation=2, now=T1)
    assert conds[0].observed_generation == 2 and conds[0].last_transition_time == T0


def test_without_now_the_current_time_is_used() -> None:
    conds: list[Condition] = []
    set_condition(conds, "Ready", UNKNOWN, "Pending")
    stamp = conds[0].last_transition_time
    assert len(stamp) == 20 and stamp.endswith("Z") and stamp > "2024-01-01T00:00:00Z"


def test_other_conditions_are_left_alone_and_removal_reports_presence() -> None:
    conds = default_instance_conditions()
    set_condition(conds, "Ready", TRUE, "Available", now=T1)
    assert [c.type for c in conds] == ["Programmed", "Available", "Ready", "QuotaGranted"]
    assert conds[0].last_transition_time == "1970-01-01T00:00:00Z"
    assert remove_condition(conds, "Programmed")
    assert not remove_condition(conds, "Programmed")
    assert [c.type for c in conds] == ["Available", "Ready", "QuotaGranted"]


def test_true_and_current() -> None:
    conds: list[Condition] = []
    set_condition(conds, "QuotaGranted", TRUE, "QuotaAvailable", observed_generation=3, now=T0)
    assert is_condition_true(conds, "QuotaGranted")
    assert not is_condition_true(conds, "Ready")
    assert is_condition_current(conds, "QuotaGranted", 3)
    assert not is_condition_current(conds, "QuotaGranted", 4)  # stale: computed from an older spec
    assert not is_condition_current(conds, "Ready", 3)


Step = tuple[str, ConditionStatus, str, str, int | None, str]
STEPS: list[Step] = [
    ("Ready", "Unknown", "Pending", "", None, T0),
    ("Ready", "Unknown", "Pending", "", None, T1),
    ("Ready", "False", "Provisioning", "x", 1, T1),
    ("Ready", "False", "Provisioning", "x", 2, T2),
    ("Ready", "False", "Provisioning", "x", None, T2),
    ("Programmed", "True", "Programmed", "", 2, T2),
    ("Ready", "True", "Available", "", 2, T2),
]


def test_json_flavour_behaves_exactly_like_the_model_flavour() -> None:
    models: list[Condition] = []
    dicts: list[dict[str, Any]] = []
    for type_, status, reason, message, gen, now in STEPS:
        changed_model = set_condition(models, type_, status, reason, message, observed_generation=gen, now=now)
        changed_json = set_condition_json(dicts, type_, status, reason, message, observed_generation=gen, now=now)
        assert changed_model == changed_json
        assert [c.to_wire() for c in models] == dicts
    assert find_condition_json(dicts, "Programmed") is not None
    assert remove_condition_json(dicts, "Programmed") and not remove_condition_json(dicts, "Programmed")


def test_json_flavour_edits_the_cached_dicts_in_place() -> None:
    obj: dict[str, Any] = {"status": {"conditions": [c.to_wire() for c in default_instance_conditions()]}}
    conds = obj["status"]["conditions"]
    assert set_condition_json(conds, "QuotaGranted", TRUE, "QuotaAvailable", "granted", observed_generation=1, now=T0)
    quota = find_condition_json(obj["status"]["conditions"], "QuotaGranted")
    assert quota == {
        "type": "QuotaGranted",
        "status": "True",
        "lastTransitionTime": T0,
        "reason": "QuotaAvailable",
        "message": "granted",
        "observedGeneration": 1,
    }


def test_default_instance_conditions_match_the_contract() -> None:
    got = {(c.type, c.status, c.reason) for c in default_instance_conditions()}
    assert got == {
        ("Programmed", "Unknown", "Pending"),
        ("Available", "Unknown", "Pending"),
        ("Ready", "Unknown", "Pending"),
        ("QuotaGranted", "Unknown", "PendingEvaluation"),
    }
    assert "Running" not in {c.type for c in default_instance_conditions()}  # replaced by Available


@pytest.mark.parametrize(
    ("reasons", "winner"),
    [
        (["Provisioning", "PendingQuota"], "PendingQuota"),
        (["PendingQuota", "ImageUnavailable", "NetworkFailedToCreate"], "NetworkFailedToCreate"),
        (["InstanceCrashing", "ImageUnavailable"], "InstanceCrashing"),  # equal priority: first given wins
        (["SchedulingGatesPresent", "Provisioning"], "Provisioning"),
        (["PendingProgramming", "Pending"], "PendingProgramming"),
        ([], None),
    ],
)
def test_most_specific_blocking_reason_wins(reasons: list[str], winner: str | None) -> None:
    assert most_blocking_reason(reasons) == winner


def test_ready_reason_priorities() -> None:
    assert ready_reason_priority(InstanceReadyReason.NETWORK_FAILED_TO_CREATE) == 7
    for reason in ("ImageUnavailable", "InstanceCrashing", "ConfigurationError"):
        assert ready_reason_priority(reason) == 5
    assert ready_reason_priority("PendingQuota") == 3
    assert ready_reason_priority("Provisioning") == 1
    assert ready_reason_priority("SchedulingGatesPresent") == 0
    assert str(InstanceCondition.AVAILABLE) == "Available"
