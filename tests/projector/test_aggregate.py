"""The project WD's status aggregated from its cells (DESIGN.md §3 Projector; issue 12)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.api.conditions import find_condition_json
from federation.api.constants import UPSTREAM_UID_ANNOTATION
from federation.fleet.aggregate import (
    CELL_UNREACHABLE,
    CellReport,
    WrittenSpecs,
    aggregate,
    copies_written,
    same_json,
)
from federation.fleet.downstream import copy_spec, downstream_copy, target_city
from federation.fleet.placement import PlacementError, Share
from mcruntime.controllerutil import is_subset

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
SEEN = datetime(2026, 3, 1, 11, 58, 30, tzinfo=UTC)
STABLE = ("True", "StableInstanceFound", "")
ALL_READY = ("True", "ReplicasAvailable", "")

Cond = tuple[str, str, str]


def project_wd(
    replicas: int = 4, generation: int = 2, status: dict[str, Any] | None = None, **scale: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": "api", "namespace": "default", "uid": "wd-uid", "generation": generation},
        "spec": {
            "cityCode": "DFW",
            "template": {"spec": {"runtime": {"sandbox": {"containers": [{"name": "c", "image": "i:1"}]}}}},
            "scaleSettings": {"minReplicas": 1, **scale},
            "replicas": replicas,
        },
        **({"status": status} if status is not None else {}),
    }


def cell_copy(
    wd: dict[str, Any],
    share: Share,
    *,
    ready: int | None = None,
    updated: int | None = None,
    available: Cond = STABLE,
    replicas_ready: Cond = ALL_READY,
    generation: int = 1,
    observed: int | None = 1,
) -> dict[str, Any]:
    """A copy as the federator wrote it and the cell's WD controller reported on it."""
    obj = downstream_copy("web", wd, share, "ns-uid", include_replicas=True, target=target_city(wd, ()))
    n = share.replicas
    obj["metadata"]["generation"] = generation
    obj["status"] = {
        "replicas": n,
        "currentReplicas": n if updated is None else updated,
        "updatedReplicas": n if updated is None else updated,
        "readyReplicas": n if ready is None else ready,
        "desiredReplicas": n,
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": "2026-01-01T00:00:00Z"}
            for t, (s, r, m) in (("Available", available), ("ReplicasReady", replicas_ready))
        ],
    }
    if observed is not None:
        obj["status"]["observedGeneration"] = observed
    return obj


def report(
    wd: dict[str, Any],
    share: Share,
    copy_: dict[str, Any] | None,
    *,
    stale_since: datetime | None = None,
    last_seen: datetime | None = None,
    include_replicas: bool = True,
) -> CellReport:
    desired = downstream_copy(
        "web", wd, share, "ns-uid", include_replicas=include_replicas, target=target_city(wd, ())
    )["spec"]
    return CellReport(share, copy_, desired, stale_since=stale_since, last_seen=last_seen)


DFW1, DFW2 = Share("dfw-1", 2, 0), Share("dfw-2", 2, 2)


def healthy(wd: dict[str, Any], *shares: Share) -> list[CellReport]:
    return [report(wd, s, cell_copy(wd, s)) for s in shares]


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    found = find_condition_json(status["conditions"], type_)
    assert found is not None, f"{type_} missing from {status['conditions']}"
    return found


def counters(status: dict[str, Any]) -> tuple[int, ...]:
    keys = ("replicas", "currentReplicas", "updatedReplicas", "readyReplicas", "desiredReplicas")
    return tuple(status[k] for k in keys)


# ------------------------------------------------------------------ table-driven


def rolling(wd: dict[str, Any]) -> list[CellReport]:
    dipping = cell_copy(wd, DFW2, updated=1, ready=1, replicas_ready=("False", "InstancesProvisioning", "rolling"))
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, dipping)]


def crashing(wd: dict[str, Any]) -> list[CellReport]:
    crash = cell_copy(
        wd,
        DFW2,
        ready=0,
        available=("False", "InstanceCrashing", "api-2, api-3 keep crashing"),
        replicas_ready=("False", "InstanceCrashing", ""),
    )
    slow = cell_copy(wd, DFW1, ready=1, available=("False", "InstancesProvisioning", ""))
    return [report(wd, DFW1, slow), report(wd, DFW2, crash)]


