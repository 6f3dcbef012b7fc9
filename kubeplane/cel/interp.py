"""The evaluator: a checked syntax tree is turned once into nested Python closures (one per
node), so evaluating a rule is a chain of plain calls with no per-node dispatch.

Semantics follow cel-spec: `&&`/`||` and `all`/`exists` absorb errors when the other side
decides the result, `exists_one`/`map`/`filter` propagate them, `?:` and the optional
`or`/`orValue` evaluate only what they need. Every call, selection and comprehension step
is charged to the activation's cost counter; past the limit evaluation stops with
CostExceeded, so a hostile rule cannot hold the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .library import TYPE_NAMES
from .nodes import (
    And,
    Call,
    Comprehension,
    Conditional,
    Has,
    Ident,
    Index,
    ListLit,
    Literal,
    MapLit,
    Node,
    Or,
    Select,
)
from .registry import Overload, Registry
from .values import NONE, CelError, CelType, CostExceeded, NoSuchOverload, Optional, kind_of, map_lookup

_MISSING = object()


class Activation:
    """Variable bindings plus the running cost of one evaluation."""

    __slots__ = ("cost", "limit", "vars")

    def __init__(self, variables: dict[str, Any], limit: int) -> None:
        self.vars = variables
        self.cost = 0
        self.limit = limit

    def charge(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CostExceeded()


Eval = Callable[[Activation], Any]


def plan(node: Node, registry: Registry) -> Eval:
    return _Planner(registry).plan(node)


def _go_value(value: Any) -> str:
    """How Go's %v shows a map key in `no such key` errors."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Planner:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def plan(self, node: Node) -> Eval:
        method = getattr(self, "plan_" + type(node).__name__)
        result: Eval = method(node)
        return result

    # ----------------------------------------------------------------- leaves
    def plan_Literal(self, node: Literal) -> Eval:
        value = node.value
        return lambda a: value

    def plan_Ident(self, node: Ident) -> Eval:
        name = node.name
        fallback = CelType(name) if name in TYPE_NAMES else None

        def ev(a: Activation) -> Any:
            value = a.vars.get(name, _MISSING)
            if value is _MISSING:
                if fallback is not None:
                    return fallback
                raise CelError(f"no such attribute(s): {name}")
            return value

        return ev

    # ----------------------------------------------------------------- access
    def plan_Select(self, node: Select) -> Eval:
        operand = self.plan(node.operand)
        name, optional = node.field, node.optional

        def select(value: Any) -> Any:
            if isinstance(value, dict):
                found = value.get(name, _MISSING)
                if found is _MISSING:
                    if optional:
                        return NONE
                    raise CelError(f"no such key: {name}")
                return Optional(found, True) if optional else found
            raise CelError(f"invalid type for field selection: {kind_of(value)}")

        def ev(a: Activation) -> Any:
            a.charge(1)
            value = operand(a)
            if isinstance(value, Optional):
                if not value.present:
                    return NONE
                inner = select(value.value)
                return inner if optional else Optional(inner, True)
            return select(value)

        return ev

    def plan_Index(self, node: Index) -> Eval:
        operand, index = self.plan(node.operand), self.plan(node.index)
        optional = node.optional

        def lookup(value: Any, key: Any) -> Any:
            if isinstance(value, list):
                kind = kind_of(key)
                if kind == "double" and key.is_integer():
                    key = int(key)
                elif kind not in ("int", "uint"):
                    raise NoSuchOverload()
                if not 0 <= key < len(value):
                    if optional:
                        return NONE
                    raise CelError(f"index '{key}' out of range in list size '{len(value)}'")
                return Optional(value[key], True) if optional else value[key]
            if isinstance(value, dict):
                found, item = map_lookup(value, key)
                if not found:
                    if optional:
                        return NONE
                    raise CelError(f"no such key: {_go_value(key)}")
                return Optional(item, True) if optional else item
            raise NoSuchOverload()

        def ev(a: Activation) -> Any:
            a.charge(1)
            value, key = operand(a), index(a)
            if isinstance(value, Optional):
                if not value.present:
                    return NONE
                inner = lookup(value.value, key)
                return inner if optional else Optional(inner, True)
            return lookup(value, key)

        return ev

    # ----------------------------------------------------------------- calls
    def plan_Call(self, node: Call) -> Eval:
        member = node.target is not None
        parts = ([self.plan(node.target)] if node.target is not None else []) + [self.plan(x) for x in node.args]
        overloads = node.overloads
        if overloads is None:
            overloads = self.registry.find(node.function, member=member, arity=len(parts))
        if not overloads:
            name = node.function
            raise CelError(f"no such overload: {name}")  # the checker reports this first
        if member and node.function in ("or", "orValue") and len(parts) == 2:
            return _short_circuit_or(node.function, parts[0], parts[1])
        if len(parts) == 1:
            return _call1(parts[0], overloads)
        if len(parts) == 2:
            return _call2(parts[0], parts[1], overloads)
        return _calln(parts, overloads)

    # ----------------------------------------------------------------- literals
    def plan_ListLit(self, node: ListLit) -> Eval:
        elements = [(self.plan(e), i in node.optional) for i, e in enumerate(node.elements)]
        if not node.optional:
            plain = [e for e, _ in elements]
            return lambda a: [e(a) for e in plain]

        def ev(a: Activation) -> list[Any]:
            out = []
            for e, optional in elements:
                value = e(a)
                if optional:
                    if not isinstance(value, Optional):
                        raise NoSuchOverload()
                    if value.present:
                        out.append(value.value)
                else:
                    out.append(value)
            return out

        return ev

    def plan_MapLit(self, node: MapLit) -> Eval:
        entries = [(self.plan(k), self.plan(v), opt) for k, v, opt in node.entries]

        def ev(a: Activation) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for k, v, optional in entries:
                key = k(a)
                if kind_of(key) not in ("string", "int", "uint", "bool"):
                    raise CelError(f"unsupported key type: {kind_of(key)}")
                if map_lookup(out, key)[0]:
                    raise CelError(f"Failed with repeated key: {_go_value(key)}")
                value = v(a)
                if optional:
                    if not isinstance(value, Optional):
                        raise NoSuchOverload()
                    if not value.present:
                        continue
                    value = value.value
                out[key] = value
            return out

        return ev

    # ----------------------------------------------------------------- logic
    def plan_And(self, node: And) -> Eval:
        return _logical(self.plan(node.left), self.plan(node.right), decisive=False)

    def plan_Or(self, node: Or) -> Eval:
        return _logical(self.plan(node.left), self.plan(node.right), decisive=True)

    def plan_Conditional(self, node: Conditional) -> Eval:
        cond, then, otherwise = self.plan(node.cond), self.plan(node.then), self.plan(node.otherwise)

        def ev(a: Activation) -> Any:
            c = cond(a)
            if c is True:
                return then(a)
            if c is False:
                return otherwise(a)
            raise NoSuchOverload()

        return ev

    def plan_Has(self, node: Has) -> Eval:
        operand, name = self.plan(node.operand), node.field

        def ev(a: Activation) -> bool:
            a.charge(1)
            value = operand(a)
            if isinstance(value, Optional):
                return value.present and isinstance(value.value, dict) and name in value.value
            if isinstance(value, dict):
                return name in value
            raise CelError("invalid type for field selection.")

        return ev

    def plan_Comprehension(self, node: Comprehension) -> Eval:
        rng = self.plan(node.range)
        body = self.plan(node.body)
        flt = self.plan(node.filter) if node.filter is not None else None
        return _COMPREHENSIONS[node.macro](rng, node.var, body, flt)


