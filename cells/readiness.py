"""An Instance's `Ready` condition and which scheduling gates may go (DESIGN.md §2, §3).

Contract (pure; the Instance is the wire dict from the cache):

`derive_ready(instance)` returns the Ready condition to set (`type`, `status`, `reason`,
`message`, `observedGeneration` = metadata.generation; the caller stamps
lastTransitionTime through `set_condition_json`).

- A condition counts as True only when its status is True AND its observedGeneration equals
  metadata.generation (a True observed at an older or missing generation is not trusted: the
  spec changed since, e.g. a gate was removed). Writers of Programmed, Available and
  QuotaGranted therefore re-stamp observedGeneration on every generation.
- Quota is *evaluated* when the `Quota` gate is present or QuotaGranted is not the default
  (Unknown/PendingEvaluation); only then does it take part.
- Ready=True/Available (message: Available's) when Programmed and Available count as True,
  QuotaGranted counts as True if evaluated, and no scheduling gates remain.
- A suspended Instance (`status.suspended: true`, written by the cell WD controller) is
  Ready=False/Suspended whatever else holds: its Pod is stopped on purpose, and that is
  what a user reads first. Once it is resumed, an Available still saying Suspended (the
  pod runtime has not caught up yet) reads as Provisioning.
- Otherwise every blocker becomes a candidate (reason, message from ITS source condition):
  QuotaGranted not True → PendingQuota; gates present → SchedulingGatesPresent (names
  listed); Programmed not True → NetworkFailedToCreate / PendingQuota / Pending (default) as
  its reason says, else PendingProgramming; Available not True → its reason (Starting →
  Provisioning; a stale True → Provisioning). The candidate with the highest
  `ready_reason_priority` wins (NetworkFailedToCreate 7 > ImageUnavailable =
  InstanceCrashing = ConfigurationError 5 > PendingQuota 3 > Provisioning 1 > others 0).
- Tie-break among equal priorities: the order QuotaGranted, gates, Programmed, Available.
  The equal-5 reasons all come from Available, so they never tie with each other; at 0
  this order makes "gates present" win over "not programmed yet", the actual cause.
- Status is Unknown when Programmed, Available and (if evaluated) QuotaGranted are all
  still Unknown (nothing has reported yet), False otherwise.

`ready_with(instance, overrides)` is `derive_ready` of the Instance as it will be once the
conditions in `overrides` (replacing those of the same type) are stored: the Instance
controller derives Ready from the QuotaGranted it is about to write, in the same pass.

`gates_to_remove(instance)` lists the gates whose condition counts as True (see above):
`Quota` ← QuotaGranted; `Network` ← Programmed (the network controller reports through
Programmed while the gate holds the runtime back, NetworkFailedToCreate being its failure);
`ReferencedData` ← ReferencedDataReady (`referenceddata.instance_referenced_data`).
Unknown gate names are never removed here. Order follows spec.controller.schedulingGates.

Malformed input (conditions that are not objects, a missing generation) is a `ValueError`
naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, UNKNOWN, ConditionStatus
from federation.api.constants import SchedulingGate
from federation.api.reasons import (
    InstanceAvailableReason,
    InstanceCondition,
    InstanceProgrammedReason,
    InstanceReadyReason,
    QuotaGrantedReason,
    most_blocking_reason,
)
from mcruntime.fields import generation, get_list, get_mapping, get_str

# Which condition must count as True before a gate may be removed.
GATE_CONDITIONS: dict[str, str] = {
    SchedulingGate.QUOTA.value: InstanceCondition.QUOTA_GRANTED.value,
    SchedulingGate.NETWORK.value: InstanceCondition.PROGRAMMED.value,
    SchedulingGate.REFERENCED_DATA.value: InstanceCondition.REFERENCED_DATA_READY.value,
}

_PROGRAMMED_REASONS = {
    InstanceProgrammedReason.NETWORK_FAILED_TO_CREATE.value: InstanceReadyReason.NETWORK_FAILED_TO_CREATE.value,
    InstanceProgrammedReason.PENDING_QUOTA.value: InstanceReadyReason.PENDING_QUOTA.value,
    InstanceProgrammedReason.PENDING.value: InstanceReadyReason.PENDING.value,
}
_AVAILABLE_REASON_ALIASES = {
    InstanceAvailableReason.STARTING.value: InstanceReadyReason.PROVISIONING.value,
    # A reason "Available" on a condition that does not count as True: stale.
    InstanceAvailableReason.AVAILABLE.value: InstanceReadyReason.PROVISIONING.value,
    # left from a suspension the Instance has been resumed from: its Pod is on its way
    InstanceAvailableReason.SUSPENDED.value: InstanceReadyReason.PROVISIONING.value,
}


def conditions(instance: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """status.conditions by type."""
    out: dict[str, Mapping[str, Any]] = {}
    for i, cond in enumerate(get_list(instance, "status.conditions")):
        field = f"status.conditions[{i}]"
        if not isinstance(cond, Mapping):
            raise ValueError(f"{field}: expected an object, got {type(cond).__name__}")
        out[get_str(cond, "type", base=field)] = cond
    return out


def _counts_as_true(cond: Mapping[str, Any] | None, gen: int) -> bool:
    return cond is not None and cond.get("status") == TRUE and cond.get("observedGeneration") == gen


def condition_is_true(instance: Mapping[str, Any], type_: str) -> bool:
    """Whether condition `type_` is True and observed at the Instance's current generation."""
    return _counts_as_true(conditions(instance).get(type_), generation(instance))