def stale(wd: dict[str, Any]) -> list[CellReport]:
    return [
        report(wd, DFW1, cell_copy(wd, DFW1)),
        report(wd, DFW2, cell_copy(wd, DFW2), stale_since=T0 - timedelta(seconds=30), last_seen=SEEN),
    ]


def missing(wd: dict[str, Any]) -> list[CellReport]:
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, None)]


def not_observed(wd: dict[str, Any]) -> list[CellReport]:
    # the cell has the new spec (generation 2) but its controller has not acted on it yet
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, cell_copy(wd, DFW2, generation=2, observed=1))]


def outdated_spec(wd: dict[str, Any]) -> list[CellReport]:
    old = cell_copy(wd, DFW2)
    old["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = "i:0"
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, old)]


def moved_share(wd: dict[str, Any]) -> list[CellReport]:
    # a re-division moved dfw-2's range; its copy still has the old ordinal start
    old = cell_copy(wd, Share("dfw-2", 2, 1))
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, old)]


def earlier_wd(wd: dict[str, Any]) -> list[CellReport]:
    # a copy left over from a deleted WD of the same name (another upstream uid)
    leftover = cell_copy(wd, DFW2)
    leftover["metadata"]["annotations"][UPSTREAM_UID_ANNOTATION] = "old-uid"
    return [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, leftover)]


CASES: list[tuple[Any, ...]] = [
    # (id, builder, counters (replicas, current, updated, ready, desired), observedGeneration,
    #  Available (status, reason, message fragment), ReplicasReady (status, reason, message fragment))
    (
        "all-ready",
        lambda wd: healthy(wd, DFW1, DFW2),
        (4, 4, 4, 4, 4),
        2,
        ("True", "StableInstanceFound", "4/4 instances available in dfw-1, dfw-2"),
        ("True", "ReplicasAvailable", "4/4 replicas ready in dfw-1, dfw-2"),
    ),
    (
        "one-cell-rolling",
        rolling,
        (4, 3, 3, 3, 4),
        2,
        ("True", "StableInstanceFound", "3/4 instances available"),
        ("False", "InstancesProvisioning", "cell dfw-2: 1/2 replicas ready (InstancesProvisioning: rolling)"),
    ),
    (
        "one-cell-crashing",
        crashing,
        (4, 4, 4, 1, 4),
        2,
        (
            "False",
            "InstanceCrashing",
            "cell dfw-2: 0/2 instances available (InstanceCrashing: api-2, api-3 keep crashing); "
            "cell dfw-1: 1/2 instances available (InstancesProvisioning)",
        ),
        ("False", "InstanceCrashing", "cell dfw-2: 0/2 replicas ready (InstanceCrashing)"),
    ),
    (
        "stale-cell",
        stale,
        (2, 2, 2, 2, 4),
        1,
        ("Unknown", CELL_UNREACHABLE, "cell dfw-2: unreachable, last observed 2026-03-01T11:58:30Z"),
        ("Unknown", CELL_UNREACHABLE, "cell dfw-2: unreachable, last observed 2026-03-01T11:58:30Z"),
    ),
    (
        "copy-missing",
        missing,
        (2, 2, 2, 2, 4),
        1,
        ("False", "AwaitingPropagation", "cell dfw-2: copy not created yet"),
        ("False", "AwaitingPropagation", "cell dfw-2: copy not created yet"),
    ),
    (
        "spec-not-yet-observed",
        not_observed,
        (4, 4, 4, 4, 4),
        1,
        ("True", "StableInstanceFound", "4/4 instances available"),
        ("False", "AwaitingPropagation", "cell dfw-2: spec not yet observed by the cell (generation 2, observed 1)"),
    ),
    (
        "copy-spec-outdated",
        outdated_spec,
        (4, 4, 4, 4, 4),
        1,
        ("True", "StableInstanceFound", ""),
        ("False", "AwaitingPropagation", "cell dfw-2: copy not yet updated to the current spec"),
    ),
    (
        "ordinal-start-outdated",
        moved_share,
        (4, 4, 4, 4, 4),
        1,
        ("True", "StableInstanceFound", ""),
        ("False", "AwaitingPropagation", "cell dfw-2: copy not yet moved to ordinal start 2"),
    ),
    (
        "copy-of-an-earlier-wd",
        earlier_wd,
        (2, 2, 2, 2, 4),
        1,
        ("False", "AwaitingPropagation", "cell dfw-2: copy still belongs to an earlier WD of this name"),
        ("False", "AwaitingPropagation", "cell dfw-2: copy still belongs to an earlier WD of this name"),
    ),
    (
        "empty-plan",
        lambda wd: [],
        (0, 0, 0, 0, 4),
        2,
        ("False", "NoMatchingLocation", "no registered cell serves city DFW"),
        ("False", "NoMatchingLocation", "no registered cell serves city DFW"),
    ),
]