# --------------------------------------------------------------------- call helpers


def _invoke(ov: Overload, a: Activation, args: tuple[Any, ...]) -> Any:
    if ov.charged:
        return ov.impl(*args, cost=a.charge)
    return ov.impl(*args)


def _call1(arg: Eval, overloads: list[Overload]) -> Eval:
    table = [(ov.kinds[0], ov) for ov in overloads]

    def ev(a: Activation) -> Any:
        a.charge(1)
        x = arg(a)
        kx = kind_of(x)
        for k, ov in table:
            if k is None or k == kx:
                return ov.impl(x, cost=a.charge) if ov.charged else ov.impl(x)
        raise NoSuchOverload()

    return ev


def _call2(left: Eval, right: Eval, overloads: list[Overload]) -> Eval:
    table = [(ov.kinds[0], ov.kinds[1], ov) for ov in overloads]

    def ev(a: Activation) -> Any:
        a.charge(1)
        x, y = left(a), right(a)
        kx, ky = kind_of(x), kind_of(y)
        for k0, k1, ov in table:
            if (k0 is None or k0 == kx) and (k1 is None or k1 == ky):
                return ov.impl(x, y, cost=a.charge) if ov.charged else ov.impl(x, y)
        raise NoSuchOverload()

    return ev


def _calln(parts: list[Eval], overloads: list[Overload]) -> Eval:
    def ev(a: Activation) -> Any:
        a.charge(1)
        args = tuple(p(a) for p in parts)
        for ov in overloads:
            if ov.accepts(args):
                return _invoke(ov, a, args)
        raise NoSuchOverload()

    return ev