def is_ready(instance: Mapping[str, Any]) -> bool:
    """Whether Ready is True at the current generation."""
    return condition_is_true(instance, InstanceCondition.READY.value)


def is_suspended(instance: Mapping[str, Any]) -> bool:
    """Whether the Instance's `status.suspended` is true (its WD is suspended: no Pod runs)."""
    return get_mapping(instance, "status").get("suspended") is True


def scheduling_gates(instance: Mapping[str, Any]) -> list[str]:
    """Names in spec.controller.schedulingGates, in order."""
    names = []
    for i, gate in enumerate(get_list(instance, "spec.controller.schedulingGates")):
        field = f"spec.controller.schedulingGates[{i}]"
        if not isinstance(gate, Mapping):
            raise ValueError(f"{field}: expected an object, got {type(gate).__name__}")
        names.append(get_str(gate, "name", base=field))
    return names


def _quota_evaluated(gates: list[str], quota: Mapping[str, Any] | None) -> bool:
    if SchedulingGate.QUOTA.value in gates:
        return True
    if quota is None:
        return False
    return not (quota.get("status") == UNKNOWN and quota.get("reason") == QuotaGrantedReason.PENDING_EVALUATION.value)


def _status(cond: Mapping[str, Any] | None) -> Any:
    return UNKNOWN if cond is None else cond.get("status")


def _reason(cond: Mapping[str, Any] | None, type_: str) -> str:
    if cond is None:
        return InstanceReadyReason.PENDING.value
    return get_str(cond, "reason", base=f"status.conditions[{type_}]")


def _message(cond: Mapping[str, Any] | None) -> str:
    message = None if cond is None else cond.get("message")
    return message if isinstance(message, str) else ""


def _stale_note(cond: Mapping[str, Any] | None, type_: str, gen: int) -> str:
    """The message of a blocking condition (why a True one does not count, when it is stale)."""
    if cond is None:
        return f"{type_} not reported yet"
    if cond.get("status") == TRUE:
        seen = cond.get("observedGeneration")
        return f"{type_} was last observed at generation {seen}, the Instance is at generation {gen}"
    return _message(cond)


@dataclass(frozen=True)
class _Inputs:
    """What Ready is derived from, read once."""

    gen: int
    gates: list[str]
    programmed: Mapping[str, Any] | None
    available: Mapping[str, Any] | None
    quota: Mapping[str, Any] | None
    quota_evaluated: bool


