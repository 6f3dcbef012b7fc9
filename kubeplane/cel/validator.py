"""`x-kubernetes-validations` on custom resources: the CRD-time check of every rule of a
version's schema, and the evaluation of the rules on each create and update, as
apiextensions-apiserver's schema/cel Validator does it:

- a rule sees `self` (the value at its node) and, on updates where an old value can be
  correlated (object properties, map entries, items of `x-kubernetes-list-type: map` lists
  by key), `oldSelf`; transition rules (rules using oldSelf) are skipped without one unless
  `optionalOldSelf` makes oldSelf an optional;
- a false rule reports its message (or messageExpression) at the node (or its fieldPath)
  with its reason and the node's type as the value (`Invalid value: "object": ...`);
- errors of rules whose value did not change are only warnings (CRDValidationRatcheting,
  on by default in 1.32), except for transition rules;
- the evaluation cost is bounded per rule and per object; past it validation stops.

Validators are compiled once per schema object and cached."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from ..errors import FieldError, forbidden, invalid, required
from ..jsondata import unchanged
from .interp import Activation
from .program import PER_CALL_LIMIT
from .rules import CompiledRule, compile_errors, compile_rule, spec_errors
from .schema_types import Converter, converter, is_resource
from .values import CelError, CostExceeded, Optional

RUNTIME_BUDGET = 10_000_000  # celconfig.RuntimeCELCostBudget: per object
MAX_MESSAGE_BYTES = 5 * 1024
NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_BLOCKING_KINDS = frozenset({"Unsupported value", "Required value", "Too long", "Too many"})


# ------------------------------------------------------------------ CRD-time checks


def crd_rule_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """Errors for the x-kubernetes-validations of one version's openAPIV3Schema at `path`."""
    schema_errs: list[FieldError] = []
    cel_errs: list[FieldError] = []
    _check_node(schema, path, True, None, schema_errs, cel_errs)
    return schema_errs + cel_errs


def _check_node(
    schema: Any,
    path: str,
    resource_root: bool,
    uncorrelatable: str | None,
    schema_errs: list[FieldError],
    cel_errs: list[FieldError],
) -> None:
    if not isinstance(schema, dict):
        return
    before = len(schema_errs)
    for name, prop in (schema.get("properties") or {}).items():
        _check_node(prop, f"{path}.properties[{name}]", _embedded(prop), uncorrelatable, schema_errs, cel_errs)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        apath = f"{path}.additionalProperties"
        _check_node(additional, apath, _embedded(additional), uncorrelatable, schema_errs, cel_errs)
    items = schema.get("items")
    if isinstance(items, dict):
        # only the items of map lists can be correlated with their old values
        item_uncorrelatable = uncorrelatable
        if schema.get("x-kubernetes-list-type") != "map" and item_uncorrelatable is None:
            item_uncorrelatable = path
        _check_node(items, f"{path}.items", _embedded(items), item_uncorrelatable, schema_errs, cel_errs)
    rules = schema.get("x-kubernetes-validations")
    if rules is None:
        return
    schema_errs.extend(spec_errors(rules, schema, path))
    # like apiextensions: no CEL compilation where the schema at or below this node has errors
    if len(schema_errs) == before and isinstance(rules, list):
        cel_errs.extend(compile_errors(rules, schema, path, resource_root=resource_root, uncorrelatable=uncorrelatable))


def _embedded(schema: Any) -> bool:
    return isinstance(schema, dict) and is_resource(schema)


# ------------------------------------------------------------------ the validator tree


