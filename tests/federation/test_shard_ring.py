"""federation/fleet/sharding.py, the sharder's ring: every shard 100 virtual tokens, the
sharder's own weighted by `--sharder-ring-weight` (it also assigns every WD), all 100 when
it is the only available shard; a weight change (a leadership move) moves only keys to or
from the sharder, and through the drain hand-over like any membership change."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.fleet.sharding import (
    ASSIGNING_SHARE,
    RingView,
    ShardingOptions,
    available,
    derived_sharder_weight,
    ring_tokens,
    sharder_ring,
)
from federation.settings import ManagerSettings, SettingsError, add_arguments, load_settings
from mcruntime.sharding import Action, ShardLabels, ShardState, sharder_decision
from tests.federation.test_shard_keys import MEMBERS, NOW, member

KEYS = [f"project-{p}/compute.datumapis.com/WorkloadDeployment/default/wd-{i}" for p in range(4) for i in range(2500)]
WEIGHTS = st.integers(min_value=0, max_value=100).map(lambda n: n / 100)


@pytest.mark.parametrize(
    ("case", "shards", "sharder", "weight", "tokens"),
    [
        ("equal shares", {"a", "b", "c"}, "a", 1.0, {"a": 100, "b": 100, "c": 100}),
        ("the sharder at half", {"a", "b", "c"}, "a", 0.5, {"a": 50, "b": 100, "c": 100}),
        ("the sharder at none", {"a", "b", "c"}, "a", 0.0, {"a": 0, "b": 100, "c": 100}),
        ("rounded to a hundredth", {"a", "b"}, "b", 0.333, {"a": 100, "b": 33}),
        ("below a hundredth is none", {"a", "b"}, "b", 0.004, {"a": 100, "b": 0}),
        ("alone at none: everything", {"a"}, "a", 0.0, {"a": 100}),
        ("alone at half: everything", {"a"}, "a", 0.5, {"a": 100}),
        ("the sharder not available", {"b", "c"}, "a", 0.5, {"b": 100, "c": 100}),
        ("no sharder named", {"a", "b"}, None, 0.5, {"a": 100, "b": 100}),
        ("no shard available", set(), "a", 0.5, {}),
    ],
)
def test_the_sharders_tokens(
    case: str, shards: set[str], sharder: str | None, weight: float, tokens: dict[str, int]
) -> None:
    assert ring_tokens(frozenset(shards), sharder, weight) == tokens, case


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("weight", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_the_weighted_ring_balances_keys_as_the_tokens_say(n: int, weight: float) -> None:
    shards = [f"shard-{i}" for i in range(n)]
    ring = sharder_ring(shards, "shard-0", weight)
    counts = Counter(ring.owner(k) for k in KEYS)
    total_tokens = 100 * weight + 100 * (n - 1)
    for shard in shards:
        fair = len(KEYS) * (100 * weight if shard == "shard-0" else 100) / total_tokens
        # within ±35% of its share by tokens (as the unweighted ring's balance), and a
        # sharder at none owns nothing
        assert 0.65 * fair <= counts[shard] <= 1.35 * fair, (shard, counts, fair)
    assert sum(counts.values()) == len(KEYS)


def test_half_weight_gives_the_sharder_about_a_fifth_of_three_shards() -> None:
    counts = Counter(sharder_ring(["shard-0", "shard-1", "shard-2"], "shard-0", 0.5).owner(k) for k in KEYS)
    assert 0.15 <= counts["shard-0"] / len(KEYS) <= 0.25, counts  # 50 of 250 tokens


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=5), WEIGHTS, WEIGHTS, st.integers(min_value=0, max_value=10_000))
def test_only_keys_to_or_from_the_sharder_move_when_its_weight_changes(
    n: int, before: float, after: float, salt: int
) -> None:
    shards = [f"shard-{salt}-{i}" for i in range(n)]
    sharder = shards[0]
    old, new = sharder_ring(shards, sharder, before), sharder_ring(shards, sharder, after)
    keys = KEYS[:1500]
    moved = [k for k in keys if old.owner(k) != new.owner(k)]
    assert all(sharder in (old.owner(k), new.owner(k)) for k in moved)  # none between the others
    # growing, keys only come to it; shrinking, only leave it
    if after >= before:
        assert all(new.owner(k) == sharder for k in moved)
    else:
        assert all(old.owner(k) == sharder for k in moved)


@settings(max_examples=50, deadline=None)
@given(WEIGHTS, st.lists(st.text(), max_size=50))
def test_a_sharder_alone_takes_everything_at_any_weight(weight: float, keys: list[str]) -> None:
    ring = sharder_ring(["only"], "only", weight)
    assert all(ring.owner(k) == "only" for k in [*keys, *KEYS[:200]])


def test_a_sharder_at_none_takes_everything_once_the_other_shard_is_dead() -> None:
    # the sharder's RingView: the other shard ready, then its Lease released (dead)
    view = RingView("s0", 0.0)
    ready = [member("s0", "s0", 0, 15), member("s1", "s1", 0, 15)]
    states, ring = view.at(ready, NOW)
    assert ring.shards == {"s1"} and {ring.owner(k) for k in KEYS[:200]} == {"s1"}
    released = [member("s0", "s0", 0, 15), member("s1", "", 0, 15)]
    states, ring = view.at(released, NOW)
    assert states["s1"] is ShardState.DEAD
    assert {ring.owner(k) for k in KEYS[:200]} == {"s0"}
    # or acquired by the sharder (a lapsed Lease, uncertain: still in the ring until then)
    view = RingView("s0", 0.0)
    assert view.at(ready, NOW)[1].shards == {"s1"}
    lapsed = [member("s0", "s0", 0, 15), member("s1", "s1", 60, 15)]
    assert view.at(lapsed, NOW)[1].shards == {"s1"}
    acquired = [member("s0", "s0", 0, 15), member("s1", "federation-manager_s0", 0, 15)]
    assert view.at(acquired, NOW)[1].shards == {"s0"}


KEYS_ = ShardLabels(shard="example.com/shard", drain="example.com/drain")


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=2, max_value=5), WEIGHTS, st.data())
def test_a_leadership_move_hands_over_by_draining(n: int, weight: float, data: st.DataObject) -> None:
    """The old sharder's tokens grow back and the new one's shrink: every moving WD, its owner
    still available, is drained first (never relabelled straight to its new shard)."""
    shards = [f"shard-{i}" for i in range(n)]
    old_sharder, new_sharder = data.draw(st.sampled_from(shards)), data.draw(st.sampled_from(shards))
    old, new = sharder_ring(shards, old_sharder, weight), sharder_ring(shards, new_sharder, weight)
    states = dict.fromkeys(shards, ShardState.READY)
    for key in KEYS[:500]:
        labels = {KEYS_.shard: old.owner(key) or ""}
        decision = sharder_decision(labels, KEYS_, key, new, states)
        if new.owner(key) == old.owner(key):
            assert decision.action is Action.NOTHING
        else:
            assert decision.action is Action.DRAIN and decision.shard == old.owner(key)


def parse(*argv: str) -> ManagerSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load_settings(parser.parse_args(list(argv)))


def test_the_sharder_ring_weight_flag_and_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDERATION_SHARDER_RING_WEIGHT", raising=False)
    base = ("--enable-management-controllers", "--sharding", "--shard-id=shard-a", "--kubeconfig-dir=/clusters")
    assert parse(*base).sharder_ring_weight is None  # derived from the number of shards
    assert parse(*base, "--sharder-ring-weight=0").sharder_ring_weight == 0.0
    monkeypatch.setenv("FEDERATION_SHARDER_RING_WEIGHT", "0.25")
    assert parse(*base).sharder_ring_weight == 0.25
    with pytest.raises(SettingsError, match="--sharder-ring-weight: Input should be less than or equal to 1"):
        parse(*base, "--sharder-ring-weight=1.5")
    from federation.app import sharding_options

    options = sharding_options(parse(*base, "--sharder-ring-weight=0.75"))
    assert isinstance(options, ShardingOptions) and options.sharder_ring_weight == 0.75


@pytest.mark.parametrize(
    ("shards", "weight", "sharder_tokens"),
    [(2, 2 / 3, 67), (3, 0.5, 50), (4, 1 / 3, 33), (5, 1 / 6, 17), (6, 0.0, 0), (9, 0.0, 0)],
)
def test_the_default_weight_evens_the_sharder_with_the_others(shards: int, weight: float, sharder_tokens: int) -> None:
    # the sharder's load is assigning (ASSIGNING_SHARE of the work) plus its share; each
    # other shard's is its share: equal at the derived weight
    assert derived_sharder_weight(shards) == pytest.approx(weight)
    share = weight / (weight + shards - 1)
    assert ASSIGNING_SHARE + share == pytest.approx((1 - share) / (shards - 1)) or weight == 0.0
    names = frozenset(f"shard-{i}" for i in range(shards))
    tokens = ring_tokens(names, "shard-0", None)
    assert tokens["shard-0"] == sharder_tokens
    assert all(n == 100 for name, n in tokens.items() if name != "shard-0")
    assert ring_tokens(frozenset({"shard-0"}), "shard-0", None) == {"shard-0": 100}  # alone: everything


@settings(max_examples=100, deadline=None)
@given(
    leases=MEMBERS,
    weight=st.one_of(st.none(), WEIGHTS),
    steps=st.lists(st.floats(min_value=0, max_value=40), max_size=6),
)
def test_the_sharders_ring_view_is_its_weighted_ring_of_the_available_shards(
    leases: list[dict[str, Any]], weight: float | None, steps: list[float]
) -> None:
    view, now = RingView("s0", weight), NOW
    for step in [0.0, *steps]:
        now += step
        states, ring = view.at(leases, now)
        want = sharder_ring(available(states), "s0", weight)
        assert all(ring.owner(k) == want.owner(k) for k in KEYS[:300])
        assert ring.shards == frozenset(s for s, n in ring_tokens(available(states), "s0", weight).items() if n)
