"""Typed reads of wire dicts: absent values read as empty, wrong types name the field; and
this reader is the only one the product uses for nested fields."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from mcruntime import objects
from mcruntime.fields import (
    generation,
    get_int,
    get_list,
    get_mapping,
    get_objects,
    get_str,
    get_str_map,
    is_deleting,
)

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("mcruntime", "federation", "cells", "projector")

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
        (
            lambda: get_objects({"metadata": {"ownerReferences": [{"uid": "u"}]}}, "metadata.ownerReferences"),
            [{"uid": "u"}],
        ),
        (lambda: get_objects(OBJ, "metadata.ownerReferences"), []),
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
        (
            lambda: get_str({"spec": {"template": {"spec": 3}}}, "spec.template.spec.x", base="b"),
            r"^b\.spec\.template\.spec: expected an object, got int$",  # a key repeated in the path
        ),
        (lambda: get_list(OBJ, "spec.nested"), r"^spec\.nested: expected a list, got dict$"),
        (lambda: get_str(OBJ, "spec.count"), r"^spec\.count: expected a string, got int$"),
        (lambda: get_str(OBJ, "metadata.absent"), r"^metadata\.absent: required$"),
        (lambda: get_int(OBJ, "metadata.name"), r"^metadata\.name: expected an integer, got 'web'$"),
        (lambda: get_int({"n": -1}, "n"), r"^n: must be >= 0, got -1$"),
        (lambda: get_int({"n": True}, "n"), r"^n: expected an integer, got True$"),
        (lambda: get_str_map({"m": {"a": 1}}, "m"), r"^m: expected string keys and values"),
        (lambda: generation({}), r"^metadata\.generation: required$"),
        (lambda: get_objects({"refs": [{}, "x"]}, "refs"), r"^refs\[1\]: expected an object, got str$"),
    ],
)
def test_errors_name_the_field(read: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read()


TOPS = frozenset({"metadata", "spec", "status"})


def _other_dialects(tree: ast.AST, tops: frozenset[str] = frozenset({"metadata", "spec", "status"})) -> list[int]:
    """Lines that read a field below `metadata`, `spec` or `status` without the reader:
    `x["metadata"]["name"]` or `x.get("spec")...get(...)` / `(x.get("status") or {}).get(...)`."""

    def is_metadata(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value in tops
        if isinstance(node, ast.BoolOp):
            return any(is_metadata(v) for v in node.values)
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and bool(node.args)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in tops
        )

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_metadata(node.value)) or (
            isinstance(node, ast.Attribute) and node.attr == "get" and is_metadata(node.value)
        ):
            found.append(node.lineno)
    return found


def test_one_reader_for_nested_fields() -> None:
    """The other dialects are gone: no `meta(x)[...]`/`name_of(x)` helpers, no hand-written
    chains below `metadata` in the product."""
    assert not {"meta", "name_of", "namespace_of", "labels_of", "annotations_of"} & set(vars(objects))
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        # federation/api walks the CRD manifests and JSON schemas it generates itself
        # (`properties.status` is a schema key there), not objects a server returned
        for line in _other_dialects(
            ast.parse(path.read_text(), str(path)),
            frozenset({"metadata"}) if path.is_relative_to(ROOT / "federation" / "api") else TOPS,
        )
    ]
    assert offenders == []


def test_the_dialect_check_bites() -> None:
    source = 'a = x["metadata"]["name"]\nb = (x.get("metadata") or {}).get("uid")\nc = x.get("metadata").get("n")\n'
    assert _other_dialects(ast.parse(source)) == [1, 2, 3]
    source = 'a = (wd.get("spec") or {}).get("cityCode")\nb = x["status"]["conditions"]\nc = cond.get("status")\n'
    assert sorted(_other_dialects(ast.parse(source))) == [1, 2], "a condition's own status field is no chain"
