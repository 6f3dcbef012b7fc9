"""The write path's shortcuts give the answers the full computation gives.

- A write re-checks (prunes, defaults, validates) only what it changed when the stored object
  passed the same schema (Entry.valid_under): a status write with an unchanged spec checks the
  status only; a changed invalid field is still refused with the same causes; a value that
  Python's == confuses with the old one (True for 1) counts as changed; a schema changed since
  the object was stored checks everything; transition rules (oldSelf) still run, and on a value
  that did not change only they do (a rule that does not read oldSelf passed it already).
- Fields a write copied from the stored object (a status write's spec and metadata, a main
  write's status, what a merge patch does not name) are not compared with it again; a rule
  reading oldSelf that passed on the same value before passes again without evaluating (same
  cost), and one that fails is evaluated (and fails) every time.
- An equivalence property: random write sequences answer the same with the shortcut and
  with it disabled (every stored entry's valid_under cleared before each write).
- The re2 VM's memo of answers per text agrees with the VM, is bounded, and is used.
- A stored object's field members are remembered from the write that stored it, and the field
  sets this server encoded are read back (and written back, when unchanged) without coding.
- json_copy is deepcopy for JSON data.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane import fieldmanager, objectapi, schema
from kubeplane.cel import regex, validator
from kubeplane.cel.re2 import compile_pattern, search
from kubeplane.crds import types_for
from kubeplane.errors import APIError
from kubeplane.jsondata import json_copy, unchanged
from kubeplane.objectapi import APPLY_PATCH, MERGE_PATCH, WriteOptions
from kubeplane.registry import ResourceType
from kubeplane.server import ControlPlane
from tests.support import calls_to

Obj = dict[str, Any]

QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
LABEL = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


SPEC_RULE = "self.size != 'medium' || !has(self.replicas) || self.replicas < 2"
STATUS_RULE = "!has(self.ready) || self.ready <= 50"


def gadget_schema(size_pattern: str = "^[a-z]+$", max_label: int = 10) -> Obj:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                # a rule that does not read oldSelf on a node with one below that does
                "x-kubernetes-validations": [{"rule": SPEC_RULE, "message": "medium holds at most 1 replica"}],
                "properties": {
                    "size": {"type": "string", "pattern": size_pattern, "maxLength": 8},
                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                    "cpu": {"type": "string", "pattern": QUANTITY},
                    "frozen": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "frozen is immutable"}],
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": f"self.size() <= {max_label}", "message": "label too long"}
                            ],
                        },
                    },
                    "ports": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "pattern": "^[a-z]+$"},
                                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                "protocol": {"type": "string", "default": "TCP"},
                            },
                        },
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string", "enum": ["Pending", "Ready"]},
                    "ready": {"type": "integer", "minimum": 0},
                    "reason": {"type": "string", "pattern": LABEL},
                },
                "x-kubernetes-validations": [{"rule": STATUS_RULE, "message": "too many"}],
            },
        },
    }


def gadget_crd(size_pattern: str = "^[a-z]+$", max_label: int = 10) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.shortcuts.example.com"},
        "spec": {
            "group": "shortcuts.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": gadget_schema(size_pattern, max_label)},
                }
            ],
        },
    }


def plane_with_gadgets() -> tuple[ControlPlane, ResourceType]:
    plane = ControlPlane(kubelet=False, garbage_collector=False)
    entry = plane.api.create(plane.crds.crd_rt, "", gadget_crd(), WriteOptions(field_manager="test"))
    (rt,) = types_for(entry.obj)
    plane.registry.add(rt)
    return plane, rt


def gadget(name: str = "g", **spec: Any) -> Obj:
    body: Obj = {
        "apiVersion": "shortcuts.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {
            "size": "small",
            "replicas": 2,
            "cpu": "500m",
            "frozen": "a",
            "ports": [{"name": "http", "port": 80}],
            "labels": {"team": "blue", "tier": "web"},
        },
    }
    body["spec"].update(spec)
    return body


def opts(manager: str = "test") -> WriteOptions:
    return WriteOptions(field_manager=manager)


def causes(exc: APIError) -> list[tuple[str, str]]:
    """(field, detail) per cause; the detail without the `Invalid value: <value>: ` lead."""
    out = []
    for cause in exc.details.get("causes", []):
        message = cause.get("message", "")
        field = cause.get("field", "")
        detail = message[message.index(field) :] if field and field in message else message
        out.append((field, detail))
    return out


# ------------------------------------------------------------------ only what changed is checked


def test_a_status_write_checks_the_status_only(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    checked: list[str] = []
    real = schema._validate_string

    def spy(value: str, sch: Obj, shown: str, errs: list[Any]) -> None:
        checked.append(shown)
        real(value, sch, shown, errs)

    pruned: list[str] = []
    real_prune = schema._prune

    def prune_spy(value: Any, sch: Obj, path: str, dropped: list[str], **kw: Any) -> None:
        pruned.append(path)
        real_prune(value, sch, path, dropped, **kw)

    monkeypatch.setattr(schema, "_validate_string", spy)
    monkeypatch.setattr(schema, "_prune", prune_spy)
    status = {"status": {"phase": "Ready", "ready": 2, "reason": "AllGood"}}
    plane.api.patch(rt, "default", "g", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert checked == ["status.phase", "status.reason"]
    assert pruned == ["", "status", "status.phase", "status.ready", "status.reason"]
    checked.clear()
    pruned.clear()
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 3}}, opts())
    assert checked == []  # an integer changed: no string of the object was checked again
    assert pruned == ["", "spec", "spec.replicas"]


def comparisons_of(monkeypatch: pytest.MonkeyPatch, old: Obj) -> list[str]:
    """The top-level fields of `old` (or values inside them) that the write path's checks compare
    with a new value from now on (unchanged() called on two different objects, in the schema
    walk, the CEL rules' walk and the metadata checks)."""
    within: dict[int, str] = {}
    for key, value in old.items():
        if key not in ("metadata", "apiVersion", "kind"):
            stack = [value]
            while stack:
                item = stack.pop()
                within[id(item)] = key
                stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
    compared: list[str] = []
    for module in (schema, validator, objectapi):
        real = module.unchanged

        def spy(value: Any, before: Any, real: Any = real) -> bool:
            if value is not before and id(before) in within and isinstance(before, (dict, list)):
                compared.append(within[id(before)])
            return bool(real(value, before))

        monkeypatch.setattr(module, "unchanged", spy)
    return compared


def test_fields_a_write_copied_are_not_compared_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status write's spec is the stored object's (copied from it), and so is the status of a
    write to the main resource and what a merge patch does not name: no check compares them with
    the stored object's again (as apiextensions' status strategy resets the spec to the old one);
    the rules that read oldSelf still run on them, and what changed is still checked."""
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    old = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 1}}, opts("cell"), subresource="status")
    compared = comparisons_of(monkeypatch, old.obj)
    evaluated: list[str] = []
    real_rules = validator._evaluate_rules

    def rules_spy(
        node: Any, value: Any, old: Any, path: str, ratchet: Any, run: Any, *, only_old: bool = False
    ) -> None:
        evaluated.extend(f"{path}: {rule.text}" for rule in (node.old_rules if only_old else node.rules))
        real_rules(node, value, old, path, ratchet, run, only_old=only_old)

    monkeypatch.setattr(validator, "_evaluate_rules", rules_spy)
    status = {"status": {"phase": "Ready", "ready": 2}}
    new = plane.api.patch(rt, "default", "g", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert set(compared) == {"status"}  # (what changed: the spec is not compared)
    assert evaluated == ["spec.frozen: self == oldSelf", f"status: {STATUS_RULE}"]
    assert new.obj["status"] == {"phase": "Ready", "ready": 2} and new.obj["metadata"]["generation"] == 1
    # a metadata patch: neither the spec nor the status is compared
    compared = comparisons_of(monkeypatch, new.obj)
    labelled = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"metadata": {"labels": {"a": "b"}}}, opts())
    assert compared == [] and labelled.obj["metadata"]["generation"] == 1
    # a spec patch: the spec is compared (changed), the status is not
    compared = comparisons_of(monkeypatch, labelled.obj)
    changed = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 1}}, opts())
    assert set(compared) == {"spec"} and changed.obj["metadata"]["generation"] == 2
    # a no-op status write is still a no-op (no new resourceVersion), and an invalid status still refused
    again = plane.api.patch(rt, "default", "g", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert again is changed
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 51}}, opts("cell"), subresource="status")
    assert causes(exc.value) == [("status", 'Invalid value: "object": too many')]


def test_unchanged_metadata_is_not_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An update whose name, namespace, labels, annotations, owners and finalizers are the old
    object's (which passed this schema here) skips the ObjectMeta rules; a change to any of them,
    or an old object not checked under this schema, runs them, with the same answers."""
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    calls = calls_to(monkeypatch, objectapi, "validate_object_meta")
    compared = calls_to(monkeypatch, objectapi, "_meta_unchanged")
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 1}}, opts("cell"), subresource="status")
    # (a status write's metadata is the stored object's, copied: not even compared with it)
    assert compared == []
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 3}}, opts())
    assert calls == [] and len(compared) == 1
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"metadata": {"labels": {"team": "blue"}}}, opts())
    assert len(calls) == 1
    with pytest.raises(APIError) as refused:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"metadata": {"labels": {"team": "-bad-"}}}, opts())
    assert [field for field, _ in causes(refused.value)] == ["metadata.labels"]
    assert len(calls) == 2
    plane.api.store_for(rt).get("default", "g").valid_under = None  # type: ignore[union-attr]
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 4}}, opts())
    assert len(calls) == 3


