"""plan(): target cells by city (case-insensitively), running Instances never moved by a
scale (Keep), replicas divided by name order when a cell joins or for a new WD (Balance)
with ordinal ranges laid out to move the fewest ordinals (DESIGN.md §3 "Placement")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise, permutations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.fleet.placement import (
    MAX_OPTIMISED_CELLS,
    CellInfo,
    PlacementError,
    Share,
    desired_replicas,
    plan,
    ranges_of,
)


def wd(replicas: Any = None, city: Any = "DFW", **scale: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"cityCode": city}
    if replicas is not None:
        spec["replicas"] = replicas
    if scale:
        spec["scaleSettings"] = scale
    return {"metadata": {"name": "api", "namespace": "default"}, "spec": spec}


def dfw(*names: str) -> list[CellInfo]:
    return [CellInfo(name, "DFW") for name in names]


def layout(shares: Sequence[Share]) -> list[tuple[str, int, int]]:
    return [(s.cell, s.replicas, s.ordinal_start) for s in shares]


# ------------------------------------------------------------------ table-driven


@pytest.mark.parametrize(
    ("replicas", "cells", "current", "expected"),
    [
        pytest.param(0, dfw("a", "b"), None, [("a", 0, 0), ("b", 0, 0)], id="zero-replicas"),
        pytest.param(1, dfw("a", "b", "c"), None, [("a", 1, 0), ("b", 0, 1), ("c", 0, 1)], id="one-replica-3-cells"),
        pytest.param(
            2, dfw("c", "a", "b"), None, [("a", 1, 0), ("b", 1, 1), ("c", 0, 2)], id="more-cells-than-replicas"
        ),
        pytest.param(7, dfw("a", "b", "c"), None, [("a", 3, 0), ("b", 2, 3), ("c", 2, 5)], id="remainder-to-earlier"),
        pytest.param(3, dfw("dfw-2", "dfw-1"), None, [("dfw-1", 2, 0), ("dfw-2", 1, 2)], id="issue-10-example"),
        pytest.param(4, dfw("dfw-1", "dfw-2"), None, [("dfw-1", 2, 0), ("dfw-2", 2, 2)], id="scaled-to-4"),
        pytest.param(
            3,
            dfw("a", "b", "c"),
            {"a": range(0, 2), "b": range(2, 3)},
            [("a", 1, 0), ("c", 1, 1), ("b", 1, 2)],
            id="cell-added-last-by-name:b-keeps-its-ordinal",
        ),
        pytest.param(
            3,
            dfw("a", "b", "c"),
            {"a": range(0, 2), "c": range(2, 3)},
            [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)],
            id="cell-added-in-the-middle",
        ),
        pytest.param(
            4,
            dfw("a", "b", "c"),
            {"b": range(0, 2), "c": range(2, 4)},
            [("b", 1, 0), ("a", 2, 1), ("c", 1, 3)],
            id="cell-added-first-by-name",
        ),
        pytest.param(
            4,
            dfw("a", "b", "c"),
            {"a": range(0, 1), "b": range(1, 2), "c": range(2, 3), "d": range(3, 4)},
            [("a", 1, 0), ("b", 1, 1), ("c", 2, 2)],
            id="cell-removed:only-its-ordinal-moves",
        ),
        pytest.param(
            2,
            dfw("b", "c"),
            {"a": range(0, 1), "b": range(1, 2), "c": range(2, 2)},
            [("b", 2, 0), ("c", 0, 2)],
            id="cell-removed-first-by-name:its-neighbour-takes-it",
        ),
        pytest.param(
            3,
            [CellInfo("a", "DFW"), CellInfo("b", "DFW", reachable=False)],
            None,
            [("a", 2, 0), ("b", 1, 2)],
            id="unreachable-keeps-its-share",
        ),
        pytest.param(
            2,
            [CellInfo("lhr-1", "LHR"), CellInfo("a", "DFW"), CellInfo("z", "dfw")],
            None,
            [("a", 1, 0), ("z", 1, 1)],
            id="city-case-insensitive",
        ),
        pytest.param(3, [CellInfo("lhr-1", "LHR")], None, [], id="no-cell-for-the-city"),
        pytest.param(
            5,
            dfw("dfw-1", "dfw-2"),
            {"dfw-1": range(0, 2), "dfw-2": range(2, 4)},
            [("dfw-1", 2, 0), ("dfw-2", 3, 2)],
            id="issue-18:scale-4-to-5-moves-nothing",
        ),
        pytest.param(
            8,
            dfw("a", "b", "c"),
            {"a": range(0, 1), "b": range(1, 2), "c": range(2, 2)},
            [("a", 1, 0), ("b", 4, 1), ("c", 3, 5)],
            id="scale-up-fills-the-last-and-the-empty-cells-smallest-first",
        ),
        pytest.param(
            2,
            dfw("a", "b"),
            {"a": range(0, 3), "b": range(3, 6)},
            [("a", 2, 0), ("b", 0, 2)],
            id="scale-down-only-removes",
        ),
        pytest.param(3, [], None, [], id="no-cells-at-all"),
        pytest.param(
            3,
            dfw("a", "b", "c"),
            {"a": range(0, 3), "b": range(0, 3), "x": range(0, 1), "c": range(0, 10, 2)},
            [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)],
            id="inconsistent-hint-is-only-a-hint",
        ),
    ],
)
def test_plan(
    replicas: int, cells: list[CellInfo], current: dict[str, range] | None, expected: list[tuple[str, int, int]]
) -> None:
    assert layout(plan(wd(replicas), cells, current)) == expected


def test_unreachable_flag_is_carried() -> None:
    cells = [CellInfo("a", "DFW"), CellInfo("b", "DFW", reachable=False)]
    assert [s.reachable for s in plan(wd(3), cells)] == [True, False]


def test_share_ordinals() -> None:
    assert Share("a", 3, 2).ordinals == range(2, 5)
    assert list(Share("a", 0, 4).ordinals) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"cityCode": "DFW", "replicas": 3, "scaleSettings": {"minReplicas": 1}}, 3),
        ({"cityCode": "DFW", "scaleSettings": {"minReplicas": 2}}, 2),
        ({"cityCode": "DFW", "replicas": None, "scaleSettings": {"minReplicas": 2}}, 2),
        ({"cityCode": "DFW", "replicas": 0, "scaleSettings": {"minReplicas": 2}}, 0),
        ({"cityCode": "DFW", "scaleSettings": {}}, 0),
        ({"cityCode": "DFW"}, 0),
    ],
)
def test_desired_replicas(spec: dict[str, Any], expected: int) -> None:
    assert desired_replicas({"spec": spec}) == expected


def test_min_replicas_is_divided_when_replicas_is_unset() -> None:
    assert layout(plan(wd(None, minReplicas=3), dfw("a", "b"))) == [("a", 2, 0), ("b", 1, 2)]


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"spec": {"replicas": 1}}, "spec.cityCode: required"),
        ({}, "spec.cityCode: required"),
        (wd(1, city=""), "spec.cityCode: required"),
        (wd(1, city=3), "spec.cityCode: expected a string"),
        (wd(1, city="DFW "), "spec.cityCode: 'DFW ' must not contain spaces"),
        ({"spec": "DFW"}, "spec: expected an object"),
        (wd(-1), "spec.replicas: must be between 0 and 2147483647, got -1"),
        (wd(2**31), "spec.replicas: must be between 0"),
        (wd("3"), "spec.replicas: expected an integer, got '3'"),
        (wd(True), "spec.replicas: expected an integer, got True"),
        (wd(None, minReplicas=-2), "spec.scaleSettings.minReplicas: must be between 0"),
        (wd(None, minReplicas=1.5), "spec.scaleSettings.minReplicas: expected an integer"),
        ({"spec": {"cityCode": "DFW", "scaleSettings": [1]}}, "spec.scaleSettings: expected an object"),
    ],
)
def test_invalid_input_names_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(PlacementError) as err:
        plan(obj, dfw("a"))
    assert field in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ([CellInfo("a", "DFW"), CellInfo("a", "LHR")], "cells: cell 'a' is listed twice"),
        ([CellInfo("", "DFW")], "cells: a cell without a name"),
    ],
)
def test_invalid_cells(cells: list[CellInfo], message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        plan(wd(1), cells)


def test_beyond_the_search_bound_ranges_follow_name_order() -> None:
    names = [f"c{i:02d}" for i in range(MAX_OPTIMISED_CELLS + 1)]
    n = len(names)
    # every cell's current ordinal is the next one's: optimal would be a rotation
    current = {name: range((i + 1) % n, (i + 1) % n + 1) for i, name in enumerate(names)}
    current.pop(names[0])  # a cell without a copy: re-divided (Balance), not kept
    assert [s.cell for s in plan(wd(n), dfw(*names), current)] == names
    # within the bound the same situation is optimised
    small = names[:MAX_OPTIMISED_CELLS]
    m = len(small)
    hint = {name: range((i + 1) % m, (i + 1) % m + 1) for i, name in enumerate(small)}
    hint["zz"] = range(0)  # a stale entry; every target has a copy: Keep
    assert [s.cell for s in plan(wd(m), dfw(*small), hint)] == [small[-1], *small[:-1]]


# ------------------------------------------------------------------ properties

NAMES = st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=6)


def moved(before: Mapping[str, range], after: Sequence[Share]) -> int:
    """Ordinals of the new plan whose cell did not hold them before (with an overlapping
    `before`, an ordinal stays when its new cell was one of those claiming it)."""
    return sum(1 for s in after for o in s.ordinals if o not in before.get(s.cell, range(0)))


def all_layouts(replicas: int, names: Sequence[str]) -> list[list[tuple[str, int, int]]]:
    """Every order of the non-empty shares (sizes by the name rule), empty shares last."""
    ordered = sorted(names)
    base, extra = divmod(replicas, len(ordered))
    sizes = {name: base + (1 if i < extra else 0) for i, name in enumerate(ordered)}
    holding = [n for n in ordered if sizes[n] > 0]
    empty = [n for n in ordered if sizes[n] == 0]
    out = []
    for order in permutations(holding):  # lexicographic order of cell names
        start, one = 0, []
        for name in [*order, *empty]:
            one.append((name, sizes[name], start))
            start += sizes[name]
        out.append(one)
    return out


def as_ranges(lay: Sequence[tuple[str, int, int]]) -> dict[str, range]:
    return {cell: range(start, start + size) for cell, size, start in lay}


def check_invariants(shares: list[Share], replicas: int, names: Sequence[str], *, balanced: bool = True) -> None:
    assert sorted(s.cell for s in shares) == sorted(names)
    assert sum(s.replicas for s in shares) == replicas
    # contiguous and disjoint, together 0..N-1
    start = 0
    for share in shares:
        assert share.ordinal_start == start
        start += share.replicas
    assert sorted(o for s in shares for o in s.ordinals) == list(range(replicas))
    if not balanced:
        return
    # sizes: as even as possible, earlier names take the remainder
    by_name = [s.replicas for s in sorted(shares, key=lambda s: s.cell)]
    assert max(by_name) - min(by_name) <= 1
    assert by_name == sorted(by_name, reverse=True)


@st.composite
def hints(draw: st.DrawFn, names: Sequence[str]) -> dict[str, range]:
    """Arbitrary, possibly overlapping or stale current ranges."""
    out = {}
    for name in draw(st.lists(st.sampled_from([*names, "gone"]), unique=True)):
        start = draw(st.integers(0, 20))
        out[name] = range(start, start + draw(st.integers(0, 6)))
    return out


def keeps(current: Mapping[str, range], names: Sequence[str], replicas: int) -> bool:
    """Whether `plan` uses the Keep layout for this hint: every cell has a copy and the
    ranges (cut at N) do not overlap."""
    if not all(n in current for n in names):
        return False
    cut = sorted((current[n].start, min(current[n].stop, replicas)) for n in names if current[n].start < replicas)
    cut = [(a, b) for a, b in cut if b > a]
    return all(b1 <= a2 for (_a1, b1), (a2, _b2) in pairwise(cut))


@given(names=NAMES, replicas=st.integers(0, 30), data=st.data())
def test_invariants_hold_for_any_hint(names: list[str], replicas: int, data: st.DataObject) -> None:
    current = data.draw(hints(names))
    shares = plan(wd(replicas), dfw(*names), current)
    if not names:
        assert shares == []
        return
    check_invariants(shares, replicas, names, balanced=not keeps(current, names, replicas))
    if keeps(current, names, replicas):  # nothing below N moves
        assert moved({c: range(r.start, min(r.stop, replicas)) for c, r in current.items()}, shares) == sum(
            1 for o in range(replicas) if not any(o in current[n] for n in names)
        )


@given(names=NAMES.filter(bool), replicas=st.integers(0, 30))
def test_without_hint_ranges_follow_name_order(names: list[str], replicas: int) -> None:
    shares = plan(wd(replicas), dfw(*names))
    assert [s.cell for s in shares] == sorted(names)


@given(names=NAMES.filter(bool), replicas=st.integers(0, 30), data=st.data())
def test_idempotent(names: list[str], replicas: int, data: st.DataObject) -> None:
    first = plan(wd(replicas), dfw(*names), data.draw(hints(names)))
    assert plan(wd(replicas), dfw(*names), ranges_of(first)) == first


@settings(max_examples=200)
@given(names=NAMES.filter(bool), replicas=st.integers(0, 20), data=st.data())
def test_any_hint_gives_the_optimum_closest_to_name_order(names: list[str], replicas: int, data: st.DataObject) -> None:
    current = data.draw(hints(names))
    if keeps(current, names, replicas):
        current.pop(names[0], None)  # this property is about Balance: a cell without a copy
    shares = plan(wd(replicas), dfw(*names), current)
    layouts = all_layouts(replicas, names)
    fewest = min(moved(current, [Share(c, n, s) for c, n, s in lay]) for lay in layouts)
    assert moved(current, shares) == fewest
    first_optimal = next(lay for lay in layouts if moved(current, [Share(c, n, s) for c, n, s in lay]) == fewest)
    assert layout(shares) == first_optimal


@settings(max_examples=200)
@given(names=st.lists(st.sampled_from("abcdefg"), unique=True, min_size=1, max_size=5), replicas=st.integers(0, 20))
def test_a_cell_joining_moves_the_fewest_ordinals(names: list[str], replicas: int) -> None:
    joining = next(c for c in "abcdefg" if c not in names)
    before = ranges_of(plan(wd(replicas), dfw(*names)))
    after = plan(wd(replicas), dfw(*names, joining), before)
    check_invariants(after, replicas, [*names, joining])
    fewest = min(moved(before, [Share(*row) for row in lay]) for lay in all_layouts(replicas, [*names, joining]))
    assert moved(before, after) == fewest


@settings(max_examples=200)
@given(names=st.lists(st.sampled_from("abcdefg"), unique=True, min_size=2, max_size=6), replicas=st.integers(0, 20))
def test_a_cell_leaving_moves_the_fewest_ordinals(names: list[str], replicas: int) -> None:
    leaving = names[0]
    rest = names[1:]
    before = ranges_of(plan(wd(replicas), dfw(*names)))
    after = plan(wd(replicas), dfw(*rest), before)
    check_invariants(after, replicas, rest, balanced=False)
    # only the leaving cell's ordinals move: the fewest possible
    assert moved(before, after) == len(before[leaving])


def test_the_brute_force_sees_what_name_order_misses() -> None:
    # guards the properties above: the joining case from the design discussion, where
    # strict name order moves 2 ordinals and the optimum moves 1
    before = {"a": range(0, 2), "b": range(2, 3)}
    name_order = [Share("a", 1, 0), Share("b", 1, 1), Share("c", 1, 2)]
    assert moved(before, name_order) == 2
    assert moved(before, plan(wd(3), dfw("a", "b", "c"), before)) == 1


# ------------------------------------------------------------------ issue 18 item 2: scaling moves nothing

CITY_CELLS = st.lists(st.sampled_from(["dfw-1", "dfw-2", "dfw-3", "dfw-4", "dfw-5"]), unique=True, min_size=1)


def owners(shares: Sequence[Share]) -> dict[int, str]:
    return {o: s.cell for s in shares for o in s.ordinals}


@settings(max_examples=300)
@given(names=CITY_CELLS, sizes=st.lists(st.integers(0, 40), min_size=2, max_size=8))
def test_a_scale_only_adds_or_removes(names: list[str], sizes: list[int]) -> None:
    """A history of replica changes, each fed the previous plan as `current`: a scale-up
    keeps every existing ordinal in its cell (only adds), a scale-down keeps every
    remaining one (only removes)."""
    shares = plan(wd(sizes[0]), dfw(*names))
    for n in sizes[1:]:
        before = owners(shares)
        shares = plan(wd(n), dfw(*names), ranges_of(shares))
        check_invariants(shares, n, names, balanced=False)
        after = owners(shares)
        assert {o: c for o, c in before.items() if o < n} == {o: c for o, c in after.items() if o in before}
        assert plan(wd(n), dfw(*names), ranges_of(shares)) == shares, "idempotent"


@settings(max_examples=300)
@given(names=CITY_CELLS, replicas=st.integers(0, 40), data=st.data())
def test_deterministic_whatever_the_order_of_the_cells(names: list[str], replicas: int, data: st.DataObject) -> None:
    current = data.draw(hints(names))
    shuffled = data.draw(st.permutations(names))
    assert plan(wd(replicas), dfw(*shuffled), current) == plan(wd(replicas), dfw(*names), current)


@settings(max_examples=200)
@given(names=st.lists(st.sampled_from("abcdefg"), unique=True, min_size=1, max_size=5), replicas=st.integers(0, 20),
       data=st.data())  # fmt: skip
def test_a_join_is_stable_while_the_federator_writes_its_copies(
    names: list[str], replicas: int, data: st.DataObject
) -> None:
    """While the federator writes a join's copies one by one, every intermediate state of
    the copies plans the same layout (so it never flaps between two)."""
    joining = next(c for c in "abcdefg" if c not in names)
    before = ranges_of(plan(wd(replicas), dfw(*names)))
    target = plan(wd(replicas), dfw(*names, joining), before)
    written = data.draw(st.lists(st.sampled_from([s.cell for s in target]), unique=True))
    state = dict(before)
    for cell in written:
        state[cell] = ranges_of(target)[cell]
        assert plan(wd(replicas), dfw(*names, joining), state) == target, state
