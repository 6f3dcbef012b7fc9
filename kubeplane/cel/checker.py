"""The type checker: what cel-go's checker reports when a CRD is written (undeclared
references, undefined fields of schema objects, calls no overload accepts, heterogeneous
list and map literals, malformed duration/timestamp/regex literals), with cel-go's wording.

It also resolves namespaced function names (`optional.of`, `sets.contains`, ...) in place,
so the interpreter sees one global function, and records whether `oldSelf` is referenced."""

from __future__ import annotations

from dataclasses import dataclass, field

from .celtypes import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    STRING,
    UINT,
    CelT,
    ListT,
    MapT,
    ObjT,
    OptT,
    Prim,
    Subst,
    TypeT,
    substitute,
    unify,
)
from .library import NAMESPACES, TYPE_NAMES, UNSUPPORTED_FUNCTIONS, UNSUPPORTED_NAMESPACES
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
from .regex import RegexError, compile_re2
from .registry import Registry
from .timeutil import parse_go_duration, parse_rfc3339
from .values import UInt


@dataclass
class CheckError:
    pos: int
    message: str


@dataclass
class Checker:
    registry: Registry
    variables: dict[str, CelT]
    errors: list[CheckError] = field(default_factory=list)
    referenced: set[str] = field(default_factory=set)  # declared variables the expression reads
    scopes: list[dict[str, CelT]] = field(default_factory=list)

    def error(self, node: Node, message: str) -> CelT:
        self.errors.append(CheckError(node.pos, message))
        return DYN

    def lookup(self, name: str) -> CelT | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.variables:
            self.referenced.add(name)
            return self.variables[name]
        return None

    # ----------------------------------------------------------------- nodes
    def check(self, node: Node) -> CelT:
        if isinstance(node, Literal):
            return _literal_type(node.value)
        if isinstance(node, Ident):
            return self.ident(node)
        if isinstance(node, Select):
            return self.select(node, self.check(node.operand))
        if isinstance(node, Index):
            return self.index(node)
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, ListLit):
            return self.list_literal(node)
        if isinstance(node, MapLit):
            return self.map_literal(node)
        if isinstance(node, (And, Or)):
            op = "_&&_" if isinstance(node, And) else "_||_"
            left, right = self.check(node.left), self.check(node.right)
            if not (unify(BOOL, left, {}) and unify(BOOL, right, {})):
                return self.error(node, f"found no matching overload for '{op}' applied to '({left}, {right})'")
            return BOOL
        if isinstance(node, Conditional):
            return self.conditional(node)
        if isinstance(node, Has):
            return self.has(node)
        if isinstance(node, Comprehension):
            return self.comprehension(node)
        return self.error(node, "unsupported expression")

    def ident(self, node: Ident) -> CelT:
        t = self.lookup(node.name)
        if t is not None:
            return t
        if node.name in TYPE_NAMES:
            return TypeT(Prim(node.name))
        return self.error(node, f"undeclared reference to '{node.name}' (in container '')")

    def select(self, node: Select, operand: CelT) -> CelT:
        if isinstance(operand, OptT) and not node.optional:
            # a field of an optional value is an optional field (a.?b.c)
            return OptT(self._field(node, operand.inner))
        t = self._field(node, operand.inner if isinstance(operand, OptT) else operand)
        return OptT(t) if node.optional else t

    def _field(self, node: Node, operand: CelT) -> CelT:
        name = node.field if isinstance(node, (Select, Has)) else ""
        if isinstance(operand, ObjT):
            t = operand.fields.get(name)
            if t is None:
                return self.error(node, f"undefined field '{name}'")
            if isinstance(node, (Select, Has)):
                # the interpreter reads JSON objects as they are: address the property itself
                node.field = operand.originals.get(name, name)
            return t
        if isinstance(operand, MapT):
            if not unify(operand.key, STRING, {}):
                return self.error(node, f"type '{operand}' does not support field selection")
            return operand.val
        if operand is DYN or operand is NULL:
            return DYN
        return self.error(node, f"type '{operand}' does not support field selection")

    def index(self, node: Index) -> CelT:
        operand, index = self.check(node.operand), self.check(node.index)
        wrap = isinstance(operand, OptT)
        base = operand.inner if isinstance(operand, OptT) else operand
        subst: Subst = {}
        if isinstance(base, ListT) and unify(INT, index, subst):
            t = base.elem
        elif isinstance(base, MapT) and unify(base.key, index, subst):
            t = base.val
        elif base is DYN:
            t = DYN
        else:
            return self.error(node, f"found no matching overload for '_[_]' applied to '({operand}, {index})'")
        return OptT(t) if (wrap or node.optional) else t

    def conditional(self, node: Conditional) -> CelT:
        cond, then, otherwise = self.check(node.cond), self.check(node.then), self.check(node.otherwise)
        subst: Subst = {}
        branches_agree = unify(then, otherwise, subst) or unify(otherwise, then, subst)
        if not unify(BOOL, cond, {}) or not branches_agree:
            applied = f"({cond}, {then}, {otherwise})"
            return self.error(node, f"found no matching overload for '_?_:_' applied to '{applied}'")
        return then if then is not DYN and then is not NULL else otherwise

    def has(self, node: Has) -> CelT:
        operand = self.check(node.operand)
        self._field(node, operand.inner if isinstance(operand, OptT) else operand)
        return BOOL

    def list_literal(self, node: ListLit) -> CelT:
        elem: CelT | None = None
        for i, e in enumerate(node.elements):
            t = self.check(e)
            if i in node.optional:
                t = t.inner if isinstance(t, OptT) else DYN
            elem = self._homogeneous(e, elem, t)
        return ListT(elem if elem is not None else DYN)

    def map_literal(self, node: MapLit) -> CelT:
        key_t: CelT | None = None
        val_t: CelT | None = None
        for k, v, optional in node.entries:
            kt = self.check(k)
            if kt not in (STRING, INT, UINT, BOOL, DYN):
                self.error(k, f"unsupported map key type: {kt}")
            vt = self.check(v)
            if optional:
                vt = vt.inner if isinstance(vt, OptT) else DYN
            key_t = self._homogeneous(k, key_t, kt)
            val_t = self._homogeneous(v, val_t, vt)
        return MapT(key_t or DYN, val_t or DYN)

    def _homogeneous(self, node: Node, seen: CelT | None, t: CelT) -> CelT:
        # cel.HomogeneousAggregateLiterals: every element of a literal has the same type
        if seen is None or seen is DYN:
            return t
        if t is DYN or unify(seen, t, {}):
            return seen
        self.error(node, f"expected type '{seen}' but found '{t}'")
        return seen

    def comprehension(self, node: Comprehension) -> CelT:
        rng = self.check(node.range)
        if node.macro in ("optMap", "optFlatMap"):
            if not isinstance(rng, OptT) and rng is not DYN:
                return self.error(node.range, f"found no matching overload for '{node.macro}' applied to '{rng}'")
            var_t = rng.inner if isinstance(rng, OptT) else DYN
        elif isinstance(rng, ListT):
            var_t = rng.elem
        elif isinstance(rng, MapT):
            var_t = rng.key  # maps are ranged over their keys
        elif rng is DYN:
            var_t = DYN
        else:
            return self.error(
                node.range,
                f"expression of type '{rng}' cannot be range of a comprehension (must be list, map, or dynamic)",
            )
        self.scopes.append({node.var: var_t})
        try:
            body = self.check(node.body)
            flt = self.check(node.filter) if node.filter is not None else None
        finally:
            self.scopes.pop()
        if node.macro in ("all", "exists", "exists_one", "filter") or flt is not None:
            pred = flt if flt is not None else body
            if not unify(BOOL, pred, {}):
                return self.error(node, f"found no matching overload for '_&&_' applied to '(bool, {pred})'")
        if node.macro in ("all", "exists", "exists_one"):
            return BOOL
        if node.macro == "filter":
            return ListT(var_t)
        if node.macro == "map":
            return ListT(body)
        if node.macro == "optMap":
            return OptT(body)
        return body if isinstance(body, OptT) or body is DYN else OptT(DYN)  # optFlatMap

    # ----------------------------------------------------------------- calls
    def call(self, node: Call) -> CelT:
        self._resolve_namespace(node)
        name = node.function
        if name in UNSUPPORTED_FUNCTIONS or (name.split(".")[0] in UNSUPPORTED_NAMESPACES and "." in name):
            return self.error(node, _unsupported(name))
        args = [self.check(a) for a in node.args]
        member = node.target is not None
        target_t = self.check(node.target) if node.target is not None else None
        if not self.registry.has_function(name):
            return self.error(node, f"undeclared reference to '{name}' (in container '')")
        types = ([target_t] if target_t is not None else []) + args
        candidates = self.registry.find(name, member=member, arity=len(types))
        results: list[CelT] = []
        applicable = []
        for ov in candidates:
            subst: Subst = {}
            if all(unify(p, a, subst) for p, a in zip(ov.params, types, strict=True)):
                results.append(substitute(ov.result, subst))
                applicable.append(ov)
        if not results:
            return self.error(node, _no_overload(name, target_t, args))
        node.overloads = applicable
        self._validate_literals(node, name)
        first = results[0]
        if all(str(r) == str(first) for r in results):
            return first
        return DYN

    def _resolve_namespace(self, node: Call) -> None:
        target = node.target
        if not isinstance(target, Ident) or self.lookup(target.name) is not None:
            return
        qualified = f"{target.name}.{node.function}"
        if target.name in NAMESPACES or target.name in UNSUPPORTED_NAMESPACES or self.registry.has_global(qualified):
            node.function = qualified
            node.target = None

    def _validate_literals(self, node: Call, name: str) -> None:
        # cel.ValidateDurationLiterals / ValidateTimestampLiterals / ValidateRegexLiterals
        args = node.args
        if name == "duration" and len(args) == 1 and isinstance(args[0], Literal) and isinstance(args[0].value, str):
            try:
                parse_go_duration(args[0].value)
            except ValueError as exc:
                self.error(args[0], f"invalid duration argument: {exc}")
        elif name == "timestamp" and len(args) == 1 and isinstance(args[0], Literal):
            if isinstance(args[0].value, str):
                try:
                    parse_rfc3339(args[0].value)
                except ValueError as exc:
                    self.error(args[0], f"invalid timestamp argument: {exc}")
        elif name in ("matches", "find", "findAll") and args and isinstance(args[0], Literal):
            pattern = args[0].value
            if isinstance(pattern, str):
                try:
                    compile_re2(pattern)
                except RegexError as exc:
                    self.error(args[0], f"invalid matches argument: {exc}")


def _unsupported(name: str) -> str:
    return (
        f"function '{name}' is not supported by the embedded API server's CEL interpreter "
        "(a real cluster would evaluate it); rewrite the rule without it"
    )


def _no_overload(name: str, target: CelT | None, args: list[CelT]) -> str:
    arg_text = ", ".join(str(a) for a in args)
    applied = f"{target}.({arg_text})" if target is not None else f"({arg_text})"
    return f"found no matching overload for '{name}' applied to '{applied}'"


def _literal_type(value: object) -> CelT:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, UInt):
        return UINT
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, str):
        return STRING
    if isinstance(value, bytes):
        return BYTES
    return DYN
