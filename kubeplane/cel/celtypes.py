"""Static CEL types for the type checker: primitives, `list(T)`, `map(K, V)`,
`optional_type(T)`, `type(T)`, object types built from a structural schema, and type
parameters for overload signatures, with the unification overload resolution needs.

The checker is gradual: `dyn` unifies with everything, so anything the schema does not
pin down is checked at run time instead."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


class CelT(ABC):
    @abstractmethod
    def name(self) -> str:
        """The type's name as CEL prints it."""

    def __str__(self) -> str:
        return self.name()


@dataclass(frozen=True)
class Prim(CelT):
    ident: str
    display: str = ""

    def name(self) -> str:
        return self.display or self.ident


@dataclass(frozen=True)
class ListT(CelT):
    elem: CelT

    def name(self) -> str:
        return f"list({self.elem})"


@dataclass(frozen=True)
class MapT(CelT):
    key: CelT
    val: CelT

    def name(self) -> str:
        return f"map({self.key}, {self.val})"


@dataclass(frozen=True)
class OptT(CelT):
    inner: CelT

    def name(self) -> str:
        return f"optional_type({self.inner})"


@dataclass(frozen=True)
class TypeT(CelT):
    of: CelT | None = None

    def name(self) -> str:
        return f"type({self.of})" if self.of is not None else "type"


@dataclass(frozen=True)
class Param(CelT):
    ident: str

    def name(self) -> str:
        return self.ident


@dataclass(eq=False)
class ObjT(CelT):
    """An object with declared fields (a schema with properties), by escaped field name."""

    type_name: str
    fields: dict[str, CelT] = field(default_factory=dict)
    originals: dict[str, str] = field(default_factory=dict)  # escaped field name -> JSON property name

    def name(self) -> str:
        return self.type_name


DYN = Prim("dyn")
NULL = Prim("null", "null_type")
BOOL = Prim("bool")
INT = Prim("int")
UINT = Prim("uint")
DOUBLE = Prim("double")
STRING = Prim("string")
BYTES = Prim("bytes")
DURATION = Prim("duration", "google.protobuf.Duration")
TIMESTAMP = Prim("timestamp", "google.protobuf.Timestamp")
ERROR = Prim("error")
IP = Prim("ip", "net.IP")
CIDR = Prim("cidr", "net.CIDR")
QUANTITY = Prim("quantity", "kubernetes.Quantity")
URL = Prim("url", "kubernetes.URL")
TYPE = TypeT()

_NAMED: dict[str, CelT] = {
    t.ident: t
    for t in (DYN, NULL, BOOL, INT, UINT, DOUBLE, STRING, BYTES, DURATION, TIMESTAMP, IP, CIDR, QUANTITY, URL)
}
_NAMED["type"] = TYPE


def parse_type(text: str) -> CelT:
    """A signature type: `int`, `list(A)`, `map(K, V)`, `optional(A)`; single capitals are parameters."""
    t, rest = _parse(text.replace(" ", ""))
    if rest:
        raise ValueError(f"bad type {text!r}")
    return t


def _parse(text: str) -> tuple[CelT, str]:
    i = 0
    while i < len(text) and (text[i].isalnum() or text[i] == "_"):
        i += 1
    word, rest = text[:i], text[i:]
    if rest.startswith("("):
        args: list[CelT] = []
        rest = rest[1:]
        while True:
            arg, rest = _parse(rest)
            args.append(arg)
            if rest.startswith(","):
                rest = rest[1:]
                continue
            rest = rest[1:]  # ")"
            break
        if word == "list":
            return ListT(args[0]), rest
        if word == "map":
            return MapT(args[0], args[1]), rest
        if word == "optional":
            return OptT(args[0]), rest
        if word == "type":
            return TypeT(args[0]), rest
        raise ValueError(f"bad type {word}")
    if len(word) == 1 and word.isupper():
        return Param(word), rest
    return _NAMED[word], rest


def parse_types(text: str) -> tuple[CelT, ...]:
    """A comma separated list of signature types (commas inside parentheses do not split)."""
    out: list[CelT] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(parse_type(text[start:i]))
            start = i + 1
    if text[start:].strip():
        out.append(parse_type(text[start:]))
    return tuple(out)


Subst = dict[str, CelT]


def unify(param: CelT, arg: CelT, subst: Subst) -> bool:
    """Whether a value of type `arg` may be passed where `param` is expected, binding type
    parameters in `subst`."""
    if isinstance(param, Param):
        bound = subst.get(param.ident)
        if bound is None:
            subst[param.ident] = arg
            return True
        if bound is DYN or arg is DYN:
            subst[param.ident] = DYN
            return True
        if unify(bound, arg, {}):
            return True
        if unify(arg, bound, {}):
            subst[param.ident] = arg
            return True
        return False
    if arg is DYN or param is DYN or arg is ERROR:
        _bind_dyn(param, subst)
        return True
    if arg is NULL:
        # null compares with (and is passed for) any value in these rules; kept lenient
        _bind_dyn(param, subst)
        return True
    if isinstance(param, Prim) or isinstance(arg, Prim):
        return param == arg
    if isinstance(param, ListT) and isinstance(arg, ListT):
        return unify(param.elem, arg.elem, subst)
    if isinstance(param, MapT) and isinstance(arg, MapT):
        return unify(param.key, arg.key, subst) and unify(param.val, arg.val, subst)
    if isinstance(param, OptT) and isinstance(arg, OptT):
        return unify(param.inner, arg.inner, subst)
    if isinstance(param, TypeT) and isinstance(arg, TypeT):
        return True
    # object types of different schema nodes are compared by value at run time
    return isinstance(param, ObjT) and isinstance(arg, ObjT)


def _bind_dyn(t: CelT, subst: Subst) -> None:
    if isinstance(t, Param):
        subst.setdefault(t.ident, DYN)
    elif isinstance(t, ListT):
        _bind_dyn(t.elem, subst)
    elif isinstance(t, MapT):
        _bind_dyn(t.key, subst)
        _bind_dyn(t.val, subst)
    elif isinstance(t, OptT):
        _bind_dyn(t.inner, subst)


def substitute(t: CelT, subst: Subst) -> CelT:
    if isinstance(t, Param):
        bound = subst.get(t.ident)
        return DYN if bound is None else bound
    if isinstance(t, ListT):
        return ListT(substitute(t.elem, subst))
    if isinstance(t, MapT):
        return MapT(substitute(t.key, subst), substitute(t.val, subst))
    if isinstance(t, OptT):
        return OptT(substitute(t.inner, subst))
    return t


def runtime_kind(t: CelT) -> str | None:
    """The runtime kind a parameter of this type accepts (None: any)."""
    if isinstance(t, TypeT):
        return "type"
    if isinstance(t, Param) or t is DYN:
        return None
    if isinstance(t, ListT):
        return "list"
    if isinstance(t, (MapT, ObjT)):
        return "map"
    if isinstance(t, OptT):
        return "optional"
    if isinstance(t, Prim):
        return t.ident
    return None
