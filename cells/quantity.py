"""Kubernetes resource quantities (`500m`, `1`, `2Gi`, `1e3`) as exact numbers and back.

- `parse_quantity(value, field)` accepts what the API accepts for a Quantity field: a
  non-negative JSON integer, or a string matching apimachinery's quantity grammar (decimal
  SI suffixes n u m k M G T P E, binary suffixes Ki Mi Gi Ti Pi Ei, or a decimal exponent).
  The result is an exact `Fraction` (no float rounding). Anything else, including negative
  amounts, floats and booleans, is a `ValueError` naming `field`.
- `format_cpu(cores)` writes cores, rounded UP to whole millicores as Kubernetes does:
  `1`, `2`, `500m`, `1500m`.
- `format_memory(bytes)` writes bytes, rounded UP to a whole byte, in the largest binary
  suffix that is exact (`2Gi`, `512Mi`), else the largest decimal one (`1G`), else plain.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from federation.api.markers import QUANTITY_PATTERN

_GRAMMAR = re.compile(QUANTITY_PATTERN)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_SPLIT = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
# Exponents beyond this are certainly not a real resource amount, and Fraction(10**huge)
# would be an expensive way to find out.
_MAX_EXPONENT = 30


def parse_quantity(value: object, field: str) -> Fraction:
    """An exact non-negative amount from a Quantity (int or string)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{field}: expected a quantity such as '500m' or '2Gi', got {value!r}")
    if isinstance(value, int):
        amount = Fraction(value)
    else:
        amount = _parse_text(value, field)
    if amount < 0:
        raise ValueError(f"{field}: quantity {value!r} must not be negative")
    return amount


def _parse_text(text: str, field: str) -> Fraction:
    if not _GRAMMAR.match(text):
        raise ValueError(f"{field}: {text!r} is not a quantity (e.g. '500m', '1', '2Gi', '512Mi')")
    match = _SPLIT.match(text)
    assert match is not None  # the grammar above guarantees a leading number
    number, suffix = match.groups()
    amount = Fraction(number)
    if suffix in _BINARY:
        return amount * _BINARY[suffix]
    if suffix in _DECIMAL:
        return amount * _DECIMAL[suffix]
    digits = suffix[1:]  # e/E form, guaranteed by the grammar
    if not re.fullmatch(r"[+-]?[0-9]+", digits):
        raise ValueError(f"{field}: {text!r}: the exponent must be a whole number")
    exponent = int(digits)
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"{field}: {text!r}: exponent out of range (|e| <= {_MAX_EXPONENT})")
    return amount * Fraction(10) ** exponent


def format_cpu(cores: Fraction) -> str:
    """Cores as `N` or `Nm`, rounded up to a whole millicore."""
    millis = math.ceil(cores * 1000)
    if millis % 1000 == 0:
        return str(millis // 1000)
    return f"{millis}m"


def format_memory(amount: Fraction) -> str:
    """Bytes in the largest exact binary suffix, else decimal suffix, else plain bytes."""
    whole = math.ceil(amount)
    if whole == 0:
        return "0"
    for suffix, factor in reversed(_BINARY.items()):
        if whole % factor == 0:
            return f"{whole // factor}{suffix}"
    for suffix in ("E", "P", "T", "G", "M", "k"):
        factor = int(_DECIMAL[suffix])
        if whole % factor == 0:
            return f"{whole // factor}{suffix}"
    return str(whole)
