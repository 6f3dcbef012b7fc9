"""metav1.Condition and the helpers controllers use to read and write conditions.

Semantics follow apimachinery's `meta.SetStatusCondition`: `lastTransitionTime` moves only
when `status` changes, `observedGeneration` records the generation the condition was
computed from, and every writer learns whether anything changed, so a controller can skip
a status write that would only bump resourceVersion and wake itself up again (the classic
hot loop on one's own writes).

Two flavours with the same behaviour: one over `Condition` models, one over the plain JSON
dicts that the runtime's caches hold (DESIGN.md §4 keeps hot paths on plain JSON).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableSequence
from typing import Annotated

from pydantic import Field

from .base import KubeModel
from .conditionjson import (
    EPOCH,
    FALSE,
    TRUE,
    UNKNOWN,
    ConditionStatus,
    find_condition_json,
    remove_condition_json,
    rfc3339_now,
    set_condition_json,
)
from .markers import DateTime, Format, WireRequired
from .reasons import InstanceCondition, InstanceReadyReason, QuotaGrantedReason

# The patterns metav1.Condition declares (and controller-gen copies into every CRD).
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(KubeModel):
    """One aspect of an object's current state (metav1.Condition)."""

    type: str = Field(
        max_length=316, pattern=CONDITION_TYPE_PATTERN, description="Type of condition in CamelCase, e.g. Ready."
    )
    status: ConditionStatus = Field(description="Status of the condition: True, False or Unknown.")
    observed_generation: Annotated[int, Format("int64"), Field(ge=0)] | None = Field(
        default=None, description="metadata.generation the condition was computed from."
    )
    last_transition_time: DateTime = Field(description="Last time status changed (not reason or message).")
    reason: str = Field(
        min_length=1,
        max_length=1024,
        pattern=CONDITION_REASON_PATTERN,
        description="CamelCase programmatic identifier of why the condition is in its status.",
    )
    message: Annotated[str, WireRequired()] = Field(
        default="", max_length=32768, description="Human-readable detail; may be empty."
    )


# --------------------------------------------------------------------- models


def find_condition(conditions: Iterable[Condition], type_: str) -> Condition | None:
    for cond in conditions:
        if cond.type == type_:
            return cond
    return None


def set_condition(
    conditions: MutableSequence[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Add or update the condition of `type_` in place; True when anything changed."""
    existing = find_condition(conditions, type_)
    if existing is None:
        conditions.append(
            Condition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                observed_generation=observed_generation,
                last_transition_time=now or rfc3339_now(),
            )
        )
        return True
    changed = False
    if existing.status != status:
        existing.status = status
        existing.last_transition_time = now or rfc3339_now()
        changed = True
    if existing.reason != reason:
        existing.reason = reason
        changed = True
    if existing.message != message:
        existing.message = message
        changed = True
    if existing.observed_generation != observed_generation:
        existing.observed_generation = observed_generation
        changed = True
    return changed


def remove_condition(conditions: MutableSequence[Condition], type_: str) -> bool:
    """Drop the condition of `type_`; True when it was there."""
    for i, cond in enumerate(conditions):
        if cond.type == type_:
            del conditions[i]
            return True
    return False


def is_condition_true(conditions: Iterable[Condition], type_: str) -> bool:
    cond = find_condition(conditions, type_)
    return cond is not None and cond.status == TRUE


def is_condition_current(conditions: Iterable[Condition], type_: str, generation: int | None) -> bool:
    """True when the condition exists and was computed from `generation` (so acting on it
    is safe: e.g. a scheduling gate is removed only on a True condition that is current)."""
    cond = find_condition(conditions, type_)
    return cond is not None and generation is not None and cond.observed_generation == generation


# ------------------------------------------------------------ plain JSON dicts: conditionjson.py


# --------------------------------------------------------- Instance defaults

WAITING_FOR_CONTROLLER = "Waiting for controller"
WAITING_FOR_QUOTA = "Waiting for quota evaluation"


def default_instance_conditions() -> list[Condition]:
    """The conditions the Instance CRD defaults `status` to: all Unknown, reason Pending
    (PendingEvaluation for quota), never transitioned."""
    pending = [InstanceCondition.PROGRAMMED, InstanceCondition.AVAILABLE, InstanceCondition.READY]
    out = [
        Condition(
            type=t,
            status=UNKNOWN,
            reason=InstanceReadyReason.PENDING,
            message=WAITING_FOR_CONTROLLER,
            last_transition_time=EPOCH,
        )
        for t in pending
    ]
    out.append(
        Condition(
            type=InstanceCondition.QUOTA_GRANTED,
            status=UNKNOWN,
            reason=QuotaGrantedReason.PENDING_EVALUATION,
            message=WAITING_FOR_QUOTA,
            last_transition_time=EPOCH,
        )
    )
    return out


__all__ = [
    "CONDITION_REASON_PATTERN",
    "CONDITION_TYPE_PATTERN",
    "EPOCH",
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "WAITING_FOR_CONTROLLER",
    "WAITING_FOR_QUOTA",
    "Condition",
    "ConditionStatus",
    "default_instance_conditions",
    "find_condition",
    "find_condition_json",
    "is_condition_current",
    "is_condition_true",
    "remove_condition",
    "remove_condition_json",
    "rfc3339_now",
    "set_condition",
    "set_condition_json",
]