@pytest.mark.parametrize(
    ("build", "expected_counters", "observed", "available", "replicas_ready"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_aggregate(
    build: Any,
    expected_counters: tuple[int, ...],
    observed: int,
    available: tuple[str, str, str],
    replicas_ready: tuple[str, str, str],
) -> None:
    # the previous status had observed generation 1; the WD is at generation 2
    wd = project_wd(generation=2, status={"observedGeneration": 1})
    status = aggregate(wd, build(wd), now=T0)
    assert counters(status) == expected_counters
    assert status["observedGeneration"] == observed
    assert status["selector"] == "compute.datumapis.com/workload-deployment-name=api"
    for type_, (want_status, want_reason, fragment) in (("Available", available), ("ReplicasReady", replicas_ready)):
        got = condition(status, type_)
        assert (got["status"], got["reason"]) == (want_status, want_reason), got
        assert fragment in got["message"]
        assert got["lastTransitionTime"] == "2026-03-01T12:00:00Z"
        assert got["observedGeneration"] == observed


# ------------------------------------------------------------------ specific rules


def test_a_stale_cells_numbers_are_never_repeated() -> None:
    wd = project_wd()
    fresh = aggregate(wd, healthy(wd, DFW1, DFW2), now=T0)
    gone = aggregate({**wd, "status": fresh}, stale(wd), now=T1)
    assert counters(gone) == (2, 2, 2, 2, 4)
    assert condition(gone, "Available")["lastTransitionTime"] == "2026-03-01T12:05:00Z"
    # it recovers when the cell is back
    back = aggregate({**wd, "status": gone}, healthy(wd, DFW1, DFW2), now=T1 + timedelta(minutes=1))
    assert counters(back) == (4, 4, 4, 4, 4)
    assert condition(back, "Available")["status"] == "True"


def test_a_stale_cell_never_observed_says_so() -> None:
    wd = project_wd()
    reports = [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, None, stale_since=T0)]
    assert (
        "cell dfw-2: unreachable, last observed never"
        in condition(aggregate(wd, reports, now=T0), "Available")["message"]
    )


def test_false_beats_unknown_and_every_cell_behind_is_named() -> None:
    wd = project_wd()
    crash = cell_copy(wd, DFW1, ready=0, available=("False", "InstanceCrashing", ""))
    gone = cell_copy(wd, DFW2)
    reports = [report(wd, DFW1, crash), report(wd, DFW2, gone, stale_since=T0, last_seen=SEEN)]
    got = condition(aggregate(wd, reports, now=T0), "Available")
    assert (got["status"], got["reason"]) == ("False", "InstanceCrashing")
    assert got["message"] == (
        "cell dfw-1: 0/2 instances available (InstanceCrashing); "
        "cell dfw-2: unreachable, last observed 2026-03-01T11:58:30Z"
    )


def test_the_worst_reason_wins_whatever_the_cell_order() -> None:
    wd = project_wd()
    quota = cell_copy(wd, DFW1, ready=0, available=("False", "QuotaNotGranted", ""))
    network = cell_copy(wd, DFW2, ready=0, available=("False", "NetworkFailedToCreate", ""))
    for reports in (
        [report(wd, DFW1, quota), report(wd, DFW2, network)],
        [report(wd, DFW2, network), report(wd, DFW1, quota)],
    ):
        got = condition(aggregate(wd, reports, now=T0), "Available")
        assert got["reason"] == "NetworkFailedToCreate"
        assert got["message"].startswith("cell dfw-2:")


def test_autoscaler_owned_replicas_do_not_hold_back_observed_generation() -> None:
    metrics = [{"resource": {"name": "cpu", "target": {"averageUtilization": 70}}}]
    scaled = project_wd(replicas=2, maxReplicas=5, metrics=metrics)
    share = Share("dfw-1", 2, 0)
    copy_ = cell_copy(scaled, share)
    copy_["spec"]["replicas"] = 4  # the cell's HPA scaled its copy
    # the federator's intent may or may not name replicas: neither holds the generation back
    for include in (True, False):
        status = aggregate(scaled, [report(scaled, share, copy_, include_replicas=include)], now=T0)
        assert status["observedGeneration"] == 2
    # without an autoscaler the same difference is a copy not yet updated
    plain = project_wd(replicas=2)
    copy_ = cell_copy(plain, share)
    copy_["spec"]["replicas"] = 4
    status = aggregate(plain, [report(plain, share, copy_)], now=T0)
    assert "observedGeneration" not in status
    assert condition(status, "ReplicasReady")["reason"] == "AwaitingPropagation"


def test_observed_generation_never_moves_backwards() -> None:
    wd = project_wd(generation=5, status={"observedGeneration": 4})
    assert aggregate(wd, stale(wd), now=T0)["observedGeneration"] == 4
    assert aggregate(wd, healthy(wd, DFW1, DFW2), now=T0)["observedGeneration"] == 5


def test_an_empty_share_does_not_make_a_healthy_city_unavailable() -> None:
    wd = project_wd(replicas=2)
    a, b, c = Share("a", 1, 0), Share("b", 1, 1), Share("c", 0, 2)
    empty = cell_copy(wd, c, available=("False", "InstancesProvisioning", "no instances"))
    status = aggregate(wd, [*healthy(wd, a, b), report(wd, c, empty)], now=T0)
    assert condition(status, "Available")["status"] == "True"
    assert condition(status, "ReplicasReady")["status"] == "True"
    # but an empty share that is unreachable is still reported
    status = aggregate(wd, [*healthy(wd, a, b), report(wd, c, empty, stale_since=T0, last_seen=SEEN)], now=T0)
    assert condition(status, "Available")["reason"] == CELL_UNREACHABLE


def test_aggregating_twice_changes_nothing() -> None:
    for case in CASES:
        wd = project_wd(status={"observedGeneration": 1})
        first = aggregate(wd, case[1](wd), now=T0)
        again = aggregate({**wd, "status": copy.deepcopy(first)}, case[1](wd), now=T1)
        assert again == first, case[0]


def test_now_moves_only_the_conditions_that_changed_status() -> None:
    wd = project_wd()
    first = aggregate(wd, rolling(wd), now=T0)
    after = aggregate({**wd, "status": first}, healthy(wd, DFW1, DFW2), now=T1)
    assert condition(after, "Available")["lastTransitionTime"] == "2026-03-01T12:00:00Z"  # True both times
    assert condition(after, "ReplicasReady")["lastTransitionTime"] == "2026-03-01T12:05:00Z"  # False → True


def test_other_status_fields_and_conditions_are_kept() -> None:
    foreign = {"type": "Custom", "status": "True", "reason": "X", "message": "", "lastTransitionTime": "t"}
    wd = project_wd(status={"location": {"name": "dfw"}, "conditions": [foreign]})
    status = aggregate(wd, healthy(wd, DFW1, DFW2), now=T0)
    assert status["location"] == {"name": "dfw"}
    assert foreign in status["conditions"]
    assert wd["status"] == {"location": {"name": "dfw"}, "conditions": [foreign]}  # input untouched


@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (lambda c: c["status"].update(readyReplicas="2"), ValueError, "cell dfw-1: status.readyReplicas: expected"),
        (lambda c: c["status"].update(replicas=-1), ValueError, "cell dfw-1: status.replicas: expected"),
    ],
)
def test_malformed_counters_name_the_cell(mutate: Any, error: type[Exception], message: str) -> None:
    wd = project_wd()
    bad = cell_copy(wd, DFW1)
    mutate(bad)
    with pytest.raises(error, match=message):
        aggregate(wd, [report(wd, DFW1, bad)], now=T0)