def test_a_changed_invalid_field_is_refused_with_its_causes() -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"size": "BIG", "cpu": "lots"}}, opts())
    assert exc.value.code == 422
    assert causes(exc.value) == [
        ("spec.size", "spec.size in body should match '^[a-z]+$'"),
        ("spec.cpu", f"spec.cpu in body should match '{QUANTITY}'"),
    ]
    with pytest.raises(APIError) as exc:
        plane.api.patch(
            rt, "default", "g", MERGE_PATCH, {"spec": {"ports": [{"name": "http", "port": 80}, {"port": 0}]}}, opts()
        )
    assert causes(exc.value) == [
        ("spec.ports[1].port", "spec.ports[1].port in body should be greater than or equal to 1")
    ]


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        (1, True, 'spec.replicas in body must be of type integer: "boolean"'),
        (1, 1.0, 'spec.replicas in body must be of type integer: "number"'),
    ],
)
def test_a_value_equal_only_to_python_is_a_change(before: int, after: Any, message: str) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(replicas=before), opts())
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": after}}, opts())
    # (then apiextensions' "some validation rules were not checked", as for any type error)
    assert causes(exc.value)[0] == ("spec.replicas", message)


def test_a_schema_changed_since_the_write_checks_everything() -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    # the CRD now wants digits: the stored spec.size ("small") no longer passes
    tightened = gadget_crd(size_pattern="^[0-9]+$")
    (rt2,) = types_for(tightened)
    assert rt2.storage_key == rt.storage_key and rt2.schema is not rt.schema
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt2, "default", "g", MERGE_PATCH, {"status": {"phase": "Ready"}}, opts(), subresource="status")
    assert causes(exc.value) == [("spec.size", "spec.size in body should match '^[0-9]+$'")]