@dataclass
class NodeValidator:
    schema: dict[str, Any]
    resource_root: bool
    rules: list[CompiledRule] = field(default_factory=list)
    properties: dict[str, NodeValidator] = field(default_factory=dict)
    items: NodeValidator | None = None
    additional: NodeValidator | None = None
    convert: Converter | None = None  # JSON -> CEL value of this node (None: the JSON as it is)
    all_of: list[NodeValidator] = field(default_factory=list)  # rules declared in allOf schemas

    @property
    def type_name(self) -> str:
        return str(self.schema.get("type") or "")

    @cached_property
    def uses_old(self) -> bool:
        # (asked on every evaluation; the rules are fixed once the tree is built)
        return any(r.transition for r in self.rules)

    @cached_property
    def old_rules(self) -> list[CompiledRule]:
        """The rules whose answer can change while the value stays the same (they read oldSelf)."""
        return [r for r in self.rules if r.transition or r.optional_old_self]

    @cached_property
    def old_below(self) -> bool:
        """Whether a rule at or below this node reads oldSelf (its answer can change while the
        value stays the same, so an unchanged value is still evaluated)."""
        children = [*self.properties.values(), *self.all_of, self.items, self.additional]
        return any(r.transition or r.optional_old_self for r in self.rules) or any(
            c.old_below for c in children if c is not None
        )


def build(schema: Any, resource_root: bool, node_schema: Any = None) -> NodeValidator | None:
    """The validators of a schema subtree; None where no rule is declared. Rules come from
    `schema`; types and values from `node_schema` (the same, except for the schemas of an
    allOf, whose rules apply to the node's own values, as in apiextensions)."""
    node_schema = schema if node_schema is None else node_schema
    if not isinstance(schema, dict) or not isinstance(node_schema, dict):
        return None
    node = NodeValidator(node_schema, resource_root)
    rules = schema.get("x-kubernetes-validations")
    if isinstance(rules, list):
        node.rules = [compile_rule(r, node_schema, resource_root) for r in rules if isinstance(r, dict)]
        node.convert = converter(node_schema, resource_root)
    node_props = node_schema.get("properties") or {}
    for name, prop in (schema.get("properties") or {}).items():
        if name in node_props:  # (rules in an allOf only reach fields the node itself declares)
            child = build(prop, _embedded(node_props[name]), node_props[name])
            if child is not None:
                node.properties[name] = child
    additional, node_additional = schema.get("additionalProperties"), node_schema.get("additionalProperties")
    if isinstance(additional, dict) and isinstance(node_additional, dict):
        node.additional = build(additional, _embedded(node_additional), node_additional)
    items, node_items = schema.get("items"), node_schema.get("items")
    if isinstance(items, dict) and isinstance(node_items, dict):
        node.items = build(items, _embedded(node_items), node_items)
    for sub in schema.get("allOf") or []:
        nested = build(sub, resource_root, node_schema)
        if nested is not None:
            node.all_of.append(nested)
    if node.rules or node.properties or node.items or node.additional or node.all_of:
        return node
    return None


_CACHE: OrderedDict[int, tuple[dict[str, Any], NodeValidator | None]] = OrderedDict()
_CACHE_SIZE = 256


def validator_for(schema: dict[str, Any]) -> NodeValidator | None:
    """The (cached) validator for a resource's schema; keyed by the schema object itself."""
    key = id(schema)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is schema:
        _CACHE.move_to_end(key)
        return hit[1]
    validator = build(schema, resource_root=True)
    _CACHE[key] = (schema, validator)
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return validator


# ------------------------------------------------------------------ ratcheting


class _Corr:
    """A value correlated with its old value (apiserver's CorrelatedObject)."""

    __slots__ = ("_equal", "old", "value")

    def __init__(self, value: Any, old: Any) -> None:
        self.value, self.old = value, old
        self._equal: bool | None = None

    def equal(self) -> bool:
        if self._equal is None:
            self._equal = bool(self.value == self.old)
        return self._equal


class _Ratchet:
    """The value at a node correlated with its old one, and its parent's (not changed once
    made). (A plain class: one is made per node evaluated, and a frozen dataclass's
    constructor costs several times as much.)"""

    __slots__ = ("current", "parent")

    def __init__(self, current: _Corr | None = None, parent: _Corr | None = None) -> None:
        self.current = current
        self.parent = parent

    def should_ratchet(self) -> bool:
        corr = self.current if self.current is not None else self.parent
        return corr is not None and corr.equal()

    def key(self, name: str) -> _Ratchet:
        cur = self.current
        if cur is None:
            return self
        if self.parent is None and name in ("apiVersion", "kind"):
            return _Ratchet()  # converted objects always agree on these; never ratchet them
        child = None
        if isinstance(cur.value, dict) and isinstance(cur.old, dict) and name in cur.value and name in cur.old:
            child = _Corr(cur.value[name], cur.old[name])
        return _Ratchet(child, cur)

    def index(self, i: int, old_item: Any, has_old: bool) -> _Ratchet:
        cur = self.current
        if cur is None:
            return self
        child = _Corr(cur.value[i], old_item) if has_old else None
        return _Ratchet(child, cur)


