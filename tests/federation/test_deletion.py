"""The federator's deletion decision (federation/controllers/deletion.py): a table of
named cases, the grace among them (no real-time wait), and a hypothesis simulation of
cells that delete, sync, go dark and come back."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.controllers.deletion import (
    MIN_REQUEUE,
    AwaitGrace,
    AwaitSync,
    CellState,
    DeletionCell,
    Release,
    RemoveCopies,
    Step,
    next_step,
)

GRACE = 300.0
READY, SYNCING, DARK = CellState.READY, CellState.SYNCING, CellState.UNREACHABLE


def cell(name: str, state: CellState = READY, dark: float = 0.0, **kw: bool) -> DeletionCell:
    return DeletionCell(name, state, dark, **kw)


@pytest.mark.parametrize(
    ("cells", "step"),
    [
        pytest.param([], Release(()), id="no-cell-no-copy-releases"),
        pytest.param([cell("a", copy=True)], RemoveCopies(("a",)), id="a-copy-is-removed"),
        pytest.param(
            [cell("b", copy=True), cell("a", copy=True, copy_deleting=True)],
            RemoveCopies(("b",)),
            id="only-copies-not-yet-deleting-are-removed",
        ),
        pytest.param(
            [cell("a", copy=True, copy_deleting=True)],
            Release(()),
            id="a-copy-accepted-for-deletion-by-a-ready-cell-releases-without-its-operator",
        ),
        pytest.param(
            [cell("a", copy=True, copy_deleting=True), cell("s", SYNCING, unsynced=True)],
            AwaitSync(("s",)),
            id="an-accepted-copy-still-waits-for-a-cell-that-never-synced",
        ),
        pytest.param(
            [cell("d", DARK, 10.0, copy=True, copy_deleting=True)],
            AwaitGrace(GRACE - 10.0),
            id="a-deleting-copy-in-a-dark-cell-is-not-accepted-by-a-reachable-cell",
        ),
        pytest.param([cell("s", SYNCING, unsynced=True)], AwaitSync(("s",)), id="a-never-synced-cell-may-hold-one"),
        pytest.param([cell("s", READY, unsynced=True)], AwaitSync(("s",)), id="ready-but-its-copies-view-not-synced"),
        pytest.param(
            [cell("d", DARK, 10.0, copy=True)], AwaitGrace(GRACE - 10.0), id="a-dark-cell-within-the-grace-holds-it"
        ),
        pytest.param(
            [cell("d", DARK, GRACE - 0.01, copy=True)], AwaitGrace(MIN_REQUEUE), id="the-grace-ends-soon-no-hot-loop"
        ),
        pytest.param(
            [cell("d", DARK, GRACE, copy=True)], Release((("d", GRACE),)), id="grace-over-the-finalizer-goes-naming-it"
        ),
        pytest.param(
            [cell("d", DARK, 50.0, unsynced=True)], AwaitGrace(GRACE - 50.0), id="a-dark-unsynced-cell-gets-the-grace"
        ),
        pytest.param(
            [cell("d", DARK, GRACE + 1, unsynced=True), cell("e", DARK, GRACE + 2, copy=True)],
            Release((("d", GRACE + 1), ("e", GRACE + 2))),
            id="every-overdue-cell-is-named",
        ),
        pytest.param(
            [cell("d", DARK, GRACE + 1, copy=True), cell("e", DARK, 100.0, copy=True)],
            AwaitGrace(GRACE - 100.0),
            id="one-cell-within-the-grace-holds-everything",
        ),
        pytest.param([cell("y", SYNCING, copy=True)], AwaitGrace(GRACE), id="a-syncing-cell-with-a-copy-is-waited-on"),
        pytest.param(
            [cell("d", DARK, GRACE * 2, copy=True), cell("a", copy=True)],
            RemoveCopies(("a",)),
            id="a-ready-copy-first-even-when-another-is-overdue",
        ),
    ],
)
def test_the_next_step(cells: list[DeletionCell], step: Step) -> None:
    assert next_step(cells, GRACE) == step


def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace"):
        next_step([], -1.0)


# ------------------------------------------------------------------ simulation

cells_strategy = st.lists(
    st.builds(
        DeletionCell,
        name=st.sampled_from("abcdef"),
        state=st.sampled_from(list(CellState)),
        unreachable_for=st.floats(0, 2 * GRACE),
        copy=st.booleans(),
        copy_deleting=st.booleans(),
        unsynced=st.booleans(),
    ),
    max_size=5,
    unique_by=lambda c: c.name,
).map(lambda cs: [_consistent(c) for c in cs])


def _consistent(c: DeletionCell) -> DeletionCell:
    """A cell that is not unreachable has been dark for 0 s; a known copy means synced."""
    return replace(
        c,
        unreachable_for=c.unreachable_for if c.state is DARK else 0.0,
        copy_deleting=c.copy_deleting and c.copy,
        unsynced=c.unsynced and not c.copy,
    )


@settings(max_examples=300, deadline=None)
@given(cells=cells_strategy, world=st.randoms(use_true_random=False))
def test_a_deletion_always_completes_and_never_releases_early(cells: list[DeletionCell], world: random.Random) -> None:
    """Apply each step to a simulated fleet (a cell deletes what it was told, a syncing cell
    syncs and may reveal a copy, time passes on a requeue and a dark cell may come back)
    until the finalizer goes; it must go, and only when every copy in a ready cell is gone
    or accepted for deletion (deletionTimestamp set), no cell is still syncing, and every
    cell holding one back is past the grace."""
    for _ in range(60):
        step = next_step(cells, GRACE)
        if isinstance(step, Release):
            assert not [c for c in cells if c.copy and c.state is READY and not c.copy_deleting]
            assert not [c for c in cells if c.unsynced and c.state is not DARK]
            held = [c for c in cells if (c.copy and c.state is not READY) or c.unsynced]
            assert all(c.unreachable_for >= GRACE for c in held)
            assert {name for name, _ in step.overdue} == {c.name for c in held}
            return
        if isinstance(step, RemoveCopies):
            # accepted (the cell's operator holds it: deletionTimestamp set), or gone (no finalizer)
            cells = [(replace(c, copy_deleting=True) if world.random() < 0.5 else replace(c, copy=False))
                     if c.name in step.cells else c for c in cells]  # fmt: skip
        elif isinstance(step, AwaitSync):
            synced = [replace(c, state=READY, unsynced=False, copy=world.random() < 0.5) for c in cells
                      if c.name in step.cells]  # fmt: skip
            cells = [c for c in cells if c.name not in step.cells] + [c for c in synced if c.copy]
        else:
            assert isinstance(step, AwaitGrace) and step.after >= MIN_REQUEUE
            cells = [_after(c, step.after, world) for c in cells]
    pytest.fail(f"no release after 60 steps: {cells}")


def _after(c: DeletionCell, seconds: float, world: random.Random) -> DeletionCell:
    if c.state is SYNCING:  # a syncing cell ends up ready or dark
        return replace(c, state=READY) if world.random() < 0.5 else replace(c, state=DARK, unreachable_for=seconds)
    if c.state is DARK:
        if world.random() < 0.2:
            return replace(c, state=READY, unreachable_for=0.0)  # back: its copy is removed like any other
        return replace(c, unreachable_for=c.unreachable_for + seconds)
    return c
