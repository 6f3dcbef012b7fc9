"""A cell WorkloadDeployment's status, computed from its Instances.

Contract: `wd_status(wd, instances, current_hash, *, now)` returns the WD's whole `status`
(fields this module does not own, such as `location`, are kept as they are). `instances`
are the Instances the WD controls (the caller selects them by owner uid). The same inputs
give an identical dict, and conditions go through `set_condition_json` on a copy of the
current ones, so lastTransitionTime moves only when a status changes (`now` is its value
then): the controller writes status only when the result differs from what is stored.

Counters (an Instance is "deleting" when it has a deletionTimestamp):
- `replicas`: Instances that exist, deleting ones included (like a StatefulSet's; the scale
  subresource reports it).
- `updatedReplicas`: not deleting, on `current_hash`, ready or not.
- `currentReplicas`: updated AND Programmed True at the Instance's generation.
- `readyReplicas`: not deleting, Ready True at the Instance's generation (any hash: a ready
  Instance on an old template still serves).
- `desiredReplicas`: spec.replicas, else scaleSettings.minReplicas.
- `observedGeneration`: metadata.generation; `selector`: `<workload-deployment-name label>=<name>`.

Conditions (observedGeneration = metadata.generation; messages carry the counts and, when
something blocks, the most blocking Instance's Ready reason and message, by
`ready_reason_priority`, ties to the lowest ordinal). An Instance "waits on quota" when its
Ready reason is PendingQuota (the Instance controller's verdict). When not True, a
condition's reason is the headline a user reads in `kubectl get wd` (and, carried up by
the projector's worst-wins rollup, in the project): the most blocking Instance's own
Ready reason when it is a failure (ImageUnavailable, InstanceCrashing, ConfigurationError,
NetworkFailedToCreate: `blocking_reason`), else the quota reason when an Instance waits on
quota, else InstancesProvisioning (issue 18 item 1).
- `Available`: True/StableInstanceFound when at least one Instance is ready; True/
  ScaledToZero when no Instances are desired (nothing is missing); else False with the
  headline reason (quota: QuotaNotGranted).
- `ReplicasReady`: True/ReplicasAvailable when readyReplicas >= desiredReplicas (>=: during
  a scale-down the surplus is on its way out and every desired replica is ready); else
  False with the headline reason (quota: QuotaExceeded).

Suspension (`compute.datumapis.com/suspended: "true"` on the WD, `instances.wd_suspended`):
`suspended: true`, and both conditions False/Suspended, the message counting the
Instances already stopped — upstream has no WD-level reason for it (its Available falls
back to InstancesProvisioning, which would say the opposite of what happens), so the WD
carries its Instances' own reason, as it does for failures. Not suspended: `suspended`
is false once it has been written (a resumed WD says so), absent on a WD never suspended.

`rejected_status(wd, instances, problem, *, now)` is the status of a WD whose spec this
cell cannot act on (a name or label that cannot be an Instance label, say): observed —
`observedGeneration` is current, so nobody waits for the cell — and both conditions
False/ConfigurationError with the problem, which the projector carries up to the project.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, set_condition_json
from federation.api.naming import workload_deployment_selector
from federation.api.reasons import (
    InstanceCondition,
    InstanceReadyReason,
    ReplicasReadyReason,
    WorkloadDeploymentAvailableReason,
    WorkloadDeploymentCondition,
    ready_reason_priority,
)
from mcruntime.fields import generation, get_list, get_mapping, get_str, is_deleting

from .instances import desired_replicas, ordinal_of, wd_suspended
from .readiness import condition_is_true, conditions, is_ready, is_suspended


def _ordinal_key(instance: Mapping[str, Any], wd_name: str) -> tuple[int, str]:
    name = get_str(instance, "metadata.name")
    ordinal = ordinal_of(name, wd_name)
    return (ordinal if ordinal is not None else -1, name)


def _ready_condition(instance: Mapping[str, Any]) -> Mapping[str, Any]:
    return conditions(instance).get(InstanceCondition.READY.value) or {}


def _waits_on_quota(instance: Mapping[str, Any]) -> bool:
    return _ready_condition(instance).get("reason") == InstanceReadyReason.PENDING_QUOTA.value


def _most_blocking(not_ready: Sequence[Mapping[str, Any]]) -> str:
    """`<name>: <reason>: <message>` of the most blocking not-ready Instance ('' when none)."""
    worst: Mapping[str, Any] | None = None
    for inst in not_ready:  # in ordinal order: the first of equals wins
        reason = str(_ready_condition(inst).get("reason") or "")
        if worst is None or ready_reason_priority(reason) > ready_reason_priority(
            str(_ready_condition(worst).get("reason") or "")
        ):
            worst = inst
    if worst is None:
        return ""
    cond = _ready_condition(worst)
    parts = [get_str(worst, "metadata.name"), str(cond.get("reason") or InstanceReadyReason.PENDING.value)]
    if cond.get("message"):
        parts.append(str(cond["message"]))
    return ": ".join(parts)


# Ready reasons that are failures of the Instance itself: shown as the WD's reason, not
# hidden behind "provisioning" (priority >= this one's, DESIGN.md §2).
_FAILURE_PRIORITY = ready_reason_priority(InstanceReadyReason.IMAGE_UNAVAILABLE.value)


def blocking_reason(not_ready: Sequence[Mapping[str, Any]]) -> str | None:
    """The most blocking not-ready Instance's Ready reason when it is a failure
    (ImageUnavailable, InstanceCrashing, ...), else None; ties as in `_most_blocking`."""
    reasons = (str(_ready_condition(i).get("reason") or "") for i in not_ready)
    worst = max(reasons, key=ready_reason_priority, default="")
    return worst if worst and ready_reason_priority(worst) >= _FAILURE_PRIORITY else None


def _joined(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def wd_status(
    wd: Mapping[str, Any], instances: Sequence[Mapping[str, Any]], current_hash: str, *, now: str
) -> dict[str, Any]:
    """The WD's status from its Instances (see the module docstring)."""
    if not now:
        raise ValueError("now: required (RFC 3339 time for lastTransitionTime)")
    if not current_hash:
        raise ValueError("current template hash: required")
    name = get_str(wd, "metadata.name")
    gen = generation(wd)
    desired = desired_replicas(wd)
    ordered = sorted(instances, key=lambda inst: _ordinal_key(inst, name))
    live = [i for i in ordered if not is_deleting(i)]
    updated = [i for i in live if get_str(i, "spec.controller.templateHash", required=False) == current_hash]
    current = [i for i in updated if condition_is_true(i, InstanceCondition.PROGRAMMED.value)]
    ready = [i for i in live if is_ready(i)]
    not_ready = [i for i in live if not is_ready(i)]
    quota_waiting = [i for i in not_ready if _waits_on_quota(i)]

    counts = f"{len(ready)} of {desired} Instances ready"
    quota_note = f"{len(quota_waiting)} waiting for quota" if quota_waiting else ""
    blocking = _most_blocking(not_ready)
    failure = blocking_reason(not_ready)

    status = copy.deepcopy(dict(get_mapping(wd, "status")))
    conds: list[dict[str, Any]] = copy.deepcopy(get_list(wd, "status.conditions"))
    if not all(isinstance(c, dict) for c in conds):
        raise ValueError("status.conditions: expected a list of objects")

    available = WorkloadDeploymentCondition.AVAILABLE.value
    replicas_ready = WorkloadDeploymentCondition.REPLICAS_READY.value
    suspended = wd_suspended(wd)
    if suspended:
        stopped = len([i for i in live if is_suspended(i)])
        message = f"suspended: {stopped} of {len(live)} Instances stopped (they stay; resumed in order)"
        for type_, reason in ((available, WorkloadDeploymentAvailableReason.SUSPENDED.value),
                              (replicas_ready, ReplicasReadyReason.SUSPENDED.value)):  # fmt: skip
            set_condition_json(conds, type_, FALSE, reason, message, observed_generation=gen, now=now)
    elif ready:
        set_condition_json(
            conds,
            available,
            TRUE,
            WorkloadDeploymentAvailableReason.STABLE_INSTANCE_FOUND.value,
            counts,
            observed_generation=gen,
            now=now,
        )
    elif not desired:
        set_condition_json(
            conds,
            available,
            TRUE,
            WorkloadDeploymentAvailableReason.SCALED_TO_ZERO.value,
            "no Instances desired (replicas is 0)",
            observed_generation=gen,
            now=now,
        )
    else:
        reason = failure or (
            WorkloadDeploymentAvailableReason.QUOTA_NOT_GRANTED.value
            if quota_waiting
            else WorkloadDeploymentAvailableReason.INSTANCES_PROVISIONING.value
        )
        message = _joined(counts, quota_note, blocking)
        set_condition_json(conds, available, FALSE, reason, message, observed_generation=gen, now=now)

    if suspended:
        pass  # both conditions said Suspended above
    elif len(ready) >= desired:
        set_condition_json(
            conds,
            replicas_ready,
            TRUE,
            ReplicasReadyReason.REPLICAS_AVAILABLE.value,
            counts,
            observed_generation=gen,
            now=now,
        )
    else:
        reason_value = failure or (
            ReplicasReadyReason.QUOTA_EXCEEDED.value
            if quota_waiting
            else WorkloadDeploymentAvailableReason.INSTANCES_PROVISIONING.value
        )
        set_condition_json(
            conds,
            replicas_ready,
            FALSE,
            reason_value,
            _joined(counts, quota_note, blocking),
            observed_generation=gen,
            now=now,
        )

    status.update(
        replicas=len(instances),
        currentReplicas=len(current),
        updatedReplicas=len(updated),
        readyReplicas=len(ready),
        desiredReplicas=desired,
        observedGeneration=gen,
        selector=workload_deployment_selector(name),
        conditions=conds,
    )
    if suspended or "suspended" in status:
        status["suspended"] = suspended
    return status


