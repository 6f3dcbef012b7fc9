"""The invariant checker (issue 15 item 1), fed in-memory federations: a converged one has
no violation, and each kind of breakage is reported — exactly, naming the objects — while
what cannot be seen (a cell or project not read) is listed as unchecked, never reported
as a violation. The checker against a real fleet, and `check`, are in test_check_cmd.py."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from federation.api.constants import Annotation, Finalizer, Label
from federation.ops.invariants import ViolationKind, carries_status, check, status_differences, violations
from federation.ops.snapshot import Health
from tests.federation.worlds import World, standard, uid

K = ViolationKind


def web_copy(w: World, cell: str, name: str = "api") -> dict[str, Any]:
    return w.copies_of("web", w.projects["web"].wd("default", name))[cell]


def projection(w: World, name: str, project: str = "web") -> dict[str, Any]:
    return next(i for i in w.projects[project].instances if i["metadata"]["name"] == name)


def instance(w: World, cell: str, name: str) -> dict[str, Any]:
    return next(i for i in w.cells[cell].instances if i["metadata"]["name"] == name)


# ---------------------------------------------------------------------- breakages


def drop_copy(w: World) -> None:
    w.cells["dfw-2"].copies.remove(web_copy(w, "dfw-2"))


def extra_copy_in_another_city(w: World) -> None:
    """The web/api copy, also written by hand into LHR's cell."""
    stray = copy.deepcopy(web_copy(w, "dfw-1"))
    stray["metadata"]["uid"] = uid("copy")
    ns = next(n for n in w.cells["dfw-1"].namespaces if n["metadata"]["name"] == stray["metadata"]["namespace"])
    if not any(n["metadata"]["name"] == ns["metadata"]["name"] for n in w.cells["lhr-1"].namespaces):
        w.cells["lhr-1"].namespaces.append(copy.deepcopy(ns))
    w.cells["lhr-1"].copies.append(stray)


def move_ordinal_start(w: World) -> None:
    web_copy(w, "dfw-2")["metadata"]["annotations"][str(Annotation.ORDINAL_START)] = "7"


def change_replicas(w: World) -> None:
    web_copy(w, "dfw-2")["spec"]["replicas"] = 5


def edit_copy_spec(w: World) -> None:
    containers = web_copy(w, "dfw-1")["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"]
    containers[0]["image"] = "docker.io/library/nginx:hacked"


def copy_of_a_deleted_wd(w: World) -> None:
    w.projects["web"].wds.remove(w.projects["web"].wd("default", "edge"))
    w.projects["web"].instances = [i for i in w.projects["web"].instances if i["metadata"]["name"] != "edge-0"]


def copy_of_an_earlier_wd(w: World) -> None:
    """web/edge deleted and created again: the copy in lhr-1 still carries the old UID
    (and the new WD has no status yet, nor projections)."""
    wd = w.projects["web"].wd("default", "edge")
    wd["metadata"]["uid"] = "new-edge-uid"
    wd.pop("status")
    w.projects["web"].instances = [i for i in w.projects["web"].instances if i["metadata"]["name"] != "edge-0"]


def copy_of_an_unregistered_project(w: World) -> None:
    del w.projects["shop"]


def copy_without_labels(w: World) -> None:
    stray = copy.deepcopy(web_copy(w, "dfw-1"))
    stray["metadata"].update(name="stray", uid=uid("copy"), labels={str(Label.UPSTREAM_NAMESPACE): "elsewhere"})
    w.cells["dfw-1"].copies.append(stray)


def same_instance_name_in_two_cells(w: World) -> None:
    twin = copy.deepcopy(instance(w, "dfw-2", "api-2"))
    twin["metadata"].update(name="api-0", uid=uid("inst"))
    w.cells["dfw-2"].instances.append(twin)


def delete_projection(w: World) -> None:
    w.projects["web"].instances.remove(projection(w, "api-1"))


def add_projection(w: World) -> None:
    extra = copy.deepcopy(projection(w, "api-1"))
    extra["metadata"].update(name="api-9", uid=uid("proj"))
    w.projects["web"].instances.append(extra)


def projection_names_the_wrong_cell(w: World) -> None:
    projection(w, "api-0")["metadata"]["annotations"]["compute.datumapis.com/cell"] = "dfw-2"


