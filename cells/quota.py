"""The pure parts of the QuotaGate feature: when to look again, and how much to claim.

Requeue tiers (`requeue_interval`): while QuotaGranted is not True, an Instance is looked at
again after an interval that grows with its age, anchored on metadata.creationTimestamp
(not on the last attempt, so a restart of the manager or a burst of events never resets
it): younger than 60 s → 1 s; younger than 5 min → 15 s; younger than 10 min → 60 s;
older → 300 s. Each bound is exclusive (exactly 60 s old is already in the 15 s tier). A
negative age (clock skew between the API server and us) is treated as brand new: 1 s.

Claim size (`claim_resources`): `cpu` and `memory`, each decided on its own, first match:
1. sandbox containers: per container its `resources.limits[r]`, else its
   `resources.requests[r]`; summed over the containers that state either (a container
   stating neither adds nothing). Used when at least one container states it.
2. `spec.runtime.resources.requests[r]`.
3. the instance type in `spec.runtime.resources.instanceType`, from `INSTANCE_TYPES`.
Every cpu/memory quantity present in those places is parsed, even when a higher rule wins,
so a malformed one is always reported (a `ValueError` naming its field). An instance type
that is needed but unknown is a `ValueError` naming `spec.runtime.resources.instanceType`
and the known types. Other resources (GPUs, storage) are not claimed.

Catalog (`INSTANCE_TYPES`, with the tiers and the claim name prefix in
`federation.api.quotarules`, where docs/api.md documents them): `datumcloud/d1-standard-2` =
1 vCPU / 2 GiB is the platform's published size. `d1-standard-4` (2 vCPU / 4 GiB) and
`d1-standard-8` (4 vCPU / 8 GiB) are this project's extrapolation along the same 1:2
ratio, so that examples can ask for bigger Instances.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from federation.api.quotarules import CLAIM_NAME_PREFIX, INSTANCE_TYPES, REQUEUE_MAX, REQUEUE_TIERS
from mcruntime.fields import get_list, get_mapping, get_str

from .quantity import format_cpu, format_memory, parse_quantity

CLAIMED_RESOURCES = ("cpu", "memory")
_MAX_NAME_LENGTH = 253  # a DNS subdomain, what object names are


def requeue_interval(age: timedelta) -> timedelta:
    """How long to wait before looking at a not-yet-granted Instance of this age again."""
    for bound, interval in REQUEUE_TIERS:
        if age < bound:
            return interval
    return REQUEUE_MAX


def instance_age(creation_timestamp: str, now: datetime) -> timedelta:
    """`now` minus metadata.creationTimestamp (RFC 3339); `now` must be timezone-aware."""
    if now.tzinfo is None:
        raise ValueError(f"now {now!r}: must be timezone-aware")
    if not isinstance(creation_timestamp, str) or not creation_timestamp:
        raise ValueError(f"metadata.creationTimestamp: required, got {creation_timestamp!r}")
    try:
        created = datetime.fromisoformat(creation_timestamp)
    except ValueError as exc:
        raise ValueError(f"metadata.creationTimestamp: {creation_timestamp!r} is not an RFC 3339 time") from exc
    if created.tzinfo is None:
        raise ValueError(f"metadata.creationTimestamp: {creation_timestamp!r} has no time zone")
    return now - created


def quota_requeue_after(instance: Mapping[str, Any], now: datetime) -> timedelta:
    """The tier interval for this Instance now (compute once per reconcile, use on every return path)."""
    created = get_str(instance, "metadata.creationTimestamp")
    return requeue_interval(instance_age(created, now))


def claim_name(instance_name: str) -> str:
    """`instance-<name>`: the claim object of one Instance."""
    if not instance_name:
        raise ValueError("metadata.name: required to name the Instance's claim")
    name = f"{CLAIM_NAME_PREFIX}{instance_name}"
    if len(name) > _MAX_NAME_LENGTH:
        raise ValueError(f"metadata.name: {instance_name!r} is too long for a claim name ({len(name)} > 253)")
    return name


def _container_amount(container: Mapping[str, Any], resource: str, base: str) -> Fraction | None:
    resources = get_mapping(container, "resources", base=base)
    limits = get_mapping(resources, "limits", base=f"{base}.resources")
    requests = get_mapping(resources, "requests", base=f"{base}.resources")
    limit = limits.get(resource)
    request = requests.get(resource)
    # Both are parsed so that a typo in the one that loses is still reported.
    parsed_limit = None if limit is None else parse_quantity(limit, f"{base}.resources.limits.{resource}")
    parsed_request = None if request is None else parse_quantity(request, f"{base}.resources.requests.{resource}")
    return parsed_limit if parsed_limit is not None else parsed_request


def _containers_amount(spec: Mapping[str, Any], resource: str) -> Fraction | None:
    base = "spec.runtime.sandbox.containers"
    total: Fraction | None = None
    for i, container in enumerate(get_list(spec, "runtime.sandbox.containers", base="spec")):
        field = f"{base}[{i}]"
        if not isinstance(container, Mapping):
            raise ValueError(f"{field}: expected an object, got {type(container).__name__}")
        amount = _container_amount(container, resource, field)
        if amount is not None:
            total = amount if total is None else total + amount
    return total


def _instance_type_amount(spec: Mapping[str, Any], resource: str) -> Fraction:
    field = "spec.runtime.resources.instanceType"
    name = get_str(spec, "runtime.resources.instanceType", base="spec", required=False)
    known = ", ".join(sorted(INSTANCE_TYPES))
    if name not in INSTANCE_TYPES:
        shown = repr(name) if name else "missing"
        raise ValueError(f"{field}: {shown} is not a known instance type (known: {known}) and no {resource} is set")
    return parse_quantity(INSTANCE_TYPES[name][resource], f"instance type {name} {resource}")


def claim_resources(instance_spec: Mapping[str, Any]) -> dict[str, str]:
    """`{"cpu": ..., "memory": ...}` to claim for an Instance with this spec."""
    if not isinstance(instance_spec, Mapping):
        raise ValueError(f"spec: expected an object, got {type(instance_spec).__name__}")
    runtime_requests = get_mapping(instance_spec, "runtime.resources.requests", base="spec")
    amounts: dict[str, Fraction] = {}
    for resource in CLAIMED_RESOURCES:
        from_containers = _containers_amount(instance_spec, resource)
        raw = runtime_requests.get(resource)
        from_runtime = None if raw is None else parse_quantity(raw, f"spec.runtime.resources.requests.{resource}")
        if from_containers is not None:
            amounts[resource] = from_containers
        elif from_runtime is not None:
            amounts[resource] = from_runtime
        else:
            amounts[resource] = _instance_type_amount(instance_spec, resource)
    return {"cpu": format_cpu(amounts["cpu"]), "memory": format_memory(amounts["memory"])}