def test_bad_input_is_named() -> None:
    wd = project_wd()
    with pytest.raises(ValueError, match="now: a timezone-aware datetime is required"):
        aggregate(wd, [], now=datetime(2026, 1, 1))
    with pytest.raises(PlacementError, match=r"spec\.cityCode: required"):
        aggregate({"metadata": {"name": "api"}, "spec": {}}, [], now=T0)
    with pytest.raises(ValueError, match=r"metadata\.name: required"):
        aggregate({"spec": {"cityCode": "DFW"}}, [], now=T0)


def test_scaled_to_zero_says_so_in_the_project() -> None:
    """Issue 18 item 1: a WD at 0 replicas is Available=True/ScaledToZero in the project,
    with a message that says nothing is desired (not a count of nothing)."""
    wd = project_wd(replicas=0)
    zero = Share("dfw-1", 0, 0)
    said = ("True", "ScaledToZero", "no Instances desired (replicas is 0)")
    status = aggregate(wd, [report(wd, zero, cell_copy(wd, zero, available=said))], now=T1)
    available = condition(status, "Available")
    assert (available["status"], available["reason"]) == ("True", "ScaledToZero")
    assert available["message"] == "no Instances desired (replicas is 0) in dfw-1"


def _older_spec(wd: dict[str, Any], share: Share) -> dict[str, Any]:
    older = project_wd(replicas=2)
    return cell_copy(older, Share(share.cell, 1, share.ordinal_start))


