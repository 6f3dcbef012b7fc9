"""Structural openAPIV3Schema handling: pruning, defaulting, validation messages, and the
checks that reject non-structural CRD schemas."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.schema import apply_defaults, prune, structural_errors, validate

from .conftest import WIDGET_SCHEMA


def _errors(obj: Any, schema: dict[str, Any] = WIDGET_SCHEMA) -> list[tuple[str, str, str]]:
    return [(e.field, e.reason, e.message()) for e in validate(obj, schema)]


def test_prune_drops_unknown_fields_but_keeps_metadata_and_preserved_subtrees() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "known": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
            }
        },
    }
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n", "bogusMeta": 1},
        "spec": {
            "known": "k",
            "unknown": 1,
            "free": {"anything": {"goes": True}},
            "map": {"any-key": "v"},
            "items": [{"a": "1", "b": "2"}],
        },
        "extra": True,
    }
    dropped = prune(obj, schema)
    assert sorted(dropped) == ["extra", "metadata.bogusMeta", "spec.items[0].b", "spec.unknown"]
    assert obj == {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n"},
        "spec": {"known": "k", "free": {"anything": {"goes": True}}, "map": {"any-key": "v"}, "items": [{"a": "1"}]},
    }


def test_defaults() -> None:
    obj: dict[str, Any] = {"spec": {"size": "small"}}
    apply_defaults(obj, WIDGET_SCHEMA)
    assert obj["spec"] == {"size": "small", "replicas": 1, "color": "blue"}
    # explicit values win; a null in a non-nullable field is dropped and then defaulted
    obj = {"spec": {"size": "small", "replicas": 3, "color": None}}
    apply_defaults(obj, WIDGET_SCHEMA)
    assert obj["spec"] == {"size": "small", "replicas": 3, "color": "blue"}
    nested = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "items": {"type": "object", "properties": {"p": {"type": "integer", "default": 7}}},
            },
            "obj": {"type": "object", "default": {}, "properties": {"q": {"type": "string", "default": "z"}}},
        },
    }
    target: dict[str, Any] = {"list": [{}, {"p": 1}]}
    apply_defaults(target, nested)
    assert target == {"list": [{"p": 7}, {"p": 1}], "obj": {"q": "z"}}


def test_validation_messages() -> None:
    assert _errors({"spec": {"size": "small", "replicas": 1}}) == []
    assert _errors({"spec": {}}) == [("spec.size", "FieldValueRequired", "Required value")]
    assert _errors({"spec": {"size": "huge"}}) == [
        (
            "spec.size",
            "FieldValueNotSupported",
            'Unsupported value: "huge": supported values: "small", "medium", "large"',
        )
    ]
    assert _errors({"spec": {"size": "small", "replicas": 11}}) == [
        (
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        )
    ]
    assert _errors({"spec": {"size": "small", "replicas": -1}}) == [
        (
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        )
    ]
    assert _errors({"spec": {"size": "small", "replicas": 1.5}}) == [
        (
            "spec.replicas",
            "FieldValueInvalid",
            'Invalid value: 1.5: spec.replicas in body must be of type integer: "number"',
        )
    ]
    assert _errors({"spec": {"size": "small", "code": "abc123"}}) == [
        ("spec.code", "FieldValueTooLong", "Too long: may not be more than 5 bytes"),
        ("spec.code", "FieldValueInvalid", "Invalid value: \"abc123\": spec.code in body should match '^[a-z]+$'"),
    ]
    assert _errors({"spec": {"size": "small", "tags": ["a", 1]}}) == [
        (
            "spec.tags[1]",
            "FieldValueInvalid",
            'Invalid value: 1: spec.tags[1] in body must be of type string: "integer"',
        )
    ]
    assert _errors({"spec": "text"}) == [
        ("spec", "FieldValueInvalid", 'Invalid value: "text": spec in body must be of type object: "string"')
    ]
    assert _errors({"spec": {"size": True}}) == [
        ("spec.size", "FieldValueInvalid", 'Invalid value: true: spec.size in body must be of type string: "boolean"'),
    ]


@pytest.mark.parametrize(
    ("schema", "value", "fragment"),
    [
        ({"type": "string", "minLength": 3}, "ab", "should be at least 3 chars long"),
        ({"type": "integer", "minimum": 1, "exclusiveMinimum": True}, 1, "should be greater than 1"),
        ({"type": "number", "maximum": 2, "exclusiveMaximum": True}, 2, "should be less than 2"),
        ({"type": "integer", "multipleOf": 5}, 7, "should be a multiple of 5"),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 1}, ["a", "b"], "must have at most 1 items"),
        ({"type": "array", "items": {"type": "string"}, "minItems": 2}, ["a"], "should have at least 2 items"),
        (
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            ["a", "a"],
            "Duplicate value",
        ),
        ({"type": "string", "format": "date-time"}, "yesterday", "must be of type date-time"),
        ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, "must have at most 1 items"),
        ({"x-kubernetes-int-or-string": True}, 1.5, "must be of type integer,string"),
        ({"type": "string", "nullable": False}, None, 'must be of type string: "null"'),
    ],
)
def test_more_constraints(schema: dict[str, Any], value: Any, fragment: str) -> None:
    errs = validate(value, schema)
    assert errs and fragment in errs[0].message(), [e.message() for e in errs]


def test_nullable_and_int_or_string_accept_what_they_declare() -> None:
    assert validate(None, {"type": "string", "nullable": True}) == []
    assert validate(5, {"x-kubernetes-int-or-string": True}) == []
    assert validate("5%", {"x-kubernetes-int-or-string": True}) == []
    assert validate(3, {"type": "number"}) == []


def test_structural_schema_checks() -> None:
    assert structural_errors(copy.deepcopy(WIDGET_SCHEMA), "schema") == []
    errs = structural_errors({"type": "object", "properties": {"a": {}, "b": {"type": "array"}}}, "s")
    assert {(e.field, e.kind) for e in errs} == {
        ("s.properties[a].type", "Required value"),
        ("s.properties[b].items", "Required value"),
    }
    errs = structural_errors({"type": "string"}, "s")
    assert [e.field for e in errs] == ["s.type"]
    errs = structural_errors({"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}, "s")
    assert [e.field for e in errs] == ["s.properties[p].pattern"]
    errs = structural_errors(
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "default": 1}}}, "s"
    )
    assert [e.field for e in errs] == ["s.properties[n].default"]
    errs = structural_errors({"type": "object", "properties": {"t": {"type": "strange"}}}, "s")
    assert [(e.field, e.kind) for e in errs] == [("s.properties[t].type", "Unsupported value")]


def test_pattern_uses_re2_semantics_and_linear_time() -> None:
    # Python's backtracking `re` needs ~2^40 steps here; RE2 (what Kubernetes uses) is linear
    hostile = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}}}
    (err,) = validate({"x": "a" * 40 + "b"}, hostile)
    assert err.field == "x" and "should match '^(a+)+$'" in err.detail
    # RE2's `$` matches only at the very end of the text, not before a trailing newline
    anchored = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^a$"}}}
    assert validate({"x": "a"}, anchored) == []
    assert len(validate({"x": "a\n"}, anchored)) == 1


def test_schema_patterns_must_be_valid_re2() -> None:
    errs = structural_errors({"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=look)"}}}, "s")
    assert [e.field for e in errs] == ["s.properties[x].pattern"]
