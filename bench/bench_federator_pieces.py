"""Benchmark: what the federator and the status projector derive from a WD's spec per
reconcile, in process (no servers, no I/O), made afresh and as made now.

bench_fanout's manager CPU per WD (±0.3 ms from run to run) cannot resolve a change of a
few microseconds per reconcile; this program measures those parts alone. For W
WorkloadDeployments of bench_fanout's `kopf` shape (2 replicas, every other WD in DFW
with 2 cells, the rest in LHR with 1), over the four reconciles of a create and an update
(as bench_status_pieces: no copy yet; copies as planned; the spec changed, copies old;
copies rewritten; the federator's are the first and third, once per change, as in
bench_fanout):

- federator, "made afresh": per reconcile the target city (`target_city`, then again in
  `planned_shares`) and `plan`, the change's trace root for its span, and per target
  cell the copy (`downstream_copy`, which walks the template for its references) and the
  copy's traceparent; "as made now": the city resolved once (`planned_shares(target=)`),
  the template's references walked once for every copy (`references.referenced`), the
  change's root and traceparent once per (uid, generation);
- fleet view (both controllers, per reconcile): the cells `find_copies` walks and the
  cells `registered_cells` plans over, over 2 projects and 3 cells; "made afresh" with
  the label keys looked up as enum members per cluster, "as made now" as plain strings;
- status projector, "made afresh": the template's references walked for the missing
  sources and again for ReferencedDataReady, and the stamps (`now` and each cell's last
  contact) formatted by `strftime`; "as made now": the references from `PlacementMemo`,
  the stamps formatted once per second.

Reported: CPU (process time) per WD, the medians of R repeats (alternating), and the ratios.

Run: .venv/bin/python bench/bench_federator_pieces.py [--wds W] [--repeats R] [--smoke]"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_status_pieces import CELLS, Found, cpu_ms_per_wd, reconciles, sizes
from bench.harness import median, report
from federation.api.constants import ClusterRole, Label
from federation.fleet import aggregate as aggregate_module
from federation.fleet import changetrace
from federation.fleet.changetrace import change_of, copy_with_trace, with_traceparent
from federation.fleet.downstream import downstream_copy, planned_shares, target_city
from federation.fleet.fleetview import cell_clusters, registered_cells
from federation.fleet.placement import CellInfo
from federation.fleet.references import expected_referenced_data, missing_sources, referenced
from mcruntime.cluster import ClusterState
from mcruntime.tracing import change_context, traceparent
from projector.placementmemo import PlacementMemo

NOW = datetime(2026, 1, 1, tzinfo=UTC)
Work = list[tuple[dict[str, Any], Found]]


def _exists(_kind: str, _name: str) -> bool:
    return True


made_afresh = change_context.__wrapped__  # the root hashed on every call, as before it was remembered


def federator_afresh(work: Work) -> None:
    for wd, found in work[0::2]:  # the federator reconciles once per change: the copies not yet as planned
        meta = wd["metadata"]
        made_afresh(meta["uid"], meta["generation"])  # the `federate` span
        target = target_city(wd, [])
        for share in planned_shares(wd, CELLS, found, []):
            desired = downstream_copy("p00", wd, share, "ns-x", include_replicas=True, target=target)
            with_traceparent(desired, traceparent(made_afresh(meta["uid"], meta["generation"])))


def federator_now(work: Work) -> None:
    change_context.cache_clear()
    changetrace._traceparent_of.cache_clear()
    for wd, found in work[0::2]:
        change_of(wd)
        target = target_city(wd, [])
        known = referenced(wd)
        for share in planned_shares(wd, CELLS, found, [], target=target):
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


def _clusters() -> Any:
    made = {}
    for name, role, city in (("p00", "project", ""), ("p01", "project", ""), ("dfw-1", "cell", "DFW"),
                             ("dfw-2", "cell", "DFW"), ("lhr-1", "cell", "LHR")):  # fmt: skip
        labels = {str(Label.CLUSTER_ROLE): role} | ({str(Label.TOPOLOGY_CITY_CODE): city} if city else {})
        made[name] = SimpleNamespace(name=name, labels=labels, state=ClusterState.READY)
    return SimpleNamespace(clusters=MappingProxyType(made))


MGR = _clusters()


def fleet_afresh(work: Work) -> None:
    def cells() -> list[Any]:
        return [c for _n, c in sorted(MGR.clusters.items()) if c.labels.get(Label.CLUSTER_ROLE) == ClusterRole.CELL]

    for _ in range(2 * len(work)):  # the federator's and the projector's reconciles
        cells()
        infos = (CellInfo(c.name, c.labels.get(Label.TOPOLOGY_CITY_CODE, ""), c.state is not ClusterState.UNREACHABLE)
                 for c in cells())  # fmt: skip
        [info for info in infos if info.city_code]


def fleet_now(work: Work) -> None:
    for _ in range(2 * len(work)):
        list(cell_clusters(MGR))
        registered_cells(MGR)


def main() -> None:
    wds, repeats = sizes(__doc__)
    rep = report("bench_federator_pieces", {"wds": wds, "repeats": repeats, "reconciles_per_wd": 4})
    work = reconciles(wds)
    runs = {"federator afresh": federator_afresh, "federator now": federator_now,
            "fleet view afresh": fleet_afresh, "fleet view now": fleet_now,
            "projector afresh": projector_afresh, "projector now": projector_now}  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # alternating, so a busy moment of the machine falls on both
        for name, run in runs.items():
            samples[name].append(cpu_ms_per_wd(run, work, wds) * 1000)  # in µs
    for who in ("federator", "fleet view", "projector"):
        before, after = median(samples[f"{who} afresh"]), median(samples[f"{who} now"])
        note = "create + update, 4 reconciles"
        rep.add(f"{who}: spec-derived work, made afresh: CPU per WD", before, "us", note=note)
        rep.add(f"{who}: spec-derived work, as made now: CPU per WD", after, "us")
        rep.add(f"{who}: as made now / made afresh", after / before if before else float("nan"), "x")
    rep.write()


if __name__ == "__main__":
    main()
