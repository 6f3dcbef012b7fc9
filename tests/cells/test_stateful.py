"""next_action: ordered, one-at-a-time Instance control (table per rule, then a simulation)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cells.stateful import Action, Create, Delete, Observed, Resume, Suspend, Wait, next_action

CUR = "cur"
OLD = "old"


def o(
    ordinal: int, hash_: str = CUR, *, ready: bool = True, deleting: bool = False, suspended: bool = False
) -> Observed:
    return Observed(f"web-{ordinal}", ordinal, hash_, ready, deleting, suspended)


def kind_and_target(action: Action | None) -> tuple[str, int | str] | None:
    """The decision without its log text."""
    match action:
        case Create(ordinal=ordinal):
            return ("create", ordinal)
        case Delete(ordinal=ordinal):
            return ("delete", ordinal)
        case Wait(name=name):
            return ("wait", name)
        case Suspend(ordinal=ordinal):
            return ("suspend", ordinal)
        case Resume(ordinal=ordinal):
            return ("resume", ordinal)
    return None


CASES = [
    # (id, wanted, observed, expected)
    ("nothing-yet: create the lowest", range(0, 3), [], ("create", 0)),
    ("converged", range(0, 3), [o(0), o(1), o(2)], None),
    ("zero wanted, none there", range(0, 0), [], None),
    # rule 1: deleting first, before anything else
    ("1: wait on a deleting instance", range(0, 3), [o(0), o(1, deleting=True), o(2)], ("wait", "web-1")),
    ("1: deleting beats scale-down", range(0, 1), [o(0), o(1), o(2, deleting=True)], ("wait", "web-2")),
    ("1: deleting beats create", range(0, 3), [o(2, deleting=True)], ("wait", "web-2")),
    ("1: lowest of several deleting", range(0, 3), [o(2, deleting=True), o(1, deleting=True)], ("wait", "web-1")),
    # rule 2: scale down, highest first
    ("2: scale down the highest", range(0, 2), [o(0), o(1), o(2), o(3)], ("delete", 3)),
    ("2: scale down to zero", range(0, 0), [o(0), o(1)], ("delete", 1)),
    ("2: ordinal-start moved", range(7, 10), [o(0), o(1), o(2)], ("delete", 2)),
    ("2: beats waiting on not-ready", range(0, 2), [o(0, ready=False), o(1), o(2)], ("delete", 2)),
    ("2: beats create", range(0, 3), [o(1), o(5)], ("delete", 5)),
    ("2: not-ready outside goes too", range(0, 1), [o(0), o(1, ready=False)], ("delete", 1)),
    # rule 3: drifted and not ready, highest first
    ("3: replace a broken old instance", range(0, 3), [o(0), o(1, OLD, ready=False), o(2)], ("delete", 1)),
    ("3: highest broken first", range(0, 3), [o(0, OLD, ready=False), o(1), o(2, OLD, ready=False)], ("delete", 2)),
    ("3: beats waiting on current not-ready", range(0, 3), [o(0, ready=False), o(2, OLD, ready=False)], ("delete", 2)),
    ("3: beats create", range(0, 3), [o(1, OLD, ready=False)], ("delete", 1)),
    ("3: missing hash is drift", range(0, 1), [o(0, "", ready=False)], ("delete", 0)),
    # rule 4: current but not ready: wait (one at a time)
    ("4: wait for the new one", range(0, 3), [o(0), o(1, ready=False)], ("wait", "web-1")),
    ("4: lowest not ready", range(0, 3), [o(0), o(1, ready=False), o(2, ready=False)], ("wait", "web-1")),
    ("4: beats ready-drift delete", range(0, 3), [o(0, OLD), o(1, OLD), o(2, ready=False)], ("wait", "web-2")),
    # rule 5: create the lowest missing
    ("5: fill a hole", range(0, 3), [o(0), o(2)], ("create", 1)),
    ("5: scale up", range(0, 5), [o(0), o(1), o(2)], ("create", 3)),
    ("5: ordinal-start", range(7, 9), [], ("create", 7)),
    ("5: beats ready-drift delete", range(0, 3), [o(0, OLD), o(2, OLD)], ("create", 1)),
    # rule 6: ready and drifted: recreate, highest first
    ("6: roll the highest", range(0, 3), [o(0, OLD), o(1, OLD), o(2, OLD)], ("delete", 2)),
    ("6: skip updated ones", range(0, 3), [o(0, OLD), o(1, OLD), o(2)], ("delete", 1)),
    ("6: last one", range(0, 3), [o(0, OLD), o(1), o(2)], ("delete", 0)),
    # rule 4, resuming: the lowest stopped Instance is resumed, the next one once it is ready
    ("4: resume the lowest", range(0, 3), [o(0, ready=False, suspended=True), o(1, ready=False, suspended=True)],
     ("resume", 0)),
    ("4: wait for the resumed one", range(0, 3), [o(0, ready=False), o(1, ready=False, suspended=True)],
     ("wait", "web-0")),
    ("4: then the next", range(0, 3), [o(0), o(1, ready=False, suspended=True), o(2, ready=False, suspended=True)],
     ("resume", 1)),
    ("4: a suspended Instance still read ready is resumed", range(0, 2), [o(0), o(1, suspended=True)], ("resume", 1)),
    ("4: resume before creating a higher one", range(0, 3), [o(0, ready=False, suspended=True)], ("resume", 0)),
    ("4: create a lower missing one before resuming", range(0, 3), [o(0), o(2, ready=False, suspended=True)],
     ("create", 1)),
    ("4: deleting beats resume", range(0, 2), [o(0, suspended=True, ready=False), o(1, deleting=True)],
     ("wait", "web-1")),
    ("3: a broken drifted suspended one is replaced, not resumed", range(0, 2),
     [o(0, ready=False, suspended=True), o(1, OLD, ready=False, suspended=True)], ("delete", 1)),
]  # fmt: skip

SUSPENDED_CASES = [
    # (id, wanted, observed, expected) with the WD suspended
    ("S3: suspend the highest first", range(0, 3), [o(0), o(1), o(2)], ("suspend", 2)),
    ("S3: then the next", range(0, 3), [o(0), o(1), o(2, ready=False, suspended=True)], ("suspend", 1)),
    ("S3: a not-ready one is suspended too", range(0, 2), [o(0, ready=False), o(1, suspended=True)], ("suspend", 0)),
    ("S3: drift is not rolled, only stopped", range(0, 2), [o(0, OLD), o(1, OLD, ready=False)], ("suspend", 1)),
    ("S4: all suspended: held", range(0, 2), [o(0, ready=False, suspended=True), o(1, suspended=True)], None),
    ("S4: nothing is created while suspended", range(0, 3), [o(1, ready=False, suspended=True)], None),
    ("S4: nothing at all", range(0, 3), [], None),
    ("S4: drifted suspended ones are not rolled", range(0, 2),
     [o(0, OLD, ready=False, suspended=True), o(1, "", ready=False, suspended=True)], None),
    ("1: deleting still waited on", range(0, 3), [o(0), o(1, deleting=True)], ("wait", "web-1")),
    ("2: scale down still goes first", range(0, 1), [o(0), o(1, suspended=True, ready=False)], ("delete", 1)),
]  # fmt: skip


@pytest.mark.parametrize(("wanted", "observed", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_next_action(wanted: range, observed: list[Observed], expected: tuple[str, int | str] | None) -> None:
    assert kind_and_target(next_action(wanted, CUR, observed)) == expected
    # input order never matters
    assert kind_and_target(next_action(wanted, CUR, list(reversed(observed)))) == expected


@pytest.mark.parametrize(
    ("wanted", "observed", "expected"), [c[1:] for c in SUSPENDED_CASES], ids=[c[0] for c in SUSPENDED_CASES]
)
def test_next_action_while_suspended(
    wanted: range, observed: list[Observed], expected: tuple[str, int | str] | None
) -> None:
    assert kind_and_target(next_action(wanted, CUR, observed, suspended=True)) == expected
    assert kind_and_target(next_action(wanted, CUR, list(reversed(observed)), suspended=True)) == expected


def test_actions_carry_names_and_reasons_for_logs() -> None:
    action = next_action(range(0, 1), CUR, [o(0), o(1)])
    assert action == Delete("web-1", 1, "scale down: ordinal 1 is outside 0..0")
    action = next_action(range(0, 2), CUR, [o(0, OLD)])
    assert action == Create(1)
    action = next_action(range(0, 1), CUR, [o(0, OLD)])
    assert isinstance(action, Delete)
    assert "old -> cur" in action.reason
    action = next_action(range(0, 1), CUR, [o(0, ready=False)])
    assert isinstance(action, Wait)
    assert action.name == "web-0"


def test_a_huge_replica_count_does_not_walk_every_ordinal() -> None:
    assert next_action(range(0, 2**31 - 1), CUR, [o(0), o(1)]) == Create(2)


@pytest.mark.parametrize(
    ("wanted", "observed", "message"),
    [
        (range(0, 4, 2), [], "step must be 1"),
        (range(-1, 2), [], "must start at >= 0"),
        (range(0, 2), [o(1), Observed("web-x", 1, CUR, True, False)], "both have ordinal 1"),
        (range(0, 2), [Observed("web--1", -1, CUR, True, False)], "ordinal -1 must be >= 0"),
    ],
)
def test_invalid_input_is_named(wanted: range, observed: list[Observed], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        next_action(wanted, CUR, observed)


# ------------------------------------------------------------------ simulation


@dataclass(frozen=True)
class Sim:
    """One Instance in the simulated cell; `broken` ones (old template) never become ready."""

    inst: Observed
    broken: bool = False


def _advance(world: dict[int, Sim], before: dict[int, Sim]) -> None:
    """What happens between two reconciles: deletions finish, healthy Instances become ready.
    Only Instances that existed before the last action move, so a new one is seen unready once."""
    for ordinal, sim in before.items():
        if ordinal not in world or world[ordinal] != sim:
            continue
        if sim.inst.deleting:
            del world[ordinal]
        elif not sim.inst.ready and not sim.broken:
            world[ordinal] = replace(sim, inst=replace(sim.inst, ready=True))


def _unavailable_in_range(world: dict[int, Sim], wanted: range, besides: int) -> int:
    return sum(
        1 for o in wanted if o != besides and (o not in world or not world[o].inst.ready or world[o].inst.deleting)
    )


initial_instances = st.dictionaries(
    st.integers(0, 12),
    st.tuples(st.sampled_from([CUR, OLD, "older", ""]), st.booleans(), st.booleans(), st.booleans()),
    max_size=8,
)


def _world(initial: dict[int, tuple[str, bool, bool, bool]]) -> dict[int, Sim]:
    return {
        ordinal: Sim(o(ordinal, hash_, ready=ready and not broken, deleting=deleting), broken=broken and hash_ != CUR)
        for ordinal, (hash_, ready, deleting, broken) in initial.items()
    }


def _run(
    world: dict[int, Sim], wanted: range, bound: int
) -> tuple[list[tuple[Action, dict[int, Sim]]], dict[int, Sim]]:
    """Apply next_action until it returns None; every action with the world it was decided on."""
    history: list[tuple[Action, dict[int, Sim]]] = []
    for _ in range(bound):
        action = next_action(wanted, CUR, [s.inst for s in world.values()])
        if action is None:
            return history, world
        before = dict(world)
        history.append((action, before))
        if isinstance(action, Create):
            assert action.ordinal not in world
            world[action.ordinal] = Sim(o(action.ordinal, CUR, ready=False))
        elif isinstance(action, Delete):
            target = world[action.ordinal]
            assert not target.inst.deleting
            world[action.ordinal] = replace(target, inst=replace(target.inst, deleting=True))
        _advance(world, before)
    raise AssertionError(f"no convergence within {bound} steps: {history[-5:]}")


@settings(max_examples=300, deadline=None)
@given(initial_instances, st.integers(0, 8), st.integers(0, 8))
def test_simulation_converges_safely_and_in_order(
    initial: dict[int, tuple[str, bool, bool, bool]], start: int, replicas: int
) -> None:
    wanted = range(start, start + replicas)
    world = _world(initial)
    # each Instance is deleted at most once (2 steps), each ordinal created and awaited at most twice
    bound = 2 * len(world) + 4 * len(wanted) + 2
    history, final = _run(world, wanted, bound)

    assert sorted(final) == list(wanted)
    assert all(s.inst.template_hash == CUR and s.inst.ready and not s.inst.deleting for s in final.values())

    scale_down: list[int] = []
    broken_drift: list[int] = []
    ready_drift: list[int] = []
    for action, before in history:
        if isinstance(action, Create):
            # OrderedReady: every lower wanted ordinal exists and is ready
            assert all(k in before and before[k].inst.ready for k in wanted if k < action.ordinal)
        elif isinstance(action, Delete):
            target = before[action.ordinal].inst
            if action.ordinal not in wanted:
                scale_down.append(action.ordinal)
            elif not target.ready:
                assert target.template_hash != CUR  # a current, not-ready Instance is waited on, never deleted
                broken_drift.append(action.ordinal)
            else:
                assert target.template_hash != CUR
                ready_drift.append(action.ordinal)
                # a roll takes a ready Instance down only when nothing else in range is down
                assert _unavailable_in_range(before, wanted, besides=action.ordinal) == 0
    for deletions in (scale_down, broken_drift, ready_drift):
        assert deletions == sorted(deletions, reverse=True)
        assert len(set(deletions)) == len(deletions)


@settings(max_examples=150, deadline=None)
@given(initial_instances, st.integers(0, 8), st.integers(0, 8), st.integers(0, 8), st.integers(0, 8))
def test_simulation_follows_a_scale_change_midway(
    initial: dict[int, tuple[str, bool, bool, bool]], start: int, replicas: int, new_replicas: int, steps: int
) -> None:
    world = _world(initial)
    wanted = range(start, start + replicas)
    for _ in range(steps):  # part of the way towards the first target
        action = next_action(wanted, CUR, [s.inst for s in world.values()])
        if action is None:
            break
        before = dict(world)
        if isinstance(action, Create):
            world[action.ordinal] = Sim(o(action.ordinal, CUR, ready=False))
        elif isinstance(action, Delete):
            world[action.ordinal] = replace(
                world[action.ordinal], inst=replace(world[action.ordinal].inst, deleting=True)
            )
        _advance(world, before)
    wanted = range(start, start + new_replicas)
    _, final = _run(world, wanted, 2 * len(world) + 4 * len(wanted) + 2)
    assert sorted(final) == list(wanted)


# ------------------------------------------------------------------ simulation: suspend, then resume


def _step(world: dict[int, Sim], action: Action) -> None:
    """Apply one action the way the cell does (a suspended Instance's Pod stops: not ready)."""
    if isinstance(action, Create):
        assert action.ordinal not in world
        world[action.ordinal] = Sim(o(action.ordinal, CUR, ready=False))
    elif isinstance(action, Delete):
        target = world[action.ordinal]
        assert not target.inst.deleting
        world[action.ordinal] = replace(target, inst=replace(target.inst, deleting=True))
    elif isinstance(action, Suspend | Resume):
        target = world[action.ordinal]
        assert target.inst.suspended is isinstance(action, Resume)  # never suspended or resumed twice
        world[action.ordinal] = replace(target, inst=replace(target.inst, suspended=isinstance(action, Suspend)))


def _advance_suspended(world: dict[int, Sim], before: dict[int, Sim]) -> None:
    """`_advance`, plus: a suspended Instance's Ready turns False (the Instance controller
    says Suspended), and one is never made ready."""
    for ordinal, sim in before.items():
        if ordinal not in world or world[ordinal] != sim:
            continue
        if sim.inst.deleting:
            del world[ordinal]
        elif sim.inst.suspended:
            world[ordinal] = replace(sim, inst=replace(sim.inst, ready=False))
        elif not sim.inst.ready and not sim.broken:
            world[ordinal] = replace(sim, inst=replace(sim.inst, ready=True))


def _run_suspension(
    world: dict[int, Sim], wanted: range, suspended: bool, bound: int
) -> tuple[list[tuple[Action, dict[int, Sim]]], dict[int, Sim]]:
    history: list[tuple[Action, dict[int, Sim]]] = []
    for _ in range(bound):
        action = next_action(wanted, CUR, [s.inst for s in world.values()], suspended=suspended)
        before = dict(world)
        if action is None:
            _advance_suspended(world, before)  # the cell may still move (a Pod stops): its event decides again
            if world == before:
                return history, world
            continue
        history.append((action, before))
        _step(world, action)
        _advance_suspended(world, before)
    raise AssertionError(f"no convergence within {bound} steps: {history[-5:]}")


suspension_worlds = st.dictionaries(
    st.integers(0, 12),
    # hash, ready, deleting, broken, suspended
    st.tuples(st.sampled_from([CUR, OLD, ""]), st.booleans(), st.booleans(), st.booleans(), st.booleans()),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(suspension_worlds, st.integers(0, 8), st.integers(0, 8))
def test_simulation_suspends_keeping_instances_then_resumes_in_order(
    initial: dict[int, tuple[str, bool, bool, bool, bool]], start: int, replicas: int
) -> None:
    world = {
        k: Sim(o(k, h, ready=r and not b and not s, deleting=d, suspended=s), broken=b and h != CUR)
        for k, (h, r, d, b, s) in initial.items()
    }
    wanted = range(start, start + replicas)
    kept = {k for k, sim in world.items() if k in wanted and not sim.inst.deleting}

    # suspend: nothing is created, only out-of-range Instances are deleted, the rest stop from the top
    history, world = _run_suspension(world, wanted, True, 3 * len(world) + 2)
    assert set(world) == kept
    assert all(s.inst.suspended and not s.inst.ready for s in world.values())
    assert not [a for a, _ in history if isinstance(a, Create)]
    assert all(a.ordinal not in wanted for a, _ in history if isinstance(a, Delete))
    suspensions = [a.ordinal for a, _ in history if isinstance(a, Suspend)]
    assert suspensions == sorted(suspensions, reverse=True)

    # resume: back to every wanted ordinal ready, each resumed once every lower one is ready again
    history, world = _run_suspension(world, wanted, False, 3 * len(world) + 4 * len(wanted) + 2)
    assert sorted(world) == list(wanted)
    assert all(s.inst.ready and not s.inst.suspended and s.inst.template_hash == CUR for s in world.values())
    resumes = [(a.ordinal, before) for a, before in history if isinstance(a, Resume)]
    assert [k for k, _ in resumes] == sorted(k for k, _ in resumes)
    for ordinal, before in resumes:
        assert all(k in before and before[k].inst.ready and not before[k].inst.suspended for k in wanted if k < ordinal)
