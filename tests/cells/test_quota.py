"""QuotaGate pure parts: requeue tiers anchored on creationTimestamp, claim sizes, claim names."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cells.quota import claim_name, claim_resources, instance_age, quota_requeue_after, requeue_interval
from tests.cells.builders import instance
from tests.federation.api.objects import TEMPLATE_SPEC

S = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("age", "interval"),
    [
        (timedelta(seconds=-30), 1 * S),  # clock skew: brand new
        (timedelta(0), 1 * S),
        (timedelta(seconds=59.999), 1 * S),
        (timedelta(seconds=60), 15 * S),
        (timedelta(seconds=299.9), 15 * S),
        (timedelta(seconds=300), 60 * S),
        (timedelta(seconds=599.9), 60 * S),
        (timedelta(seconds=600), 300 * S),
        (timedelta(days=3), 300 * S),
    ],
)
def test_requeue_tiers_at_every_boundary(age: timedelta, interval: timedelta) -> None:
    assert requeue_interval(age) == interval


NOW = datetime(2025, 1, 2, 3, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("created", "age"),
    [
        ("2025-01-02T03:00:00Z", timedelta(minutes=10)),
        ("2025-01-02T03:09:30.5Z", timedelta(seconds=29.5)),
        ("2025-01-02T04:09:00+01:00", timedelta(minutes=1)),
        ("2025-01-02T03:10:05Z", timedelta(seconds=-5)),
    ],
)
def test_instance_age_from_creation_timestamp(created: str, age: timedelta) -> None:
    assert instance_age(created, NOW) == age


@pytest.mark.parametrize(
    ("created", "now", "message"),
    [
        ("yesterday", NOW, r"metadata\.creationTimestamp: 'yesterday' is not an RFC 3339 time"),
        ("2025-01-02T03:00:00", NOW, r"metadata\.creationTimestamp: .* has no time zone"),
        ("", NOW, r"metadata\.creationTimestamp: required"),
        ("2025-01-02T03:00:00Z", datetime(2025, 1, 2), "must be timezone-aware"),
    ],
)
def test_instance_age_refuses_bad_times(created: str, now: datetime, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        instance_age(created, now)


def test_requeue_after_is_anchored_on_creation_not_on_now_alone() -> None:
    inst = instance()  # created 2025-01-02T03:00:00Z
    assert quota_requeue_after(inst, datetime(2025, 1, 2, 3, 0, 30, tzinfo=UTC)) == 1 * S
    assert quota_requeue_after(inst, datetime(2025, 1, 2, 3, 4, 0, tzinfo=UTC)) == 15 * S
    assert quota_requeue_after(inst, datetime(2025, 1, 2, 3, 7, 0, tzinfo=UTC)) == 60 * S
    assert quota_requeue_after(inst, datetime(2025, 1, 2, 4, 0, 0, tzinfo=UTC)) == 300 * S


# ------------------------------------------------------------------ claim size


def spec(
    *containers: dict[str, Any],
    instance_type: str | None = "datumcloud/d1-standard-2",
    runtime_requests: dict[str, Any] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if instance_type is not None:
        resources["instanceType"] = instance_type
    if runtime_requests is not None:
        resources["requests"] = runtime_requests
    out: dict[str, Any] = {"runtime": {"resources": resources}, "networkInterfaces": [{"network": {"name": "default"}}]}
    if containers:
        out["runtime"]["sandbox"] = {"containers": list(containers)}
    return out


def c(
    name: str = "web", limits: dict[str, Any] | None = None, requests: dict[str, Any] | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "nginx"}
    res = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    if res:
        container["resources"] = res
    return container


CLAIMS = [
    ("instance type only", spec(c()), {"cpu": "1", "memory": "2Gi"}),
    ("virtual machine (no containers)", spec(), {"cpu": "1", "memory": "2Gi"}),
    ("bigger type", spec(c(), instance_type="datumcloud/d1-standard-4"), {"cpu": "2", "memory": "4Gi"}),
    ("largest type", spec(c(), instance_type="datumcloud/d1-standard-8"), {"cpu": "4", "memory": "8Gi"}),
    (
        "runtime requests beat the type, per resource",
        spec(c(), runtime_requests={"cpu": "500m"}),
        {"cpu": "500m", "memory": "2Gi"},
    ),
    (
        "runtime requests as JSON integers",
        spec(c(), runtime_requests={"cpu": 2, "memory": 1073741824}),
        {"cpu": "2", "memory": "1Gi"},
    ),
    (
        "container requests beat runtime requests",
        spec(c(requests={"cpu": "250m"}), runtime_requests={"cpu": "500m", "memory": "1Gi"}),
        {"cpu": "250m", "memory": "1Gi"},
    ),
    (
        "container limits beat container requests",
        spec(c(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "250m", "memory": "512Mi"})),
        {"cpu": "2", "memory": "1Gi"},
    ),
    (
        "summed over containers",
        spec(c("a", limits={"cpu": "1", "memory": "1Gi"}), c("b", limits={"cpu": "500m", "memory": "512Mi"})),
        {"cpu": "1500m", "memory": "1536Mi"},
    ),
    (
        "mixed: each container its limit, else its request; silent containers add nothing",
        spec(c("a", limits={"cpu": "1"}), c("b", requests={"cpu": "250m"}), c("c")),
        {"cpu": "1250m", "memory": "2Gi"},
    ),
    (
        "the fixture's template: limits 1/1Gi win over requests and runtime requests",
        copy.deepcopy(TEMPLATE_SPEC),
        {"cpu": "1", "memory": "1Gi"},
    ),
    (
        "unknown type is fine when everything is explicit",
        spec(c(limits={"cpu": "1", "memory": "1Gi"}), instance_type="example/custom"),
        {"cpu": "1", "memory": "1Gi"},
    ),
    (
        "gpu and other resources are not claimed",
        spec(c(limits={"nvidia.com/gpu": "1"})),
        {"cpu": "1", "memory": "2Gi"},
    ),
]


@pytest.mark.parametrize(("instance_spec", "claim"), [x[1:] for x in CLAIMS], ids=[x[0] for x in CLAIMS])
def test_claim_resources(instance_spec: dict[str, Any], claim: dict[str, str]) -> None:
    assert claim_resources(instance_spec) == claim


@pytest.mark.parametrize(
    ("instance_spec", "message"),
    [
        (
            spec(c(), instance_type="datumcloud/nope"),
            r"spec\.runtime\.resources\.instanceType: 'datumcloud/nope' is not a known instance type "
            r"\(known: datumcloud/d1-standard-2, datumcloud/d1-standard-4, datumcloud/d1-standard-8\)",
        ),
        (spec(c(), instance_type=None), r"spec\.runtime\.resources\.instanceType: missing is not a known"),
        (
            spec(c(limits={"cpu": "1"}), instance_type="datumcloud/nope"),  # memory still needs the type
            r"instanceType: 'datumcloud/nope' is not a known instance type .* no memory is set",
        ),
        (spec(c(limits={"cpu": "one"})), r"spec\.runtime\.sandbox\.containers\[0\]\.resources\.limits\.cpu: 'one'"),
        (
            # the losing request is still checked, so a typo is never silently ignored
            spec(c(limits={"memory": "1Gi"}, requests={"memory": "1 GB"})),
            r"containers\[0\]\.resources\.requests\.memory",
        ),
        (spec(c("a"), c("b", requests={"memory": "-1Gi"})), r"containers\[1\]\.resources\.requests\.memory"),
        (spec(c(), runtime_requests={"cpu": "lots"}), r"spec\.runtime\.resources\.requests\.cpu"),
        (spec(c(), runtime_requests={"memory": 1.5}), r"spec\.runtime\.resources\.requests\.memory"),
        (
            {"runtime": {"sandbox": {"containers": ["x"]}}},
            r"spec\.runtime\.sandbox\.containers\[0\]: expected an object",
        ),
        (
            {"runtime": {"sandbox": {"containers": [{"resources": []}]}}},
            r"containers\[0\]\.resources: expected an object",
        ),
        ({"runtime": "vm"}, r"spec\.runtime: expected an object"),
        ("spec", r"spec: expected an object"),
    ],
)
def test_claim_resources_refuses_bad_input_naming_the_field(instance_spec: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        claim_resources(instance_spec)


def test_claim_name() -> None:
    assert claim_name("web-edge-dfw-2") == "instance-web-edge-dfw-2"
    with pytest.raises(ValueError, match=r"metadata\.name: required"):
        claim_name("")
    with pytest.raises(ValueError, match="too long"):
        claim_name("x" * 250)