def test_transition_rules_still_run() -> None:
    # (CEL rules are evaluated on every write, shortcut or not: oldSelf changes between writes)
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"frozen": "b"}}, opts())
    assert causes(exc.value) == [("spec.frozen", 'Invalid value: "string": frozen is immutable')]
    entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 4}}, opts())
    assert entry.obj["spec"]["frozen"] == "a" and entry.valid_under is rt.schema


def test_only_checked_writes_mark_the_entry() -> None:
    plane, rt = plane_with_gadgets()
    created = plane.api.create(rt, "default", gadget(), opts())
    assert created.valid_under is rt.schema
    dry = plane.api.patch(
        rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 5}}, WriteOptions(field_manager="t", dry_run=True)
    )
    assert dry.valid_under is None
    cm_rt = plane.registry.get("", "v1", "configmaps")
    assert cm_rt is not None
    cm = plane.api.create(cm_rt, "default", {"metadata": {"name": "c"}, "data": {"a": "b"}}, opts())
    assert cm.valid_under is None  # built-in kinds are checked by their Go-type rules, every time


def test_unchanged_values_skip_the_cel_rules_that_do_not_read_oldself(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    evaluated: list[str] = []
    real = validator._evaluate_rules

    def spy(node: Any, value: Any, old: Any, path: str, ratchet: Any, run: Any, *, only_old: bool = False) -> None:
        # (the rules that ran: an unchanged value runs only those that read oldSelf)
        evaluated.extend(f"{path}: {rule.text}" for rule in (node.old_rules if only_old else node.rules))
        real(node, value, old, path, ratchet, run, only_old=only_old)

    monkeypatch.setattr(validator, "_evaluate_rules", spy)
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 1}}, opts("cell"), subresource="status")
    # the status changed; spec.frozen's rule reads oldSelf, so it runs although frozen did not
    # change; the rule on spec itself (unchanged, and it does not read oldSelf) and the labels'
    # rules (unchanged values, under nodes whose rules never read oldSelf) do not
    assert evaluated == ["spec.frozen: self == oldSelf", f"status: {STATUS_RULE}"]
    evaluated.clear()
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"labels": {"zone": "east"}}}, opts())
    assert evaluated == [f"spec: {SPEC_RULE}", "spec.frozen: self == oldSelf", "spec.labels[zone]: self.size() <= 10"]
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"labels": {"zone": "x" * 11}}}, opts())
    assert causes(exc.value) == [("spec.labels[zone]", 'Invalid value: "string": label too long')]
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"size": "medium"}}, opts())
    assert causes(exc.value) == [("spec", 'Invalid value: "object": medium holds at most 1 replica')]


