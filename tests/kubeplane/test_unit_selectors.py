"""Label and field selector parsing and matching (apimachinery's grammar and wording)."""

from __future__ import annotations

import pytest

from kubeplane.errors import APIError
from kubeplane.selectors import (
    field_value,
    label_selector_to_string,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db,cache)", True),
        ("app notin (web)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app = web , tier in ( front , back ) ", True),
        ("version>2", True),
        ("version<3", False),
        ("example.com/key", False),
        ("app=", False),
    ],
)
def test_label_selector_matching(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is matches


def test_label_selector_on_missing_labels_and_empty_values() -> None:
    assert parse_label_selector("a=").matches({"a": ""})
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)
    assert parse_label_selector("").empty() and not parse_label_selector("a").empty()
    assert parse_label_selector("a in (x)").equality_value("a") == "x"
    assert parse_label_selector("a in (x,y)").equality_value("a") is None


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("app in web", "unable to parse requirement: found 'web' expected: '('"),
        ("app in (web", "unable to parse requirement: found '', expected: ')'"),
        ("=web", "unable to parse requirement: found '=', expected: !, identifier, or 'end of string'"),
        ("app=web,", "unable to parse requirement: found '', expected: identifier after ','"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("version>x", "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: x"),
    ],
)
def test_label_selector_errors_are_bad_requests(selector: str, message: str) -> None:
    with pytest.raises(APIError) as info:
        parse_label_selector(selector)
    assert info.value.code == 400 and info.value.reason == "BadRequest"
    assert info.value.message == message


def test_label_selector_rejects_invalid_keys_and_values() -> None:
    for bad in ("-bad=x", "a=-bad-", "a/b/c=x", "x" * 64 + "=1", "a in (ok,-bad)"):
        with pytest.raises(APIError) as info:
            parse_label_selector(bad)
        assert info.value.code == 400, bad


def test_structured_selector_to_string() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "NotIn", "values": ["z"]},
            {"key": "e", "operator": "Exists"},
            {"key": "f", "operator": "DoesNotExist"},
        ],
    }
    text = label_selector_to_string(selector)
    assert text == "a=1,b=2,c in (x,y),d notin (z),e,!f"
    assert parse_label_selector(text).matches({"a": "1", "b": "2", "c": "x", "e": ""})
    assert label_selector_to_string(None) == "" and label_selector_to_string({}) == ""


def test_field_selectors() -> None:
    supported = frozenset({"metadata.name", "metadata.namespace", "spec.nodeName"})
    obj = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"nodeName": "n1", "flag": True}}
    sel = parse_field_selector("metadata.name=a,metadata.namespace!=other", supported)
    assert sel.matches(lambda path: field_value(obj, path))
    assert not parse_field_selector("metadata.name==b", supported).matches(lambda p: field_value(obj, p))
    assert parse_field_selector("spec.nodeName=", supported).matches(lambda p: field_value({"spec": {}}, p))
    assert parse_field_selector("metadata.name=a", supported).equality_value("metadata.name") == "a"
    # escaped separators are part of the value
    escaped = parse_field_selector(r"metadata.name=a\,b\=c", supported)
    assert escaped.requirements[0].value == "a,b=c"
    assert field_value(obj, "spec.flag") == "true" and field_value(obj, "spec.none") == ""
    with pytest.raises(APIError) as info:
        parse_field_selector("spec.other=1", supported)
    assert info.value.code == 400 and info.value.message == "field label not supported: spec.other"
    with pytest.raises(APIError) as info:
        parse_field_selector("nonsense", supported)
    assert info.value.message == "invalid selector: 'nonsense'; can't understand 'nonsense'"
