"""`ReferencedDataReady` in a cell: whether every companion an Instance (or a WD copy)
needs is in its namespace (DESIGN.md §3 "Companions", Instance controller 2).

Contract (pure; wire dicts in, a condition dict or None out):

`instance_referenced_data(instance, present)`: the Instance's ReferencedDataReady, or None
when it has nothing to do with referenced data (neither the `ReferencedData` gate nor the
condition: a cell WD created without federation, whose Instances were never gated). What
the Instance needs is what its own spec references, required ones only (`references.
template_references`; its spec is the copy's template, the same spec the copy's
`expected-referenced-data` annotation was computed from). `present` is the set of
(kind, name) of the companions (labelled `compute.datumapis.com/referenced-data`) in its
namespace. True/Ready "all N referenced companion(s) are present"; else False/
AwaitingPropagation naming every missing one, `Kind/name` sorted. observedGeneration is
the Instance's generation, so the gate goes in the same pass (`readiness.gates_to_remove`).

`deployment_referenced_data(wd, present)` (and `with_referenced_data`, which sets it in a
status the cell WD controller computed): the same for a WD copy, from its
`expected-referenced-data` annotation: None when absent (nothing expected), False/
Resolving naming the problem when malformed, else as above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, set_condition_json
from federation.api.constants import SchedulingGate
from federation.api.reasons import InstanceCondition, ReferencedDataReason
from federation.fleet.references import EXPECTED_ANNOTATION, expected_tokens, parse_expected, template_references
from mcruntime.fields import generation, get_mapping, get_str_map

from .readiness import conditions, scheduling_gates

CONDITION = InstanceCondition.REFERENCED_DATA_READY.value


def _condition(needed: Iterable[str], present: set[tuple[str, str]], gen: int) -> dict[str, Any]:
    needed = sorted(set(needed))
    missing = [t for t in needed if tuple(t.split("/", 1)) not in present]
    if missing:
        status, reason = FALSE, ReferencedDataReason.AWAITING_PROPAGATION.value
        message = f"waiting for {len(missing)} companion(s) to arrive on the cell: {', '.join(missing)}"
    else:
        status, reason = TRUE, ReferencedDataReason.READY.value
        message = f"all {len(needed)} referenced companion(s) are present"
    return {"type": CONDITION, "status": status, "reason": reason, "message": message, "observedGeneration": gen}


def instance_referenced_data(instance: Mapping[str, Any], present: set[tuple[str, str]]) -> dict[str, Any] | None:
    gated = SchedulingGate.REFERENCED_DATA.value in scheduling_gates(instance)
    if not gated and CONDITION not in conditions(instance):
        return None
    needed = expected_tokens(template_references(get_mapping(instance, "spec")))
    return _condition(needed, present, generation(instance))


def deployment_referenced_data(wd: Mapping[str, Any], present: set[tuple[str, str]]) -> dict[str, Any] | None:
    value = get_str_map(wd, "metadata.annotations").get(EXPECTED_ANNOTATION)
    if value is None:
        return None
    gen = generation(wd)
    try:
        pairs = parse_expected(value)
    except ValueError as exc:
        reason = ReferencedDataReason.RESOLVING.value
        return {"type": CONDITION, "status": FALSE, "reason": reason, "message": str(exc), "observedGeneration": gen}
    return _condition((f"{kind}/{name}" for kind, name in pairs), present, gen)


def names_only(obj: dict[str, Any]) -> dict[str, Any]:
    """The informer transform of the cell's companion view: a companion's identity and
    labels, never its data (a cell's controllers only ask which companions are there)."""
    m = get_mapping(obj, "metadata")
    keep = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")
    out: dict[str, Any] = {"metadata": {k: m[k] for k in keep if k in m}}
    for key in ("kind", "apiVersion"):
        if key in obj:
            out[key] = obj[key]
    return out


def with_referenced_data(
    status: dict[str, Any], wd: Mapping[str, Any], present: set[tuple[str, str]], *, now: str
) -> dict[str, Any]:
    """`status` (a WD copy's, as `wdstatus.wd_status` computed it) with its ReferencedDataReady
    (`deployment_referenced_data`) set, or removed when nothing is expected any more."""
    wanted = deployment_referenced_data(wd, present)
    current = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    if wanted is None:
        return {**status, "conditions": [c for c in current if c.get("type") != CONDITION]}
    set_condition_json(current, CONDITION, wanted["status"], wanted["reason"], wanted["message"],
                       observed_generation=wanted["observedGeneration"], now=now)  # fmt: skip
    return {**status, "conditions": current}
