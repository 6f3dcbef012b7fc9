"""The grant decision: claims against a namespace's budgets, and the budgets' usage."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cells.quotabudget import Verdict, budget_status, decide

from .builders import cond


def claim(name: str, cpu: str, memory: str = "1Gi", *, at: str = "2025-01-01T00:00:00Z", granted: bool = False,
          deleting: bool = False) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "creationTimestamp": at}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-02T00:00:00Z"
    obj: dict[str, Any] = {"metadata": meta, "spec": {"requests": {"cpu": cpu, "memory": memory}}}
    if granted:
        obj["status"] = {"conditions": [cond("Granted", "True", "QuotaAvailable", "granted earlier", gen=None)]}
    return obj


def budget(name: str = "project", **hard: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"hard": hard}}


def summary(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {name: v.reason for name, v in verdicts.items()}


def test_no_budget_is_unlimited() -> None:
    verdicts = decide([claim("a", "64"), claim("b", "128")], [])
    assert summary(verdicts) == {"a": "QuotaAvailable", "b": "QuotaAvailable"}
    assert verdicts["a"].message == "granted: no ResourceBudget limits this namespace"


def test_oldest_first_then_first_fit() -> None:
    claims = [
        claim("young-small", "500m", at="2025-01-01T00:00:03Z"),
        claim("old-big", "3", at="2025-01-01T00:00:01Z"),
        claim("middle", "1", at="2025-01-01T00:00:02Z"),
    ]
    verdicts = decide(claims, [budget(cpu="2")])
    assert summary(verdicts) == {
        "old-big": "QuotaExceeded",
        "middle": "QuotaAvailable",
        "young-small": "QuotaAvailable",
    }
    assert verdicts["old-big"].message == "needs cpu 3 but ResourceBudget project has 500m of 2 left"


def test_every_budget_and_every_named_resource_must_admit() -> None:
    budgets = [budget("cpu-only", cpu="4"), budget("memory-only", memory="2Gi")]
    verdicts = decide([claim("a", "1", "2Gi"), claim("b", "1", "1Gi", at="2025-01-01T00:00:01Z")], budgets)
    assert summary(verdicts) == {"a": "QuotaAvailable", "b": "QuotaExceeded"}
    assert verdicts["b"].message == "needs memory 1Gi but ResourceBudget memory-only has 0 of 2Gi left"
    assert verdicts["a"].message == "granted within ResourceBudget cpu-only, memory-only"


def test_a_grant_is_never_taken_back_and_keeps_its_words() -> None:
    claims = [claim("granted", "4", granted=True), claim("new", "1", at="2025-01-01T00:00:01Z")]
    verdicts = decide(claims, [budget(cpu="2")])  # the budget was lowered below what is granted
    assert verdicts["granted"] == Verdict("True", "QuotaAvailable", "granted earlier")
    assert verdicts["new"].reason == "QuotaExceeded"
    assert "has 0 of 2 left" in verdicts["new"].message


def test_deleting_claims_get_no_verdict_but_count_while_granted() -> None:
    claims = [claim("going", "2", granted=True, deleting=True), claim("waiting", "1", at="2025-01-01T00:00:01Z"),
              claim("gone-soon", "1", deleting=True)]  # fmt: skip
    verdicts = decide(claims, [budget(cpu="2")])
    assert summary(verdicts) == {"waiting": "QuotaExceeded"}


def test_an_unreadable_claim_is_refused_and_an_unreadable_budget_is_an_error() -> None:
    verdicts = decide([claim("bad", "1e99")], [budget(cpu="2")])
    assert (
        verdicts["bad"].reason == "ValidationFailed"
        and "ResourceClaim bad spec.requests.cpu" in verdicts["bad"].message
    )
    with pytest.raises(ValueError, match=re.escape("ResourceBudget project spec.hard.cpu")):
        decide([], [budget(cpu="lots")])


def test_budget_status_sums_granted_claims_per_named_resource() -> None:
    claims = [claim("a", "1", "2Gi", granted=True), claim("b", "500m", "512Mi", at="2025-01-01T00:00:01Z"),
              claim("c", "8", at="2025-01-01T00:00:02Z")]  # fmt: skip
    the_budget = budget(cpu="2", memory="4Gi")
    verdicts = decide(claims, [the_budget])
    assert budget_status(the_budget, claims, verdicts) == {
        "used": {"cpu": "1500m", "memory": "2560Mi"},
        "grantedClaims": 2,
        "pendingClaims": 1,
    }


amounts = st.integers(min_value=0, max_value=4000)


@given(st.lists(amounts, max_size=8), st.integers(min_value=0, max_value=8000))
def test_granted_claims_never_exceed_the_budget(millicores: list[int], hard: int) -> None:
    claims = [claim(f"c{i}", f"{m}m", "0", at=f"2025-01-01T00:00:{i:02d}Z") for i, m in enumerate(millicores)]
    verdicts = decide(claims, [budget(cpu=f"{hard}m")])
    granted = sum(m for i, m in enumerate(millicores) if verdicts[f"c{i}"].granted)
    assert granted <= hard
    # first fit: every refused claim would not have fitted in what was left
    assert all(verdicts[f"c{i}"].granted or m > hard - granted for i, m in enumerate(millicores))
