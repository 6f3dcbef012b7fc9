"""Conditions one writer owns, merged with what is stored: a write only when they changed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cells.conditionset import merge_owned

from .builders import cond

NOW = "2025-06-01T00:00:00Z"


def want(type_: str, status: str, reason: str, message: str = "", gen: int = 1) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "observedGeneration": gen}


STORED = [cond("Programmed", "True", "Programmed", "Pod up"), cond("Ready", "False", "Pending", "wait")]


@pytest.mark.parametrize(
    ("desired", "changed", "transition"),
    [
        ([want("Programmed", "True", "Programmed", "Pod up")], False, "2025-01-02T03:04:05Z"),
        ([want("Programmed", "True", "Programmed", "Pod up again")], True, "2025-01-02T03:04:05Z"),
        ([want("Programmed", "True", "Programmed", "Pod up", gen=2)], True, "2025-01-02T03:04:05Z"),
        ([want("Programmed", "False", "PendingProgramming", "gone")], True, NOW),
        ([want("Available", "True", "Available", "ok")], True, NOW),
    ],
    ids=["same", "message", "generation", "status", "new"],
)
def test_only_the_owned_conditions_and_whether_they_changed(
    desired: list[dict[str, Any]], changed: bool, transition: str
) -> None:
    owned, did_change = merge_owned(STORED, desired, now=NOW)
    assert did_change is changed
    assert [c["type"] for c in owned] == [d["type"] for d in desired]
    (only,) = owned
    assert only["lastTransitionTime"] == transition
    assert {k: only[k] for k in ("status", "reason", "message", "observedGeneration")} == {
        k: desired[0][k] for k in ("status", "reason", "message", "observedGeneration")
    }


@pytest.mark.parametrize(
    ("stored", "desired", "error"),
    [
        (["Ready"], [], r"status.conditions\[0\]"),
        ([], [{"type": "Ready", "status": "Maybe", "reason": "X"}], "desired condition"),
        ([], [{"type": "Ready", "status": "True"}], "desired condition"),
    ],
)
def test_malformed_input_is_an_error(stored: list[Any], desired: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        merge_owned(stored, desired, now=NOW)


status = st.sampled_from(["True", "False", "Unknown"])
reason = st.sampled_from(["Pending", "Available", "Provisioning"])


@pytest.mark.slow
@given(st.lists(st.tuples(status, reason, st.text(max_size=5)), min_size=1, max_size=3))
def test_storing_the_result_then_merging_again_changes_nothing(wants: list[tuple[str, str, str]]) -> None:
    desired = [want(f"T{i}", s, r, m) for i, (s, r, m) in enumerate(wants)]
    owned, _ = merge_owned(STORED, desired, now=NOW)
    again, changed = merge_owned([*STORED, *owned], desired, now="2030-01-01T00:00:00Z")
    assert not changed and again == owned