def _earlier_wd(wd: dict[str, Any], share: Share) -> dict[str, Any]:
    obj = cell_copy(wd, share)
    obj["metadata"]["annotations"][UPSTREAM_UID_ANNOTATION] = "an-earlier-uid"
    return obj


@pytest.mark.parametrize(
    ("second", "written"),
    [
        (cell_copy, True),  # current and observed
        (lambda wd, s: cell_copy(wd, s, generation=2, observed=1), True),  # current, not observed yet: the cell's part
        (lambda wd, s: None, False),  # not created yet
        (_older_spec, False),  # not yet updated to the current spec
        (_earlier_wd, False),  # still an earlier WD's of this name
        (lambda wd, s: cell_copy(wd, Share(s.cell, s.replicas, 0)), False),  # not moved to its ordinal start
    ],
)
def test_copies_written_once_every_cell_holds_the_current_spec(second: Any, written: bool) -> None:
    """Where the status projector starts the AwaitingPropagation delay: every copy carries
    what the federator writes, whether or not its cell has observed it."""
    wd = project_wd()
    reports = [report(wd, DFW1, cell_copy(wd, DFW1)), report(wd, DFW2, second(wd, DFW2))]
    assert copies_written(wd, reports) is written


def _referencing(wd: dict[str, Any]) -> dict[str, Any]:
    container = wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["envFrom"] = [{"secretRef": {"name": "db"}}]
    return wd


