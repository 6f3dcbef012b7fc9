"""Benchmark: the status projector's pure work per WD, in process (no servers, no I/O).

bench_fanout's manager CPU per WD (~3 ms on this machine, ±0.5 ms from run to run under
load) cannot resolve a change to one part of one controller; this program measures that
part alone. For W WorkloadDeployments of bench_fanout's `kopf` shape (2 replicas, every
other WD in DFW with 2 cells, the rest in LHR with 1), it runs what the status projector
derives in the two reconciles of a create (the WD appears: no copy yet; its copies
written as planned and observed) and of an update (replicas 2 -> 3: the copies still
old; then rewritten), twice:

- "made afresh": as every reconcile made it before issue 22's projector memo — the target
  city resolved twice (`target_city`, then again inside `planned_shares`), `plan`, and per
  copy the desired copy built (`downstream_copy`) and walked (`is_subset`);
- "as made now": `StatusProjector`'s way — `PlacementMemo` (target and plan per WD and
  input), `copy_spec` and `aggregate.same_json` before the walk;

then `aggregate` itself once per reconcile (the same in both), for scale. Reported: CPU
(process time) per WD, the medians of R repeats, and the ratio.

Run: .venv/bin/python bench/bench_status_pieces.py [--wds W] [--repeats R] [--smoke]"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import median, report, workload_deployment
from federation.fleet.aggregate import CellReport, _spec_written, aggregate
from federation.fleet.downstream import copy_spec, current_ordinals, downstream_copy, planned_shares, target_city
from federation.fleet.placement import CellInfo, Share
from mcruntime.controllerutil import is_subset
from projector.placementmemo import PlacementMemo

CELLS = [CellInfo("dfw-1", "DFW"), CellInfo("dfw-2", "DFW"), CellInfo("lhr-1", "LHR")]
NOW = datetime(2026, 1, 1, tzinfo=UTC)

Found = list[tuple[str, dict[str, Any]]]


def project_wd(i: int, replicas: int, generation: int) -> dict[str, Any]:
    wd = workload_deployment(f"wd-{i:05d}", "DFW" if i % 2 == 0 else "LHR", replicas)
    wd["metadata"].update(uid=f"wd-uid-{i}", generation=generation)
    return wd


def written_copies(wd: dict[str, Any], generation: int) -> Found:
    """The copies the federator writes for `wd`, as their cells report them observed."""
    found: Found = []
    for share in planned_shares(wd, CELLS, [], []):
        made = downstream_copy("p00", wd, share, "ns-x", include_replicas=True, target=target_city(wd, []))
        made["metadata"].update(uid=f"{share.cell}-{wd['metadata']['uid']}", generation=generation)
        made["status"] = {"observedGeneration": generation, "replicas": share.replicas}
        found.append((share.cell, made))
    return found


def reconciles(wds: int) -> list[tuple[dict[str, Any], Found]]:
    """Per WD, the (WD, copies found) of its four reconciles: create (none; written), update (old; rewritten)."""
    out: list[tuple[dict[str, Any], Found]] = []
    for i in range(wds):
        created, updated = project_wd(i, 2, 1), project_wd(i, 3, 2)
        old = written_copies(created, 1)
        out += [(created, []), (created, old), (updated, old), (updated, written_copies(updated, 2))]
    return out


def afresh(work: list[tuple[dict[str, Any], Found]]) -> None:
    for wd, found in work:
        target = target_city(wd, [])
        shares = planned_shares(wd, CELLS, found, [])
        by_cell = dict(found)
        for share in shares:
            if (copy := by_cell.get(share.cell)) is not None:
                desired = downstream_copy("p00", wd, share, "ns-x", include_replicas=True, target=target)["spec"]
                is_subset({"spec": desired}, copy)


def as_made_now(work: list[tuple[dict[str, Any], Found]]) -> None:
    memo: PlacementMemo[str] = PlacementMemo()
    for wd, found in work:
        key = wd["metadata"]["name"]
        target = memo.target(key, wd, ())
        shares = memo.shares(key, wd, CELLS, current_ordinals(wd, found), target.city_code)
        by_cell = dict(found)
        for share in shares:
            if (copy := by_cell.get(share.cell)) is not None:
                _spec_written(wd, copy_spec(wd, share, include_replicas=True), copy)


def aggregates(work: list[tuple[dict[str, Any], Found]]) -> None:
    for wd, found in work:
        by_cell = dict(found)
        shares: list[Share] = planned_shares(wd, CELLS, found, [])
        aggregate(wd, [CellReport(s, by_cell.get(s.cell), {}, spec_written=True) for s in shares], now=NOW)


def cpu_ms_per_wd(run: Callable[[Any], None], work: Any, wds: int) -> float:
    """This process's CPU for `run(work)`, per WD, in milliseconds."""
    started = time.process_time()
    run(work)
    return (time.process_time() - started) * 1000 / wds


def sizes(doc: str | None) -> tuple[int, int]:
    """(WDs, repeats) from the command line of an in-process pieces benchmark."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="a quick run: 20 WDs, 1 repeat")
    args = parser.parse_args()
    return (20, 1) if args.smoke else (args.wds, args.repeats)


def main() -> None:
    wds, repeats = sizes(__doc__)
    rep = report("bench_status_pieces", {"wds": wds, "repeats": repeats, "reconciles_per_wd": 4})
    work = reconciles(wds)
    samples: dict[str, list[float]] = {"afresh": [], "now": [], "aggregate": []}
    for _ in range(repeats):  # alternating, so a busy moment of the machine falls on both
        samples["afresh"].append(cpu_ms_per_wd(afresh, work, wds))
        samples["now"].append(cpu_ms_per_wd(as_made_now, work, wds))
        samples["aggregate"].append(cpu_ms_per_wd(aggregates, work, wds))
    before, after = median(samples["afresh"]), median(samples["now"])
    rep.add("placement + spec comparison, made afresh: CPU per WD", before, "ms", note="create + update, 4 reconciles")
    rep.add("placement + spec comparison, as made now: CPU per WD", after, "ms", note="PlacementMemo, same_json")
    rep.add("as made now / made afresh", after / before if before else float("nan"), "x")
    rep.add("aggregate (the same in both): CPU per WD", median(samples["aggregate"]), "ms", note="for scale")
    rep.write()


if __name__ == "__main__":
    main()