def count_evaluations(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The CEL evaluations (one activation each, its environment first) the validator makes from now on."""
    return calls_to(monkeypatch, validator, "Activation")


def test_a_rule_reading_oldself_that_passed_on_a_value_is_not_evaluated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rule that reads oldSelf runs on a value that did not change (it is not ratcheted); on the
    same value it passed before, of this object or another, it passes again without evaluating,
    at the same cost; a changed value, or a different one, is evaluated."""
    monkeypatch.setattr(validator, "_PASSED", type(validator._PASSED)())
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget("g1"), opts())
    plane.api.create(rt, "default", gadget("g2"), opts())
    plane.api.create(rt, "default", gadget("g3", frozen="b"), opts())
    made = count_evaluations(monkeypatch)
    status = {"status": {"ready": 1}}
    plane.api.patch(rt, "default", "g1", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert [set(env) for env, *_ in made] == [{"self", "oldSelf"}, {"self"}]  # spec.frozen's rule, then the status's
    made.clear()
    plane.api.patch(rt, "default", "g2", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert [set(env) for env, *_ in made] == [{"self"}]  # frozen "a" passed already: the status's rule only
    made.clear()
    plane.api.patch(rt, "default", "g3", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert [set(env) for env, *_ in made] == [{"self", "oldSelf"}, {"self"}]  # frozen "b": not seen before
    made.clear()
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g1", MERGE_PATCH, {"spec": {"frozen": "b"}}, opts())
    assert causes(exc.value) == [("spec.frozen", 'Invalid value: "string": frozen is immutable')]
    # the same budget is spent either way
    old = plane.api.get(rt, "default", "g2").obj
    new = copy.deepcopy(old)
    new["status"] = {"ready": 2}
    assert rt.schema is not None
    remembered = validator.evaluate_object(rt.schema, new, old, [], old_cost=5)
    validator._PASSED.clear()
    evaluated = validator.evaluate_object(rt.schema, new, old, [], old_cost=5)
    assert remembered.cost == evaluated.cost is not None and remembered.errors == evaluated.errors == []


def test_a_rule_reading_oldself_that_fails_on_an_unchanged_value_fails_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(validator, "_PASSED", type(validator._PASSED)())
    plane = ControlPlane(kubelet=False, garbage_collector=False)
    crd = gadget_crd()
    frozen = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["frozen"]
    frozen["x-kubernetes-validations"] = [{"rule": "self != oldSelf", "message": "frozen must change"}]
    (rt,) = types_for(plane.api.create(plane.crds.crd_rt, "", crd, opts()).obj)
    plane.registry.add(rt)
    plane.api.create(rt, "default", gadget(), opts())  # (a transition rule does not run on a create)
    made = count_evaluations(monkeypatch)
    for ready in (1, 2):
        with pytest.raises(APIError) as exc:
            plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": ready}}, opts(), subresource="status")
        assert causes(exc.value) == [("spec.frozen", 'Invalid value: "string": frozen must change')]
    assert sum(1 for env, *_ in made if "oldSelf" in env) == 2


def test_a_ratcheted_rule_warns_on_every_write(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    # the CRD now allows 3-character labels: "blue" fails ("web" passes), but it is unchanged
    # (ratcheted: a warning, not an error), on this write and the next
    (rt2,) = types_for(gadget_crd(max_label=3))
    for ready in (1, 2):
        write = opts("cell")
        entry = plane.api.patch(
            rt2, "default", "g", MERGE_PATCH, {"status": {"ready": ready}}, write, subresource="status"
        )
        assert write.warnings == ['spec.labels[team]: Invalid value: "string": label too long']
        assert entry.valid_under is rt2.schema and entry.cel_cost is None


def test_when_the_budget_could_matter_every_rule_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    created = plane.api.create(rt, "default", gadget(), opts())
    assert created.cel_cost is not None and created.cel_cost > 0
    runs: list[bool] = []
    real = validator._evaluate

    def spy(node: Any, obj: Any, old: Any, skip: bool) -> Any:
        runs.append(skip)
        return real(node, obj, old, skip)

    monkeypatch.setattr(validator, "_evaluate", spy)
    plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 1}}, opts("cell"), subresource="status")
    assert runs == [True]
    # a budget the stored object's cost and this write's could exceed together: the shortcut
    # cannot know what the skipped rules would add, so it evaluates them all, and the object
    # is refused as a full evaluation refuses it (the skipping run alone stayed in budget)
    runs.clear()
    monkeypatch.setattr(validator, "RUNTIME_BUDGET", created.cel_cost + 1)
    with pytest.raises(APIError) as exc:
        plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": {"ready": 2}}, opts("cell"), subresource="status")
    assert runs == [True, False]
    assert exc.value.code == 422 and validator.OUT_OF_BUDGET in exc.value.message


# ------------------------------------------------------------------ equivalence, by property

SIZES = st.sampled_from(["small", "BIG", "x" * 9, "medium", None])
CPUS = st.sampled_from(["500m", "1", "1.5Gi", "lots", "", None])
REPLICAS = st.sampled_from([0, 1, 2, -1, True, 1.0, "2", None])
PORTS = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["http", "HTTP", "metrics"]), "port": st.sampled_from([80, 0, 70000, True])},
        optional={"protocol": st.sampled_from(["TCP", "UDP", None]), "extra": st.just("dropped")},
    ),
    max_size=3,
)
LABELS = st.dictionaries(
    st.sampled_from(["team", "tier", "zone"]), st.sampled_from(["blue", "x" * 11, None]), max_size=2
)
SPEC_PATCHES = st.fixed_dictionaries(
    {},
    optional={
        "size": SIZES,
        "cpu": CPUS,
        "replicas": REPLICAS,
        "ports": PORTS,
        "labels": LABELS,
        "unknown": st.just(1),
    },
)
STATUS_PATCHES = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Pending", "Ready", "Gone", None]),
        "ready": st.sampled_from([0, 3, -2, True, 51]),
        "reason": st.sampled_from(["ok", "example.com/Fine", "-bad-", None]),
    },
)
WRITES = st.lists(
    st.one_of(
        st.tuples(st.just("spec"), SPEC_PATCHES),
        st.tuples(st.just("status"), STATUS_PATCHES),
        st.tuples(st.just("apply"), SPEC_PATCHES),
        st.tuples(st.just("status-apply"), STATUS_PATCHES),
    ),
    min_size=1,
    max_size=6,
)