def _with_referenced(copy_: dict[str, Any], status: str, reason: str, message: str) -> dict[str, Any]:
    cond = {"type": "ReferencedDataReady", "status": status, "reason": reason, "message": message}
    copy_["status"]["conditions"].append({**cond, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    return copy_


def test_referenced_data_ready_is_carried_up_naming_what_is_missing() -> None:
    wd = _referencing(project_wd())
    ok = _with_referenced(cell_copy(wd, DFW1), "True", "Ready", "all 1 referenced companion(s) are present")
    waiting = _with_referenced(
        cell_copy(wd, DFW2),
        "False",
        "AwaitingPropagation",
        "waiting for 1 companion(s) to arrive on the cell: Secret/db",
    )
    got = condition(aggregate(wd, [report(wd, DFW1, ok), report(wd, DFW2, waiting)], now=T0), "ReferencedDataReady")
    assert (got["status"], got["reason"]) == ("False", "AwaitingPropagation")
    assert got["message"] == "cell dfw-2: waiting for 1 companion(s) to arrive on the cell: Secret/db"
    both = [report(wd, DFW1, ok), report(wd, DFW2, copy.deepcopy(ok))]
    status = aggregate(wd, both, now=T0)
    got = condition(status, "ReferencedDataReady")
    assert (got["status"], got["reason"]) == ("True", "Ready")
    # a copy that has not reported it yet is not taken for ready
    silent = [report(wd, DFW1, ok), report(wd, DFW2, cell_copy(wd, DFW2))]
    assert condition(aggregate(wd, silent, now=T0), "ReferencedDataReady")["status"] == "False"
    # the reference removed: the condition goes
    plain = project_wd(status=status)
    assert find_condition_json(aggregate(plain, healthy(plain, DFW1, DFW2), now=T1)["conditions"],
                               "ReferencedDataReady") is None  # fmt: skip
    # a WD that references nothing never has it
    assert find_condition_json(aggregate(project_wd(), healthy(project_wd(), DFW1), now=T0)["conditions"],
                               "ReferencedDataReady") is None  # fmt: skip


def test_a_source_missing_in_the_project_is_source_not_found_over_what_the_cells_say() -> None:
    """No cell can ever get a companion of a source the project lacks: SourceNotFound names
    it, ahead of the cells' own AwaitingPropagation (or even a stale Ready)."""
    wd = _referencing(project_wd())
    ok = _with_referenced(cell_copy(wd, DFW1), "True", "Ready", "all 1 referenced companion(s) are present")
    got = condition(aggregate(wd, [report(wd, DFW1, ok)], now=T0, missing_sources=["Secret/db"]),
                    "ReferencedDataReady")  # fmt: skip
    assert (got["status"], got["reason"]) == ("False", "SourceNotFound")
    assert got["message"] == f"Secret/db not found in project namespace {wd['metadata']['namespace']}"
    got = condition(aggregate(wd, [], now=T0, missing_sources=["Secret/db"]), "ReferencedDataReady")
    assert got["reason"] == "SourceNotFound", "no cell at all: still the missing source first"
    assert condition(aggregate(wd, [report(wd, DFW1, ok)], now=T0), "ReferencedDataReady")["reason"] == "Ready"


# ------------------------------------------------------------------ suspension (issue 20 point 3)

SUSPENDED_COND = ("False", "Suspended", "suspended: 2 of 2 Instances stopped (they stay; resumed in order)")


def suspended_copy(wd: dict[str, Any], share: Share, *, suspended: bool | None = True) -> dict[str, Any]:
    """A copy whose cell acted on `compute.datumapis.com/suspended` (None: field never written)."""
    if suspended:
        obj = cell_copy(wd, share, ready=0, available=SUSPENDED_COND, replicas_ready=SUSPENDED_COND)
    else:
        obj = cell_copy(wd, share)
    if suspended is not None:
        obj["status"]["suspended"] = suspended
    return obj


SUSPENSION_CASES: list[tuple[Any, ...]] = [
    # (id, per cell: True/False/None (field absent)/"missing"/"stale", previous suspended, suspended, reason)
    ("every cell suspended", (True, True), None, True, "Suspended"),
    ("one stopped, the other not yet", (True, None), None, None, "Suspended"),
    ("a copy not there yet", (True, "missing"), None, None, "Suspended"),
    ("a dark cell's last report counts", (True, "stale"), None, True, "Suspended"),
    ("resuming: one still suspended", (True, False), True, False, "Suspended"),
    ("resumed everywhere", (False, False), True, False, "StableInstanceFound"),
    ("never suspended", (None, None), None, None, "StableInstanceFound"),
]


@pytest.mark.parametrize(
    ("cells", "previous", "expected", "reason"), [pytest.param(*c[1:], id=c[0]) for c in SUSPENSION_CASES]
)
def test_suspended_is_carried_up_when_every_target_cell_reports_it(
    cells: tuple[Any, Any], previous: bool | None, expected: bool | None, reason: str
) -> None:
    wd = project_wd(status=None if previous is None else {"suspended": previous})
    reports = []
    for share, state in zip((DFW1, DFW2), cells, strict=True):
        if state == "missing":
            reports.append(report(wd, share, None))
        elif state == "stale":
            copy_ = suspended_copy(wd, share)
            reports.append(report(wd, share, copy_, stale_since=T0 - timedelta(seconds=30), last_seen=SEEN))
        else:
            reports.append(report(wd, share, suspended_copy(wd, share, suspended=state)))
    status = aggregate(wd, reports, now=T0)
    assert status.get("suspended") == expected
    assert ("suspended" in status) is (expected is not None)
    healthy_reasons = {"Available": reason, "ReplicasReady": "ReplicasAvailable"}
    for type_ in ("Available", "ReplicasReady"):
        got = condition(status, type_)
        assert got["reason"] == ("Suspended" if reason == "Suspended" else healthy_reasons[type_])
        if reason == "Suspended":
            assert "cell dfw-1:" in got["message"], got["message"]  # dfw-1 is suspended in every such row


def test_suspended_heads_the_rollup_over_a_failure_in_another_cell_which_is_still_named() -> None:
    wd = project_wd()
    crash = cell_copy(wd, DFW2, ready=0, available=("False", "InstanceCrashing", "api-2 keeps crashing"))
    status = aggregate(wd, [report(wd, DFW1, suspended_copy(wd, DFW1)), report(wd, DFW2, crash)], now=T0)
    available = condition(status, "Available")
    assert (available["status"], available["reason"]) == ("False", "Suspended")
    assert "cell dfw-2" in available["message"] and "InstanceCrashing" in available["message"]
    assert "suspended" not in status


def test_no_cell_is_never_suspended() -> None:
    wd = project_wd(status={"suspended": True})
    status = aggregate(wd, [], now=T0)
    assert status["suspended"] is False
    assert condition(status, "Available")["reason"] == "NoMatchingLocation"


cell_states = st.lists(st.sampled_from([True, False, None, "missing"]), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(cell_states, st.sampled_from([None, True, False]))
def test_suspended_means_every_cell_and_a_suspended_cell_is_always_seen(
    states: list[Any], previous: bool | None
) -> None:
    wd = project_wd(replicas=2 * len(states), status=None if previous is None else {"suspended": previous})
    shares = [Share(f"dfw-{i}", 2, 2 * i) for i in range(len(states))]
    reports = [
        report(wd, share, None if state == "missing" else suspended_copy(wd, share, suspended=state))
        for share, state in zip(shares, states, strict=True)
    ]
    status = aggregate(wd, reports, now=T0)
    every = all(state is True for state in states)
    assert status.get("suspended", False) is every
    assert ("suspended" in status) is (every or previous is not None)
    for type_ in ("Available", "ReplicasReady"):
        got = condition(status, type_)
        if True in states:  # any suspended cell: the project says Suspended, naming each such cell
            assert (got["status"], got["reason"]) == ("False", "Suspended")
            for share, state in zip(shares, states, strict=True):
                if state is True:
                    assert f"cell {share.cell}:" in got["message"]
        else:
            assert got["reason"] != "Suspended"
    again = aggregate({**wd, "status": status}, reports, now=T1)
    assert again == status  # level-triggered: the same inputs write nothing


# ---------------------------------------------------------------------- WrittenSpecs
def versioned(obj: dict[str, Any], uid: str = "copy-uid", generation: int = 1, rv: str = "7") -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "generation": generation, "resourceVersion": rv}}


def desired_of(wd: dict[str, Any], share: Share, calls: list[int]) -> Any:
    def desired() -> Any:
        calls.append(1)
        return downstream_copy("web", wd, share, "ns-uid", include_replicas=True, target=target_city(wd, ()))["spec"]

    return desired


AUTOSCALED = project_wd(maxReplicas=5, metrics=[{"cpu": 50}])


def scaled(obj: dict[str, Any], replicas: int) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], "replicas": replicas}}


