"""Go's text renderings that leak into Kubernetes error messages and CEL results:
`strconv.Quote` (`%q`), `%g` and `'f', -1` float formatting, and `%#v` of the
apiextensions ValidationRule struct the CRD validator prints for a bad rule."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

_SIMPLE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """strconv.Quote: printable runes stay, the rest are escaped the way Go does it."""
    out = ['"']
    for ch in text:
        esc = _SIMPLE_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of a finite, non-zero |value| and its
    decimal point position (value = 0.DIGITS * 10**point), as Go's shortest formatting uses."""
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    text = "".join(str(d) for d in digits).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent
    # leading zeros cannot occur in repr's digits except for 0 itself
    return text, point


def go_format_g(value: float) -> str:
    """fmt.Sprintf("%g", value) for a float64: CEL's string(double)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits, point = _shortest_digits(value)
    sign = "-" if value < 0 else ""
    exp = point - 1
    # %g with the shortest precision switches to an exponent when exp < -4 || exp >= 6
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _fixed(digits, point)


def go_format_f(value: float) -> str:
    """strconv.FormatFloat(value, 'f', -1, 64): shortest digits, never an exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    digits, point = _shortest_digits(value)
    return ("-" if value < 0 else "") + _fixed(digits, point)


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def go_rule_struct(rule: dict[str, Any]) -> str:
    """%#v of apiextensions.ValidationRule, the value the CRD validator shows for a bad rule.
    (Go prints the pointer address of a set Reason/OptionalOldSelf; a fixed one stands in.)"""
    reason = rule.get("reason")
    reason_text = (
        "(*apiextensions.FieldValueErrorReason)(nil)"
        if reason is None
        else "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
    )
    oos = rule.get("optionalOldSelf")
    oos_text = "(*bool)(nil)" if oos is None else "(*bool)(0xc000a1b2c8)"
    return (
        "apiextensions.ValidationRule{"
        f"Rule:{go_quote(str(rule.get('rule') or ''))}, "
        f"Message:{go_quote(str(rule.get('message') or ''))}, "
        f"MessageExpression:{go_quote(str(rule.get('messageExpression') or ''))}, "
        f"Reason:{reason_text}, "
        f"FieldPath:{go_quote(str(rule.get('fieldPath') or ''))}, "
        f"OptionalOldSelf:{oos_text}}}"
    )
