"""CEL's standard definitions (cel-spec langdef.md, "Standard Definitions"): operators
with int/uint/double semantics and overflow errors, comparisons, membership, size, the
string predicates, type conversions, timestamp and duration arithmetic and accessors, and
the optional library Kubernetes enables."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .gostr import go_format_g, go_quote
from .regex import RegexError, compile_re2
from .registry import Registry
from .timeutil import (
    NANOS,
    duration_of,
    duration_part,
    format_duration,
    format_timestamp,
    parse_go_duration,
    parse_rfc3339,
    timestamp_of,
    timestamp_part,
)
from .values import (
    INT64_MAX,
    INT64_MIN,
    NONE,
    UINT64_MAX,
    CelError,
    Duration,
    Optional,
    Timestamp,
    UInt,
    check_int,
    check_uint,
    compare,
    equals,
    kind_of,
    map_lookup,
    type_of,
)

Cost = Callable[[int], None]


def _charge(cost: Cost, *sizes: int) -> None:
    # cel-go charges about 0.1 per character/element for traversing strings and lists
    cost(1 + sum(sizes) // 10)


# ------------------------------------------------------------------ arithmetic


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise CelError("division by zero")
    if a == INT64_MIN and b == -1:
        raise CelError("integer overflow")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise CelError("modulus by zero")
    if a == INT64_MIN and b == -1:
        raise CelError("integer overflow")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _uint_div(a: int, b: int) -> UInt:
    if b == 0:
        raise CelError("division by zero")
    return UInt(a // b)


def _uint_mod(a: int, b: int) -> UInt:
    if b == 0:
        raise CelError("modulus by zero")
    return UInt(a % b)


def _double_div(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _concat_list(a: list[Any], b: list[Any], *, cost: Cost) -> list[Any]:
    _charge(cost, len(a), len(b))
    return [*a, *b]


def _concat_str(a: str, b: str, *, cost: Cost) -> str:
    _charge(cost, len(a), len(b))
    return a + b


def _concat_bytes(a: bytes, b: bytes, *, cost: Cost) -> bytes:
    _charge(cost, len(a), len(b))
    return a + b


def _register_arithmetic(r: Registry) -> None:
    r.add("_+_", "int, int", "int", lambda a, b: check_int(a + b))
    r.add("_+_", "uint, uint", "uint", lambda a, b: check_uint(a + b))
    r.add("_+_", "double, double", "double", lambda a, b: a + b)
    r.add("_+_", "string, string", "string", _concat_str, charged=True)
    r.add("_+_", "bytes, bytes", "bytes", _concat_bytes, charged=True)
    r.add("_+_", "list(A), list(A)", "list(A)", _concat_list, charged=True)
    r.add("_+_", "duration, duration", "duration", lambda a, b: duration_of(a.nanos + b.nanos))
    r.add("_+_", "timestamp, duration", "timestamp", lambda a, b: timestamp_of(a.nanos + b.nanos))
    r.add("_+_", "duration, timestamp", "timestamp", lambda a, b: timestamp_of(a.nanos + b.nanos))
    r.add("_-_", "int, int", "int", lambda a, b: check_int(a - b))
    r.add("_-_", "uint, uint", "uint", lambda a, b: check_uint(a - b))
    r.add("_-_", "double, double", "double", lambda a, b: a - b)
    r.add("_-_", "duration, duration", "duration", lambda a, b: duration_of(a.nanos - b.nanos))
    r.add("_-_", "timestamp, timestamp", "duration", lambda a, b: duration_of(a.nanos - b.nanos))
    r.add("_-_", "timestamp, duration", "timestamp", lambda a, b: timestamp_of(a.nanos - b.nanos))
    r.add("_*_", "int, int", "int", lambda a, b: check_int(a * b))
    r.add("_*_", "uint, uint", "uint", lambda a, b: check_uint(a * b))
    r.add("_*_", "double, double", "double", lambda a, b: a * b)
    r.add("_/_", "int, int", "int", _int_div)
    r.add("_/_", "uint, uint", "uint", _uint_div)
    r.add("_/_", "double, double", "double", _double_div)
    r.add("_%_", "int, int", "int", _int_mod)
    r.add("_%_", "uint, uint", "uint", _uint_mod)
    r.add("-_", "int", "int", lambda a: check_int(-a))
    r.add("-_", "double", "double", lambda a: -a)
    r.add("!_", "bool", "bool", lambda a: not a)


# ------------------------------------------------------------------ comparison


def _ordering(test: Callable[[int], bool]) -> Callable[[Any, Any], bool]:
    def impl(a: Any, b: Any) -> bool:
        c = compare(a, b)
        return c is not None and test(c)

    return impl


_COMPARABLE = ("bool", "int", "uint", "double", "string", "bytes", "timestamp", "duration")
_NUMBERS = ("int", "uint", "double")


def _register_comparison(r: Registry) -> None:
    tests: dict[str, Callable[[int], bool]] = {
        "_<_": lambda c: c < 0,
        "_<=_": lambda c: c <= 0,
        "_>_": lambda c: c > 0,
        "_>=_": lambda c: c >= 0,
    }
    for name, test in tests.items():
        impl = _ordering(test)
        for t in _COMPARABLE:
            r.add(name, f"{t}, {t}", "bool", impl)
        # cel.CrossTypeNumericComparisons, enabled in Kubernetes' CEL environment
        for a in _NUMBERS:
            for b in _NUMBERS:
                if a != b:
                    r.add(name, f"{a}, {b}", "bool", impl)
    r.add("_==_", "A, A", "bool", equals)
    r.add("_!=_", "A, A", "bool", lambda a, b: not equals(a, b))
    r.add("@in", "A, list(A)", "bool", _in_list, charged=True)
    r.add("@in", "K, map(K, V)", "bool", lambda k, m: map_lookup(m, k)[0])


def _in_list(item: Any, items: list[Any], *, cost: Cost) -> bool:
    _charge(cost, len(items))
    return any(equals(item, x) for x in items)


# ------------------------------------------------------------------ strings


def _matches(text: str, pattern: str, *, cost: Cost) -> bool:
    _charge(cost, len(text), len(pattern))
    try:
        return compile_re2(pattern).matches(text)
    except RegexError as exc:
        raise CelError(str(exc)) from None


def _string_predicate(fn: Callable[[str, str], bool]) -> Callable[..., bool]:
    def impl(text: str, other: str, *, cost: Cost) -> bool:
        _charge(cost, len(text))
        return fn(text, other)

    return impl


def _register_strings(r: Registry) -> None:
    r.add("size", "string", "int", len)
    r.add("size", "bytes", "int", len)
    r.add("size", "list(A)", "int", len)
    r.add("size", "map(K, V)", "int", len)
    r.member("size", "string", "int", len)
    r.member("size", "bytes", "int", len)
    r.member("size", "list(A)", "int", len)
    r.member("size", "map(K, V)", "int", len)
    r.member("contains", "string, string", "bool", _string_predicate(lambda a, b: b in a), charged=True)
    r.member("startsWith", "string, string", "bool", _string_predicate(str.startswith), charged=True)
    r.member("endsWith", "string, string", "bool", _string_predicate(str.endswith), charged=True)
    r.member("matches", "string, string", "bool", _matches, charged=True)
    r.add("matches", "string, string", "bool", _matches, charged=True)


# ------------------------------------------------------------------ conversions

_INT_TEXT = re.compile(r"^[+-]?[0-9]+$")
_UINT_TEXT = re.compile(r"^[0-9]+$")
_FLOAT_SPECIAL = re.compile(r"^[+-]?(inf|infinity|nan)$", re.IGNORECASE)
_FLOAT_TEXT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_HEX_FLOAT = re.compile(r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?$")


def _int_from_string(text: str) -> int:
    if not _INT_TEXT.match(text):
        raise CelError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise CelError(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return value


def _uint_from_string(text: str) -> UInt:
    if not _UINT_TEXT.match(text):
        raise CelError(f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if value > UINT64_MAX:
        raise CelError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return UInt(value)


def _double_from_string(text: str) -> float:
    if _FLOAT_SPECIAL.match(text) or _FLOAT_TEXT.match(text):
        return float(text)
    if _HEX_FLOAT.match(text) and "p" in text.lower():
        return float.fromhex(text)
    raise CelError(f"strconv.ParseFloat: parsing {go_quote(text)}: invalid syntax")


def _int_from_double(value: float) -> int:
    if math.isnan(value) or not -(2.0**63) <= value < 2.0**63:
        raise CelError("integer overflow")
    return int(value)


def _uint_from_double(value: float) -> UInt:
    if math.isnan(value) or not 0 <= value < 2.0**64:
        raise CelError("unsigned integer overflow")
    return UInt(int(value))


_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_BOOLS.update({"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False})


def _bool_from_string(text: str) -> bool:
    if text not in _BOOLS:
        raise CelError(f"strconv.ParseBool: parsing {go_quote(text)}: invalid syntax")
    return _BOOLS[text]


def _string_from_bytes(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None


def _duration_from_string(text: str) -> Duration:
    try:
        return duration_of(parse_go_duration(text))
    except ValueError:
        raise CelError("type conversion error from 'string' to 'google.protobuf.Duration'") from None


def _timestamp_from_string(text: str) -> Timestamp:
    try:
        nanos = parse_rfc3339(text)
    except ValueError:
        raise CelError("type conversion error from 'string' to 'google.protobuf.Timestamp'") from None
    return timestamp_of(nanos)


def _register_conversions(r: Registry) -> None:
    r.add("int", "int", "int", lambda v: v)
    r.add("int", "uint", "int", lambda v: check_int(int(v)))
    r.add("int", "double", "int", _int_from_double)
    r.add("int", "string", "int", _int_from_string)
    r.add("int", "timestamp", "int", lambda t: t.nanos // NANOS)
    r.add("uint", "uint", "uint", lambda v: v)
    r.add("uint", "int", "uint", check_uint)
    r.add("uint", "double", "uint", _uint_from_double)
    r.add("uint", "string", "uint", _uint_from_string)
    r.add("double", "double", "double", lambda v: v)
    r.add("double", "int", "double", float)
    r.add("double", "uint", "double", float)
    r.add("double", "string", "double", _double_from_string)
    r.add("string", "string", "string", lambda v: v)
    r.add("string", "int", "string", lambda v: str(int(v)))
    r.add("string", "uint", "string", lambda v: str(int(v)))
    r.add("string", "double", "string", go_format_g)
    r.add("string", "bool", "string", lambda v: "true" if v else "false")
    r.add("string", "bytes", "string", _string_from_bytes)
    r.add("string", "timestamp", "string", format_timestamp)
    r.add("string", "duration", "string", format_duration)
    r.add("bytes", "bytes", "bytes", lambda v: v)
    r.add("bytes", "string", "bytes", lambda v: v.encode())
    r.add("bool", "bool", "bool", lambda v: v)
    r.add("bool", "string", "bool", _bool_from_string)
    r.add("duration", "duration", "duration", lambda v: v)
    r.add("duration", "string", "duration", _duration_from_string)
    r.add("timestamp", "timestamp", "timestamp", lambda v: v)
    r.add("timestamp", "string", "timestamp", _timestamp_from_string)
    r.add("timestamp", "int", "timestamp", lambda v: timestamp_of(v * NANOS))
    r.add("dyn", "A", "dyn", lambda v: v)
    r.add("type", "A", "type(A)", type_of)


# ------------------------------------------------------------------ time accessors

_TS_PARTS = (
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
)
_DURATION_PARTS = ("getHours", "getMinutes", "getSeconds", "getMilliseconds")


def _register_time(r: Registry) -> None:
    for part in _TS_PARTS:
        r.member(part, "timestamp", "int", lambda t, p=part: timestamp_part(p, t))
        r.member(part, "timestamp, string", "int", lambda t, z, p=part: timestamp_part(p, t, z))
    for part in _DURATION_PARTS:
        r.member(part, "duration", "int", lambda d, p=part: duration_part(p, d))


# ------------------------------------------------------------------ optionals


def _is_zero(value: Any) -> bool:
    kind = kind_of(value)
    if kind == "null":
        return True
    if kind in ("bool", "int", "uint", "double", "string", "bytes", "list", "map"):
        return not value
    if kind in ("duration", "timestamp"):
        return bool(value.nanos == 0)
    return False


def _optional_value(opt: Optional) -> Any:
    if not opt.present:
        raise CelError("optional.none() dereference")
    return opt.value


def _register_optional(r: Registry) -> None:
    r.add("optional.of", "A", "optional(A)", lambda v: Optional(v, True))
    r.add("optional.none", "", "optional(dyn)", lambda: NONE)
    r.add("optional.ofNonZeroValue", "A", "optional(A)", lambda v: NONE if _is_zero(v) else Optional(v, True))
    r.member("hasValue", "optional(A)", "bool", lambda o: o.present)
    r.member("value", "optional(A)", "A", _optional_value)
    # `or` and `orValue` short-circuit (the interpreter only evaluates the argument when needed)
    r.member("or", "optional(A), optional(A)", "optional(A)", lambda o, other: o if o.present else other)
    r.member("orValue", "optional(A), A", "A", lambda o, other: o.value if o.present else other)


def register(r: Registry) -> None:
    _register_arithmetic(r)
    _register_comparison(r)
    _register_strings(r)
    _register_conversions(r)
    _register_time(r)
    _register_optional(r)