# ------------------------------------------------------------------ evaluation


@dataclass
class _Run:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    remaining: int = field(default_factory=lambda: RUNTIME_BUDGET)  # (read when a run starts)
    stopped: bool = False

    def done(self) -> bool:
        # (a method, so type checkers do not assume the flag keeps a value across calls)
        return self.stopped


def validate_object(
    schema: dict[str, Any],
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    prior: list[FieldError],
    warnings: list[str] | None = None,
) -> list[FieldError]:
    """Evaluate every rule of `schema` on `obj` (an update when `old` is given). `prior` are the
    object's other validation errors: some of them keep the rules from running at all."""
    outcome = evaluate_object(schema, obj, old, prior)
    if warnings is not None:
        warnings.extend(outcome.warnings)
    return outcome.errors


@dataclass
class Outcome:
    errors: list[FieldError]
    warnings: list[str]
    # an upper bound of what evaluating every rule of the object costs, when it passed them all
    # without a warning (what a later write may rely on: evaluate_object's old_cost); else None
    cost: int | None


def evaluate_object(
    schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None, prior: list[FieldError], *,
    old_cost: int | None = None,
) -> Outcome:  # fmt: skip
    """validate_object, with what it found. `old_cost`: `old` passed every rule of this same schema
    without an error or a warning, at most at this cost. Then a value equal to its old self (the
    same JSON) under nodes whose rules never read oldSelf passed already and is not evaluated
    again; when the runtime budget could matter (the old cost plus this one's above it) every
    rule is evaluated, so the answer is always the one a full evaluation gives."""
    validator = validator_for(schema)
    if validator is None:
        return Outcome([], [], 0)
    blocked = blocking_error(prior)
    if blocked is not None:
        return Outcome([blocked], [], None)
    skip = old is not None and old_cost is not None
    run = _evaluate(validator, obj, old, skip)
    budget = RUNTIME_BUDGET
    spent = budget - run.remaining
    if skip and (run.stopped or (old_cost or 0) + spent > budget):
        run, skip = _evaluate(validator, obj, old, False), False  # the skipped rules' cost could count
        spent = budget - run.remaining
    clean = not run.errors and not run.warnings
    # what was skipped cost at most old_cost when `old` was evaluated: the bound holds
    cost = (spent + (old_cost or 0) if skip else spent) if clean else None
    return Outcome(run.errors, run.warnings, cost)


def _evaluate(validator: NodeValidator, obj: dict[str, Any], old: dict[str, Any] | None, skip: bool) -> _Run:
    run = _Run()
    ratchet = _Ratchet(_Corr(obj, old)) if old is not None else _Ratchet()
    _validate(validator, obj, old, "", ratchet, run, skip)
    return run


def blocking_error(errs: list[FieldError]) -> FieldError | None:
    """The error apiextensions adds instead of running CEL when the object already fails in a
    way that makes rule results meaningless (missing or mistyped values, too many, too long)."""
    for err in errs:
        if err.kind in _BLOCKING_KINDS or " in body must be of type " in err.detail:
            return invalid("<nil>", "null", NOT_CHECKED)
    return None


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _passed(node: NodeValidator, item: Any, old_item: Any, skip: bool) -> bool:
    """Whether `item` is known to pass `node`'s rules: its old self, which passed them all (skip),
    is the same JSON, and no rule below reads oldSelf."""
    return skip and old_item is not None and not node.old_below and unchanged(item, old_item)


