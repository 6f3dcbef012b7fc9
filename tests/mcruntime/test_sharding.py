"""The pure sharding pieces: shard states from Leases, the consistent-hash ring, the
assignment decision, and the shard gate (DESIGN.md §5)."""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcruntime.sharding import (
    Action,
    Decision,
    HashRing,
    ShardGate,
    ShardLabels,
    ShardState,
    is_available,
    seconds_to_next_state,
    shard_decision,
    shard_state,
    sharder_decision,
)
from mcruntime.sharding.gate import ShardLeaseNotHeld

NOW = 1_800_000_000.0


def stamp(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease(
    name: str = "s1", holder: str | None = "s1", renewed_ago: float | None = 0.0, duration: Any = 15
) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseDurationSeconds": duration}
    if renewed_ago is not None:
        spec["renewTime"] = stamp(NOW - renewed_ago)
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("case", "body", "state"),
    [
        ("just renewed", lease(renewed_ago=0), ShardState.READY),
        ("renewed within its duration", lease(renewed_ago=14.9), ShardState.READY),
        ("at its expiry", lease(renewed_ago=15), ShardState.EXPIRED),
        ("expired less than a quarter duration ago", lease(renewed_ago=18.7), ShardState.EXPIRED),
        ("expired a quarter duration ago", lease(renewed_ago=18.75), ShardState.UNCERTAIN),
        ("expired a duration ago", lease(renewed_ago=30), ShardState.UNCERTAIN),
        ("expired long ago, still held by the shard", lease(renewed_ago=3600), ShardState.UNCERTAIN),
        ("released (empty holder)", lease(holder="", renewed_ago=0), ShardState.DEAD),
        ("acquired by the sharder", lease(holder="sharder", renewed_ago=20), ShardState.DEAD),
        ("dead for less than a minute past expiry", lease(holder="", renewed_ago=74), ShardState.DEAD),
        ("dead a minute past expiry", lease(holder="", renewed_ago=75), ShardState.ORPHANED),
        ("no renew time: expires now", lease(renewed_ago=None), ShardState.EXPIRED),
        ("no duration: expires now", lease(duration=None), ShardState.EXPIRED),
        ("a nonsense duration: expires now", lease(duration="15"), ShardState.EXPIRED),
        (
            "a malformed renew time",
            {
                "metadata": {"name": "s1"},
                "spec": {"holderIdentity": "s1", "renewTime": "x", "leaseDurationSeconds": 15},
            },
            ShardState.EXPIRED,
        ),
        ("no holder, no times", {"metadata": {"name": "s1"}, "spec": {}}, ShardState.DEAD),
    ],
)
def test_shard_states_from_the_lease(case: str, body: dict[str, Any], state: ShardState) -> None:
    assert shard_state(body, NOW) is state, case


def test_only_ready_expired_and_uncertain_shards_are_available() -> None:
    assert [s for s in ShardState if is_available(s)] == [ShardState.READY, ShardState.EXPIRED, ShardState.UNCERTAIN]
    assert not is_available(None)  # no Lease at all


@pytest.mark.parametrize(
    ("body", "seconds"),
    [
        (lease(renewed_ago=5), 10.0),  # ready -> expired
        (lease(renewed_ago=16), 2.75),  # expired -> uncertain, a quarter duration past expiry
        (lease(renewed_ago=40), None),  # uncertain stays uncertain until the sharder acquires it
        (lease(holder="", renewed_ago=20), 55.0),  # dead -> orphaned
        (lease(holder="", renewed_ago=80), None),  # orphaned is the last
    ],
)
def test_seconds_to_the_next_state(body: dict[str, Any], seconds: float | None) -> None:
    got = seconds_to_next_state(body, NOW)
    assert got == pytest.approx(seconds) if seconds is not None else got is None
    if got is not None:  # and the state does change there
        assert shard_state(body, NOW + got) is not shard_state(body, NOW + got - 0.01)


# ------------------------------------------------------------------ the ring
KEYS = [f"project-{p}/default/wd-{i}" for p in range(4) for i in range(2500)]


def test_an_empty_ring_owns_nothing() -> None:
    assert HashRing([]).owner("a") is None
    with pytest.raises(ValueError, match="at least one token"):
        HashRing(["a"], tokens=0)


def test_the_project_cluster_name_in_the_key_spreads_equal_names() -> None:
    ring = HashRing([f"s{i}" for i in range(3)])
    owners = {ring.owner(f"project-{p}/default/api") for p in range(30)}
    assert len(owners) == 3