def edited(obj: dict[str, Any], image: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = image
    return out


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    return out


@pytest.mark.parametrize(
    ("wd", "copy_", "written"),
    [
        (project_wd(), versioned(cell_copy(project_wd(), DFW1)), True),
        (project_wd(), versioned(edited(cell_copy(project_wd(), DFW1), "i:2")), False),  # the old image
        (edited(project_wd(generation=3), "i:2"), versioned(cell_copy(project_wd(), DFW1)), False),  # a new spec
        # the cell's autoscaler owns replicas: another count is still the spec
        (AUTOSCALED, versioned(scaled(cell_copy(AUTOSCALED, DFW1), 5)), True),
        (project_wd(), versioned(scaled(cell_copy(project_wd(), DFW1), 5)), False),
        # a field the cell's CRD defaults inside a list item: not the same JSON, still the spec
        (project_wd(), versioned(defaulted(cell_copy(project_wd(), DFW1))), True),
    ],
)  # fmt: skip
def test_written_specs_give_the_rules_answer(wd: dict[str, Any], copy_: dict[str, Any], written: bool) -> None:
    memo, calls = WrittenSpecs(), list[int]()
    assert memo(wd, DFW1, copy_, desired_of(wd, DFW1, calls)) is written
    assert report(wd, DFW1, copy_).spec_written is None  # without the memo: compared by aggregate
    assert copies_written(wd, [report(wd, DFW1, copy_)]) is written
    marked = CellReport(DFW1, copy_, {}, spec_written=written)  # with it: the desired spec is not read
    assert copies_written(wd, [marked]) is written
    assert memo(wd, DFW1, copy_, desired_of(wd, DFW1, calls)) is written and len(calls) == 1, "remembered"


def test_written_specs_compare_again_when_a_version_moves() -> None:
    wd, calls = project_wd(), list[int]()
    memo = WrittenSpecs(size=8)
    copy_ = versioned(cell_copy(wd, DFW1))
    for _ in range(3):
        assert memo(wd, DFW1, copy_, desired_of(wd, DFW1, calls))
    assert len(calls) == 1
    memo(wd, DFW1, versioned(copy_, rv="8"), desired_of(wd, DFW1, calls))  # the copy's status changed: the same spec
    assert len(calls) == 1
    memo(wd, DFW1, versioned(copy_, generation=2, rv="9"), desired_of(wd, DFW1, calls))  # the copy's spec changed
    memo(project_wd(generation=3), DFW1, copy_, desired_of(wd, DFW1, calls))  # the spec changed
    memo(wd, Share("dfw-1", 3, 0), copy_, desired_of(wd, DFW1, calls))  # the share changed
    memo(wd, DFW1, versioned(copy_, uid="other"), desired_of(wd, DFW1, calls))  # another copy of the name
    assert len(calls) == 5 and len(memo) == 5
    unversioned = {**cell_copy(wd, DFW1), "metadata": {"name": "api"}}  # no uid or generation: never remembered
    memo(wd, DFW1, unversioned, desired_of(wd, DFW1, calls))
    memo(wd, DFW1, unversioned, desired_of(wd, DFW1, calls))
    assert len(calls) == 7 and len(memo) == 5
    for generation in range(3, 23):  # bounded
        memo(wd, DFW1, versioned(copy_, generation=generation), desired_of(wd, DFW1, calls))
    assert len(memo) == 8


# ---------------------------------------------------------------------- the comparison's fast path
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"x": 1, "y": [1, {"z": "a"}]}, {"y": [1, {"z": "a"}], "x": 1}, True),  # key order does not matter
        ({"x": True}, {"x": 1}, False),  # JSON's true is not 1 (Python's True == 1)
        ({"x": 1}, {"x": 1.0}, False),  # nor 1 1.0: left to `is_subset`
        ({"x": [1, 2]}, {"x": [2, 1]}, False),
        ({"x": 1}, {"x": 1, "y": 2}, False),  # a larger copy: the walk decides
        ({"x": 1}, None, False),
        ({"x": object()}, {"x": 1}, False),  # not JSON
    ],
)
def test_same_json(a: Any, b: Any, same: bool) -> None:
    assert same_json(a, b) is same


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=32) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=12,
)