def _validate(
    node: NodeValidator, value: Any, old: Any, path: str, ratchet: _Ratchet, run: _Run, skip: bool = False
) -> None:
    if value is None or run.done():
        return
    if node.rules:
        # a value equal to its old self (which passed every rule: skip) passed this node's rules
        # that do not read oldSelf already; only those that do run again (as _passed, one level in)
        again = skip and old is not None and unchanged(value, old)
        _evaluate_rules(node, value, old, path, ratchet, run, only_old=again)
        if run.done():
            return
    for sub in node.all_of:
        # like apiextensions: allOf errors ratchet only on an unchanged parent, not on the node itself
        _validate(sub, value, old, path, _Ratchet(None, ratchet.parent), run, skip)
        if run.done():
            return
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        if node.additional is not None:
            for key, item in value.items():
                old_item = old_map.get(key)
                if _passed(node.additional, item, old_item, skip):
                    continue
                _validate(node.additional, item, old_item, f"{path}[{key}]", ratchet.key(key), run, skip)
                if run.done():
                    return
        for key, child in node.properties.items():
            item = value.get(key)
            if item is not None:
                old_item = old_map.get(key)
                if _passed(child, item, old_item, skip):
                    continue
                _validate(child, item, old_item, _child(path, key), ratchet.key(key), run, skip)
                if run.done():
                    return
    elif isinstance(value, list) and node.items is not None:
        keys = node.schema.get("x-kubernetes-list-map-keys") or ()
        by_key = _old_items_by_key(old, keys) if node.schema.get("x-kubernetes-list-type") == "map" else None
        for i, item in enumerate(value):
            old_item = by_key.get(_item_key(item, keys)) if by_key is not None else None
            if _passed(node.items, item, old_item, skip):
                continue
            correlated = ratchet.index(i, old_item, old_item is not None)
            _validate(node.items, item, old_item, f"{path}[{i}]", correlated, run, skip)
            if run.done():
                return


def _item_key(item: Any, keys: Any) -> Any:
    if not isinstance(item, dict):
        return None
    return tuple(repr(item.get(k)) for k in keys)


def _old_items_by_key(old: Any, keys: Any) -> dict[Any, Any]:
    if not isinstance(old, list):
        return {}
    return {_item_key(item, keys): item for item in old if isinstance(item, dict)}


# ------------------------------------------------------------------ rules on unchanged values

# What a rule that reads oldSelf gave on a value equal to its old self: a rule is a pure function
# of self and oldSelf, so on the same value (the same JSON: key order, types) it passes again at
# the same cost. Only passes are kept (a failure is reported, with its message, every time); the
# cost is spent from the object's budget as evaluating it would. Most such rules are immutability
# checks (`self == oldSelf`) on values every object of a kind shares (a WorkloadDeployment's
# network interface), so one evaluation serves every status write of every object.
_PASSED: OrderedDict[tuple[int, Any], tuple[CompiledRule, int]] = OrderedDict()
_PASSED_SIZE = 4096
_PASSED_MAX_BYTES = 2048  # (larger values are evaluated each time, not kept)
_SCALARS = (str, int, float, bool, type(None))


def _same_value_key(value: Any) -> Any:
    """A key for `value` that tells apart what the JSON does (True, 1 and 1.0; key order), or None
    when it is not to be kept."""
    if isinstance(value, _SCALARS):
        return (type(value), value)  # (a float NaN never finds itself: evaluated each time)
    try:
        data = orjson.dumps(value)
    except (orjson.JSONEncodeError, RecursionError):
        return None
    return data if len(data) <= _PASSED_MAX_BYTES else None


def _passed_before(rule: CompiledRule, key: Any) -> int | None:
    """The cost at which `rule` passed on the value keyed `key` (itself as oldSelf), if it did."""
    found = _PASSED.get((id(rule), key))
    if found is None or found[0] is not rule:
        return None
    return found[1]


def _remember_pass(rule: CompiledRule, key: Any, cost: int) -> None:
    if len(_PASSED) >= _PASSED_SIZE:
        _PASSED.popitem(last=False)
    _PASSED[(id(rule), key)] = (rule, cost)  # (holding the rule keeps its id its own)


