"""The federator's deletion of a project WD, as a pure one-action decision (DESIGN.md §3
Federator 6), in the manner of cells/stateful.py.

`next_step(cells, grace)` looks at the cells that matter (every cell known to hold a copy
of the WD, and every engaged cell of its city whose copies' cache never synced) and returns
the ONE thing to do now. The federator performs it and decides again on the next event or
requeue: no memory between calls, and time enters only as each cell's `unreachable_for`.

Rules, first match wins:
1. A ready cell holds a copy not yet being deleted → `RemoveCopies` there (exact deletes);
   the copies' next event (deletionTimestamp set, or gone) brings the decision back.
2. A copy in a ready cell that is being deleted (deletionTimestamp set) has been accepted
   for deletion: the cell finalizes it when its operator runs, so it holds nothing here —
   a deletion never waits on a cell's operator (issue 20). Its cell's cache keeps
   watching it; if the copy is still there when the cell's operator is back, the operator
   finalizes it; anything left over is the orphan sweep's (`Routes.wds_to_replan`).
3. A cell of the city that never synced and is not unreachable may hold a copy nobody
   has seen → `AwaitSync` on it.
4. A held cell (a copy in a cell that is not ready, or an unsynced city cell that is
   unreachable) is within the grace → `AwaitGrace` until the first one's grace ends.
5. Otherwise → `Release` the finalizer, naming every held cell past the grace (each gets
   a Warning; its copy is swept when the cell is back).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class CellState(enum.StrEnum):
    READY = "ready"
    SYNCING = "syncing"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class DeletionCell:
    """What the decision needs to know about one cell."""

    name: str
    state: CellState
    unreachable_for: float = 0.0  # seconds (0 while it is not unreachable)
    copy: bool = False  # a copy of the WD is cached there (known)
    copy_deleting: bool = False  # ... and it is already being deleted
    unsynced: bool = False  # a city cell whose copies' cache never synced (no copy known)


@dataclass(frozen=True)
class RemoveCopies:
    cells: tuple[str, ...]  # delete the copy in each


@dataclass(frozen=True)
class AwaitSync:
    cells: tuple[str, ...]


@dataclass(frozen=True)
class AwaitGrace:
    after: float  # seconds until the first held cell's grace ends


@dataclass(frozen=True)
class Release:
    overdue: tuple[tuple[str, float], ...]  # (cell, seconds unreachable) for each Warning


Step = RemoveCopies | AwaitSync | AwaitGrace | Release

MIN_REQUEUE = 0.1  # seconds: a grace that ends now is looked at again shortly, never in a hot loop


def next_step(cells: Iterable[DeletionCell], grace: float) -> Step:
    """The one thing the federator does now for a deleting WD (see the module docstring)."""
    if grace < 0:
        raise ValueError(f"grace {grace!r}: must be >= 0 seconds")
    found = sorted(cells, key=lambda c: c.name)
    to_remove = tuple(c.name for c in found if c.copy and c.state is CellState.READY and not c.copy_deleting)
    if to_remove:
        return RemoveCopies(to_remove)
    syncing = tuple(c.name for c in found if c.unsynced and not c.copy and c.state is not CellState.UNREACHABLE)
    if syncing:
        return AwaitSync(syncing)
    held = [c for c in found if (c.copy and c.state is not CellState.READY)
            or (c.unsynced and not c.copy and c.state is CellState.UNREACHABLE)]  # fmt: skip
    within = [c for c in held if c.unreachable_for < grace]
    if within:
        return AwaitGrace(max(min(grace - c.unreachable_for for c in within), MIN_REQUEUE))
    return Release(tuple((c.name, c.unreachable_for) for c in held))
