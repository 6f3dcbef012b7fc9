"""The YAML body decoder's limits, as pure functions: goyaml's alias ratio, the depth bound,
self-references, and JSON-shaped output (string keys, timestamps kept as written, no shared
values)."""

from __future__ import annotations

import pytest
import yaml

from kubeplane.limits import MANAGED_FIELDS_EXTRA_DEPTH, MAX_DEPTH
from kubeplane.yamlbody import YAMLLimitError, allowed_alias_ratio, load


@pytest.mark.parametrize(
    ("decoded", "ratio"),
    [(1_000, 0.99), (400_000, 0.99), (2_200_000, 0.99 - 0.89 * 0.5), (4_000_000, 0.10), (10_000_000, 0.10)],
)
def test_the_alias_ratio_follows_goyaml(decoded: int, ratio: float) -> None:
    assert allowed_alias_ratio(decoded) == pytest.approx(ratio)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"a: 1\nb: [1, 2]\n", {"a": 1, "b": [1, 2]}),
        (b"1: x\ntrue: y\n~: z\n1.5: w\n", {"1": "x", "true": "y", "null": "z", "1.5": "w"}),
        (
            b"when: 2024-01-01\nat: 2001-12-14t21:59:43.10-05:00\n",
            {"when": "2024-01-01", "at": "2001-12-14t21:59:43.10-05:00"},
        ),
        (
            b"base: &b {x: 1}\nuse: *b\nmerged: {<<: *b, y: 2}\n",
            {"base": {"x": 1}, "use": {"x": 1}, "merged": {"x": 1, "y": 2}},
        ),
        (b"", None),
    ],
)
def test_documents_become_json_data(text: bytes, expected: object) -> None:
    assert load(text) == expected


def test_aliases_are_not_shared_after_loading() -> None:
    data = load(b"a: &x {k: [1]}\nb: *x\n")
    data["a"]["k"].append(2)
    assert data["b"] == {"k": [1]}


def bomb(levels: int) -> bytes:
    lines = ['l0: &l0 ["a", "a", "a", "a", "a", "a", "a", "a", "a"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines).encode()


def test_excessive_aliasing_is_refused_before_anything_is_built() -> None:
    with pytest.raises(YAMLLimitError, match=r"^yaml: document contains excessive aliasing$"):
        load(bomb(9))  # 9**10 strings if expanded
    # a few aliases in a small document are fine, as in goyaml (its check starts past 100)
    assert len(load(bomb(1))["l1"]) == 9


def test_self_reference_is_refused() -> None:
    with pytest.raises(YAMLLimitError, match=r"^yaml: anchor 'me' value contains itself$"):
        load(b"a: &me [1, *me]\n")


def test_nesting_is_bounded_while_composing() -> None:
    limit = MAX_DEPTH + MANAGED_FIELDS_EXTRA_DEPTH
    assert load(b"[" * limit + b"]" * limit) is not None
    with pytest.raises(YAMLLimitError, match=f"^yaml: exceeded max depth of {MAX_DEPTH}$"):
        load(b"[" * (limit + 1) + b"]" * (limit + 1))
    with pytest.raises(YAMLLimitError):
        load(b"{a: " * 5000 + b"1" + b"}" * 5000)


@pytest.mark.parametrize("text", [b"a: !!binary aGk=\n", b"a: !!set {x}\n"])
def test_values_json_cannot_hold_are_refused(text: bytes) -> None:
    with pytest.raises(ValueError, match="cannot represent the YAML value as JSON"):
        load(text)


def test_keys_json_cannot_hold_are_refused() -> None:
    with pytest.raises(yaml.YAMLError, match="found a key JSON cannot hold"):
        load(b"? [1, 2]\n: x\n")
    assert load(b"2024-01-01: x\n") == {"2024-01-01": "x"}


def test_malformed_yaml_raises_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError):
        load(b"a: [unclosed")
    with pytest.raises(yaml.YAMLError):
        load(b"a: 1\n---\nb: 2\n")
