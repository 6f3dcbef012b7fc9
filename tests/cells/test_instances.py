"""instance_for / ordinal_range / observe: the Instances a cell WorkloadDeployment wants."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from cells.instances import check_served_city, instance_for, observe, ordinal_of, ordinal_range, wd_city
from cells.stateful import Observed
from tests.cells.builders import cond, instance
from tests.federation.api.objects import TEMPLATE_SPEC, workload_deployment

NS_LABELS = {
    "meta.datumapis.com/upstream-cluster-name": "cluster-acme_web",
    "meta.datumapis.com/upstream-namespace": "default",
    "kubernetes.io/metadata.name": "ns-0f9c",
}
WD_UID = "5b1c3a2e-0000-4000-8000-000000000001"


def _wd(**spec: Any) -> dict[str, Any]:
    wd = workload_deployment()
    wd["spec"].update(spec)
    return wd


def test_owner_reference_names_the_kind_and_live_uid() -> None:
    inst = instance_for(_wd(), NS_LABELS, 2, "abc")
    # The classic cascade bug: a controller name where the Kind belongs leaves ghost Instances.
    assert inst["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "compute.datumapis.com/v1alpha",
            "kind": "WorkloadDeployment",
            "name": "web-edge-dfw",
            "uid": WD_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_identity_name_namespace_and_all_labels() -> None:
    inst = instance_for(_wd(), NS_LABELS, 2, "abc")
    assert inst["apiVersion"] == "compute.datumapis.com/v1alpha"
    assert inst["kind"] == "Instance"
    assert inst["metadata"]["name"] == "web-edge-dfw-2"
    assert inst["metadata"]["namespace"] == "default"
    assert inst["metadata"]["labels"] == {
        "app": "web",  # from the template
        "compute.datumapis.com/workload-uid": "5b1c3a2e-0000-4000-8000-000000000000",
        "compute.datumapis.com/workload-deployment-uid": WD_UID,
        "compute.datumapis.com/workload-deployment-name": "web-edge-dfw",
        "compute.datumapis.com/instance-index": "2",
        "compute.datumapis.com/city-code": "DFW",
        "compute.datumapis.com/workload-name": "web",
        "compute.datumapis.com/placement-name": "edge",
        "meta.datumapis.com/upstream-cluster-name": "cluster-acme_web",
        "meta.datumapis.com/upstream-namespace": "default",
    }


@pytest.mark.parametrize(
    ("ns_labels", "expected"),
    [
        ({}, {}),
        ({"kubernetes.io/metadata.name": "plain"}, {}),
        (
            {"meta.datumapis.com/upstream-namespace": "default"},
            {"meta.datumapis.com/upstream-namespace": "default"},
        ),
        (
            NS_LABELS,
            {
                "meta.datumapis.com/upstream-cluster-name": "cluster-acme_web",
                "meta.datumapis.com/upstream-namespace": "default",
            },
        ),
    ],
    ids=["cell-used-directly", "unrelated-labels", "only-namespace", "federated"],
)
def test_upstream_labels_come_from_the_namespace(ns_labels: dict[str, str], expected: dict[str, str]) -> None:
    labels = instance_for(_wd(), ns_labels, 0, "abc")["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("meta.datumapis.com/")} == expected
    assert "kubernetes.io/metadata.name" not in labels


SHARD = "sharding.compute.datumapis.com/shard"


@pytest.mark.parametrize(
    ("copy_labels", "expected"),
    [
        ({}, None),  # unsharded: no shard label on the Instances
        ({"app": "web"}, None),
        ({SHARD: "shard-a"}, "shard-a"),
        ({SHARD: ""}, None),  # an empty value names no shard
        ({SHARD: "shard-b", "sharding.compute.datumapis.com/drain": "true"}, "shard-b"),
    ],
    ids=["unsharded", "unrelated-labels", "sharded", "empty", "draining"],
)
def test_the_copys_shard_label_goes_on_its_instances(copy_labels: dict[str, str], expected: str | None) -> None:
    wd = _wd()
    wd["metadata"]["labels"] = copy_labels
    labels = instance_for(wd, NS_LABELS, 0, "abc")["metadata"]["labels"]
    assert labels.get(SHARD) == expected
    assert "sharding.compute.datumapis.com/drain" not in labels


def test_a_bad_shard_label_on_the_copy_is_named() -> None:
    wd = _wd()
    wd["metadata"]["labels"] = {SHARD: "not a label value"}
    with pytest.raises(ValueError, match=r"metadata\.labels\[sharding\.compute\.datumapis\.com/shard\]"):
        instance_for(wd, NS_LABELS, 0, "abc")


def test_our_labels_win_over_the_templates() -> None:
    wd = _wd()
    wd["spec"]["template"]["metadata"]["labels"].update(
        {"compute.datumapis.com/instance-index": "99", "compute.datumapis.com/workload-deployment-uid": "forged"}
    )
    labels = instance_for(wd, {}, 4, "abc")["metadata"]["labels"]
    assert labels["compute.datumapis.com/instance-index"] == "4"
    assert labels["compute.datumapis.com/workload-deployment-uid"] == WD_UID
    assert labels["app"] == "web"


def test_template_annotations_and_finalizers_are_copied() -> None:
    wd = _wd()
    wd["spec"]["template"]["metadata"]["finalizers"] = ["example.com/keep"]
    meta = instance_for(wd, {}, 0, "abc")["metadata"]
    assert meta["annotations"] == {"compute.datumapis.com/restartedAt": "2025-01-02T03:00:00Z"}
    assert meta["finalizers"] == ["example.com/keep"]


def test_spec_is_the_template_spec_plus_our_controller_block() -> None:
    wd = _wd()
    wd["spec"]["template"]["spec"]["controller"] = {"templateHash": "user-set", "schedulingGates": [{"name": "X"}]}
    inst = instance_for(wd, {}, 0, "abc", quota_gate=True)
    expected = copy.deepcopy(TEMPLATE_SPEC)
    expected["controller"] = {"templateHash": "abc", "schedulingGates": [{"name": "Quota"}]}
    assert inst["spec"] == expected


def test_result_shares_nothing_with_the_cached_wd() -> None:
    wd = _wd()
    before = copy.deepcopy(wd)
    inst = instance_for(wd, NS_LABELS, 0, "abc")
    inst["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = "changed"
    inst["metadata"]["labels"]["app"] = "changed"
    inst["metadata"]["annotations"]["x"] = "y"
    assert wd == before


@pytest.mark.parametrize(
    ("quota_gate", "network_controller", "interfaces", "gates"),
    [
        (False, False, True, []),
        (True, False, True, ["Quota"]),
        (False, True, True, ["Network"]),
        (True, True, True, ["Network", "Quota"]),
        (True, True, False, ["Quota"]),  # no interfaces: nothing for a network controller to do
        (False, True, False, []),
    ],
)
def test_scheduling_gates(quota_gate: bool, network_controller: bool, interfaces: bool, gates: list[str]) -> None:
    wd = _wd()
    if not interfaces:
        wd["spec"]["template"]["spec"]["networkInterfaces"] = []
    inst = instance_for(wd, {}, 0, "abc", quota_gate=quota_gate, network_controller=network_controller)
    assert inst["spec"]["controller"]["schedulingGates"] == [{"name": g} for g in gates]


def test_template_without_metadata_gives_no_annotations() -> None:
    wd = _wd()
    del wd["spec"]["template"]["metadata"]
    meta = instance_for(wd, {}, 0, "abc")["metadata"]
    assert "annotations" not in meta
    assert "finalizers" not in meta
    assert "app" not in meta["labels"]


def _without(path: str) -> dict[str, Any]:
    wd = _wd()
    *parents, last = path.split(".")
    node = wd
    for key in parents:
        node = node[key]
    del node[last]
    return wd


@pytest.mark.parametrize(
    "field",
    [
        "metadata.name",
        "metadata.uid",
        "metadata.namespace",
        "spec.workloadRef.uid",
        "spec.workloadRef.name",
        "spec.cityCode",
        "spec.placementName",
        "spec.template.spec",
    ],
)
def test_missing_required_fields_are_named(field: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"{field}: required")):
        instance_for(_without(field), {}, 0, "abc")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda wd: wd["spec"].update(placementName="x" * 64), r"spec\.placementName"),
        (lambda wd: wd["spec"].update(cityCode="DFW!"), r"spec\.cityCode"),
        (lambda wd: wd["spec"]["template"]["metadata"]["labels"].update(app="-bad"), r"labels\[app\]"),
        (lambda wd: wd["spec"]["template"]["metadata"].update(labels=["x"]), r"spec\.template\.metadata\.labels"),
        (lambda wd: wd["spec"]["template"].update(spec="x"), r"spec\.template\.spec"),
        (lambda wd: wd["spec"]["template"]["metadata"].update(finalizers=[1]), r"finalizers"),
    ],
    ids=["long-placement", "bad-city", "bad-template-label", "labels-not-a-map", "spec-not-object", "finalizer"],
)
def test_invalid_values_are_refused_naming_the_field(edit: Any, field: str) -> None:
    wd = _wd()
    edit(wd)
    with pytest.raises(ValueError, match=field):
        instance_for(wd, {}, 0, "abc")


def test_bad_upstream_label_on_the_namespace_is_named() -> None:
    with pytest.raises(ValueError, match=r"namespace label meta\.datumapis\.com/upstream-namespace"):
        instance_for(_wd(), {"meta.datumapis.com/upstream-namespace": "bad value"}, 0, "abc")


def test_empty_template_hash_is_refused() -> None:
    with pytest.raises(ValueError, match="template hash"):
        instance_for(_wd(), {}, 0, "")


# ------------------------------------------------------------------ ordinal_range


@pytest.mark.parametrize(
    ("annotations", "replicas", "min_replicas", "expected"),
    [
        ({}, 3, 1, range(0, 3)),
        ({"compute.datumapis.com/ordinal-start": "7"}, 3, 1, range(7, 10)),
        ({"compute.datumapis.com/ordinal-start": "0"}, 0, 1, range(0, 0)),
        ({"compute.datumapis.com/ordinal-start": "5"}, None, 2, range(5, 7)),  # replicas unset → minReplicas
        ({}, None, 0, range(0, 0)),
        ({"other": "x"}, 1, 1, range(0, 1)),
    ],
)
def test_ordinal_range(annotations: dict[str, str], replicas: int | None, min_replicas: int, expected: range) -> None:
    wd = _wd(replicas=replicas)
    wd["metadata"]["annotations"] = annotations
    wd["spec"]["scaleSettings"]["minReplicas"] = min_replicas
    assert ordinal_range(wd) == expected


@pytest.mark.parametrize("value", ["-1", "abc", "1.5", " 1", "", "+1", "1e3", "99999999999"])
def test_malformed_ordinal_start_names_the_annotation(value: str) -> None:
    wd = _wd()
    wd["metadata"]["annotations"]["compute.datumapis.com/ordinal-start"] = value
    with pytest.raises(ValueError, match=r"compute\.datumapis\.com/ordinal-start"):
        ordinal_range(wd)


@pytest.mark.parametrize(
    ("replicas", "min_replicas", "field"),
    [
        (-1, 1, r"spec\.replicas"),
        ("3", 1, r"spec\.replicas"),
        (True, 1, r"spec\.replicas"),
        (None, None, "minReplicas"),
    ],
)
def test_bad_replica_counts_are_named(replicas: Any, min_replicas: Any, field: str) -> None:
    wd = _wd(replicas=replicas)
    wd["spec"]["scaleSettings"]["minReplicas"] = min_replicas
    with pytest.raises(ValueError, match=field):
        ordinal_range(wd)


# ------------------------------------------------------------------ observe


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web-0", 0),
        ("web-12", 12),
        ("web-edge-3", None),  # another deployment's Instance (web-edge)
        ("web-07", None),
        ("web-", None),
        ("web-x", None),
        ("other-1", None),
        ("web-1-2", None),
    ],
)
def test_ordinal_of(name: str, expected: int | None) -> None:
    assert ordinal_of(name, "web") == expected


def test_observe_reads_hash_readiness_and_deletion() -> None:
    ready = instance("web-3", template_hash="h1", ready=True)
    assert observe(ready, "web") == Observed("web-3", 3, "h1", ready=True, deleting=False)
    gone = instance("web-1", template_hash="h0", ready=False, deleting=True)
    assert observe(gone, "web") == Observed("web-1", 1, "h0", ready=False, deleting=True)


def test_observe_does_not_trust_a_ready_from_an_older_generation() -> None:
    stale = instance("web-0", generation=2, conditions=(cond("Ready", "True", "Available", gen=1),))
    assert observe(stale, "web").ready is False


def test_observe_without_a_hash_reads_as_drifted() -> None:
    inst = instance("web-0")
    del inst["spec"]["controller"]
    assert observe(inst, "web").template_hash == ""


def test_observe_refuses_a_name_outside_the_scheme() -> None:
    with pytest.raises(ValueError, match=r"metadata\.name: 'stray' is not an Instance name of 'web'"):
        observe(instance("stray"), "web")


def _by_location(label: str | None) -> dict[str, Any]:
    wd = _wd()
    del wd["spec"]["cityCode"]
    wd["spec"]["locationRef"] = {"name": "dfw"}
    if label is not None:
        wd["metadata"].setdefault("labels", {})["topology.datum.net/city-code"] = label
    return wd


@pytest.mark.parametrize(
    ("wd", "served", "city"),
    [
        (_wd(), "DFW", "DFW"),  # spec.cityCode as written
        (_by_location("dfw"), "DFW", "dfw"),  # a locationRef copy: the federator's city label
        (_by_location("DFW"), "", "DFW"),  # a cell without --city-code serves every city
    ],
    ids=["city-code", "location-lower-case", "no-served-city"],
)
def test_a_location_copy_takes_its_city_from_the_label(wd: dict[str, Any], served: str, city: str) -> None:
    check_served_city(wd, served)
    assert wd_city(wd) == city
    got = instance_for(wd, {}, 0, "abc")
    assert got["metadata"]["labels"]["compute.datumapis.com/city-code"] == city


def test_a_location_copy_of_another_city_or_without_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"the city-code label: 'LHR', but this cell serves 'DFW'"):
        check_served_city(_by_location("LHR"), "DFW")
    with pytest.raises(ValueError, match=r"spec\.cityCode: required, or \(placed by spec\.locationRef\)"):
        check_served_city(_by_location(None), "DFW")