@given(a=JSON, b=JSON)
def test_the_same_json_is_a_subset(a: Any, b: Any) -> None:
    """The fast path never says written where the walk would not."""
    assert same_json(a, a)
    if same_json(a, b):
        assert is_subset(a, b) and is_subset(b, a)


@pytest.mark.parametrize("include_replicas", [True, False])
@pytest.mark.parametrize(
    "wd", [project_wd(), project_wd(replicas=0), AUTOSCALED, {**project_wd(), "spec": {"cityCode": "DFW"}}]
)
def test_copy_spec_is_the_spec_downstream_copy_writes(wd: dict[str, Any], include_replicas: bool) -> None:
    written = downstream_copy("web", wd, DFW1, "ns-uid", include_replicas=include_replicas, target=target_city(wd, ()))
    assert copy_spec(wd, DFW1, include_replicas=include_replicas) == written["spec"]
    assert same_json(copy_spec(wd, DFW1, include_replicas=include_replicas), written["spec"])


@settings(max_examples=200, deadline=None)
@given(
    when=st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    offset=st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_a_stamp_is_the_utc_second_as_strftime_writes_it(when: datetime, offset: int) -> None:
    """`_rfc3339` (the conditions' and last-seen stamps, formatted once per whole second)
    says what `astimezone(UTC).strftime` says, for any zone and sub-second part."""
    from datetime import timezone

    from federation.fleet.aggregate import _rfc3339

    aware = when.replace(tzinfo=timezone(timedelta(minutes=offset)))
    assert _rfc3339(aware, "now") == aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_second_is_formatted_once_however_many_reconciles_stamp_it() -> None:
    from federation.fleet import aggregate as module

    module._utc_second.cache_clear()
    start = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    stamps = {module._rfc3339(start + timedelta(microseconds=m), "now") for m in range(0, 1_000_000, 10_000)}
    assert stamps == {"2026-01-01T12:00:00Z"}
    assert module._utc_second.cache_info().misses == 1
    with pytest.raises(ValueError, match="timezone-aware"):
        module._rfc3339(datetime(2026, 1, 1), "now")
