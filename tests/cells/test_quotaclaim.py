"""QuotaGate on the Instance side: who is under quota, the claim, and QuotaGranted from it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cells.quotaclaim import claim_for, is_claim_of, is_granted, quota_granted, under_quota, validation_failed

from .builders import cond, instance


def claim(granted: tuple[str, str, str] | None = None, owner_uid: str = "uid-web-0") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": "instance-web-0",
            "ownerReferences": [{"kind": "Instance", "name": "web-0", "uid": owner_uid, "controller": True}],
        },
        "spec": {"requests": {"cpu": "1", "memory": "2Gi"}},
    }
    if granted is not None:
        obj["status"] = {"conditions": [cond("Granted", *granted, gen=None)]}
    return obj


@pytest.mark.parametrize(
    ("inst", "expected"),
    [
        (instance(), False),
        (instance(gates=("Quota",)), True),
        (instance(gates=("Network",)), False),
        (instance(conditions=(cond("QuotaGranted", "Unknown", "PendingEvaluation"),)), False),
        (instance(conditions=(cond("QuotaGranted", "True", "QuotaAvailable"),)), True),
        (instance(conditions=(cond("QuotaGranted", "Unknown", "PendingEvaluation"),), gates=("Quota",)), True),
    ],
)
def test_under_quota(inst: dict[str, Any], expected: bool) -> None:
    assert under_quota(inst) is expected


def test_the_claim_is_owned_by_the_instance_and_sized_from_its_type() -> None:
    inst = instance(gates=("Quota",))
    inst["metadata"]["labels"] = {"app": "web"}
    assert claim_for(inst) == {
        "apiVersion": "quota.compute.datumapis.com/v1alpha",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "instance-web-0",
            "namespace": "ns-1",
            "labels": {"app": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "Instance",
                    "name": "web-0",
                    "uid": "uid-web-0",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "consumerRef": {
                "apiVersion": "compute.datumapis.com/v1alpha",
                "kind": "Instance",
                "name": "web-0",
                "uid": "uid-web-0",
            },
            "requests": {"cpu": "1", "memory": "2Gi"},
        },
    }


def test_an_instance_that_cannot_be_sized_names_the_field() -> None:
    inst = instance()
    inst["spec"]["runtime"]["resources"]["instanceType"] = "datumcloud/huge"
    with pytest.raises(ValueError, match=re.escape("spec.runtime.resources.instanceType")):
        claim_for(inst)
    refused = validation_failed(inst, "too big")
    assert (refused["status"], refused["reason"], refused["message"]) == ("False", "ValidationFailed", "too big")


@pytest.mark.parametrize(
    ("the_claim", "expected"),
    [
        (None, ("Unknown", "PendingEvaluation", "claim instance-web-0 not created yet")),
        (claim(), ("Unknown", "PendingEvaluation", "claim instance-web-0 is waiting for evaluation")),
        (
            claim(("Unknown", "PendingEvaluation", "")),
            ("Unknown", "PendingEvaluation", "claim instance-web-0 is waiting for evaluation"),
        ),
        (
            claim(("True", "QuotaAvailable", "granted within ResourceBudget p")),
            ("True", "QuotaAvailable", "granted within ResourceBudget p"),
        ),
        (claim(("False", "QuotaExceeded", "needs cpu 1")), ("False", "QuotaExceeded", "needs cpu 1")),
        (claim(("False", "ValidationFailed", "bad")), ("False", "ValidationFailed", "bad")),
        (
            claim(("True", "QuotaAvailable", "granted"), owner_uid="an-earlier-web-0"),
            (
                "Unknown",
                "PendingEvaluation",
                "claim instance-web-0 belongs to an earlier Instance of this name; waiting for it to go",
            ),
        ),
    ],
    ids=["none", "no-verdict", "unknown", "granted", "exceeded", "invalid", "earlier-instance"],
)
def test_quota_granted_from_the_claim(the_claim: dict[str, Any] | None, expected: tuple[str, str, str]) -> None:
    inst = instance(generation=3, gates=("Quota",))
    result = quota_granted(the_claim, inst)
    assert (result["status"], result["reason"], result["message"]) == expected
    assert (result["type"], result["observedGeneration"]) == ("QuotaGranted", 3)


def test_a_claim_is_granted_and_ours_only_as_stated() -> None:
    inst = instance()
    assert is_granted(claim(("True", "QuotaAvailable", ""))) and not is_granted(claim(("False", "QuotaExceeded", "")))
    assert not is_granted(claim())
    assert is_claim_of(claim(), inst) and not is_claim_of(claim(owner_uid="x"), inst)