@given(st.sets(st.text(min_size=1, max_size=12), min_size=1, max_size=6), st.lists(st.text(), max_size=50))
def test_the_ring_is_deterministic_whatever_the_order_names_come_in(shards: set[str], keys: list[str]) -> None:
    forward, backward = HashRing(sorted(shards)), HashRing(sorted(shards, reverse=True))
    for key in keys:
        assert forward.owner(key) == backward.owner(key)
        assert forward.owner(key) in shards


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_ring_balances_keys_over_shards(n: int) -> None:
    ring = HashRing([f"shard-{i}" for i in range(n)])
    counts = Counter(ring.owner(k) for k in KEYS)
    fair = len(KEYS) / n
    # 100 virtual tokens per shard: every shard within ±35% of its fair share
    assert len(counts) == n
    assert all(0.65 * fair <= c <= 1.35 * fair for c in counts.values()), counts


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=0, max_value=10_000))
def test_a_join_moves_only_keys_to_the_new_shard_and_about_a_fair_share(n: int, salt: int) -> None:
    shards = [f"shard-{salt}-{i}" for i in range(n)]
    before, after = HashRing(shards), HashRing([*shards, f"new-{salt}"])
    keys = KEYS[:2000]
    moved = [k for k in keys if before.owner(k) != after.owner(k)]
    assert all(after.owner(k) == f"new-{salt}" for k in moved)  # nothing moves between old shards
    assert len(moved) <= 2.0 * len(keys) / (n + 1)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=6), st.data())
def test_a_leave_moves_only_the_leavers_keys(n: int, data: st.DataObject) -> None:
    shards = [f"shard-{i}" for i in range(n)]
    leaver = data.draw(st.sampled_from(shards))
    before, after = HashRing(shards), HashRing([s for s in shards if s != leaver])
    for key in KEYS[:1000]:
        if before.owner(key) != leaver:
            assert after.owner(key) == before.owner(key)


# ------------------------------------------------------------------ the decision
KEYS_ = ShardLabels(shard="example.com/shard", drain="example.com/drain")
RING = HashRing(["a", "b"])
KEY_OF_B = next(k for k in KEYS if RING.owner(k) == "b")
READY_BOTH = {"a": ShardState.READY, "b": ShardState.READY}


@pytest.mark.parametrize(
    ("case", "labels", "states", "ring", "decision"),
    [
        ("unassigned", {}, READY_BOTH, RING, Decision(Action.ASSIGN, "b")),
        ("unassigned with a stray drain label", {KEYS_.drain: "true"}, READY_BOTH, RING, Decision(Action.ASSIGN, "b")),
        ("on its shard", {KEYS_.shard: "b"}, READY_BOTH, RING, Decision(Action.NOTHING)),
        (
            "on its shard, a drain under way",
            {KEYS_.shard: "b", KEYS_.drain: "true"},
            READY_BOTH,
            RING,
            Decision(Action.NOTHING),
        ),
        ("on a live other shard", {KEYS_.shard: "a"}, READY_BOTH, RING, Decision(Action.DRAIN, "a")),
        (
            "on an expired other shard",
            {KEYS_.shard: "a"},
            {**READY_BOTH, "a": ShardState.EXPIRED},
            RING,
            Decision(Action.DRAIN, "a"),
        ),
        (
            "on an uncertain other shard",
            {KEYS_.shard: "a"},
            {**READY_BOTH, "a": ShardState.UNCERTAIN},
            RING,
            Decision(Action.DRAIN, "a"),
        ),
        (
            "drain asked, not yet acknowledged",
            {KEYS_.shard: "a", KEYS_.drain: "true"},
            READY_BOTH,
            RING,
            Decision(Action.NOTHING),
        ),
        (
            "on a dead shard",
            {KEYS_.shard: "a"},
            {**READY_BOTH, "a": ShardState.DEAD},
            RING,
            Decision(Action.REASSIGN_DEAD, "b"),
        ),
        (
            "on a dead shard being drained",
            {KEYS_.shard: "a", KEYS_.drain: "true"},
            {**READY_BOTH, "a": ShardState.DEAD},
            RING,
            Decision(Action.REASSIGN_DEAD, "b"),
        ),
        (
            "on an orphaned shard",
            {KEYS_.shard: "a"},
            {**READY_BOTH, "a": ShardState.ORPHANED},
            RING,
            Decision(Action.REASSIGN_DEAD, "b"),
        ),
        ("on a shard without a Lease", {KEYS_.shard: "gone"}, READY_BOTH, RING, Decision(Action.REASSIGN_DEAD, "b")),
        ("no shard available", {}, {}, HashRing([]), Decision(Action.NOTHING)),
        (
            "no shard available, on a dead one",
            {KEYS_.shard: "a"},
            {"a": ShardState.DEAD},
            HashRing([]),
            Decision(Action.NOTHING),
        ),
    ],
)
def test_the_sharders_decision(
    case: str, labels: dict[str, str], states: dict[str, ShardState], ring: HashRing, decision: Decision
) -> None:
    assert sharder_decision(labels, KEYS_, KEY_OF_B, ring, states) == decision, case


