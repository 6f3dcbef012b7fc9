"""`PlacementMemo`: the status projector's placement of a WD, made once per input that can
change it, and always `target_city`'s and `plan`'s own answer (issue 22 item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.fleet.downstream import UnresolvedLocation, target_city
from federation.fleet.locations import KnownLocation
from federation.fleet.placement import CellInfo, Share, plan, ranges_of
from projector.placementmemo import PlacementMemo
from tests.support import calls_to

KEY = "api"


def wd(replicas: int = 4, *, generation: int | None = 1, uid: str = "u1", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "api", "namespace": "default", "uid": uid}
    if generation is not None:
        meta["generation"] = generation
    return {"metadata": meta, "spec": {"cityCode": "DFW", "replicas": replicas, **spec}}


def dfw(*names: str, reachable: bool = True) -> list[CellInfo]:
    return [CellInfo(name, "DFW", reachable) for name in names]


class Counting:
    """`plan`, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> list[Share]:
        self.calls += 1
        return plan(*args, **kwargs)


def test_the_same_inputs_and_the_plans_own_ordinals_plan_once() -> None:
    memo, planner = PlacementMemo[str](), Counting()
    first = memo.shares(KEY, wd(), dfw("a", "b"), {}, "DFW", planner)
    assert memo.shares(KEY, wd(), dfw("a", "b"), {}, "DFW", planner) == first
    # the federator wrote the copies as planned: `plan` would answer the same (idempotent)
    assert memo.shares(KEY, wd(), dfw("a", "b"), ranges_of(first), "DFW", planner) == first
    one_written = {first[0].cell: first[0].ordinals}  # neither input: planned again
    assert memo.shares(KEY, wd(), dfw("a", "b"), one_written, "DFW", planner) == plan(wd(), dfw("a", "b"), one_written)
    assert planner.calls == 2


@pytest.mark.parametrize(
    ("then", "cells", "city"),
    [
        pytest.param(wd(6, generation=2), dfw("a", "b"), "DFW", id="a new generation (replicas 4 -> 6)"),
        pytest.param(wd(4, uid="u2"), dfw("a", "b"), "DFW", id="another WD of that name"),
        pytest.param(wd(), dfw("a", "b", "c"), "DFW", id="a cell joined"),
        pytest.param(wd(), dfw("a", "b", reachable=False), "DFW", id="cells unreachable"),
        pytest.param(wd(), [CellInfo("a", "DFW"), CellInfo("b", "LHR")], "DFW", id="a cell moved city"),
        pytest.param(wd(), dfw("a", "b"), "LHR", id="another city"),
    ],
)
def test_any_input_moved_is_planned_again(then: dict[str, Any], cells: list[CellInfo], city: str) -> None:
    memo, planner = PlacementMemo[str](), Counting()
    first = memo.shares(KEY, wd(), dfw("a", "b"), {}, "DFW", planner)
    again = memo.shares(KEY, then, cells, ranges_of(first), city, planner)
    assert planner.calls == 2
    assert again == plan(then, cells, ranges_of(first), city=city)


def test_without_uid_or_generation_nothing_is_remembered() -> None:
    memo, planner = PlacementMemo[str](), Counting()
    for _ in range(2):
        memo.shares(KEY, wd(generation=None), dfw("a"), {}, "DFW", planner)
        memo.shares(KEY, wd(uid=""), dfw("a"), {}, "DFW", planner)
    assert planner.calls == 4 and len(memo) == 0


def test_the_target_city_follows_its_location() -> None:
    """Resolved again for a new Locations list (one of them moved) or a new generation,
    not for the same list; a failure is raised, never remembered."""
    memo = PlacementMemo[str]()
    placed = {**wd(), "spec": {"locationRef": {"name": "edge"}, "replicas": 4}}
    dallas = [KnownLocation("edge", "DFW")]
    assert memo.target(KEY, placed, dallas).city_code == "DFW"
    assert memo.target(KEY, placed, dallas).city_code == "DFW"
    london = [KnownLocation("edge", "LHR")]
    assert memo.target(KEY, placed, london).city_code == "LHR"
    with pytest.raises(UnresolvedLocation):
        memo.target(KEY, placed, [KnownLocation("edge", "")])
    assert memo.target(KEY, placed, london) == target_city(placed, london)
    moved = {**placed, "metadata": {**placed["metadata"], "generation": 2}, "spec": {"cityCode": "AMS"}}
    assert memo.target(KEY, moved, london).city_code == "AMS"


def test_forget_drops_the_wd() -> None:
    memo = PlacementMemo[str]()
    memo.shares(KEY, wd(), dfw("a"), {}, "DFW")
    memo.shares("other", wd(), dfw("a"), {}, "DFW")
    memo.forget(KEY)
    assert len(memo) == 1


CELLS = st.lists(st.sampled_from("abcde"), unique=True, min_size=1, max_size=4)
STEP = st.tuples(
    st.integers(1, 3),  # generation (its replicas: below)
    st.integers(0, 9),  # replicas
    CELLS,
    st.booleans(),  # current: the last answer's own ranges, or an arbitrary hint
    st.dictionaries(st.sampled_from("abcdef"), st.tuples(st.integers(0, 12), st.integers(0, 5)), max_size=4),
)


@settings(max_examples=300)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_the_memo_answers_what_plan_answers(steps: list[tuple[int, int, list[str], bool, dict[str, Any]]]) -> None:
    """Whatever the order of generations, cells and ordinals: `plan`'s own answer (one
    spec per uid and generation, as on the API server)."""
    memo, last, specs = PlacementMemo[str](), list[Share](), dict[int, int]()
    for generation, asked, names, own, hint in steps:
        replicas = specs.setdefault(generation, asked)
        current = ranges_of(last) if own else {c: range(s, s + n) for c, (s, n) in hint.items()}
        spec = wd(replicas, generation=generation)
        last = memo.shares(KEY, spec, dfw(*names), current, "DFW")
        assert last == plan(spec, dfw(*names), current, city="DFW")


def test_a_templates_references_are_read_once_per_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """`referenced` walks the template once per WD spec (uid, generation), and gives what
    `references.referenced` gives; a WD without a uid or generation is walked every time."""
    from federation.fleet import references
    from projector import placementmemo

    walked = calls_to(monkeypatch, placementmemo, "referenced")
    volumes = [{"name": "cfg", "configMap": {"name": "settings"}}, {"name": "s", "secret": {"secretName": "db"}}]
    template = {"spec": {"volumes": volumes}}
    memo = PlacementMemo[str]()
    first = memo.referenced(KEY, wd(template=template))
    assert first == references.referenced(wd(template=template))
    assert first.expected == '["ConfigMap/settings","Secret/db"]'
    for _ in range(5):
        assert memo.referenced(KEY, wd(template=template)) is first
    assert len(walked) == 1
    edited = memo.referenced(KEY, wd(generation=2, template={"spec": {"volumes": volumes[:1]}}))
    assert edited.expected == '["ConfigMap/settings"]' and len(walked) == 2
    assert memo.referenced(KEY, wd(generation=None, template=template)) == first and len(walked) == 3
    memo.forget(KEY)
    assert memo.referenced(KEY, wd(template=template)) == first and len(walked) == 4