def run_writes(writes: list[tuple[str, Obj]], *, shortcut: bool) -> list[Any]:
    plane, rt = plane_with_gadgets()
    store = plane.api.store_for(rt)
    plane.api.create(rt, "default", gadget(), opts())
    outcomes: list[Any] = []
    for kind, patch in writes:
        if not shortcut:
            for entry in store.iter_entries():
                entry.valid_under = None
            plane.api._field_managers.clear()  # nothing remembered: members, encoded field sets
        write = WriteOptions(field_manager=f"writer-{kind}", force=True)
        try:
            if kind == "spec":
                entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": patch}, write)
            elif kind == "status":
                entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"status": patch}, write, subresource="status")
            else:
                body = gadget()
                body["spec"] = {k: v for k, v in patch.items() if v is not None} | {"size": "small"}
                entry = plane.api.patch(rt, "default", "g", APPLY_PATCH, body, write)
        except APIError as exc:
            outcomes.append(("error", exc.code, exc.message, exc.details))
            continue
        obj = copy.deepcopy(entry.obj)
        for key in ("uid", "creationTimestamp"):
            obj["metadata"].pop(key, None)
        for managed in obj["metadata"].get("managedFields", []):
            managed.pop("time", None)
        outcomes.append(("ok", obj, sorted(write.warnings)))
    return outcomes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WRITES)
def test_writes_answer_the_same_with_and_without_the_shortcut(writes: list[tuple[str, Obj]]) -> None:
    assert run_writes(writes, shortcut=True) == run_writes(writes, shortcut=False)


# ------------------------------------------------------------------ the pieces


BIG = 2**70


