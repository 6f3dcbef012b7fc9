"""Label and field selectors with apimachinery's grammar: `a=b`, `a==b`, `a!=b`,
`a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1` for labels; `path=v`, `path!=v` for
fields. Parse errors are 400s with the parser's wording."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import APIError, bad_request
from .validation import label_value_errors, qualified_name_errors


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "gt" else have < want


class LabelSelector:
    __slots__ = ("_equal", "_rest", "requirements")

    def __init__(self, requirements: tuple[Requirement, ...] = ()) -> None:
        self.requirements = requirements
        # `key=value` terms are most selectors; checked first, without a method call each
        self._equal = tuple((r.key, r.values[0]) for r in requirements if r.op == "=")
        self._rest = tuple(r for r in requirements if r.op != "=")

    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if not self.requirements:
            return True
        lab = labels or {}
        for key, value in self._equal:
            if lab.get(key) != value:
                return False
        return all(r.matches(lab) for r in self._rest)

    def equality_value(self, key: str) -> str | None:
        """The single value this selector pins `key` to, if any (used for index lookups)."""
        for r in self.requirements:
            if r.key == key and r.op in ("=", "in") and len(r.values) == 1:
                return r.values[0]
        return None


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|>|<|[^\s!=(),<>]+)")


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector()
    tokens = _tokenize(text)
    reqs: list[Requirement] = []
    pos = 0

    def fail(msg: str) -> APIError:
        return bad_request(f"unable to parse requirement: {msg}")

    while pos < len(tokens):
        tok = tokens[pos]
        if tok == "!":
            pos += 1
            if pos >= len(tokens):
                raise fail("found '', expected: identifier")
            key = tokens[pos]
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            pos += 1
        else:
            key = tok
            if key in ("=", "==", "!=", "(", ")", ",", ">", "<"):
                raise fail(f"found '{key}', expected: !, identifier, or 'end of string'")
            _check_key(key)
            pos += 1
            if pos >= len(tokens) or tokens[pos] == ",":
                reqs.append(Requirement(key, "exists"))
            else:
                op = tokens[pos]
                pos += 1
                if op in ("=", "==", "!="):
                    value = ""
                    if pos < len(tokens) and tokens[pos] != ",":
                        value = tokens[pos]
                        pos += 1
                    _check_value(value)
                    reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
                elif op in (">", "<"):
                    if pos >= len(tokens):
                        raise fail("found '', expected: integer")
                    value = tokens[pos]
                    pos += 1
                    try:
                        int(value)
                    except ValueError:
                        raise fail(f"for 'Gt', 'Lt' operators, the value must be an integer: {value}") from None
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                elif op in ("in", "notin"):
                    if pos >= len(tokens) or tokens[pos] != "(":
                        found = tokens[pos] if pos < len(tokens) else ""
                        raise fail(f"found '{found}' expected: '('")  # apimachinery's wording, no comma
                    pos += 1
                    values: list[str] = []
                    while pos < len(tokens) and tokens[pos] != ")":
                        if tokens[pos] != ",":
                            _check_value(tokens[pos])
                            values.append(tokens[pos])
                        pos += 1
                    if pos >= len(tokens):
                        raise fail("found '', expected: ')'")
                    pos += 1
                    reqs.append(Requirement(key, op, tuple(values) if values else ("",)))
                else:
                    raise fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if pos < len(tokens):
            if tokens[pos] != ",":
                raise fail(f"found '{tokens[pos]}', expected: ',' or 'end of string'")
            pos += 1
            if pos >= len(tokens):
                raise fail("found '', expected: identifier after ','")
    return LabelSelector(tuple(reqs))


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise bad_request(f"unable to parse requirement: unexpected character at {pos} in {text!r}")
        tokens.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


def _check_key(key: str) -> None:
    errs = qualified_name_errors(key)
    if errs:
        raise bad_request(f"unable to parse requirement: values[0][{key}]: Invalid value: {key!r}: {errs[0]}")


def _check_value(value: str) -> None:
    errs = label_value_errors(value)
    if errs:
        raise bad_request(f"unable to parse requirement: Invalid value: {value!r}: {errs[0]}")


def label_selector_to_string(selector: Mapping[str, Any] | None) -> str:
    """Render a structured metav1.LabelSelector (matchLabels/matchExpressions) as text."""
    if not selector:
        return ""
    parts: list[str] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        parts.append(f"{key}={value}")
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        key = expr.get("key")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


# ---------------------------------------------------------------- field selectors


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    value: str
    negate: bool


class FieldSelector:
    __slots__ = ("requirements",)

    def __init__(self, requirements: tuple[FieldRequirement, ...] = ()) -> None:
        self.requirements = requirements

    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Callable[[str], str]) -> bool:
        return all((fields(r.path) == r.value) != r.negate for r in self.requirements)

    def equality_value(self, path: str) -> str | None:
        for r in self.requirements:
            if r.path == path and not r.negate:
                return r.value
        return None


def parse_field_selector(text: str | None, supported: frozenset[str] | set[str]) -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for raw_term in _split_unescaped(text, ","):
        term = raw_term.strip()
        if not term:
            continue
        for op in ("!=", "==", "="):
            idx = _find_unescaped(term, op)
            if idx >= 0:
                path = term[:idx].strip()
                value = _unescape(term[idx + len(op) :].strip())
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        if path not in supported:
            raise bad_request(f"field label not supported: {path}")
        reqs.append(FieldRequirement(path, value, op == "!="))
    return FieldSelector(tuple(reqs))


def _split_unescaped(text: str, sep: str) -> list[str]:
    out, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append("\\" + ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            # "!=" must not be read as "=" preceded by "!"
            if op == "=" and i > 0 and text[i - 1] == "!":
                i += 1
                continue
            return i
        i += 1
    return -1


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """Read a dotted field path from an object, as a string ("" when absent)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)
