"""Referenced data, the pure part (federation/fleet/references.py): every reference form a
template can take, the copies' expected-referenced-data annotation, and the companion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from federation.fleet.downstream import downstream_copy
from federation.fleet.locations import CityTarget
from federation.fleet.placement import Share
from federation.fleet.references import (
    MAX_COMPANION_BYTES,
    Reference,
    SourceTooLarge,
    companion_for,
    expected_referenced_data,
    parse_expected,
    references,
    referencing_namespace,
)


def wd_with(container: dict[str, Any] | None = None, **template_spec: Any) -> dict[str, Any]:
    sandbox: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx", **(container or {})}]}
    if "imagePullSecrets" in template_spec:
        sandbox["imagePullSecrets"] = template_spec.pop("imagePullSecrets")
    spec = {"runtime": {"resources": {"instanceType": "d1"}, "sandbox": sandbox}, **template_spec}
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
        "spec": {"cityCode": "DFW", "replicas": 1, "template": {"spec": spec}},
    }


CM, SECRET = "ConfigMap", "Secret"

REFERENCE_FORMS: list[tuple[str, dict[str, Any], list[Reference]]] = [
    ("none", wd_with(), []),
    (
        "env configMapKeyRef",
        wd_with({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a"}}}]}),
        [Reference(CM, "cfg")],
    ),
    (
        "env secretKeyRef",
        wd_with({"env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]}),
        [Reference(SECRET, "db")],
    ),
    (
        "envFrom configMapRef and secretRef",
        wd_with({"envFrom": [{"configMapRef": {"name": "cfg"}}, {"prefix": "DB_", "secretRef": {"name": "db"}}]}),
        [Reference(CM, "cfg"), Reference(SECRET, "db")],
    ),
    (
        "volumes configMap and secret",
        wd_with(
            volumes=[{"name": "c", "configMap": {"name": "files"}}, {"name": "s", "secret": {"secretName": "tls"}}]
        ),
        [Reference(CM, "files"), Reference(SECRET, "tls")],
    ),
    ("imagePullSecrets", wd_with(imagePullSecrets=[{"name": "regcred"}]), [Reference(SECRET, "regcred")]),
    (
        "optional everywhere",
        wd_with(
            {"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a", "optional": True}}}]},
            volumes=[{"name": "c", "configMap": {"name": "cfg", "optional": True}}],
        ),
        [Reference(CM, "cfg", optional=True)],
    ),
    (
        "optional in one mention only: required",
        wd_with(
            {"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a", "optional": True}}}]},
            volumes=[{"name": "c", "configMap": {"name": "cfg"}}],
        ),
        [Reference(CM, "cfg")],
    ),
    (
        "a ConfigMap and a Secret of the same name are two references",
        wd_with({"envFrom": [{"configMapRef": {"name": "app"}}, {"secretRef": {"name": "app"}}]}),
        [Reference(CM, "app"), Reference(SECRET, "app")],
    ),
    (
        "literal values, fieldRef, disks and nameless entries are not references",
        wd_with(
            {
                "env": [
                    {"name": "A", "value": "x"},
                    {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
                    {"name": "C", "valueFrom": {"secretKeyRef": {"key": "k"}}},
                ]
            },
            volumes=[{"name": "d", "disk": {"template": {"spec": {}}}}, {"name": "s", "secret": {}}],
            imagePullSecrets=[{}],
        ),
        [],
    ),
    (
        "deduplicated over containers",
        {
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {
                "template": {
                    "spec": {
                        "runtime": {
                            "sandbox": {
                                "containers": [
                                    {"name": "a", "image": "x", "envFrom": [{"secretRef": {"name": "db"}}]},
                                    {
                                        "name": "b",
                                        "image": "x",
                                        "env": [
                                            {"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}}
                                        ],
                                    },
                                ]
                            }
                        }
                    }
                }
            },
        },
        [Reference(SECRET, "db")],
    ),
]


@pytest.mark.parametrize(("form", "wd", "expected"), REFERENCE_FORMS, ids=[f for f, _, _ in REFERENCE_FORMS])
def test_every_reference_form(form: str, wd: dict[str, Any], expected: list[Reference]) -> None:
    assert references(wd) == expected


@pytest.mark.parametrize(("form", "wd", "expected"), REFERENCE_FORMS, ids=[f for f, _, _ in REFERENCE_FORMS])
def test_the_referencing_index_holds_only_wds_that_reference_something(
    form: str, wd: dict[str, Any], expected: list[Reference]
) -> None:
    """The companion controller's `referencing-namespace` index: a WD is under its
    namespace when it references any source, in no bucket when it references none."""
    assert referencing_namespace(wd) == (["default"] if expected else [])


def test_an_optional_image_pull_secret_is_still_required() -> None:
    wd = wd_with(imagePullSecrets=[{"name": "regcred", "optional": True}])
    assert references(wd) == [Reference(SECRET, "regcred")]


def test_expected_annotation_lists_required_references_sorted() -> None:
    wd = wd_with(
        {"envFrom": [{"secretRef": {"name": "db"}}, {"configMapRef": {"name": "opt", "optional": True}}]},
        volumes=[{"name": "c", "configMap": {"name": "cfg"}}],
    )
    value = expected_referenced_data(wd)
    assert value is not None
    assert json.loads(value) == ["ConfigMap/cfg", "Secret/db"]
    assert parse_expected(value) == [("ConfigMap", "cfg"), ("Secret", "db")]
    assert expected_referenced_data(wd_with()) is None


@pytest.mark.parametrize("bad", ["", "{}", '"x"', '["Pod/x"]', '["ConfigMap/"]', "[1]"])
def test_a_malformed_annotation_is_a_value_error_naming_it(bad: str) -> None:
    with pytest.raises(ValueError, match="expected-referenced-data"):
        parse_expected(bad)


def _copy(wd: dict[str, Any]) -> dict[str, Any]:
    return downstream_copy("p", wd, Share("c1", 1, 0), "ns-x", include_replicas=True, target=CityTarget("DFW", None))


def test_the_copy_carries_the_annotation_and_a_forged_one_is_not_copied() -> None:
    wd = wd_with({"envFrom": [{"secretRef": {"name": "db"}}]})
    wd["metadata"]["annotations"] = {"compute.datumapis.com/expected-referenced-data": '["Secret/other-project"]'}
    annotations = _copy(wd)["metadata"]["annotations"]
    assert annotations["compute.datumapis.com/expected-referenced-data"] == '["Secret/db"]'
    plain = wd_with()
    plain["metadata"]["annotations"] = {"compute.datumapis.com/expected-referenced-data": '["Secret/x"]'}
    assert "compute.datumapis.com/expected-referenced-data" not in _copy(plain)["metadata"]["annotations"]


def test_companion_copies_data_and_type_only() -> None:
    source = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "db",
            "namespace": "default",
            "uid": "s1",
            "resourceVersion": "7",
            "labels": {"meta.datumapis.com/upstream-namespace": "forged"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"c2VjcmV0"}}'},
            "ownerReferences": [{"kind": "X", "name": "x", "uid": "1", "apiVersion": "v1"}],
        },
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "e30="},
    }
    companion = companion_for(source, "ns-u", "default", ["default/web", "default/api", "default/web"])
    assert companion == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "db",
            "namespace": "ns-u",
            "labels": {
                "compute.datumapis.com/referenced-data": "true",
                "meta.datumapis.com/upstream-namespace": "default",
            },
            "annotations": {"compute.datumapis.com/referenced-by": '["default/api","default/web"]'},
        },
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "e30="},
    }


def test_config_map_companion_keeps_binary_data() -> None:
    source = {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}
    companion = companion_for(source, "ns-u", "default", ["default/web"])
    assert (companion["data"], companion["binaryData"]) == ({"a": "1"}, {"b": "AA=="})
    assert "type" not in companion


def test_an_oversized_source_is_refused_by_name() -> None:
    source = {"kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"a": "x" * MAX_COMPANION_BYTES}}
    with pytest.raises(SourceTooLarge, match='ConfigMap "big"'):
        companion_for(source, "ns-u", "default", [])


names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)


@given(
    st.lists(st.tuples(st.sampled_from(["cm-env", "secret-env", "cm-vol", "secret-vol", "pull"]), names), max_size=8)
)
def test_the_annotation_round_trips_and_is_order_independent(mentions: list[tuple[str, str]]) -> None:
    env, env_from, volumes, pulls = [], [], [], []
    for i, (form, name) in enumerate(mentions):
        if form == "cm-env":
            env.append({"name": f"E{i}", "valueFrom": {"configMapKeyRef": {"name": name, "key": "k"}}})
        elif form == "secret-env":
            env_from.append({"secretRef": {"name": name}})
        elif form == "cm-vol":
            volumes.append({"name": f"v{i}", "configMap": {"name": name}})
        elif form == "secret-vol":
            volumes.append({"name": f"v{i}", "secret": {"secretName": name}})
        else:
            pulls.append({"name": name})
    wd = wd_with({"env": env, "envFrom": env_from}, volumes=volumes, imagePullSecrets=pulls)
    reversed_wd = wd_with(
        {"env": env[::-1], "envFrom": env_from[::-1]}, volumes=volumes[::-1], imagePullSecrets=pulls[::-1]
    )
    value = expected_referenced_data(wd)
    assert value == expected_referenced_data(reversed_wd)
    pairs = set(parse_expected(value)) if value else set()
    assert pairs == {(r.kind, r.name) for r in references(wd)}


@pytest.mark.parametrize(("form", "wd", "expected"), REFERENCE_FORMS, ids=[f for f, _, _ in REFERENCE_FORMS])
def test_the_referencing_index_stops_at_the_first_reference(
    form: str, wd: dict[str, Any], expected: list[Reference], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is read on every stored version of every WD: it asks whether any
    reference is there, without merging and sorting them all (`template_references`)."""
    from federation.fleet import references as module

    def refused(_spec: Any) -> list[Reference]:
        raise AssertionError("the index merged and sorted every reference")

    monkeypatch.setattr(module, "template_references", refused)
    assert referencing_namespace(wd) == (["default"] if expected else [])