@pytest.mark.parametrize(
    ("value", "old", "same"),
    [
        ({"a": [1, {"b": "c"}]}, {"a": [1, {"b": "c"}]}, True),
        (1, True, False),
        (1, 1.0, False),
        ({"a": [0]}, {"a": [False]}, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # another order: checked again, only a cost
        (BIG, BIG, True),  # the same object
        ([BIG], [BIG], False),  # JSON cannot carry it: checked again, never an error
        (None, None, True),
    ],
)
def test_unchanged_is_json_equality(value: Any, old: Any, same: bool) -> None:
    assert unchanged(value, old) is same


def test_validate_skips_only_what_matches_the_clean_old() -> None:
    sch = gadget_schema()
    bad = {"spec": {"size": "BIG", "cpu": "lots"}}
    # what the contract promises: a field equal to a clean old is not checked again ...
    assert schema.validate(bad, sch, clean_old=copy.deepcopy(bad)) == []
    # ... and everything else is
    changed = {"spec": {"size": "BIG", "cpu": "1"}}
    cpu_errors = [e for e in schema.validate(bad, sch) if e.field == "spec.cpu"]
    assert len(cpu_errors) == 1
    assert schema.validate(bad, sch, clean_old=changed) == cpu_errors


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([1.0, 0.5]) | st.sampled_from(["a", "B", "1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["size", "replicas", "ports", "name", "port", "x"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_prune_default_and_validate_agree_with_a_clean_old(new_spec: Any, old_spec: Any) -> None:
    sch = gadget_schema()
    old = {"spec": old_spec}
    schema.prune(old, sch)
    schema.apply_defaults(old, sch)
    if schema.validate(old, sch):
        old = {"spec": {"size": "small"}}  # the contract: the old object passed
    full, short = {"spec": copy.deepcopy(new_spec)}, {"spec": copy.deepcopy(new_spec)}
    assert schema.prune(short, sch, clean_old=old) == schema.prune(full, sch)
    schema.apply_defaults(short, sch, clean_old=old)
    schema.apply_defaults(full, sch)
    assert orjson.dumps(short) == orjson.dumps(full)
    assert schema.validate(short, sch, clean_old=old) == schema.validate(full, sch)


RISKY = [QUANTITY, LABEL, "^(a+)+$", "(x|y)*z", "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"]
TEXTS = ["500m", "1Gi", "-1.5e3", "1.", ".5", "lots", "", "a" * 30 + "!", "aaa", "xyxz", "example.com/Ready", "-x"]


@pytest.mark.parametrize("pattern", RISKY)
def test_the_re2_memo_agrees_with_the_vm(pattern: str) -> None:
    matcher = regex.Matcher(pattern)
    program = compile_pattern(pattern)
    for text in TEXTS:
        first, again = matcher.matches(text), matcher.matches(text)
        assert first is again is search(program, text), text


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(RISKY), st.text(alphabet="0123456789.eEmkKiGa-+/xyz!", max_size=12))
def test_the_re2_memo_agrees_with_the_vm_on_any_text(pattern: str, text: str) -> None:
    matcher = regex.compile_re2(pattern)
    assert matcher.matches(text) is matcher.matches(text) is search(compile_pattern(pattern), text)


def test_the_re2_memo_is_used_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    searched = calls_to(monkeypatch, regex, "search")
    matcher = regex.Matcher(QUANTITY)
    assert matcher.matches("500m") and matcher.matches("500m")
    assert [text for _program, text in searched] == ["500m"]
    long_text = "1" * (regex.MEMO_TEXT_MAX + 1)
    assert matcher.matches(long_text) and matcher.matches(long_text)
    assert [text for _program, text in searched].count(long_text) == 2  # long texts are not kept
    for i in range(regex.MEMO_ENTRIES + 10):
        matcher.matches(str(i))
    assert len(matcher._memo) <= regex.MEMO_ENTRIES


def test_a_stored_objects_members_come_from_the_write_that_stored_it(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    real = fieldmanager.members
    calls = calls_to(monkeypatch, fieldmanager, "members")
    entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"replicas": 3}}, opts("other"))
    # nothing walked whole: the stored object's members were remembered at its create, and the
    # new object's come from them, only spec walked again (members_since)
    assert calls == []
    fm = plane.api.field_manager(rt)
    assert fm._stored_members(entry.obj, "") == real(entry.obj, rt.schema, has_status=True)
    managed = {m["manager"]: m["fieldsV1"] for m in entry.obj["metadata"]["managedFields"]}
    assert managed["other"] == {"f:spec": {"f:replicas": {}}}


