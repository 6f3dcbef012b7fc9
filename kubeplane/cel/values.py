"""CEL runtime values as Python objects, and the operations every other module needs on
them: the runtime kind of a value, CEL equality and ordering, and the errors evaluation
raises.

JSON-shaped data keeps its natural Python form (None, bool, int, float, str, list, dict);
the CEL types Python lacks get small classes: `UInt` (so `1u` and `1` stay distinct),
`Duration`/`Timestamp` (nanosecond integers), `Optional`, `CelType`, and the two list kinds
whose equality ignores order (`x-kubernetes-list-type: set` and `map`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


class CelError(Exception):
    """A CEL runtime error: absorbed by `&&`, `||`, `all` and `exists`, otherwise the result."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NoSuchOverload(CelError):
    def __init__(self, detail: str = "") -> None:
        super().__init__("no such overload" + (f": {detail}" if detail else ""))


class CostExceeded(Exception):
    """The per-evaluation cost limit was hit: never absorbed, evaluation stops."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


class UInt(int):
    """A CEL uint (Python int subclass so arithmetic stays native)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


@dataclass(frozen=True, order=True)
class Duration:
    nanos: int

    def __repr__(self) -> str:
        return f"duration({self.nanos}ns)"


@dataclass(frozen=True, order=True)
class Timestamp:
    nanos: int  # since the Unix epoch, UTC

    def __repr__(self) -> str:
        return f"timestamp({self.nanos}ns)"


@dataclass(frozen=True)
class CelType:
    """A type as a value: what `type(x)` returns and identifiers like `int` evaluate to."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Optional:
    value: Any = None
    present: bool = False

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


NONE = Optional()


class SetList(list[Any]):
    """A `x-kubernetes-list-type: set` list: equality ignores element order."""

    __slots__ = ()


class MapList(list[Any]):
    """A `x-kubernetes-list-type: map` list: equality ignores order (items are keyed)."""

    __slots__ = ("keys",)

    def __init__(self, items: list[Any], keys: tuple[str, ...]) -> None:
        super().__init__(items)
        self.keys = keys


class Opaque:
    """Base for library types (ip, cidr, quantity, url): `kind` names them at runtime."""

    kind = "opaque"
    type_name = "opaque"

    def cel_equals(self, other: Any) -> bool:
        return self is other


def kind_of(value: Any) -> str:
    """The runtime kind used for overload dispatch."""
    if value is None:
        return "null"
    t = type(value)
    kind = _KINDS.get(t)
    if kind is not None:
        return kind
    # subclasses (UInt is an int subclass, MapList a list subclass, ...) and library types
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, UInt):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Opaque):
        return value.kind
    return "unknown"


_KINDS: dict[type, str] = {
    bool: "bool",
    int: "int",
    UInt: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    list: "list",
    SetList: "list",
    MapList: "list",
    dict: "map",
    Duration: "duration",
    Timestamp: "timestamp",
    CelType: "type",
    Optional: "optional",
}

TYPE_NAMES = {
    "null": "null_type",
    "duration": "google.protobuf.Duration",
    "timestamp": "google.protobuf.Timestamp",
    "optional": "optional_type",
}


def type_of(value: Any) -> CelType:
    if isinstance(value, Opaque):
        return CelType(value.type_name)
    kind = kind_of(value)
    return CelType(TYPE_NAMES.get(kind, kind))


_NUMERIC = frozenset({"int", "uint", "double"})


def equals(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: values of different kinds are unequal, except numbers,
    which compare by value across int, uint and double."""
    ka, kb = kind_of(a), kind_of(b)
    if ka != kb:
        if ka in _NUMERIC and kb in _NUMERIC:
            return _num_equal(a, b)
        return False
    if ka == "list":
        return _list_equal(a, b)
    if ka == "map":
        if len(a) != len(b):
            return False
        for key, value in a.items():
            found, other = map_lookup(b, key)
            if not found or not equals(value, other):
                return False
        return True
    if ka == "optional":
        if a.present != b.present:
            return False
        return not a.present or equals(a.value, b.value)
    if isinstance(a, Opaque):
        return a.cel_equals(b)
    return bool(a == b)  # (for doubles NaN != NaN, as in Go)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _num_equal(a: Any, b: Any) -> bool:
    if _is_nan(a) or _is_nan(b):
        return False
    return bool(a == b)  # Python compares int and float exactly


def _list_equal(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    if isinstance(a, (SetList, MapList)) or isinstance(b, (SetList, MapList)):
        # order-insensitive: every element of one is matched by a distinct element of the other
        remaining = list(b)
        for item in a:
            for i, other in enumerate(remaining):
                if equals(item, other):
                    del remaining[i]
                    break
            else:
                return False
        return True
    return all(equals(x, y) for x, y in zip(a, b, strict=True))


def map_lookup(mapping: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """A map lookup where numeric keys match across int, uint and double (1 == 1u == 1.0)."""
    kind = kind_of(key)
    if kind == "string":
        if key in mapping:
            return True, mapping[key]
        return False, None
    if kind == "bool":
        # (a Python dict would also match True against the int key 1)
        for k, v in mapping.items():
            if k is key:
                return True, v
        return False, None
    if kind in _NUMERIC:
        if isinstance(key, float):
            if not key.is_integer():
                return False, None
            key = int(key)
        for k, v in mapping.items():
            if kind_of(k) in ("int", "uint") and int(k) == key:
                return True, v
        return False, None
    raise CelError(f"unsupported key type: {TYPE_NAMES.get(kind, kind)}")


def compare(a: Any, b: Any) -> int | None:
    """CEL ordering: -1, 0, 1; None when unordered (NaN); raises for kinds without an order."""
    ka, kb = kind_of(a), kind_of(b)
    if ka in _NUMERIC and kb in _NUMERIC:
        if _is_nan(a) or _is_nan(b):
            return None
        return -1 if a < b else (1 if a > b else 0)
    if ka != kb or ka not in _ORDERED:
        raise NoSuchOverload()
    if isinstance(a, Opaque):
        raise NoSuchOverload()
    return -1 if a < b else (1 if a > b else 0)


_ORDERED = frozenset({"bool", "string", "bytes", "duration", "timestamp"})


def check_int(value: int) -> int:
    if value < INT64_MIN or value > INT64_MAX:
        raise CelError("integer overflow")
    return value


def check_uint(value: int) -> UInt:
    if value < 0 or value > UINT64_MAX:
        raise CelError("unsigned integer overflow")
    return UInt(value)
