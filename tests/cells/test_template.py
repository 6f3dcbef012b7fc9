"""template_hash: stable, canonical, over the whole template."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cells.template import canonical_json, template_hash
from tests.federation.api.objects import workload_deployment


def _template() -> dict[str, Any]:
    template: dict[str, Any] = workload_deployment()["spec"]["template"]
    return template


def _reversed_keys(value: Any) -> Any:
    """The same JSON with every object's keys inserted in reverse order."""
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def test_hash_is_short_lowercase_and_label_safe() -> None:
    assert re.fullmatch(r"[a-z2-7]{10}", template_hash(_template()))


def test_golden_value_pins_the_algorithm() -> None:
    # Instances store this hash; changing the algorithm would recreate every Instance of
    # every deployment on upgrade. A change here must be deliberate.
    template = {"spec": {"a": [1, "x", None, True]}, "metadata": {"labels": {"app": "web"}}}
    assert canonical_json(template) == b'{"metadata":{"labels":{"app":"web"}},"spec":{"a":[1,"x",null,true]}}'
    # = base32(sha256(canonical))[:10], lowercased (checked independently with sha256sum | base32)
    assert template_hash(template) == "l4rfpfc2yv"


def test_key_order_does_not_matter() -> None:
    template = _template()
    assert template_hash(_reversed_keys(template)) == template_hash(template)


def _edit_restarted_at(t: dict[str, Any]) -> None:
    t["metadata"]["annotations"]["compute.datumapis.com/restartedAt"] = "2025-02-01T00:00:00Z"


def _add_restarted_at(t: dict[str, Any]) -> None:
    del t["metadata"]["annotations"]["compute.datumapis.com/restartedAt"]


def _edit_label(t: dict[str, Any]) -> None:
    t["metadata"]["labels"]["app"] = "web2"


def _edit_image(t: dict[str, Any]) -> None:
    t["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = "docker.io/library/nginx:1.28"


def _swap_list_order(t: dict[str, Any]) -> None:
    t["spec"]["volumes"].reverse()


def _edit_instance_type(t: dict[str, Any]) -> None:
    t["spec"]["runtime"]["resources"]["instanceType"] = "datumcloud/d1-standard-4"


@pytest.mark.parametrize(
    "edit",
    [_edit_restarted_at, _add_restarted_at, _edit_label, _edit_image, _swap_list_order, _edit_instance_type],
    ids=lambda f: f.__name__,
)
def test_every_part_of_the_template_changes_the_hash(edit: Any) -> None:
    template = _template()
    edited = copy.deepcopy(template)
    edit(edited)
    assert template_hash(edited) != template_hash(template)


@pytest.mark.parametrize(
    "bad",
    [
        ["not", "an", "object"],
        {"spec": {"x": float("nan")}},
        {"spec": {"x": {1, 2}}},
        {"spec": {1: "non-string key", "a": "b"}},
    ],
    ids=["list", "nan", "set", "mixed-keys"],
)
def test_non_json_input_is_refused_naming_the_template(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"spec\.template"):
        template_hash(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_insertion_order_never_matters(template: dict[str, Any]) -> None:
    assert template_hash(_reversed_keys(template)) == template_hash(template)