def test_writes_that_alternate_scopes_walk_no_object_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # a spec write, the status, a label, the status again (a copy's life in a cell): each write
    # finds the stored object's members of its own scope, remembered by the write before it,
    # whichever scope that one was in
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts())
    calls: list[str] = []
    real = fieldmanager.members

    def counting(obj: Obj, sch: Obj | None, **kw: Any) -> dict[Any, Any]:
        calls.append(kw.get("scope", "main"))
        return real(obj, sch, **kw)

    monkeypatch.setattr(fieldmanager, "members", counting)
    fm = plane.api.field_manager(rt)
    writes: list[tuple[Obj, str]] = [
        ({"spec": {"replicas": 3}}, ""),
        ({"status": {"ready": 1}}, "status"),
        ({"metadata": {"labels": {"a": "b"}}}, ""),
        ({"status": {"ready": 2}}, "status"),
    ]
    for i, (patch, sub) in enumerate(writes):
        entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, patch, opts(f"w{i}"), subresource=sub)
        assert calls == ["status"] * (i >= 1)  # (the status scope once: the create walked the main scope)
        for scope in ("", "status"):  # what is remembered is what a walk finds
            want = real(entry.obj, rt.schema, scope="status" if scope else "main", has_status=True)
            assert fm._stored_members(entry.obj, scope) == want
    assert calls == ["status"]


def test_a_scope_walks_only_its_own_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[Any] = []
    real = fieldmanager._field

    def spy(value: Any, parent: Obj | None, key: str, path: Any, out: dict[Any, Any]) -> None:
        walked.append(path)
        real(value, parent, key, path, out)

    monkeypatch.setattr(fieldmanager, "_field", spy)
    obj = {"metadata": {"name": "g", "labels": {"a": "1"}}, "spec": {"tags": ["x"]}, "status": {"x": 1}}
    fieldmanager.members(obj, MEMBER_SCHEMA, scope="status", has_status=True)
    assert walked == [("f:status",)]
    walked.clear()
    fieldmanager.members(obj, MEMBER_SCHEMA, has_status=True)
    assert walked == [("f:metadata", "f:labels"), ("f:spec",)]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["spec", "status", "data", "kind"]), JSON, max_size=4))
def test_a_scopes_members_are_the_objects_members_of_that_scope(top: Obj) -> None:
    obj = {"metadata": {"name": "g", "labels": {"a": "1"}}, **top}
    everything = fieldmanager.members(obj, MEMBER_SCHEMA)
    status = {p: v for p, v in everything.items() if p[:1] == ("f:status",)}
    main = {p: v for p, v in everything.items() if p[:1] != ("f:status",)}
    assert fieldmanager.members(obj, MEMBER_SCHEMA, scope="status", has_status=True) == status
    assert fieldmanager.members(obj, MEMBER_SCHEMA, has_status=True) == main


MEMBER_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
            "additionalProperties": {"type": "object"},
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
TOP = st.dictionaries(
    st.sampled_from(["spec", "status", "data"]),
    st.dictionaries(st.sampled_from(["ports", "tags", "x", "y"]), JSON, max_size=3),
    max_size=3,
)
META = st.fixed_dictionaries(
    {"name": st.just("g")},
    optional={
        "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2),
        "finalizers": st.lists(st.sampled_from(["x/y", "z/w"]), max_size=2),
        "resourceVersion": st.sampled_from(["1", "2"]),
    },
)


@settings(max_examples=300, deadline=None)
@given(
    TOP,
    META,
    TOP,
    META,
    st.lists(st.sampled_from(["spec", "status", "data", "metadata"]), max_size=4),
    st.lists(st.sampled_from(["ports", "tags", "x", "y"]), max_size=4),
)
def test_members_since_an_old_object_are_its_members(
    old_top: Obj, old_meta: Obj, fresh_top: Obj, fresh_meta: Obj, keep: list[str], keep_below: list[str]
) -> None:
    old = {"apiVersion": "v1", "kind": "Gadget", "metadata": old_meta, **old_top}
    # the new object keeps some top-level fields (and metadata fields) of the old, changes others,
    # and of those it changes, keeps some fields below as they were
    new: Obj = {"apiVersion": "v1", "kind": "Gadget"}
    new["metadata"] = copy.deepcopy(old_meta) if "metadata" in keep else dict(old_meta, **fresh_meta)
    for key in {*old_top, *fresh_top}:
        if key in keep and key in old_top:
            new[key] = copy.deepcopy(old_top[key])
        elif key in fresh_top:
            kept = {c: copy.deepcopy(v) for c, v in old_top.get(key, {}).items() if c in keep_below}
            new[key] = {**fresh_top[key], **kept}
    for scope, has_status in (("main", True), ("main", False), ("status", True)):
        old_m = fieldmanager.members(old, MEMBER_SCHEMA, scope=scope, has_status=has_status)
        full = fieldmanager.members(new, MEMBER_SCHEMA, scope=scope, has_status=has_status)
        since = fieldmanager.members_since(new, MEMBER_SCHEMA, old, old_m, scope=scope, has_status=has_status)
        assert set(since) == set(full)
        assert all(since[p] is full[p] if full[p] is fieldmanager._CONTAINER else since[p] == full[p] for p in full)
        for other in (old_m, {}, full):
            assert fieldmanager.compare(other, since) == fieldmanager.compare(other, full)


