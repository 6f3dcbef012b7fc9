"""QuotaGate on the Instance side: which Instances are under quota, their ResourceClaim, and
the QuotaGranted condition read from the claim's verdict.

Contract (pure; wire dicts in and out):

`under_quota(instance)`: the Instance takes part in quota when it still carries the `Quota`
scheduling gate, or its QuotaGranted condition has left the default (Unknown /
PendingEvaluation): a granted Instance keeps being re-stamped at each new generation, since
a True observed at an older generation does not count (readiness.py).

`claim_for(instance)`: the ResourceClaim `instance-<name>` in the Instance's namespace,
controller-owned by the Instance (apiVersion `compute.datumapis.com/v1alpha`, kind
`Instance`, its uid, blockOwnerDeletion), labelled like the Instance, `spec.consumerRef` =
the Instance, `spec.requests` = `quota.claim_resources(spec)`. A spec that cannot be sized
is the `ValueError` of `claim_resources`, naming the field.

`quota_granted(claim, instance)`: the QuotaGranted condition (observedGeneration = the
Instance's generation), first match wins:
- no claim → Unknown/PendingEvaluation ("claim not created yet");
- a claim the Instance does not control (left by an earlier Instance of the same name, on its
  way out through the garbage collector) → Unknown/PendingEvaluation naming it;
- the claim's `Granted` condition True → True/QuotaAvailable; False → False with its reason
  (QuotaExceeded, ValidationFailed) and message; absent or Unknown → Unknown/PendingEvaluation.
`validation_failed(instance, message)`: False/ValidationFailed with the sizing error.
`is_granted(claim)`: the claim's Granted condition is True.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, UNKNOWN, ConditionStatus
from federation.api.constants import API_VERSION, QUOTA_API_VERSION, Kind, SchedulingGate
from federation.api.reasons import InstanceCondition, QuotaGrantedReason, ResourceClaimCondition
from mcruntime.fields import generation, get_list, get_str, get_str_map

from .quota import claim_name, claim_resources
from .readiness import conditions, scheduling_gates


def under_quota(instance: Mapping[str, Any]) -> bool:
    """Whether the Instance takes part in quota (gate present, or QuotaGranted evaluated)."""
    if SchedulingGate.QUOTA.value in scheduling_gates(instance):
        return True
    cond = conditions(instance).get(InstanceCondition.QUOTA_GRANTED.value)
    if cond is None:
        return False
    return not (cond.get("status") == UNKNOWN and cond.get("reason") == QuotaGrantedReason.PENDING_EVALUATION.value)


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in get_list(obj, "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else None
    return None


def claim_for(instance: Mapping[str, Any]) -> dict[str, Any]:
    """The ResourceClaim of a gated Instance."""
    name = get_str(instance, "metadata.name")
    uid = get_str(instance, "metadata.uid")
    requests = claim_resources(instance.get("spec") or {})
    consumer = {"apiVersion": API_VERSION, "kind": Kind.INSTANCE.value, "name": name, "uid": uid}
    return {
        "apiVersion": QUOTA_API_VERSION,
        "kind": Kind.RESOURCE_CLAIM.value,
        "metadata": {
            "name": claim_name(name),
            "namespace": get_str(instance, "metadata.namespace"),
            "labels": get_str_map(instance, "metadata.labels"),
            "ownerReferences": [{**consumer, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"consumerRef": consumer, "requests": requests},
    }


def is_claim_of(claim: Mapping[str, Any], instance: Mapping[str, Any]) -> bool:
    """Whether `claim` is controlled by this very Instance (by uid)."""
    return _controller_uid(claim) == get_str(instance, "metadata.uid")


def _granted(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return conditions(claim).get(ResourceClaimCondition.GRANTED.value)


def is_granted(claim: Mapping[str, Any]) -> bool:
    """Whether the claim's Granted condition is True."""
    cond = _granted(claim)
    return cond is not None and cond.get("status") == TRUE


def _condition(status: ConditionStatus, reason: str, message: str, gen: int) -> dict[str, Any]:
    return {
        "type": InstanceCondition.QUOTA_GRANTED.value,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": gen,
    }


def quota_granted(claim: Mapping[str, Any] | None, instance: Mapping[str, Any]) -> dict[str, Any]:
    """The Instance's QuotaGranted condition from its claim (see the module docstring)."""
    gen = generation(instance)
    pending = QuotaGrantedReason.PENDING_EVALUATION.value
    name = claim_name(get_str(instance, "metadata.name"))
    if claim is None:
        return _condition(UNKNOWN, pending, f"claim {name} not created yet", gen)
    if not is_claim_of(claim, instance):
        return _condition(
            UNKNOWN, pending, f"claim {name} belongs to an earlier Instance of this name; waiting for it to go", gen
        )
    cond = _granted(claim)
    status = None if cond is None else cond.get("status")
    message = "" if cond is None else str(cond.get("message") or "")
    if status == TRUE:
        return _condition(TRUE, QuotaGrantedReason.QUOTA_AVAILABLE.value, message or f"claim {name} granted", gen)
    if status == FALSE:
        reason = get_str(cond or {}, "reason", base=f"claim {name} status.conditions[Granted]")
        return _condition(FALSE, reason, message, gen)
    return _condition(UNKNOWN, pending, f"claim {name} is waiting for evaluation", gen)


def validation_failed(instance: Mapping[str, Any], message: str) -> dict[str, Any]:
    """QuotaGranted False/ValidationFailed: the Instance cannot be sized for a claim."""
    return _condition(FALSE, QuotaGrantedReason.VALIDATION_FAILED.value, message, generation(instance))
