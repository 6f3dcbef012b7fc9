"""bench_fanout's `Progress`: a phase's convergence counted from the watches' events as they
arrive. A phase reported done too early would report figures better than the truth, so the
counting is pinned here: every copy present with the WD's replicas divided between its
cells, every status at its WD's generation (on update a generation past the phase's
start), and on delete everything gone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from bench_fanout import Progress, Shape, Watches  # noqa: E402
from harness import Follower  # noqa: E402

# 2 WDs: wd-00000 to DFW (dfw-1 and dfw-2), wd-00001 to LHR (lhr-1)
SHAPE = Shape(projects=1, wds=2, namespaces=1, in_flight=1, replicas=2, updated_replicas=3, workers=0)


def obj(name: str, *, replicas: int | None = None, generation: int = 1, observed: int | None = None) -> dict[str, Any]:
    o: dict[str, Any] = {"metadata": {"namespace": "default", "name": name, "generation": generation}, "spec": {}}
    if replicas is not None:
        o["spec"]["replicas"] = replicas
    if observed is not None:
        o["status"] = {"observedGeneration": observed}
    return o


def watches() -> Watches:
    cells = {c: Follower(None, c, "/wds") for c in ("dfw-1", "dfw-2", "lhr-1")}  # type: ignore[arg-type]
    return Watches(cells, {"p0": Follower(None, "p0", "/wds")})  # type: ignore[arg-type]


def create_copies(w: Watches, *, lhr: bool = True) -> None:
    """The create's copies: wd-00000's 2 replicas divided over dfw-1 and dfw-2, wd-00001's on lhr-1."""
    w.cells["dfw-1"]._seen("ADDED", obj("wd-00000", replicas=1))
    w.cells["dfw-2"]._seen("ADDED", obj("wd-00000", replicas=1))
    if lhr:
        w.cells["lhr-1"]._seen("ADDED", obj("wd-00001", replicas=2))


def test_copies_are_done_once_every_wd_has_its_replicas_across_its_cells() -> None:
    w = watches()
    progress = Progress(w, SHAPE, ["p0"], "create")
    progress.start()
    w.cells["dfw-1"]._seen("ADDED", obj("wd-00000", replicas=1))
    w.cells["lhr-1"]._seen("ADDED", obj("wd-00001", replicas=2))
    assert not progress.copies_done(), "wd-00000 has 1 of its 2 replicas"
    w.cells["dfw-2"]._seen("ADDED", obj("wd-00000", replicas=0))
    assert not progress.copies_done(), "both copies present, but 1 + 0 replicas"
    w.cells["dfw-2"]._seen("MODIFIED", obj("wd-00000", replicas=1))
    assert progress.copies_done() and progress.copies_at is not None
    progress.close()
    assert all(not f.listeners for f in w.all()), "a closed phase stops listening"


def test_statuses_on_update_count_only_a_generation_past_the_phases_start() -> None:
    w = watches()
    for name in ("wd-00000", "wd-00001"):
        w.projects["p0"]._seen("ADDED", obj(name, generation=1, observed=1))
    progress = Progress(w, SHAPE, ["p0"], "update")
    progress.start()
    assert not progress.statuses_done(), "the statuses of the generation before the update"
    w.projects["p0"]._seen("MODIFIED", obj("wd-00000", generation=2, observed=1))
    w.projects["p0"]._seen("MODIFIED", obj("wd-00001", generation=2, observed=2))
    assert not progress.statuses_done(), "wd-00000's status has not caught up"
    w.projects["p0"]._seen("MODIFIED", obj("wd-00000", generation=2, observed=2))
    assert progress.statuses_done() and progress.statuses_at is not None


def test_copies_counted_before_the_phase_and_replicas_changed_on_update() -> None:
    w = watches()
    create_copies(w)
    progress = Progress(w, SHAPE, ["p0"], "update")
    progress.start()
    assert not progress.copies_done() and progress.copies_at is None, "the create's replicas, not the update's"
    w.cells["lhr-1"]._seen("MODIFIED", obj("wd-00001", replicas=3))
    w.cells["dfw-1"]._seen("MODIFIED", obj("wd-00000", replicas=2))
    assert progress.copies_done()


def test_delete_is_done_when_every_copy_and_wd_is_gone() -> None:
    w = watches()
    create_copies(w, lhr=False)
    w.projects["p0"]._seen("ADDED", obj("wd-00000", observed=1))
    progress = Progress(w, SHAPE, ["p0"], "delete")
    progress.start()
    w.cells["dfw-1"]._seen("DELETED", obj("wd-00000", replicas=1))
    assert not progress.copies_done(), "dfw-2's copy is still there"
    w.cells["dfw-2"]._seen("DELETED", obj("wd-00000", replicas=1))
    assert progress.copies_done() and not progress.statuses_done()
    w.projects["p0"]._seen("DELETED", obj("wd-00000"))
    assert progress.statuses_done()
