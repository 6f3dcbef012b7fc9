"""Propagation latency of project WorkloadDeployment changes: the service-level indicators
DESIGN states, as histograms on the management manager's /metrics.

From the moment the federator first sees a WD's new generation:
`federation_propagation_copies_written_seconds` (every target cell's copy written with it),
`federation_propagation_cells_observed_seconds` (every target cell has observed it: the
projector's aggregate says so), `federation_propagation_status_claimed_seconds` (the project
status write that claims it succeeded). And `federation_cell_write_to_projection_seconds`:
from a cell's status write on its copy (the API server's managedFields time for the cell
controller's status entry: whole seconds, as Kubernetes records it) to the projector's
status write that carries it.

Each is observed once per change, in this process (a change first seen by a previous
process is not measured rather than measured wrong). The clock is shared by the federator
and the status projector of one manager (`clock_of`); it keeps one small entry per WD."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcruntime.fields import get_str
from mcruntime.manager import Manager
from mcruntime.metrics import PullHistogram

# seconds: a change reaches copies in milliseconds and the project status in seconds, or is stuck for minutes
PROPAGATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
MAX_VERSIONS = 8  # per copy: versions whose event came and that no projection read yet
Key = tuple[str, str, str]  # (project cluster, namespace, WD name)


@dataclass(slots=True)  # one per WD for its lifetime
class _Change:
    generation: int
    started: float
    written: bool = False
    observed: bool = False
    claimed: bool = False


class PropagationClock:
    def __init__(self, export: Callable[[Iterable[PullHistogram]], None] | None = None) -> None:
        """`export` puts the histograms on /metrics (`Manager.export_histograms`): they are
        pull histograms, an int add per observation (a status write records one)."""

        def histogram(name: str, description: str) -> PullHistogram:
            return PullHistogram(name, boundaries=PROPAGATION_BUCKETS, unit="s", description=description,
                                 scope="federation")  # fmt: skip

        self._written = histogram("federation_propagation_copies_written_seconds",
                                  "New project WD generation to every target cell's copy written")  # fmt: skip
        self._observed = histogram("federation_propagation_cells_observed_seconds",
                                   "New project WD generation to every target cell having observed it")  # fmt: skip
        self._claimed = histogram("federation_propagation_status_claimed_seconds",
                                  "New project WD generation to the project status claiming it")  # fmt: skip
        self._projection = histogram("federation_cell_write_to_projection_seconds",
                                     "A cell's status write on its copy to the project status write")  # fmt: skip
        if export is not None:
            export((self._written, self._observed, self._claimed, self._projection))
        self._changes: dict[Key, _Change] = {}
        self._copy_changes: dict[str, dict[str, float]] = {}  # copy uid -> resourceVersion -> when its event came

    def seen(self, key: Key, generation: int) -> None:
        """The federator sees the WD at `generation` (a new one starts the clock)."""
        change = self._changes.get(key)
        if change is None or change.generation != generation:
            self._changes[key] = _Change(generation, time.monotonic())

    def forget(self, key: Key) -> None:
        self._changes.pop(key, None)

    def _elapsed(self, key: Key, generation: int, stage: str) -> float | None:
        change = self._changes.get(key)
        if change is None or change.generation != generation or getattr(change, stage):
            return None
        setattr(change, stage, True)
        return time.monotonic() - change.started

    def copies_written(self, key: Key, generation: int) -> None:
        if (elapsed := self._elapsed(key, generation, "written")) is not None:
            self._written.record(elapsed)

    def cells_observed(self, key: Key, generation: int) -> None:
        if (elapsed := self._elapsed(key, generation, "observed")) is not None:
            self._observed.record(elapsed)

    def status_claimed(self, key: Key, generation: int) -> None:
        if (elapsed := self._elapsed(key, generation, "claimed")) is not None:
            self._claimed.record(elapsed)  # the entry stays (marked) so later reconciles of it measure nothing

    def copy_changed(self, copy: Mapping[str, Any]) -> None:
        """A cell's copy changed (its watch event reached this manager): the clock of
        cell write -> projection starts for that version of the copy (an update maps both
        its old and new object here: each version keeps its own first arrival)."""
        uid, version = (
            get_str(copy, "metadata.uid", required=False),
            get_str(copy, "metadata.resourceVersion", required=False),
        )
        if uid:
            versions = self._copy_changes.setdefault(uid, {})
            versions.setdefault(version, time.monotonic())
            while len(versions) > MAX_VERSIONS:
                del versions[next(iter(versions))]

    def projected(self, copies: Mapping[str, Mapping[str, Any]], *, written: bool) -> None:
        """The projector read these copies; `written`: its status write carried them (the
        version it had a clock for is measured), else nothing of them changed the status
        (their clocks stop unmeasured)."""
        now = time.monotonic()
        for copy in copies.values():
            uid, version = (
                get_str(copy, "metadata.uid", required=False),
                get_str(copy, "metadata.resourceVersion", required=False),
            )
            arrived = self._copy_changes.get(uid, {}).get(version)
            if arrived is None:
                continue
            del self._copy_changes[uid]
            if written:
                self._projection.record(now - arrived)


_clocks: weakref.WeakKeyDictionary[Manager, PropagationClock] = weakref.WeakKeyDictionary()


def clock_of(mgr: Manager) -> PropagationClock:
    """The one clock of a manager, shared by its federator and status projector."""
    clock = _clocks.get(mgr)
    if clock is None:
        clock = _clocks[mgr] = PropagationClock(mgr.export_histograms)
    return clock