def rejected_status(
    wd: Mapping[str, Any], instances: Sequence[Mapping[str, Any]], problem: str, *, now: str
) -> dict[str, Any]:
    """The status of a WD whose spec the cell rejects (see the module docstring)."""
    if not now:
        raise ValueError("now: required (RFC 3339 time for lastTransitionTime)")
    gen = generation(wd)
    status = copy.deepcopy(dict(get_mapping(wd, "status")))
    conds: list[dict[str, Any]] = copy.deepcopy(get_list(wd, "status.conditions"))
    if not all(isinstance(c, dict) for c in conds):
        conds = []  # unreadable conditions are replaced: this status says what is wrong
    message = f"spec rejected by the cell: {problem}"
    reason = InstanceReadyReason.CONFIGURATION_ERROR.value
    for condition in (WorkloadDeploymentCondition.AVAILABLE.value, WorkloadDeploymentCondition.REPLICAS_READY.value):
        set_condition_json(conds, condition, FALSE, reason, message, observed_generation=gen, now=now)
    live = [i for i in instances if not is_deleting(i)]
    status.update(
        replicas=len(instances),
        currentReplicas=0,
        updatedReplicas=0,
        readyReplicas=len([i for i in live if is_ready(i)]),
        observedGeneration=gen,
        selector=workload_deployment_selector(get_str(wd, "metadata.name")),
        conditions=conds,
    )
    return status