def _evaluate_rules(
    node: NodeValidator, value: Any, old: Any, path: str, ratchet: _Ratchet, run: _Run, *, only_old: bool = False
) -> None:
    """Evaluate the node's rules on `value`; `only_old`: only those that read oldSelf (the value is
    its old self: one such rule that passed on the same value before is not evaluated again)."""
    rules = node.old_rules if only_old else node.rules
    if not rules:
        return
    shown = path or "<nil>"
    if run.remaining <= 0:
        run.errors.append(invalid(shown, node.type_name, OUT_OF_BUDGET))
        run.stopped = True
        return
    same_key = _same_value_key(value) if only_old else None
    if same_key is not None:
        pending = []
        for rule in rules:
            cost = _passed_before(rule, same_key)
            if cost is None:
                pending.append(rule)
                continue
            if cost > run.remaining:  # (as an evaluation of it would find)
                run.errors.append(invalid(shown, node.type_name, OUT_OF_BUDGET))
                run.stopped = True
                return
            run.remaining -= cost
        if not pending:
            return
        rules = pending
    try:
        convert = node.convert
        self_value = convert(value) if convert is not None else value
        old_value = None
        if old is not None and node.uses_old:
            old_value = convert(old) if convert is not None else old
    except CelError as exc:
        for rule in rules:
            run.errors.append(invalid(shown, node.type_name, f"{exc.message} evaluating rule: {rule.error_string()}"))
        return
    for rule in rules:
        if rule.program is None:
            if rule.error:
                run.errors.append(invalid(shown, node.type_name, f"rule compile error: {rule.error}"))
            continue
        if rule.transition and old is None and not rule.optional_old_self:
            continue  # transition rules need an old value
        env: dict[str, Any] = {"self": self_value}
        if rule.optional_old_self:
            env["oldSelf"] = Optional(old_value, True) if old is not None else Optional()
        elif old is not None and rule.transition:
            env["oldSelf"] = old_value
        act = Activation(env, PER_CALL_LIMIT)
        try:
            result = rule.program.evaluate(act)
        except CostExceeded as exc:
            detail = f"'{exc}': no further validation rules will be run due to call cost exceeds limit for rule: "
            run.errors.append(invalid(shown, node.type_name, detail + rule.error_string()))
            run.stopped = True
            return
        except CelError as exc:
            run.remaining -= act.cost
            if exc.message.startswith("no such overload"):
                detail = (
                    f"'{exc.message}': call arguments did not match a supported operator, function or macro "
                    f"signature for rule: {rule.error_string()}"
                )
            else:
                detail = f"{exc.message} evaluating rule: {rule.error_string()}"
            run.errors.append(invalid(shown, node.type_name, detail))
            continue
        if act.cost > run.remaining:
            run.errors.append(invalid(shown, node.type_name, OUT_OF_BUDGET))
            run.stopped = True
            return
        run.remaining -= act.cost
        if result is True:
            if same_key is not None:
                _remember_pass(rule, same_key, act.cost)
            continue
        target = _child(path, rule.field_path) if rule.field_path else shown
        detail = _message(rule, self_value, old_value if old is not None else None, run) or _default_message(rule)
        err = _error_for_reason(rule.reason, target, node.type_name, detail)
        if not rule.transition and ratchet.should_ratchet():
            run.warnings.append(str(err))
        else:
            run.errors.append(err)


def _default_message(rule: CompiledRule) -> str:
    return rule.message or f"failed rule: {rule.text.strip()}"


def _message(rule: CompiledRule, self_value: Any, old_value: Any, run: _Run) -> str | None:
    """The evaluated messageExpression, or None to fall back to the static message."""
    if rule.message_program is None:
        return None
    env: dict[str, Any] = {"self": self_value}
    if old_value is not None:
        env["oldSelf"] = old_value
    act = Activation(env, min(PER_CALL_LIMIT, max(run.remaining, 0)))
    try:
        text = rule.message_program.evaluate(act)
    except (CelError, CostExceeded):
        return None
    finally:
        run.remaining -= act.cost
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or "\n" in text or len(text.encode()) > MAX_MESSAGE_BYTES:
        return None
    return text


def _error_for_reason(reason: str | None, path: str, type_name: str, detail: str) -> FieldError:
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return FieldError("Duplicate value", path, "", type_name, True)
    return invalid(path, type_name, detail)
