"""Conditions as the plain JSON dicts the runtime's caches hold (DESIGN.md §4 keeps hot
paths on plain JSON): apimachinery's `meta.SetStatusCondition` semantics without the
pydantic `Condition` model (`conditions.py`, which re-exports these), so a controller that
reads and writes wire dicts does not build the API models (issue 22, "a small process")."""

from __future__ import annotations

from collections.abc import Iterable, MutableSequence
from datetime import UTC, datetime
from typing import Any, Literal

ConditionStatus = Literal["True", "False", "Unknown"]
TRUE: ConditionStatus = "True"
FALSE: ConditionStatus = "False"
UNKNOWN: ConditionStatus = "Unknown"


# lastTransitionTime of server-defaulted conditions: "never transitioned".
EPOCH = "1970-01-01T00:00:00Z"


def rfc3339_now() -> str:
    """Now, at the second precision metav1.Time serialises with."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition_json(conditions: Iterable[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


def set_condition_json(
    conditions: MutableSequence[dict[str, Any]],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: str | None = None,
) -> bool:
    """`set_condition` for a list of wire dicts (e.g. `obj["status"]["conditions"]`)."""
    existing = find_condition_json(conditions, type_)
    if existing is None:
        new: dict[str, Any] = {
            "type": type_,
            "status": status,
            "lastTransitionTime": now or rfc3339_now(),
            "reason": reason,
            "message": message,
        }
        if observed_generation is not None:
            new["observedGeneration"] = observed_generation
        conditions.append(new)
        return True
    changed = False
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = now or rfc3339_now()
        changed = True
    for key, value in (("reason", reason), ("message", message)):
        if existing.get(key) != value:
            existing[key] = value
            changed = True
    if existing.get("observedGeneration") != observed_generation:
        if observed_generation is None:
            existing.pop("observedGeneration", None)
        else:
            existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def remove_condition_json(conditions: MutableSequence[dict[str, Any]], type_: str) -> bool:
    for i, cond in enumerate(conditions):
        if cond.get("type") == type_:
            del conditions[i]
            return True
    return False