def test_a_changed_maps_unchanged_fields_keep_their_members(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec whose replicas changed: its members are its old ones but for the replicas (the
    ports and tags below it are not walked again), and they are what walking it gives."""
    old: Obj = {
        "metadata": {"name": "g"},
        "spec": {"ports": [{"name": "http"}, {"name": "grpc"}], "tags": ["a", "b"], "x": 1},
    }
    new = copy.deepcopy(old)
    new["spec"]["x"] = 2
    old_m = fieldmanager.members(old, MEMBER_SCHEMA, has_status=True)
    walked = calls_to(monkeypatch, fieldmanager, "_walk")
    since = fieldmanager.members_since(new, MEMBER_SCHEMA, old, old_m, has_status=True)
    assert walked == []  # (x is a scalar: its own member, no walk)
    assert since == fieldmanager.members(new, MEMBER_SCHEMA, has_status=True)
    assert since[("f:spec", "f:x")] == 2


def test_unchanged_field_sets_are_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    plane, rt = plane_with_gadgets()
    plane.api.create(rt, "default", gadget(), opts("creator"))
    encoded: list[set[Any]] = []
    decoded: list[Any] = []
    real_to, real_from = fieldmanager.to_fields_v1, fieldmanager.from_fields_v1

    def to_spy(paths: set[Any]) -> Obj:
        encoded.append(set(paths))
        return real_to(paths)

    def from_spy(tree: Obj, prefix: Any = ()) -> set[Any]:
        if not prefix:
            decoded.append(tree)
        return real_from(tree, prefix)

    monkeypatch.setattr(fieldmanager, "to_fields_v1", to_spy)
    monkeypatch.setattr(fieldmanager, "from_fields_v1", from_spy)
    status = {"status": {"phase": "Ready"}}
    entry = plane.api.patch(rt, "default", "g", MERGE_PATCH, status, opts("cell"), subresource="status")
    assert decoded == []  # the creator's set was encoded here: known
    assert encoded == [{("f:status", "f:phase")}]  # only the new manager's
    by_manager = {m["manager"]: m for m in entry.obj["metadata"]["managedFields"]}
    assert by_manager["creator"]["fieldsV1"] == real_to(real_from(by_manager["creator"]["fieldsV1"]))

    # managedFields a client wrote itself (keys out of order) are decoded, and written back
    # in normal form, as before
    spec = entry.obj["spec"]
    own = [
        {
            "manager": "client",
            "operation": "Update",
            "apiVersion": "shortcuts.example.com/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:size": {}, "f:replicas": {}}},
        }
    ]
    body = gadget() | {
        "metadata": {"name": "g", "managedFields": own, "resourceVersion": entry.obj["metadata"]["resourceVersion"]}
    }
    body["spec"] = spec
    plane.api.update(rt, "default", "g", body, opts("client"))
    decoded.clear()
    after = plane.api.patch(rt, "default", "g", MERGE_PATCH, {"spec": {"cpu": "2"}}, opts("other"))
    assert own[0]["fieldsV1"] in decoded
    (client,) = [m for m in after.obj["metadata"]["managedFields"] if m["manager"] == "client"]
    assert list(client["fieldsV1"]["f:spec"]) == ["f:replicas", "f:size"]


def test_json_copy_is_deepcopy_for_json_data() -> None:
    data = {"a": [1, {"b": None, "c": [True, 1.5, "x"]}], "n": math.nan, "big": 2**80}
    copied = json_copy(data)
    assert repr(copied) == repr(copy.deepcopy(data))  # (repr: NaN is not equal to itself)
    assert math.isnan(copied["n"]) and copied["big"] == 2**80
    copied["a"][1]["c"].append("y")
    assert data["a"][1]["c"] == [True, 1.5, "x"]
