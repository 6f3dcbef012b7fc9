"""Kubernetes' quantity library: `quantity('1.5Gi')` and its comparisons and arithmetic,
parsed the way apimachinery's resource.ParseQuantity does (binary and decimal SI suffixes,
decimal exponents), with exact rational values."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from .registry import Registry
from .values import INT64_MAX, INT64_MIN, CelError, Opaque

_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_SHAPE = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT = re.compile(r"^[eE][-+]?[0-9]+$")


class Quantity(Opaque):
    kind = "quantity"
    type_name = "kubernetes.Quantity"
    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def cel_equals(self, other: Any) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.value})"


def parse_quantity(text: str) -> Fraction:
    m = _SHAPE.match(text)
    if m is None or (not m.group(2) and not m.group(3)):
        raise ValueError(f"quantities must match the regular expression '{_FORMAT}'")
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    number = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if suffix in _BINARY:
        number *= 2 ** (10 * _BINARY[suffix])
    elif suffix in _DECIMAL:
        number *= Fraction(10) ** _DECIMAL[suffix]
    elif _EXPONENT.match(suffix):
        number *= Fraction(10) ** int(suffix[1:])
    else:
        raise ValueError("unable to parse quantity's suffix")
    return -number if sign == "-" else number


def _quantity(text: str) -> Quantity:
    try:
        return Quantity(parse_quantity(text))
    except ValueError as exc:
        raise CelError(str(exc)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def _as_integer(q: Quantity) -> int:
    if q.value.denominator != 1 or not INT64_MIN <= q.value <= INT64_MAX:
        raise CelError("cannot convert value to integer")
    return int(q.value)


def _sign(q: Quantity) -> int:
    return (q.value > 0) - (q.value < 0)


def _compare(a: Quantity, b: Quantity) -> int:
    return (a.value > b.value) - (a.value < b.value)


def register(r: Registry) -> None:
    r.add("quantity", "string", "quantity", _quantity)
    r.add("isQuantity", "string", "bool", _is_quantity)
    r.member("sign", "quantity", "int", _sign)
    r.member("isInteger", "quantity", "bool", lambda q: q.value.denominator == 1)
    r.member("asInteger", "quantity", "int", _as_integer)
    r.member("asApproximateFloat", "quantity", "double", lambda q: float(q.value))
    r.member("isGreaterThan", "quantity, quantity", "bool", lambda a, b: a.value > b.value)
    r.member("isLessThan", "quantity, quantity", "bool", lambda a, b: a.value < b.value)
    r.member("compareTo", "quantity, quantity", "int", _compare)
    r.member("add", "quantity, quantity", "quantity", lambda a, b: Quantity(a.value + b.value))
    r.member("add", "quantity, int", "quantity", lambda a, b: Quantity(a.value + b))
    r.member("sub", "quantity, quantity", "quantity", lambda a, b: Quantity(a.value - b.value))
    r.member("sub", "quantity, int", "quantity", lambda a, b: Quantity(a.value - b))
