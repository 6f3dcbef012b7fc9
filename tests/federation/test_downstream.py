"""What the federator writes into a cell and how a cell object maps back to its project
(DESIGN.md §3 Federator 4, 7, 8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.api.constants import API_VERSION, UPSTREAM_UID_ANNOTATION, Annotation, Label
from federation.fleet.downstream import (
    UnresolvedLocation,
    UpstreamRef,
    cell_owns_replicas,
    copy_ordinals,
    downstream_copy,
    downstream_namespace,
    own_copies,
    planned_shares,
    target_city,
    upstream_identity,
)
from federation.fleet.locations import CityTarget, KnownLocation
from federation.fleet.placement import CellInfo, PlacementError, Share, plan
from mcruntime.controllerutil import is_subset

DFW = CityTarget("DFW")

TEMPLATE = {
    "metadata": {
        "labels": {"app": "api"},
        "annotations": {"compute.datumapis.com/restartedAt": "2026-01-01T00:00:00Z"},
    },
    "spec": {"runtime": {"sandbox": {"containers": [{"name": "api", "image": "nginx:1"}]}}},
}


def project_ns(name: str = "default", uid: str = "ns-uid-web") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid}}


def project_wd(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadDeployment",
        "metadata": {
            "name": "api",
            "namespace": "default",
            "uid": "wd-uid-1",
            "generation": 3,
            "resourceVersion": "42",
            "labels": {"team": "blue"},
            "annotations": {"note": "x"},
            "finalizers": ["compute.datumapis.com/federator"],
        },
        "spec": {
            "workloadRef": {"name": "api", "uid": "w-uid"},
            "placementName": "edge",
            "cityCode": "DFW",
            "template": copy.deepcopy(TEMPLATE),
            "scaleSettings": {"minReplicas": 1},
            "replicas": 3,
            **spec,
        },
        "status": {"replicas": 3},
    }


# ------------------------------------------------------------------ namespace


def test_namespace_is_keyed_on_the_project_namespace_uid() -> None:
    ns = downstream_namespace("web", "cluster-acme_web", project_ns())
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "ns-ns-uid-web",
            "labels": {Label.UPSTREAM_CLUSTER_NAME: "cluster-acme_web", Label.UPSTREAM_NAMESPACE: "default"},
        },
    }


def test_two_projects_with_the_same_namespace_name_never_share_a_cell_namespace() -> None:
    web = downstream_namespace("web", "cluster-acme_web", project_ns("default", "uid-a"))
    shop = downstream_namespace("shop", "cluster-acme_shop", project_ns("default", "uid-b"))
    assert web["metadata"]["name"] != shop["metadata"]["name"]
    web_copy = downstream_copy(
        "web", project_wd(), Share("dfw-1", 1, 0), web["metadata"]["name"], include_replicas=True, target=DFW
    )
    shop_copy = downstream_copy(
        "shop", project_wd(), Share("dfw-1", 1, 0), shop["metadata"]["name"], include_replicas=True, target=DFW
    )
    assert web_copy["metadata"]["name"] == shop_copy["metadata"]["name"] == "api"
    assert web_copy["metadata"]["namespace"] != shop_copy["metadata"]["namespace"]


@pytest.mark.parametrize(
    ("cluster", "label", "ns", "message"),
    [
        ("web", "cluster-acme_shop", project_ns(), "decodes to project 'shop', not to the project cluster 'web'"),
        ("web", "acme_web", project_ns(), "project cluster 'web': upstream cluster name 'acme_web'"),
        ("web", "cluster-", project_ns(), "nothing after"),
        ("", "cluster-acme_web", project_ns(), "project cluster name '': must not be empty"),
        ("web", "cluster-acme_web", {"metadata": {"uid": "u"}}, "project namespace metadata.name: required"),
        ("web", "cluster-acme_web", {"metadata": {"name": "default"}}, "'default' metadata.uid: required"),
    ],
)
def test_namespace_rejects_bad_input(cluster: str, label: str, ns: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        downstream_namespace(cluster, label, ns)


# ------------------------------------------------------------------ copy


def test_copy_labels_annotations_and_spec_are_exact() -> None:
    wd = project_wd()
    got = downstream_copy("web", wd, Share("dfw-2", 1, 2), "ns-ns-uid-web", include_replicas=True, target=DFW)
    assert got == {
        "apiVersion": API_VERSION,
        "kind": "WorkloadDeployment",
        "metadata": {
            "name": "api",
            "namespace": "ns-ns-uid-web",
            "labels": {Label.TOPOLOGY_CITY_CODE: "DFW", Label.UPSTREAM_NAMESPACE: "default"},
            # the project WD's own annotations travel (issue 20); its labels do not
            "annotations": {"note": "x", Annotation.ORDINAL_START: "2", UPSTREAM_UID_ANNOTATION: "wd-uid-1"},
        },
        "spec": {**wd["spec"], "replicas": 1},
    }
    # a copy, not an alias: editing the result leaves the project WD alone
    got["spec"]["template"]["metadata"]["labels"]["app"] = "changed"
    assert wd["spec"]["template"] == TEMPLATE


@pytest.mark.parametrize(
    ("wd_labels", "copy_shard"),
    [
        ({}, None),  # unsharded: no shard label on the copy
        ({Label.SHARD: "shard-b"}, "shard-b"),  # sharded: the copy follows its WD's shard
        ({Label.SHARD: "shard-b", Label.DRAIN: "true"}, "shard-b"),  # the drain label does not travel
        ({Label.SHARD: ""}, None),
    ],
)
def test_a_copy_carries_its_wds_shard(wd_labels: dict[str, str], copy_shard: str | None) -> None:
    wd = project_wd()
    wd["metadata"]["labels"] = wd_labels
    got = downstream_copy("web", wd, Share("dfw-1", 1, 0), "ns-x", include_replicas=True, target=DFW)
    assert got["metadata"]["labels"].get(Label.SHARD) == copy_shard
    assert Label.DRAIN not in got["metadata"]["labels"]


def test_replicas_are_left_to_the_cell_when_asked() -> None:
    got = downstream_copy("web", project_wd(), Share("dfw-1", 2, 0), "ns-x", include_replicas=False, target=DFW)
    assert "replicas" not in got["spec"]
    assert got["metadata"]["annotations"][Annotation.ORDINAL_START] == "0"


def test_forged_identity_labels_never_reach_the_copy() -> None:
    wd = project_wd()
    wd["metadata"]["labels"] = {
        Label.UPSTREAM_CLUSTER_NAME: "cluster-acme_shop",
        Label.UPSTREAM_NAMESPACE: "kube-system",
        Label.TOPOLOGY_CITY_CODE: "LHR",
        Label.WORKLOAD_DEPLOYMENT_UID: "forged",
    }
    wd["metadata"]["annotations"] = {UPSTREAM_UID_ANNOTATION: "forged", Annotation.ORDINAL_START: "9"}
    ns = downstream_namespace("web", "cluster-acme_web", project_ns())
    got = downstream_copy("web", wd, Share("dfw-1", 3, 0), ns["metadata"]["name"], include_replicas=True, target=DFW)
    assert got["metadata"]["labels"] == {Label.TOPOLOGY_CITY_CODE: "DFW", Label.UPSTREAM_NAMESPACE: "default"}
    assert got["metadata"]["annotations"] == {Annotation.ORDINAL_START: "0", UPSTREAM_UID_ANNOTATION: "wd-uid-1"}
    # the namespace is built from the registration, not from anything on the WD
    assert ns["metadata"]["labels"][Label.UPSTREAM_CLUSTER_NAME] == "cluster-acme_web"
    assert ns["metadata"]["name"] == "ns-ns-uid-web"


@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (lambda wd: wd["metadata"].pop("uid"), ValueError, "WorkloadDeployment web/default/api metadata.uid: required"),
        (lambda wd: wd["metadata"].pop("namespace"), ValueError, "metadata.namespace: required"),
        (lambda wd: wd["metadata"].pop("name"), ValueError, "metadata.name: required"),
    ],
)
def test_copy_rejects_bad_input(mutate: Any, error: type[Exception], message: str) -> None:
    wd = project_wd()
    mutate(wd)
    with pytest.raises(error, match=message):
        downstream_copy("web", wd, Share("dfw-1", 1, 0), "ns-x", include_replicas=True, target=DFW)


def test_copy_needs_a_cluster_and_a_namespace() -> None:
    with pytest.raises(ValueError, match="project cluster name '': must not be empty"):
        downstream_copy("", project_wd(), Share("dfw-1", 1, 0), "ns-x", include_replicas=True, target=DFW)
    with pytest.raises(ValueError, match="downstream namespace '': must not be empty"):
        downstream_copy("web", project_wd(), Share("dfw-1", 1, 0), "", include_replicas=True, target=DFW)


@pytest.mark.parametrize(
    ("scale", "owned"),
    [
        ({"minReplicas": 1}, False),
        ({"minReplicas": 1, "maxReplicas": 5}, False),
        ({"minReplicas": 1, "metrics": [{"resource": {"name": "cpu"}}]}, False),
        ({"minReplicas": 1, "maxReplicas": 5, "metrics": []}, False),
        ({"minReplicas": 1, "maxReplicas": 5, "metrics": [{"resource": {"name": "cpu"}}]}, True),
    ],
)
def test_cell_owns_replicas_only_with_an_autoscaler(scale: dict[str, Any], owned: bool) -> None:
    assert cell_owns_replicas(project_wd(scaleSettings=scale)) is owned


@pytest.mark.parametrize(
    ("annotations", "spec", "expected"),
    [
        ({Annotation.ORDINAL_START: "2"}, {"replicas": 3}, range(2, 5)),
        ({}, {"replicas": 2}, range(0, 2)),
        ({Annotation.ORDINAL_START: "4"}, {"replicas": 0}, range(4, 4)),
        ({Annotation.ORDINAL_START: "-1"}, {"replicas": 1}, None),
        ({Annotation.ORDINAL_START: "x"}, {"replicas": 1}, None),
        ({Annotation.ORDINAL_START: "²"}, {"replicas": 1}, None),
        ({Annotation.ORDINAL_START: "1"}, {}, None),
        ({Annotation.ORDINAL_START: "1"}, {"replicas": True}, None),
    ],
)
def test_copy_ordinals(annotations: dict[str, str], spec: dict[str, Any], expected: range | None) -> None:
    assert copy_ordinals({"metadata": {"annotations": annotations}, "spec": spec}) == expected


# ------------------------------------------------------------------ "the copy already says it"
# One comparator decides it everywhere (federator, projector, `check`, `plan`):
# controllerutil.is_subset over the intent without its type fields.

DESIRED: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "WorkloadDeployment",
    "metadata": {"name": "api", "labels": {"a": "1"}},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
}


def cached(**changes: Any) -> dict[str, Any]:
    obj = copy.deepcopy(DESIRED)
    obj["metadata"].update(uid="u", resourceVersion="7", labels={"a": "1", "other": "x"}, managedFields=[])
    obj["status"] = {"replicas": 2}
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = obj
        for key in parents:
            node = node[key]
        node[last] = value
    return obj


@pytest.mark.parametrize(
    ("cached_obj", "matches"),
    [
        pytest.param(cached(), True, id="extra-fields-in-cached-are-fine"),
        pytest.param({k: v for k, v in cached().items() if k not in ("apiVersion", "kind")}, True, id="no-type-fields"),
        pytest.param(cached(spec__replicas=3), False, id="changed-scalar"),
        pytest.param(cached(metadata__labels={"other": "x"}), False, id="missing-key"),
        pytest.param(cached(spec__template={"spec": {"containers": []}}), False, id="list-shorter"),
        pytest.param(
            cached(spec__template={"spec": {"containers": [{"name": "c", "image": "i:2"}]}}), False, id="nested-value"
        ),
        pytest.param(
            cached(spec__template={"spec": {"containers": [{"name": "c", "image": "i:1", "x": 1}]}}),
            True,
            id="a-field-a-cell-defaults-inside-a-list-item-is-not-drift",
        ),
        pytest.param(
            cached(spec__template={"spec": {"containers": [{"name": "c", "image": "i:1"}], "extra": 1}}),
            True,
            id="extra-nested-map-key",
        ),
        pytest.param(cached(spec="oops"), False, id="map-replaced-by-scalar"),
    ],
)
def test_a_copy_matches_its_intent(cached_obj: dict[str, Any], matches: bool) -> None:
    intent = {k: v for k, v in DESIRED.items() if k not in ("apiVersion", "kind")}
    assert is_subset(intent, cached_obj) is matches


def test_a_copy_match_keeps_json_types_apart() -> None:
    assert not is_subset({"spec": {"enabled": True}}, {"spec": {"enabled": 1}})
    assert not is_subset({"spec": {"n": 1}}, {"spec": {"n": True}})
    assert is_subset({"spec": {"n": 1}}, {"spec": {"n": 1}})


# ------------------------------------------------------------------ upstream_identity


def cell_ns(**labels: Any) -> dict[str, Any]:
    base: dict[str, Any] = {Label.UPSTREAM_CLUSTER_NAME: "cluster-acme_web", Label.UPSTREAM_NAMESPACE: "default"}
    base.update(labels)
    return {"metadata": {"name": "ns-uid", "labels": {k: v for k, v in base.items() if v is not None}}}


def cell_copy(namespace: str = "ns-uid", /, **labels: Any) -> dict[str, Any]:
    base: dict[str, Any] = {Label.UPSTREAM_NAMESPACE: "default", Label.TOPOLOGY_CITY_CODE: "DFW"}
    base.update(labels)
    return {
        "metadata": {
            "name": "api",
            "namespace": namespace,
            "labels": {k: v for k, v in base.items() if v is not None},
            "annotations": {UPSTREAM_UID_ANNOTATION: "wd-uid-1", Annotation.ORDINAL_START: "0"},
        }
    }


def test_upstream_identity_of_a_good_copy() -> None:
    assert upstream_identity(cell_copy(), cell_ns()) == UpstreamRef("web", "default", "api", "wd-uid-1")


def test_upstream_identity_of_a_namespace_alone() -> None:
    assert upstream_identity(None, cell_ns()) == UpstreamRef("web", "default", "", "")


def test_upstream_identity_round_trips_what_the_federator_writes() -> None:
    ns = downstream_namespace("web", "cluster-acme_web", project_ns())
    copy_ = downstream_copy(
        "web", project_wd(), Share("dfw-1", 1, 0), ns["metadata"]["name"], include_replicas=True, target=DFW
    )
    assert upstream_identity(copy_, ns) == UpstreamRef("web", "default", "api", "wd-uid-1")


def no_uid() -> dict[str, Any]:
    obj = cell_copy()
    del obj["metadata"]["annotations"][UPSTREAM_UID_ANNOTATION]
    return obj


@pytest.mark.parametrize(
    ("copy_obj", "ns"),
    [
        pytest.param(cell_copy(), None, id="namespace-unknown"),
        pytest.param(cell_copy(), cell_ns(**{Label.UPSTREAM_CLUSTER_NAME: None}), id="ns-without-cluster-label"),
        pytest.param(cell_copy(), cell_ns(**{Label.UPSTREAM_NAMESPACE: None}), id="ns-without-namespace-label"),
        pytest.param(cell_copy(**{Label.UPSTREAM_NAMESPACE: None}), cell_ns(), id="copy-without-namespace-label"),
        pytest.param(no_uid(), cell_ns(), id="copy-without-upstream-uid"),
        pytest.param(cell_copy(), cell_ns(**{Label.UPSTREAM_CLUSTER_NAME: "acme_web"}), id="malformed-cluster-label"),
        pytest.param(cell_copy(), cell_ns(**{Label.UPSTREAM_CLUSTER_NAME: "cluster-a_b_c"}), id="three-segments"),
        pytest.param(cell_copy(), cell_ns(**{Label.UPSTREAM_CLUSTER_NAME: 7}), id="label-not-a-string"),
        pytest.param(
            cell_copy(**{Label.UPSTREAM_NAMESPACE: "kube-system"}), cell_ns(), id="copy-and-namespace-disagree"
        ),
        pytest.param(
            cell_copy(**{Label.UPSTREAM_CLUSTER_NAME: "cluster-acme_shop", Label.UPSTREAM_NAMESPACE: "kube-system"}),
            cell_ns(**{Label.UPSTREAM_NAMESPACE: "default"}),
            id="forged-labels-on-the-copy",
        ),
        pytest.param(cell_copy("ns-other"), cell_ns(), id="copy-not-in-that-namespace"),
        pytest.param({"metadata": {"namespace": "ns-uid"}}, cell_ns(), id="copy-without-name"),
        pytest.param({}, cell_ns(), id="empty-copy"),
    ],
)
def test_upstream_identity_refuses(copy_obj: dict[str, Any], ns: dict[str, Any] | None) -> None:
    assert upstream_identity(copy_obj, ns) is None


def test_a_forged_cluster_label_on_the_copy_is_not_read() -> None:
    # the copy's own cluster label (which a tenant could have smuggled) is ignored:
    # the project comes from the namespace the federator labelled
    forged = cell_copy(**{Label.UPSTREAM_CLUSTER_NAME: "cluster-acme_shop"})
    ref = upstream_identity(forged, cell_ns())
    assert ref is not None and ref.project == "web"


# ------------------------------------------------------------------ planned_shares
REGISTERED = [CellInfo("dfw-1", "DFW"), CellInfo("dfw-2", "DFW"), CellInfo("lhr-1", "LHR")]


def held_copy(uid: str, start: str, replicas: Any) -> dict[str, Any]:
    annotations = {UPSTREAM_UID_ANNOTATION: uid, Annotation.ORDINAL_START: start}
    return {"metadata": {"name": "api", "annotations": annotations}, "spec": {"replicas": replicas}}


@pytest.mark.parametrize(
    ("copies", "current"),
    [
        pytest.param([], {}, id="no-copy"),
        pytest.param([("dfw-2", held_copy("wd-uid", "0", 3))], {"dfw-2": range(0, 3)}, id="own-copy-is-the-hint"),
        pytest.param([("dfw-2", held_copy("old-uid", "0", 3))], {}, id="a-copy-of-an-earlier-wd-is-not"),
        pytest.param([("dfw-1", held_copy("wd-uid", "x", 3))], {}, id="unreadable-ordinals-are-no-hint"),
        pytest.param(
            [("dfw-1", held_copy("wd-uid", "2", 1)), ("dfw-2", held_copy("wd-uid", "0", 2))],
            {"dfw-1": range(2, 3), "dfw-2": range(0, 2)},
            id="every-own-copy",
        ),
    ],
)
def test_planned_shares_is_plan_over_the_ordinals_the_own_copies_hold(
    copies: list[tuple[str, dict[str, Any]]], current: dict[str, range]
) -> None:
    wd = project_wd(cityCode="DFW", replicas=3)
    wd["metadata"]["uid"] = "wd-uid"
    assert set(own_copies(wd, copies)) == {
        cell for cell, c in copies if c["metadata"]["annotations"][UPSTREAM_UID_ANNOTATION] == "wd-uid"
    }
    assert planned_shares(wd, REGISTERED, copies, ()) == plan(wd, REGISTERED, current)


def test_planned_shares_without_a_uid_reads_no_copy() -> None:
    wd = project_wd(cityCode="DFW", replicas=3)
    wd["metadata"].pop("uid", None)
    copies = [("dfw-2", held_copy("", "0", 3))]
    assert own_copies(wd, copies) == {}
    assert planned_shares(wd, REGISTERED, copies, ()) == plan(wd, REGISTERED, {})


# ------------------------------------------------------------------ placement by location

LOCATIONS = (KnownLocation("dfw", "DFW"), KnownLocation("lhr", "lhr"), KnownLocation("nowhere", ""))
BY_LOCATION = {"locationRef": {"name": "lhr"}}


def _placed_by(**placement: Any) -> dict[str, Any]:
    wd = project_wd()
    wd["spec"].pop("cityCode")
    wd["spec"].update(placement)
    return wd


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ({"cityCode": "dfw"}, CityTarget("dfw")),  # as written, any case
        ({"cityCode": "DFW"}, CityTarget("DFW")),
        ({"locationRef": {"name": "dfw"}}, CityTarget("DFW", "dfw")),  # the Location's city
        ({"locationRef": {"name": "lhr"}}, CityTarget("lhr", "lhr")),
    ],
)
def test_target_city_reads_the_location_or_the_written_city(placement: dict[str, Any], expected: CityTarget) -> None:
    assert target_city(_placed_by(**placement), LOCATIONS) == expected


@pytest.mark.parametrize(
    ("placement", "error", "message"),
    [
        ({"locationRef": {"name": "mars"}}, UnresolvedLocation, "Location 'mars' does not exist"),
        ({"locationRef": {"name": "nowhere"}}, UnresolvedLocation, "Location 'nowhere' has no"),
        ({}, PlacementError, "exactly one of spec.locationRef or spec.cityCode"),
        ({"cityCode": "DFW", "locationRef": {"name": "dfw"}}, PlacementError, "exactly one of"),
        ({"cityCode": "D FW"}, PlacementError, "must not contain spaces"),
        ({"locationRef": {}}, PlacementError, "spec.locationRef.name: required"),
    ],
)
def test_target_city_errors_name_the_field(placement: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        target_city(_placed_by(**placement), LOCATIONS)
    # an invalid spec (InvalidPlacement) is never read as a Location no cell serves (NoMatchingLocation)
    assert isinstance(raised.value, UnresolvedLocation) == (error is UnresolvedLocation)


def test_a_copy_placed_by_location_carries_the_location_and_city_labels() -> None:
    wd = _placed_by(**BY_LOCATION)
    target = target_city(wd, LOCATIONS)
    got = downstream_copy("web", wd, Share("lhr-1", 1, 0), "ns-x", include_replicas=True, target=target)
    assert got["metadata"]["labels"] == {
        Label.TOPOLOGY_CITY_CODE: "lhr",
        Label.TOPOLOGY_LOCATION: "lhr",
        Label.UPSTREAM_NAMESPACE: "default",
    }
    assert got["spec"]["locationRef"] == {"name": "lhr"}  # the spec travels as written


def test_planned_shares_places_a_location_on_its_citys_cells_in_any_case() -> None:
    cells = [CellInfo("dfw-1", "dfw"), CellInfo("dfw-2", "DFW"), CellInfo("lhr-1", "LHR")]
    wd = _placed_by(locationRef={"name": "dfw"})
    by_location = planned_shares(wd, cells, [], LOCATIONS)
    assert [s.cell for s in by_location] == ["dfw-1", "dfw-2"]
    for written in ("dfw", "DFW"):
        assert planned_shares(_placed_by(cityCode=written), cells, [], LOCATIONS) == by_location
    with pytest.raises(UnresolvedLocation, match="'dfw' does not exist"):
        planned_shares(wd, cells, [], ())


def test_annotations_reach_the_copy_except_the_federations_own_bookkeeping() -> None:
    wd = project_wd()
    wd["metadata"]["annotations"] = {
        "compute.datumapis.com/suspended": "true",
        "team.example.com/owner": "blue",
        "kubectl.kubernetes.io/last-applied-configuration": "{...}",
        Annotation.FEDERATION_NAMESPACE: "ns-ns-uid-web",
        UPSTREAM_UID_ANNOTATION: "forged",
        Annotation.ORDINAL_START: "9",
    }
    got = downstream_copy("web", wd, Share("dfw-1", 1, 3), "ns-x", include_replicas=True, target=DFW)
    assert got["metadata"]["annotations"] == {
        "compute.datumapis.com/suspended": "true",
        "team.example.com/owner": "blue",
        Annotation.ORDINAL_START: "3",
        UPSTREAM_UID_ANNOTATION: "wd-uid-1",
    }


def test_the_per_event_readers_read_plain_string_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The readers and writers every copy and namespace event, reconcile and map pass
    through use the label and annotation keys as plain strings made once, never an enum
    member looked up per call (a Python-level class attribute access, ~1 µs each, several
    per cluster per reconcile): with the enums gone from the modules they still answer
    as before."""
    from types import SimpleNamespace

    from federation.fleet import aggregate, downstream, fleetview
    from federation.fleet.downstream import copy_upstream, upstream_identity

    wd = project_wd()
    made = downstream_copy("web", wd, Share("dfw-2", 1, 2), "ns-1", include_replicas=True, target=DFW)
    namespace = downstream_namespace("web", "cluster-web", project_ns())
    made["metadata"]["namespace"] = namespace["metadata"]["name"]
    cells = [SimpleNamespace(name=n, labels={str(Label.CLUSTER_ROLE): role, str(Label.TOPOLOGY_CITY_CODE): "DFW"},
                             state=None) for n, role in (("p", "project"), ("dfw-1", "cell"))]  # fmt: skip
    mgr = SimpleNamespace(clusters=dict((c.name, c) for c in cells))
    for module in (downstream, fleetview, aggregate):
        for name in ("Label", "Annotation", "ClusterRole", "Finalizer"):
            monkeypatch.delattr(module, name, raising=False)
    assert downstream_copy("web", wd, Share("dfw-2", 1, 2), "ns-1", include_replicas=True, target=DFW) == {
        **made, "metadata": {**made["metadata"], "namespace": "ns-1"}}  # fmt: skip
    assert upstream_identity(made, namespace) == UpstreamRef("web", "default", "api", "wd-uid-1")
    assert copy_upstream(made, upstream_identity(None, namespace)) is not None  # type: ignore[arg-type]
    assert downstream.copy_ordinals(made) == range(2, 3)
    assert downstream_namespace("web", "cluster-web", project_ns()) == namespace
    assert [c.name for c in fleetview.cell_clusters(mgr)] == ["dfw-1"]  # type: ignore[arg-type]
    assert [c.name for c in fleetview.project_clusters(mgr)] == ["p"]  # type: ignore[arg-type]
    assert [c.city_code for c in fleetview.registered_cells(mgr)] == ["DFW"]  # type: ignore[arg-type]
