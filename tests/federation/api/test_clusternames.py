"""The upstream-cluster-name label: `cluster-<org>_<project>` <-> bare project name."""

from __future__ import annotations

import pytest

from federation.api import (
    ProjectPath,
    decode_upstream_cluster_name,
    encode_upstream_cluster_name,
    parse_upstream_cluster_name,
)


@pytest.mark.parametrize(
    ("path", "label", "project"),
    [
        ("acme/web", "cluster-acme_web", "web"),
        ("datum-cloud", "cluster-datum-cloud", "datum-cloud"),
        ("org-1/my-project-2", "cluster-org-1_my-project-2", "my-project-2"),
    ],
)
def test_encode_and_decode(path: str, label: str, project: str) -> None:
    assert encode_upstream_cluster_name(path) == label
    assert decode_upstream_cluster_name(label) == project
    assert str(parse_upstream_cluster_name(label)) == path


def test_parse_keeps_the_org() -> None:
    assert parse_upstream_cluster_name("cluster-acme_web") == ProjectPath("acme", "web")
    assert parse_upstream_cluster_name("cluster-datum-cloud") == ProjectPath(None, "datum-cloud")


@pytest.mark.parametrize(
    "value",
    [
        "acme_web",  # no prefix
        "cluster-",  # nothing after the prefix
        "cluster-acme_",  # empty project
        "cluster-_web",  # empty org
        "cluster-a_b_c",  # three segments
        "cluster-Acme_web",  # not a DNS label
        "cluster-acme_web-",  # ends with '-'
        "Cluster-acme_web",  # prefix is case-sensitive
        "",
    ],
)
def test_decode_rejects_bad_values_naming_them(value: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_upstream_cluster_name(value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize(
    "path",
    ["", "acme/", "/web", "a/b/c", "acme/web_app", "ACME/web", "acme/" + "x" * 64, "a" * 30 + "/" + "b" * 30],
)
def test_encode_rejects_bad_paths_naming_them(path: str) -> None:
    with pytest.raises(ValueError) as info:
        encode_upstream_cluster_name(path)
    assert repr(path) in str(info.value)


def test_encoded_value_is_a_valid_label_value() -> None:
    value = encode_upstream_cluster_name("a" * 26 + "/" + "b" * 26)
    assert len(value) <= 63
    assert decode_upstream_cluster_name(value) == "b" * 26