def _inputs(instance: Mapping[str, Any]) -> _Inputs:
    conds = conditions(instance)
    gates = scheduling_gates(instance)
    quota = conds.get(InstanceCondition.QUOTA_GRANTED.value)
    return _Inputs(
        gen=generation(instance),
        gates=gates,
        programmed=conds.get(InstanceCondition.PROGRAMMED.value),
        available=conds.get(InstanceCondition.AVAILABLE.value),
        quota=quota,
        quota_evaluated=_quota_evaluated(gates, quota),
    )


def _candidates(inp: _Inputs) -> list[tuple[str, str]]:
    """(reason, message) of every blocker, in tie-break order."""
    out: list[tuple[str, str]] = []
    if inp.quota_evaluated and not _counts_as_true(inp.quota, inp.gen):
        out.append((InstanceReadyReason.PENDING_QUOTA.value, _stale_note(inp.quota, "QuotaGranted", inp.gen)))
    if inp.gates:
        gates = ", ".join(inp.gates)
        out.append((InstanceReadyReason.SCHEDULING_GATES_PRESENT.value, f"waiting for scheduling gates: {gates}"))
    if not _counts_as_true(inp.programmed, inp.gen):
        raw = _reason(inp.programmed, "Programmed")
        reason = _PROGRAMMED_REASONS.get(raw, InstanceReadyReason.PENDING_PROGRAMMING.value)
        out.append((reason, _stale_note(inp.programmed, "Programmed", inp.gen)))
    if not _counts_as_true(inp.available, inp.gen):
        raw = _reason(inp.available, "Available")
        out.append((_AVAILABLE_REASON_ALIASES.get(raw, raw), _stale_note(inp.available, "Available", inp.gen)))
    return out


def _all_unknown(inp: _Inputs) -> bool:
    inputs = [inp.programmed, inp.available, *([inp.quota] if inp.quota_evaluated else [])]
    return all(_status(c) == UNKNOWN for c in inputs)


def derive_ready(instance: Mapping[str, Any]) -> dict[str, Any]:
    """The Instance's Ready condition (without lastTransitionTime)."""
    inp = _inputs(instance)
    if is_suspended(instance):
        message = "suspended: its WorkloadDeployment is suspended; the Instance stays, no Pod runs"
        return _ready(FALSE, InstanceReadyReason.SUSPENDED.value, message, inp.gen)
    candidates = _candidates(inp)
    if not candidates:
        message = _message(inp.available) or "Instance is available"
        return _ready(TRUE, InstanceReadyReason.AVAILABLE.value, message, inp.gen)
    winner = most_blocking_reason([reason for reason, _ in candidates])
    message = next(msg for reason, msg in candidates if reason == winner)
    status: ConditionStatus = UNKNOWN if _all_unknown(inp) else FALSE
    return _ready(status, str(winner), message, inp.gen)


def ready_with(instance: Mapping[str, Any], overrides: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`derive_ready` once the `overrides` conditions are stored."""
    replaced = {get_str(c, "type", base="override") for c in overrides}
    kept = [
        c for c in get_list(instance, "status.conditions") if not (isinstance(c, Mapping) and c.get("type") in replaced)
    ]
    status = {**get_mapping(instance, "status"), "conditions": [*kept, *overrides]}
    return derive_ready({**instance, "status": status})


def _ready(status: ConditionStatus, reason: str, message: str, gen: int) -> dict[str, Any]:
    return {
        "type": InstanceCondition.READY.value,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": gen,
    }


def gates_to_remove(instance: Mapping[str, Any]) -> list[str]:
    """Gates whose condition is True at the current generation (removable now)."""
    gen = generation(instance)
    conds = conditions(instance)
    return [
        gate
        for gate in scheduling_gates(instance)
        if gate in GATE_CONDITIONS and _counts_as_true(conds.get(GATE_CONDITIONS[gate]), gen)
    ]
