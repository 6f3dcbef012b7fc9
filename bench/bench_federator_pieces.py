"""Benchmark: what the federator and the status projector derive from a WD's spec per
reconcile, in process (no servers, no I/O), made afresh and as made now.

bench_fanout's manager CPU per WD (±0.3 ms from run to run) cannot resolve a change of a
few microseconds per reconcile; this program measures those parts alone. For W
WorkloadDeployments of bench_fanout's `kopf` shape (2 replicas, every other WD in DFW
with 2 cells, the rest in LHR with 1), over the four reconciles of a create and an update
(as bench_status_pieces: no copy yet; copies as planned; the spec changed, copies old;
copies rewritten):

- federator, "made afresh": per reconcile the target city (`target_city`, then again in
  `planned_shares`) and `plan`, the change's trace root for its span, and per target
  cell the copy (`downstream_copy`, which walks the template for its references) and the
  copy's traceparent; "as made now": `PlacementMemo` (target, plan and the template's
  references once per spec), the change's root and traceparent once per (uid, generation);
- status projector, "made afresh": the template's references walked for the missing
  sources and again for ReferencedDataReady, and the stamps (`now` and each cell's last
  contact) formatted by `strftime`; "as made now": the references from `PlacementMemo`,
  the stamps formatted once per second.

Reported: CPU (process time) per WD, the medians of R repeats (alternating), and the ratios.

Run: .venv/bin/python bench/bench_federator_pieces.py [--wds W] [--repeats R] [--smoke]"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_status_pieces import CELLS, Found, reconciles
from bench.harness import median, report
from federation.fleet import aggregate as aggregate_module
from federation.fleet import changetrace
from federation.fleet.changetrace import change_of, copy_with_trace, with_traceparent
from federation.fleet.downstream import current_ordinals, downstream_copy, planned_shares, target_city
from federation.fleet.placementmemo import PlacementMemo
from federation.fleet.references import expected_referenced_data, missing_sources
from mcruntime.tracing import change_context, traceparent

NOW = datetime(2026, 1, 1, tzinfo=UTC)
Work = list[tuple[dict[str, Any], Found]]


def _exists(_kind: str, _name: str) -> bool:
    return True


def federator_afresh(work: Work) -> None:
    for wd, found in work:
        meta = wd["metadata"]
        change_context(meta["uid"], meta["generation"])  # the `federate` span
        target = target_city(wd, [])
        for share in planned_shares(wd, CELLS, found, []):
            desired = downstream_copy("p00", wd, share, "ns-x", include_replicas=True, target=target)
            with_traceparent(desired, traceparent(change_context(meta["uid"], meta["generation"])))


def federator_now(work: Work) -> None:
    memo: PlacementMemo[str] = PlacementMemo()
    changetrace._change.cache_clear()
    changetrace._traceparent_of.cache_clear()
    for wd, found in work:
        key = wd["metadata"]["name"]
        change_of(wd)
        target = memo.target(key, wd, ())
        shares = memo.shares(key, wd, CELLS, current_ordinals(wd, found), target.city_code)
        known = memo.referenced(key, wd)
        for share in shares:
            desired = downstream_copy("p00", wd, share, "ns-x", include_replicas=True, target=target, referenced=known)
            copy_with_trace(desired, wd, None, writes=True)


def projector_afresh(work: Work) -> None:
    for wd, found in work:
        missing_sources(wd, _exists)
        expected_referenced_data(wd)  # ReferencedDataReady's own walk
        for _ in range(1 + len(found)):  # `now`, each cell's last contact
            NOW.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def projector_now(work: Work) -> None:
    memo: PlacementMemo[str] = PlacementMemo()
    aggregate_module._utc_second.cache_clear()
    for wd, found in work:
        known = memo.referenced(wd["metadata"]["name"], wd)
        missing_sources(wd, _exists, known=known)
        for _ in range(1 + len(found)):
            aggregate_module._rfc3339(NOW, "now")


def cpu_us_per_wd(run: Callable[[Work], None], work: Work, wds: int) -> float:
    started = time.process_time()
    run(work)
    return (time.process_time() - started) * 1e6 / wds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wds", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="a quick run: 20 WDs, 1 repeat")
    args = parser.parse_args()
    wds, repeats = (20, 1) if args.smoke else (args.wds, args.repeats)
    rep = report("bench_federator_pieces", {"wds": wds, "repeats": repeats, "reconciles_per_wd": 4})
    work = reconciles(wds)
    runs = {"federator afresh": federator_afresh, "federator now": federator_now,
            "projector afresh": projector_afresh, "projector now": projector_now}  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # alternating, so a busy moment of the machine falls on both
        for name, run in runs.items():
            samples[name].append(cpu_us_per_wd(run, work, wds))
    for who in ("federator", "projector"):
        before, after = median(samples[f"{who} afresh"]), median(samples[f"{who} now"])
        note = "create + update, 4 reconciles"
        rep.add(f"{who}: spec-derived work, made afresh: CPU per WD", before, "us", note=note)
        rep.add(f"{who}: spec-derived work, as made now: CPU per WD", after, "us")
        rep.add(f"{who}: as made now / made afresh", after / before if before else float("nan"), "x")
    rep.write()


if __name__ == "__main__":
    main()
