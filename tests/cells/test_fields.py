"""Typed reads of wire dicts: absent values read as empty, wrong types name the field."""

from __future__ import annotations

from typing import Any

import pytest

from cells.fields import generation, get_int, get_list, get_mapping, get_str, get_str_map, is_deleting

OBJ: dict[str, Any] = {
    "metadata": {"name": "web", "generation": 2, "labels": {"a": "b"}, "deletionTimestamp": ""},
    "spec": {"items": [1], "count": 0, "nested": {"flag": "x"}, "empty": None},
}


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        (lambda: get_mapping(OBJ, "spec.nested"), {"flag": "x"}),
        (lambda: get_mapping(OBJ, "spec.absent.deeper"), {}),
        (lambda: get_mapping(OBJ, "spec.empty"), {}),
        (lambda: get_list(OBJ, "spec.items"), [1]),
        (lambda: get_list(OBJ, "spec.absent"), []),
        (lambda: get_str(OBJ, "metadata.name"), "web"),
        (lambda: get_str(OBJ, "metadata.absent", required=False), ""),
        (lambda: get_int(OBJ, "spec.count"), 0),
        (lambda: get_int(OBJ, "spec.absent"), None),
        (lambda: get_str_map(OBJ, "metadata.labels"), {"a": "b"}),
        (lambda: generation(OBJ), 2),
        (lambda: is_deleting(OBJ), False),
        (lambda: is_deleting({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z"}}), True),
    ],
)
def test_reads(read: Any, expected: Any) -> None:
    assert read() == expected


@pytest.mark.parametrize(
    ("read", "message"),
    [
        (lambda: get_mapping(OBJ, "spec.items"), r"^spec\.items: expected an object, got list$"),
        (lambda: get_mapping(OBJ, "spec.items.x"), r"^spec\.items: expected an object, got list$"),
        (lambda: get_mapping(OBJ, "spec.absent", required=True), r"^spec\.absent: required$"),
        (
            lambda: get_mapping(OBJ["spec"], "nested.flag", base="spec"),
            r"^spec\.nested\.flag: expected an object, got str$",
        ),
        (lambda: get_list(OBJ, "spec.nested"), r"^spec\.nested: expected a list, got dict$"),
        (lambda: get_str(OBJ, "spec.count"), r"^spec\.count: expected a string, got int$"),
        (lambda: get_str(OBJ, "metadata.absent"), r"^metadata\.absent: required$"),
        (lambda: get_int(OBJ, "metadata.name"), r"^metadata\.name: expected an integer, got 'web'$"),
        (lambda: get_int({"n": -1}, "n"), r"^n: must be >= 0, got -1$"),
        (lambda: get_int({"n": True}, "n"), r"^n: expected an integer, got True$"),
        (lambda: get_str_map({"m": {"a": 1}}, "m"), r"^m: expected string keys and values"),
        (lambda: generation({}), r"^metadata\.generation: required$"),
    ],
)
def test_errors_name_the_field(read: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read()
