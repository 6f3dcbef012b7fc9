"""federation/fleet/sharding.py, the pure part: the ring key of a WD (its Workload's when a
Workload controls it, so the two share a shard), what the sharder caches of every WD
and Workload (`assignment_identity`), and the ring's states worked out once per change
(`RingView`)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.api.constants import Label
from federation.fleet import sharding
from federation.fleet.sharding import (
    RingView,
    assignment_identity,
    available,
    controlling_workload,
    shard_states,
    wd_hash_key,
    workload_hash_key,
)
from tests.support import calls_to

GROUP = "compute.datumapis.com"


def wd(name: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "ownerReferences": list(refs)},
        "spec": {"replicas": 3},
    }


def ref(kind: str, name: str, *, controller: bool = True, api_version: str = f"{GROUP}/v1alpha") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": controller}


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (wd("api"), f"web/{GROUP}/WorkloadDeployment/default/api"),
        (wd("app-edge-dfw", ref("Workload", "app")), f"web/{GROUP}/Workload/default/app"),
        # not the controller, or not a Workload of this group: the WD's own key
        (wd("x", ref("Workload", "app", controller=False)), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("Workload", "app", api_version="other.io/v1")), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("ReplicaSet", "rs")), f"web/{GROUP}/WorkloadDeployment/default/x"),
        (wd("x", ref("ReplicaSet", "rs", controller=False), ref("Workload", "w")), f"web/{GROUP}/Workload/default/w"),
    ],
)
def test_a_wd_hashes_with_the_workload_that_controls_it(obj: dict[str, Any], key: str) -> None:
    assert wd_hash_key("web", obj) == key


def test_a_workload_and_its_wds_share_a_key() -> None:
    workload = {"metadata": {"name": "app", "namespace": "default"}}
    assert workload_hash_key("web", workload) == wd_hash_key("web", wd("app-edge-dfw", ref("Workload", "app")))
    assert workload_hash_key("shop", workload) != workload_hash_key("web", workload)  # projects hash apart
    assert controlling_workload(wd("api")) is None


def test_the_sharder_caches_what_the_assignment_reads_only() -> None:
    obj = wd("app-edge-dfw", ref("Workload", "app"), ref("Other", "o", controller=False))
    obj["metadata"].update(
        uid="u1",
        resourceVersion="7",
        labels={str(Label.SHARD): "a", str(Label.DRAIN): "true", "app": "web"},
        annotations={"big": "x" * 1000},
        finalizers=["f"],
    )
    obj["status"] = {"replicas": 3}
    slim = assignment_identity(obj)
    assert slim == {
        "metadata": {
            "name": "app-edge-dfw",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {str(Label.SHARD): "a", str(Label.DRAIN): "true"},
            "ownerReferences": [ref("Workload", "app")],
        }
    }
    assert wd_hash_key("web", slim) == wd_hash_key("web", obj)  # decided the same from what is cached
    assert assignment_identity({"metadata": {"name": "n"}}) == {"metadata": {"name": "n"}}


NOW = 1_800_000_000.0


def member(name: str, holder: str, renewed_ago: float, duration: int) -> dict[str, Any]:
    renewed = datetime.datetime.fromtimestamp(NOW - renewed_ago, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"metadata": {"name": name}, "spec": {"holderIdentity": holder, "renewTime": renewed,
                                                   "leaseDurationSeconds": duration}}  # fmt: skip


MEMBERS = st.lists(
    st.builds(
        member,
        name=st.sampled_from(["s0", "s1", "s2", "s3"]),
        holder=st.sampled_from(["", "own", "sharder"]),
        renewed_ago=st.floats(min_value=-5, max_value=120, allow_nan=False),
        duration=st.integers(min_value=1, max_value=30),
    ).map(
        lambda m: (
            {**m, "spec": {**m["spec"], "holderIdentity": m["metadata"]["name"]}}
            if m["spec"]["holderIdentity"] == "own"
            else m
        )
    ),
    max_size=4,
    unique_by=lambda m: m["metadata"]["name"],
)


@settings(max_examples=200, deadline=None)
@given(leases=MEMBERS, steps=st.lists(st.floats(min_value=0, max_value=40, allow_nan=False), max_size=12))
def test_the_ring_view_answers_as_the_states_worked_out_afresh(
    leases: list[dict[str, Any]], steps: list[float]
) -> None:
    # one Lease list, unchanged, read at later and later times: every answer is what
    # `shard_states` and the ring of the available shards say at that time
    view, now = RingView(), NOW
    for step in [0.0, *steps]:
        now += step
        states, ring = view.at(leases, now)
        assert states == shard_states(leases, now)
        assert ring.shards == available(states)


def test_the_ring_view_works_the_states_out_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = calls_to(monkeypatch, sharding, "shard_states")
    leases = [member("s0", "s0", 0, 15), member("s1", "s1", 10, 15)]
    view = RingView()
    for _ in range(100):  # every event and decision of a cold start, Leases unchanged
        view.at(leases, NOW)
    assert len(calls) == 1
    # s1 expires 5 s on (still in the ring: the same states); past it, worked out again
    assert view.at(leases, NOW + 4.9)[0]["s1"] == "ready" and len(calls) == 1
    assert view.at(leases, NOW + 5)[0]["s1"] == "expired" and len(calls) == 2
    # another list (a Lease changed): worked out again at once
    renewed = [member("s0", "s0", 0, 15), member("s1", "s1", 0, 15)]
    assert view.at(renewed, NOW + 5)[0]["s1"] == "ready" and len(calls) == 3