def projection_status_behind(w: World) -> None:
    ready = projection(w, "api-2")["status"]["conditions"][2]
    ready.update(status="False", reason="InstanceCrashing")


def wd_status_behind(w: World) -> None:
    w.projects["web"].wd("default", "api")["status"]["readyReplicas"] = 1


def wd_condition_behind(w: World) -> None:
    cond = next(c for c in w.projects["web"].wd("default", "api")["status"]["conditions"] if c["type"] == "Available")
    cond.update(status="False", reason="InstancesProvisioning")


def deleting_wd_without_copies(w: World) -> None:
    wd = w.add_wd("web", "gone", "DFW", 1)
    wd["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def deleting_workload_without_wds(w: World) -> None:
    w.projects["web"].workloads.append(
        {
            "apiVersion": "compute.datumapis.com/v1alpha",
            "kind": "Workload",
            "metadata": {
                "name": "old",
                "namespace": "default",
                "uid": uid("wl"),
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "finalizers": [str(Finalizer.WORKLOAD_CONTROLLER)],
            },
            "spec": {},
        }
    )


WD_API = "project web: WorkloadDeployment default/api"
NS = r"ns-ns-\d+"  # the downstream namespace of web's `default` (its UID differs per world)
AGGREGATE = f"{WD_API}: status is not the aggregate of its cells: "

# breakage → every violation it causes, (kind, message as a regular expression)
BREAKAGES: list[tuple[Callable[[World], None], list[tuple[ViolationKind, str]]]] = [
    (
        drop_copy,
        [
            (K.MISSING_COPY, f"{WD_API}: cell dfw-2 has no copy \\(planned: 1 replica from ordinal 2\\)"),
            (
                K.EXTRA_PROJECTION,
                f"{WD_API}: projection default/api-2 \\(cell dfw-2\\) mirrors no Instance in any cell",
            ),
            (
                K.STATUS_MISMATCH,
                AGGREGATE + r"condition Available is True/StableInstanceFound .*, the aggregate says "
                r"False/AwaitingPropagation \('cell dfw-2: copy not created yet'\); .*"
                r"readyReplicas is 3, the aggregate says 2; .*",
            ),
        ],
    ),
    (
        extra_copy_in_another_city,
        [
            (K.UNPLANNED_COPY, f"{WD_API}: cell lhr-1 holds a copy \\({NS}/api\\) but the plan places nothing there"),
        ],
    ),
    (
        move_ordinal_start,
        [
            (
                K.WRONG_SHARE,
                f"{WD_API}: the copy in cell dfw-2 \\({NS}\\) has ordinal start 7; planned: 1 replica from ordinal 2",
            ),
            (
                K.STATUS_MISMATCH,
                AGGREGATE + r"condition ReplicasReady is True/ReplicasAvailable .*, the aggregate says "
                r"False/AwaitingPropagation \('cell dfw-2: copy not yet moved to ordinal start "
                r"2'\)",
            ),
        ],
    ),
    (
        change_replicas,
        [
            (
                K.WRONG_SHARE,
                f"{WD_API}: the copy in cell dfw-2 \\({NS}\\) has 5 replicas; planned: 1 replica from ordinal 2",
            ),
            (K.STATUS_MISMATCH, AGGREGATE + r"condition ReplicasReady .*copy not yet updated to the current spec.*"),
        ],
    ),
    (
        edit_copy_spec,
        [
            (
                K.COPY_DRIFT,
                f"{WD_API}: the copy in cell dfw-1 \\({NS}\\) does not carry the project WorkloadDeployment's spec",
            ),
            (K.STATUS_MISMATCH, AGGREGATE + r"condition ReplicasReady .*cell dfw-1: copy not yet updated.*"),
        ],
    ),
    (
        copy_of_a_deleted_wd,
        [
            (K.ORPHAN_COPY, f"cell lhr-1: copy {NS}/edge: its WorkloadDeployment web/default/edge does not exist"),
        ],
    ),
    (
        copy_of_an_earlier_wd,
        [
            (K.MISSING_COPY, "project web: WorkloadDeployment default/edge: cell lhr-1 has no copy .*"),
            (
                K.STATUS_MISMATCH,
                "project web: WorkloadDeployment default/edge: status is not the aggregate of its "
                "cells: condition Available is missing, .*",
            ),
            (
                K.ORPHAN_COPY,
                f"cell lhr-1: copy {NS}/edge was made from an earlier WorkloadDeployment web/default/edge "
                r"\(upstream uid wd-\d+, the live one is new-edge-uid\)",
            ),
        ],
    ),
    (
        copy_of_an_unregistered_project,
        [
            (K.ORPHAN_COPY, f"cell dfw-1: copy {NS}/api belongs to project shop, which is not registered"),
            (K.ORPHAN_COPY, f"cell dfw-2: copy {NS}/api belongs to project shop, which is not registered"),
        ],
    ),
    (
        copy_without_labels,
        [
            (K.ORPHAN_COPY, f"cell dfw-1: copy {NS}/stray names no project WorkloadDeployment .*"),
        ],
    ),
    (
        same_instance_name_in_two_cells,
        [
            (
                K.DUPLICATE_INSTANCE,
                "project web namespace default: Instance api-0 exists in cells dfw-1 \\(DFW\\), dfw-2 \\(DFW\\)",
            ),
        ],
    ),
    (
        delete_projection,
        [
            (K.MISSING_PROJECTION, f"{WD_API}: Instance api-1 in cell dfw-1 has no projection in project web"),
        ],
    ),
    (
        add_projection,
        [
            (
                K.EXTRA_PROJECTION,
                f"{WD_API}: projection default/api-9 \\(cell dfw-1\\) mirrors no Instance in any cell",
            ),
        ],
    ),
    (
        projection_names_the_wrong_cell,
        [
            (K.STALE_PROJECTION, f"{WD_API}: projection default/api-0 names cell dfw-2, the Instance is in dfw-1"),
        ],
    ),
    (
        projection_status_behind,
        [
            (
                K.STALE_PROJECTION,
                f"{WD_API}: projection default/api-2 does not carry the status of the Instance in cell dfw-2",
            ),
        ],
    ),
    (wd_status_behind, [(K.STATUS_MISMATCH, AGGREGATE + "readyReplicas is 1, the aggregate says 3")]),
    (
        wd_condition_behind,
        [
            (
                K.STATUS_MISMATCH,
                AGGREGATE + r"condition Available is False/InstancesProvisioning .*, the aggregate says "
                r"True/StableInstanceFound .*",
            ),
        ],
    ),
    (
        deleting_wd_without_copies,
        [
            (
                K.STUCK_FINALIZER,
                "project web: WorkloadDeployment default/gone is being deleted and holds "
                "compute.datumapis.com/federator, but no cell holds a copy",
            ),
        ],
    ),
    (
        deleting_workload_without_wds,
        [
            (
                K.STUCK_FINALIZER,
                "project web: Workload default/old is being deleted and holds "
                "compute.datumapis.com/workload-controller, but controls no WorkloadDeployment",
            ),
        ],
    ),
]


def _referencing(w: World) -> str:
    """web/default/cfg (DFW, 2) referencing Secret db (present) and ConfigMap absent (missing
    in the project: the user's to fix, not an invariant), converged; its cell namespace."""
    wd = w.add_wd("web", "cfg", "DFW", 2)
    container = wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["envFrom"] = [{"secretRef": {"name": "db"}}, {"configMapRef": {"name": "absent"}}]
    w.projects["web"].sources.append({"kind": "Secret", "metadata": {"name": "db", "namespace": "default"}})
    w.converge()
    (copy_,) = [c for c in w.cells["dfw-1"].copies if c["metadata"]["name"] == "cfg"]
    return str(copy_["metadata"]["namespace"])


def companion_missing(w: World) -> None:
    ns = _referencing(w)
    w.cells["dfw-1"].companions = [c for c in w.cells["dfw-1"].companions if c["metadata"]["namespace"] != ns]


def companion_unreferenced(w: World) -> None:
    ns = _referencing(w)
    w.cells["dfw-2"].companions.append({"kind": "ConfigMap", "metadata": {"name": "stale", "namespace": ns}})


BREAKAGES += [
    (companion_missing, [(K.MISSING_COMPANION,
                          r"cell dfw-1: Secret ns-\S+/db, expected by copy cfg \(web\), is not there")]),
    (companion_unreferenced, [(K.UNREFERENCED_COMPANION,
                               r"cell dfw-2: ConfigMap ns-\S+/stale is referenced by no live copy in its namespace")]),
]  # fmt: skip


def test_referenced_data_converged_has_no_violation() -> None:
    w = standard()
    _referencing(w)
    assert {(c["kind"], c["metadata"]["name"]) for c in w.cells["dfw-1"].companions} == {("Secret", "db")}
    assert check(w.snapshot()).violations == ()


def test_a_converged_federation_has_no_violation() -> None:
    report = check(standard().snapshot())
    assert report.violations == ()
    assert report.unchecked == ()
    assert report.ok


@pytest.mark.parametrize(("breakage", "expected"), BREAKAGES, ids=[b.__name__ for b, _ in BREAKAGES])
def test_each_breakage_is_reported_exactly(
    breakage: Callable[[World], None], expected: list[tuple[ViolationKind, str]]
) -> None:
    w = standard()
    breakage(w)
    found = violations(w.snapshot())
    assert [v.kind for v in found] == [kind for kind, _ in expected], "\n".join(map(str, found))
    for v, (_, pattern) in zip(found, expected, strict=True):
        assert re.fullmatch(pattern, v.message), f"{v.message!r} !~ {pattern!r}"
        assert str(v) == f"{v.kind}: {v.message}"


def test_every_kind_is_exercised() -> None:
    assert {kind for _, expected in BREAKAGES for kind, _ in expected} == set(ViolationKind)


# ---------------------------------------------------------------------- what cannot be seen


def test_an_unreachable_cell_is_unchecked_not_violated() -> None:
    """web/edge was deleted while lhr-1 was away: its copy there is pending sweep."""
    w = standard()
    copy_of_a_deleted_wd(w)
    w.cells["lhr-1"].health = Health(False, "connection refused")
    report = check(w.snapshot())
    assert report.violations == ()
    assert report.unchecked == (
        "cell lhr-1 not read (connection refused): its copies count as pending sweep; shares and status that depend "
        "on it are not checked",
    )


def test_an_unreachable_cell_of_the_city_holds_back_status_and_extra_projection_checks() -> None:
    w = standard()
    w.cells["dfw-2"].health = Health(False, "no answer within 5s")
    report = check(w.snapshot())
    assert report.violations == (), "api-2's projection may well mirror an Instance in dfw-2"
    assert report.unchecked == (
        "cell dfw-2 not read (no answer within 5s): its copies count as pending sweep; shares and status that depend "
        "on it are not checked",
        "project shop: WorkloadDeployment default/api: status not checked (cells dfw-2 not read)",
        f"{WD_API}: status not checked (cells dfw-2 not read)",
    )


def test_a_deleting_wd_waiting_for_an_unreachable_cell_is_not_stuck() -> None:
    w = standard()
    deleting_wd_without_copies(w)
    w.cells["lhr-1"].health = Health(False, "connection refused")
    report = check(w.snapshot())
    assert report.violations == ()
    assert report.unchecked[-1] == (
        "project web: WorkloadDeployment default/gone is being deleted and holds compute.datumapis.com/federator: "
        "not checked (cells lhr-1 not read; a copy there holds it until the grace ends)"
    )


def test_a_deleting_wd_whose_copy_is_still_there_holds_its_finalizer_rightly() -> None:
    w = standard()
    w.projects["web"].wd("default", "api")["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert violations(w.snapshot()) == []


def test_an_unreachable_project_leaves_the_copies_that_name_it_unchecked() -> None:
    w = standard()
    w.projects["shop"].health = Health(False, "401 Unauthorized")
    report = check(w.snapshot())
    assert report.violations == ()
    assert report.unchecked == (
        "project shop not read (401 Unauthorized): its WorkloadDeployments and the copies that name it are not checked",
    )


def test_an_unplaceable_wd_is_unchecked() -> None:
    w = standard()
    w.add_wd("web", "bad", "DFW 1", 1)  # stored before the CRD refused spaces: the federator refuses it with an Event
    report = check(w.snapshot())
    assert report.violations == ()
    assert report.unchecked == (
        "project web: WorkloadDeployment default/bad: cannot be placed (spec.cityCode: 'DFW 1' must not contain "
        "spaces (e.g. 'DFW')); its copies are not checked",
    )


def test_an_unreadable_management_cluster_checks_nothing() -> None:
    w = standard()
    w.management = Health(False, "connection refused")
    report = check(w.snapshot())
    assert report.violations == ()
    assert report.unchecked == (
        "management cluster https://management.test not read (connection refused): nothing checked",
    )


def test_a_wd_with_no_cell_in_its_city_expects_no_copy_and_no_matching_location() -> None:
    w = World()
    w.add_cell("dfw-1", "DFW")
    w.add_project("acme/web")
    w.add_wd("web", "api", "NRT", 2)
    w.converge()
    assert violations(w.snapshot()) == []
    cond = w.projects["web"].wd("default", "api")["status"]["conditions"][0]
    assert cond["reason"] == "NoMatchingLocation"


def test_more_cells_than_replicas_and_autoscaling_converge_clean() -> None:
    w = World()
    for name in ("dfw-1", "dfw-2", "dfw-3"):
        w.add_cell(name, "DFW")
    w.add_project("acme/web")
    w.add_wd("web", "one", "DFW", 1)
    w.add_wd(
        "web",
        "auto",
        "DFW",
        4,
        maxReplicas=8,
        metrics=[{"resource": {"name": "cpu", "target": {"averageUtilization": 50}}}],
    )
    w.converge()
    assert violations(w.snapshot()) == []
    # the cell's autoscaler owns an autoscaled copy's replicas: a different count is not a wrong share...
    w.copies_of("web", w.projects["web"].wd("default", "auto"))["dfw-1"]["spec"]["replicas"] = 7
    assert violations(w.snapshot()) == []
    # ...but its ordinal start is the federator's (moving it moves the plan's hint too: every cell is off)
    w.copies_of("web", w.projects["web"].wd("default", "auto"))["dfw-1"]["metadata"]["annotations"][
        str(Annotation.ORDINAL_START)
    ] = "3"
    assert {v.kind for v in violations(w.snapshot())} == {K.WRONG_SHARE, K.STATUS_MISMATCH}


# ---------------------------------------------------------------------- the comparisons


@pytest.mark.parametrize(
    ("expected", "actual", "differences"),
    [
        ({"replicas": 1}, {"replicas": 1}, []),
        ({"replicas": 1}, {"replicas": 2}, ["replicas is 2, the aggregate says 1"]),
        ({}, {"extra": True}, ["extra is True, the aggregate says None"]),
        (
            {"conditions": [{"type": "A", "status": "True", "reason": "R", "lastTransitionTime": "t1"}]},
            {"conditions": [{"type": "A", "status": "True", "reason": "R", "lastTransitionTime": "t2"}]},
            [],
        ),
        (
            {"conditions": [{"type": "A", "status": "True", "reason": "R"}, {"type": "B", "status": "True"}]},
            {"conditions": [{"type": "B", "status": "True"}, {"type": "A", "status": "False", "reason": "R"}]},
            ["condition A is False/R, the aggregate says True/R"],
        ),
        (
            {"conditions": [{"type": "A", "status": "True", "reason": "R"}]},
            {},
            ["condition A is missing, the aggregate says True/R"],
        ),
    ],
)
def test_status_differences(expected: dict[str, Any], actual: dict[str, Any], differences: list[str]) -> None:
    assert status_differences(expected, actual) == differences


READY = {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "t1"}
QUOTA = {"type": "QuotaGranted", "status": "Unknown", "reason": "PendingEvaluation"}


@pytest.mark.parametrize(
    ("shown", "source", "carries"),
    [
        ({"conditions": [READY]}, {"conditions": [READY]}, True),
        ({"conditions": [QUOTA, READY]}, {"conditions": [READY]}, True),  # a default the server added
        ({"conditions": [READY]}, {"conditions": [READY, QUOTA]}, False),
        ({"conditions": [{**READY, "lastTransitionTime": "t2"}]}, {"conditions": [READY]}, False),
        ({}, {}, True),
        ({"conditions": [READY]}, {"conditions": [READY], "networkInterfaces": [{"ip": "10.0.0.1"}]}, False),
    ],
)
def test_carries_status(shown: dict[str, Any], source: dict[str, Any], carries: bool) -> None:
    assert carries_status({"status": shown}, {"status": source}) is carries
