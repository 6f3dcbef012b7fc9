"""The grant decision of the QuotaGate feature: which ResourceClaims of a namespace its
ResourceBudgets admit, and the budgets' usage.

Contract (pure; wire dicts in and out):

`decide(claims, budgets)` → `{claim name: Verdict}` for every claim of the namespace that is
not being deleted:
- A claim already granted stays granted (a grant is never taken back; lowering a budget only
  holds new claims back) and counts against every budget.
- The other claims are considered oldest first (creationTimestamp, then name). A claim is
  granted when, for EVERY budget and every resource that budget names in `spec.hard`, the
  amount granted so far plus this claim's request stays within `hard`; it then counts too.
  Otherwise it is QuotaExceeded, its message naming each budget and resource short (what it
  needs, what is left once this decision's grants are counted). A resource a budget does
  not name is not limited by it; a namespace without budgets is unlimited. When room
  appears the oldest waiting claim that fits takes it first; a smaller, newer claim that
  fits is granted even while an older, bigger one waits (first fit, not strict FIFO: one
  big claim never blocks the whole namespace).
- A claim whose requests cannot be parsed is ValidationFailed with the parse error.
- A claim being deleted gets no verdict but, if granted, still counts until it is gone.

`budget_status(budget, claims, verdicts)`: the budget's `status`: `used` per resource of
`spec.hard` (sum of granted claims, Kubernetes quantity format), `grantedClaims` and
`pendingClaims` (not granted, not being deleted).

A budget whose `spec.hard` cannot be parsed is a `ValueError` naming the budget and field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, ConditionStatus
from federation.api.reasons import QuotaGrantedReason, ResourceClaimCondition
from mcruntime.fields import get_mapping, get_str, is_deleting

from .quantity import format_cpu, format_memory, parse_quantity
from .quotaclaim import is_granted
from .readiness import conditions


@dataclass(frozen=True)
class Verdict:
    """The Granted condition a claim should carry."""

    status: ConditionStatus
    reason: str
    message: str

    @property
    def granted(self) -> bool:
        return self.status == TRUE


def _amounts(obj: Mapping[str, Any], path: str, what: str) -> dict[str, Fraction]:
    return {
        str(resource): parse_quantity(value, f"{what} {path}.{resource}")
        for resource, value in get_mapping(obj, path).items()
    }


def _request(claim: Mapping[str, Any]) -> dict[str, Fraction]:
    return _amounts(claim, "spec.requests", f"ResourceClaim {get_str(claim, 'metadata.name')}")


def _format(resource: str, amount: Fraction) -> str:
    return format_cpu(amount) if resource == "cpu" else format_memory(amount)


def _hard(budgets: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Fraction]]:
    return {
        get_str(b, "metadata.name"): _amounts(b, "spec.hard", f"ResourceBudget {get_str(b, 'metadata.name')}")
        for b in budgets
    }


def _age_key(claim: Mapping[str, Any]) -> tuple[str, str]:
    return (get_str(claim, "metadata.creationTimestamp", required=False), get_str(claim, "metadata.name"))


def _shortfall(
    request: Mapping[str, Fraction], used: Mapping[str, Fraction], hard: Mapping[str, dict[str, Fraction]]
) -> list[str]:
    short = []
    for budget, limits in sorted(hard.items()):
        for resource, limit in sorted(limits.items()):
            need = request.get(resource, Fraction(0))
            left = limit - used.get(resource, Fraction(0))
            if need > left:
                short.append(
                    f"needs {resource} {_format(resource, need)} but ResourceBudget {budget} has "
                    f"{_format(resource, max(left, Fraction(0)))} of {_format(resource, limit)} left"
                )
    return short


def decide(claims: Sequence[Mapping[str, Any]], budgets: Sequence[Mapping[str, Any]]) -> dict[str, Verdict]:
    """Verdicts for the namespace's claims (see the module docstring)."""
    hard = _hard(budgets)
    used: dict[str, Fraction] = {}
    verdicts: dict[str, Verdict] = {}
    pending: list[tuple[Mapping[str, Any], dict[str, Fraction]]] = []
    for claim in sorted(claims, key=_age_key):
        name = get_str(claim, "metadata.name")
        deleting = is_deleting(claim)
        try:
            request = _request(claim)
        except ValueError as exc:
            if not deleting and not is_granted(claim):
                verdicts[name] = Verdict(FALSE, QuotaGrantedReason.VALIDATION_FAILED.value, str(exc))
            continue  # a grant is never taken back, but what cannot be read cannot count
        if is_granted(claim):
            for resource, amount in request.items():
                used[resource] = used.get(resource, Fraction(0)) + amount
            if not deleting:  # kept as stored: a grant is not re-worded when budgets change
                verdicts[name] = Verdict(TRUE, QuotaGrantedReason.QUOTA_AVAILABLE.value, _stored_message(claim))
        elif not deleting:
            pending.append((claim, request))
    refused: list[tuple[str, dict[str, Fraction]]] = []
    for claim, request in pending:
        name = get_str(claim, "metadata.name")
        if _shortfall(request, used, hard):
            refused.append((name, request))
            continue
        for resource, amount in request.items():
            used[resource] = used.get(resource, Fraction(0)) + amount
        verdicts[name] = Verdict(TRUE, QuotaGrantedReason.QUOTA_AVAILABLE.value, _granted_message(hard))
    for name, request in refused:  # worded against what is left once every grant is counted
        message = "; ".join(_shortfall(request, used, hard))
        verdicts[name] = Verdict(FALSE, QuotaGrantedReason.QUOTA_EXCEEDED.value, message)
    return verdicts


def _stored_message(claim: Mapping[str, Any]) -> str:
    cond = conditions(claim).get(ResourceClaimCondition.GRANTED.value) or {}
    return str(cond.get("message") or "")


def _granted_message(hard: Mapping[str, Any]) -> str:
    if not hard:
        return "granted: no ResourceBudget limits this namespace"
    return f"granted within ResourceBudget {', '.join(sorted(hard))}"


def budget_status(
    budget: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], verdicts: Mapping[str, Verdict]
) -> dict[str, Any]:
    """The budget's status from the namespace's claims and their verdicts."""
    name = get_str(budget, "metadata.name")
    limits = _amounts(budget, "spec.hard", f"ResourceBudget {name}")
    used = dict.fromkeys(limits, Fraction(0))
    granted = pending = 0
    for claim in claims:
        verdict = verdicts.get(get_str(claim, "metadata.name"))
        if verdict is not None and not verdict.granted:
            pending += 1
            continue
        if not (is_granted(claim) or (verdict is not None and verdict.granted)):
            continue
        if not is_deleting(claim):
            granted += 1
        try:
            request = _request(claim)
        except ValueError:
            continue  # as in decide: what cannot be read cannot count
        for resource, amount in request.items():
            if resource in used:
                used[resource] += amount
    return {
        "used": {resource: _format(resource, amount) for resource, amount in sorted(used.items())},
        "grantedClaims": granted,
        "pendingClaims": pending,
    }
