"""template_hash: stable, canonical, over the whole template."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cells.template import canonical_json, template_hash, without_server_defaults
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


# ------------------------------------------------------------------ server defaults (CRD upgrade)


def _with_interfaces(*interfaces: dict[str, Any]) -> dict[str, Any]:
    template = _template()
    template["spec"]["networkInterfaces"] = [copy.deepcopy(i) for i in interfaces]
    return template


OLD = {"network": {"name": "default"}}
DEFAULTED = {"network": {"name": "default"}, "name": "eth0", "ipFamilies": ["IPv6"], "reclaimPolicy": "Delete"}


@pytest.mark.parametrize(
    ("stored", "same_as_old"),
    [
        (DEFAULTED, True),  # what the upgraded CRD stores for the old template
        ({**OLD, "name": "eth0"}, True),  # partly defaulted
        ({**OLD, "ipFamilies": ["IPv6"]}, True),
        ({**OLD, "reclaimPolicy": "Delete"}, True),
        ({**DEFAULTED, "name": "eth1"}, False),  # a value other than the default is a change
        ({**DEFAULTED, "ipFamilies": ["IPv4"]}, False),
        ({**DEFAULTED, "ipFamilies": ["IPv6", "IPv4"]}, False),
        ({**DEFAULTED, "reclaimPolicy": "Retain"}, False),
        ({**DEFAULTED, "network": {"name": "other"}}, False),  # a field that is not defaulted
    ],
    ids=["defaulted", "name", "ipFamilies", "reclaimPolicy", "other-name", "ipv4", "dual-stack", "retain", "network"],
)
def test_server_defaults_do_not_change_the_hash(stored: dict[str, Any], same_as_old: bool) -> None:
    old = template_hash(_with_interfaces(OLD))
    assert (template_hash(_with_interfaces(stored)) == old) is same_as_old


def test_without_server_defaults_leaves_the_input_and_odd_shapes_alone() -> None:
    template = _with_interfaces(DEFAULTED, OLD)
    before = copy.deepcopy(template)
    got = without_server_defaults(template)
    assert got["spec"]["networkInterfaces"] == [OLD, OLD]
    assert template == before, "the input is not changed"
    assert without_server_defaults({"spec": {"networkInterfaces": "x"}}) == {"spec": {"networkInterfaces": "x"}}
    assert without_server_defaults({"spec": {"networkInterfaces": [1]}}) == {"spec": {"networkInterfaces": [1]}}
    assert without_server_defaults({"metadata": {}}) == {"metadata": {}}


@given(st.lists(st.fixed_dictionaries({}, optional={k: st.just(v) for k, v in DEFAULTED.items()}), max_size=3))
def test_any_mix_of_defaults_hashes_as_the_undefaulted_template(interfaces: list[dict[str, Any]]) -> None:
    """Whatever subset of the defaults the server (or the user) wrote, per interface."""
    undefaulted = [{k: v for k, v in i.items() if k == "network"} for i in interfaces]
    assert template_hash(_with_interfaces(*interfaces)) == template_hash(_with_interfaces(*undefaulted))
