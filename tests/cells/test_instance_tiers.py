"""The Instance controller's one deadline: while quota is pending, EVERY way out of a
reconcile comes back on the tier of the Instance's age (anchored on creationTimestamp), a
409 included (instead of error backoff); other failures keep their backoff. Driven against
an in-memory client so each path (and each failure) can be chosen exactly."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from cells.instance import InstanceController
from federation.api.resources import INSTANCES
from mcruntime import Manager, Request, Resource, TemporaryError
from mcruntime.errors import APIError
from mcruntime.objectreconciler import ForObject

from .builders import cond, instance

NAME, NAMESPACE = "api-0", "ns-1"


def _ago(delta: timedelta) -> str:
    return (datetime.now(UTC) - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def gated(age: timedelta = timedelta(seconds=5), **kwargs: Any) -> dict[str, Any]:
    obj = instance(NAME, gates=("Quota",), **kwargs)
    obj["metadata"]["creationTimestamp"] = _ago(age)
    return obj


def claim(granted: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": f"instance-{NAME}",
            "namespace": NAMESPACE,
            "ownerReferences": [{"kind": "Instance", "name": NAME, "uid": f"uid-{NAME}", "controller": True}],
        },
        "spec": {"requests": {"cpu": "1", "memory": "2Gi"}},
    }
    if granted is not None:
        reason = "QuotaAvailable" if granted == "True" else "QuotaExceeded"
        obj["status"] = {"conditions": [cond("Granted", granted, reason, gen=None)]}
    return obj


@dataclass
class FakeClient:
    """The few client calls the Instance controller makes, over two objects."""

    instance: dict[str, Any]
    claim: dict[str, Any] | None
    fail: dict[str, APIError] = field(default_factory=dict)  # call name -> error it raises
    calls: list[str] = field(default_factory=list)

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.fail:
            raise self.fail[name]

    async def get_or_none(self, resource: Resource, name: str, *, namespace: str | None = None) -> Any:
        return copy.deepcopy(self.instance if resource == INSTANCES else self.claim)

    async def get_live_or_none(self, resource: Resource, name: str, *, namespace: str | None = None) -> Any:
        self._call("get_live")  # an uncached GET (a 404 answered as None)
        return copy.deepcopy(self.claim)

    async def create(self, resource: Resource, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        self._call("create")
        self.claim = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    async def apply(self, resource: Resource, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self._call("apply")
        applied = {c["type"]: c for c in body["status"]["conditions"]}
        kept = [c for c in self.instance["status"]["conditions"] if c["type"] not in applied]
        self.instance["status"]["conditions"] = [*kept, *applied.values()]
        return copy.deepcopy(self.instance)

    async def patch(self, resource: Resource, name: str, patch: Any, **_: Any) -> dict[str, Any]:
        self._call("patch")
        return copy.deepcopy(self.instance)


@dataclass
class FakeRecorder:
    async def event(self, *_: Any, **__: Any) -> None:
        return None


@dataclass
class FakeManager:
    """Stands in for the manager and for its one cluster (the cell)."""

    client: FakeClient
    name: str = "cell"

    def get_cluster(self, _name: str) -> Any:
        return self

    def event_recorder(self, *_: Any) -> FakeRecorder:
        return FakeRecorder()


async def reconcile(client: FakeClient) -> Any:
    manager = cast(Manager, FakeManager(client))
    controller = ForObject(manager, INSTANCES, InstanceController(manager, quota_gate=True))
    return await controller.reconcile(Request("cell", NAMESPACE, NAME))


CONFLICT = APIError(409, "Conflict", "the object has been modified")
UNSIZABLE = {
    "runtime": {"resources": {"instanceType": "nope/xl"}, "sandbox": {"containers": [{"name": "a", "image": "i"}]}}
}


@pytest.mark.parametrize(
    ("existing", "fail", "calls"),
    [
        (None, {}, ["create", "apply"]),  # the claim is created
        (claim(None), {}, ["get_live", "apply"]),  # not evaluated yet: read live
        (claim("False"), {}, ["get_live", "apply"]),  # refused
        (claim("True"), {"patch": CONFLICT}, ["apply", "patch"]),  # 409 removing the gate
        (claim("False"), {"apply": CONFLICT}, ["get_live", "apply"]),  # 409 writing status
        (None, {"create": CONFLICT}, ["create"]),  # 409 creating the claim
    ],
    ids=["claim-created", "not-evaluated", "refused", "409-gate", "409-status", "409-claim"],
)
async def test_tier_interval_is_honoured_on_every_path(
    existing: dict[str, Any] | None, fail: dict[str, APIError], calls: list[str]
) -> None:
    client = FakeClient(gated(), existing, fail)  # 5 s old: the 1 s tier
    if fail:
        with pytest.raises(TemporaryError) as caught:
            await reconcile(client)
        assert caught.value.delay == 1.0, "a conflict while quota is pending comes back on the tier, not on backoff"
    else:
        result = await reconcile(client)
        assert result.requeue_after == 1.0
    assert client.calls == calls


async def test_an_unsizable_instance_is_refused_and_still_looked_at_on_its_tier() -> None:
    inst = gated()
    inst["spec"] = {**UNSIZABLE, "controller": inst["spec"]["controller"], "networkInterfaces": []}
    client = FakeClient(inst, None)
    result = await reconcile(client)
    assert result.requeue_after == 1.0
    quota = {c["type"]: c for c in client.instance["status"]["conditions"]}["QuotaGranted"]
    assert (quota["status"], quota["reason"]) == ("False", "ValidationFailed")
    assert "spec.runtime.resources.instanceType" in quota["message"]
    assert client.calls == ["apply"], "nothing to claim"


@pytest.mark.parametrize(
    ("age", "interval"),
    [
        (timedelta(seconds=59), 1.0),
        (timedelta(minutes=2), 15.0),
        (timedelta(minutes=7), 60.0),
        (timedelta(hours=1), 300.0),
    ],
)
async def test_the_tier_is_anchored_on_creation_time(age: timedelta, interval: float) -> None:
    result = await reconcile(FakeClient(gated(age), claim("False")))
    assert result.requeue_after == interval


async def test_other_failures_keep_their_backoff() -> None:
    unavailable = APIError(503, "ServiceUnavailable", "try later")
    with pytest.raises(APIError):
        await reconcile(FakeClient(gated(), claim("False"), {"apply": unavailable}))


async def test_a_granted_instance_is_not_requeued() -> None:
    inst = instance(NAME, conditions=(cond("QuotaGranted", "True", "QuotaAvailable"),))
    client = FakeClient(inst, claim("True"))
    result = await reconcile(client)
    assert result.requeue_after is None
    assert "get_live" not in client.calls, "a granted claim is read from the cache only"