def _short_circuit_or(function: str, target: Eval, other: Eval) -> Eval:
    def ev(a: Activation) -> Any:
        a.charge(1)
        opt = target(a)
        if not isinstance(opt, Optional):
            raise NoSuchOverload()
        if opt.present:
            return opt if function == "or" else opt.value
        alternative = other(a)
        if function == "or" and not isinstance(alternative, Optional):
            raise NoSuchOverload()
        return alternative

    return ev


def _logical(left: Eval, right: Eval, *, decisive: bool) -> Eval:
    """`&&` (decisive=False) and `||` (decisive=True): commutative, errors absorbed when the
    other operand alone decides the result."""

    def ev(a: Activation) -> Any:
        try:
            lv: Any = left(a)
        except CelError as exc:
            lv = exc
        if lv is decisive:
            return decisive
        try:
            rv: Any = right(a)
        except CelError as exc:
            rv = exc
        if rv is decisive:
            return decisive
        if lv is (not decisive) and rv is (not decisive):
            return not decisive
        if isinstance(lv, CelError):
            raise lv
        if isinstance(rv, CelError):
            raise rv
        raise NoSuchOverload()

    return ev


# --------------------------------------------------------------------- comprehensions


def _range_items(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value)
    raise CelError(f"cannot range over a value of type {kind_of(value)}")


def _quantifier(decisive: bool) -> Callable[..., Eval]:
    """all (decisive=False) and exists (decisive=True)."""

    def build(rng: Eval, var: str, body: Eval, _flt: Eval | None) -> Eval:
        def ev(a: Activation) -> bool:
            items = _range_items(rng(a))
            saved = a.vars.get(var, _MISSING)
            error: CelError | None = None
            try:
                for item in items:
                    a.charge(1)
                    a.vars[var] = item
                    try:
                        result = body(a)
                    except CelError as exc:
                        error = error or exc
                        continue
                    if result is decisive:
                        return bool(decisive)
                    if result is not (not decisive):
                        error = error or NoSuchOverload()
            finally:
                _restore(a, var, saved)
            if error is not None:
                raise error
            return not decisive

        return ev

    return build


def _exists_one(rng: Eval, var: str, body: Eval, _flt: Eval | None) -> Eval:
    def ev(a: Activation) -> bool:
        items = _range_items(rng(a))
        saved = a.vars.get(var, _MISSING)
        count = 0
        try:
            for item in items:
                a.charge(1)
                a.vars[var] = item
                result = body(a)
                if result is True:
                    count += 1
                elif result is not False:
                    raise NoSuchOverload()
        finally:
            _restore(a, var, saved)
        return count == 1

    return ev


def _map(rng: Eval, var: str, body: Eval, flt: Eval | None) -> Eval:
    def ev(a: Activation) -> list[Any]:
        items = _range_items(rng(a))
        saved = a.vars.get(var, _MISSING)
        out = []
        try:
            for item in items:
                a.charge(1)
                a.vars[var] = item
                if flt is not None:
                    keep = flt(a)
                    if keep is False:
                        continue
                    if keep is not True:
                        raise NoSuchOverload()
                out.append(body(a))
        finally:
            _restore(a, var, saved)
        return out

    return ev


def _filter(rng: Eval, var: str, body: Eval, _flt: Eval | None) -> Eval:
    def ev(a: Activation) -> list[Any]:
        items = _range_items(rng(a))
        saved = a.vars.get(var, _MISSING)
        out = []
        try:
            for item in items:
                a.charge(1)
                a.vars[var] = item
                keep = body(a)
                if keep is True:
                    out.append(item)
                elif keep is not False:
                    raise NoSuchOverload()
        finally:
            _restore(a, var, saved)
        return out

    return ev


def _opt_map(flat: bool) -> Callable[..., Eval]:
    def build(rng: Eval, var: str, body: Eval, _flt: Eval | None) -> Eval:
        def ev(a: Activation) -> Any:
            opt = rng(a)
            if not isinstance(opt, Optional):
                raise NoSuchOverload()
            if not opt.present:
                return NONE
            saved = a.vars.get(var, _MISSING)
            a.vars[var] = opt.value
            try:
                result = body(a)
            finally:
                _restore(a, var, saved)
            if flat:
                if not isinstance(result, Optional):
                    raise NoSuchOverload()
                return result
            return Optional(result, True)

        return ev

    return build


def _restore(a: Activation, var: str, saved: Any) -> None:
    if saved is _MISSING:
        a.vars.pop(var, None)
    else:
        a.vars[var] = saved


_COMPREHENSIONS: dict[str, Callable[..., Eval]] = {
    "all": _quantifier(decisive=False),
    "exists": _quantifier(decisive=True),
    "exists_one": _exists_one,
    "map": _map,
    "filter": _filter,
    "optMap": _opt_map(flat=False),
    "optFlatMap": _opt_map(flat=True),
}

__all__ = ["Activation", "CostExceeded", "Eval", "plan"]