@pytest.mark.parametrize(
    ("labels", "decision"),
    [
        ({KEYS_.shard: "a", KEYS_.drain: "true"}, Decision(Action.ACKNOWLEDGE_DRAIN, "a")),
        ({KEYS_.shard: "a"}, Decision(Action.NOTHING)),
        ({KEYS_.shard: "b", KEYS_.drain: "true"}, Decision(Action.NOTHING)),  # another shard's to acknowledge
        ({}, Decision(Action.NOTHING)),
    ],
)
def test_the_shards_decision(labels: dict[str, str], decision: Decision) -> None:
    assert shard_decision(labels, KEYS_, "a") == decision


def test_each_decision_is_at_most_one_label_patch() -> None:
    assert Decision(Action.ASSIGN, "b").labels_patch(KEYS_) == {KEYS_.shard: "b", KEYS_.drain: None}
    assert Decision(Action.REASSIGN_DEAD, "b").labels_patch(KEYS_) == {KEYS_.shard: "b", KEYS_.drain: None}
    assert Decision(Action.DRAIN, "a").labels_patch(KEYS_) == {KEYS_.drain: "true"}
    assert Decision(Action.ACKNOWLEDGE_DRAIN, "a").labels_patch(KEYS_) == {KEYS_.shard: None, KEYS_.drain: None}
    assert Decision(Action.NOTHING).labels_patch(KEYS_) == {}


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True),
    st.sampled_from(KEYS[:300]),
)
def test_hand_over_converges_in_at_most_three_writes_and_never_to_two_owners(
    before: list[str], after: list[str], key: str
) -> None:
    """Play the hand-over: the object sits on its owner under the old ring; membership
    changes (the leavers die); sharder and old shard act until nothing is left to do."""
    labels: dict[str, str] = {KEYS_.shard: HashRing(before).owner(key) or ""}
    ring = HashRing(after)
    states = {s: ShardState.READY for s in after} | {s: ShardState.DEAD for s in before if s not in after}
    writes = 0
    for _ in range(10):
        owner = labels.get(KEYS_.shard, "")
        decision = sharder_decision(labels, KEYS_, key, ring, states)
        if decision.action is Action.NOTHING and owner:
            decision = shard_decision(labels, KEYS_, owner)
        if decision.action is Action.NOTHING:
            break
        writes += 1
        for k, v in decision.labels_patch(KEYS_).items():
            if v is None:
                labels.pop(k, None)
            else:
                labels[k] = v
    assert labels == {KEYS_.shard: ring.owner(key)}
    assert writes <= 3  # drain, acknowledge, assign (or one reassignment of a dead shard's object)


# ------------------------------------------------------------------ the gate
async def test_the_gate_fences_writes_while_the_lease_is_not_fresh() -> None:
    fresh = True
    gate = ShardGate("a", lambda: fresh)
    gate.fence()
    fresh = False
    with pytest.raises(ShardLeaseNotHeld, match="shard a"):
        gate.fence()
    assert gate.refused_writes == 1


async def test_the_gate_waits_until_no_reconcile_of_the_key_is_in_flight() -> None:
    gate = ShardGate("a", lambda: True)
    order: list[str] = []
    release = anyio.Event()

    async def reconcile() -> None:
        with gate.reconciling("wd"):
            order.append("reconcile started")
            await release.wait()
            order.append("reconcile finished")

    async def acknowledge() -> None:
        await gate.wait_quiet("wd")
        order.append("acknowledged")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reconcile)
        await anyio.sleep(0.01)
        tg.start_soon(acknowledge)
        await anyio.sleep(0.01)
        assert gate.in_flight("wd") == 1 and order == ["reconcile started"]
        release.set()
    assert order == ["reconcile started", "reconcile finished", "acknowledged"]
    await gate.wait_quiet("other")  # nothing in flight: at once


async def test_writes_in_a_gated_reconcile_pass_the_fence_and_others_do_not() -> None:
    from mcruntime.transport import WRITE_FENCE

    gate = ShardGate("a", lambda: False)
    assert WRITE_FENCE.get() is None
    with gate.reconciling("wd"):
        fence = WRITE_FENCE.get()
        assert fence is not None
        with pytest.raises(ShardLeaseNotHeld):
            fence()
    assert WRITE_FENCE.get() is None
