"""The subset of Kubernetes JSONPath that CRD printer columns and scale paths use:
`.a.b`, `['a.b']`, `[0]`, `[*]`, `[1:3]`, `..a` and filters `[?(@.type=="Ready")]`
(==, !=, <, >, <=, >= against a string or number literal, or bare existence)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Step = Callable[[list[Any]], list[Any]]

_FILTER = re.compile(r"^\?\(\s*@((?:\.[A-Za-z0-9_\-/\\.]+)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$")


class JSONPathError(ValueError):
    pass


def compile_path(expr: str) -> Callable[[Any], list[Any]]:
    """Compile `expr` (with or without surrounding `{}`) into a function returning all matches."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps = _parse(text)

    def run(obj: Any) -> list[Any]:
        values = [obj]
        for step in steps:
            values = step(values)
            if not values:
                return []
        return values

    return run


def _parse(text: str) -> list[Step]:
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        ch = text[pos]
        if text.startswith("..", pos):
            pos += 2
            name, pos = _read_name(text, pos)
            steps.append(_recursive(name))
        elif ch == ".":
            pos += 1
            if pos < len(text) and text[pos] == "[":
                continue
            name, pos = _read_name(text, pos)
            if name == "*":
                steps.append(_wildcard)
            elif name:
                steps.append(_field(name))
        elif ch == "[":
            end = _matching_bracket(text, pos)
            inner = text[pos + 1 : end].strip()
            pos = end + 1
            steps.append(_bracket(inner))
        else:
            name, pos = _read_name(text, pos)
            if not name:
                raise JSONPathError(f"unexpected {ch!r} in {text!r}")
            steps.append(_field(name))
    return steps


def _read_name(text: str, pos: int) -> tuple[str, int]:
    out: list[str] = []
    while pos < len(text):
        ch = text[pos]
        if ch == "\\" and pos + 1 < len(text):
            out.append(text[pos + 1])
            pos += 2
            continue
        if ch in ".[":
            break
        out.append(ch)
        pos += 1
    return "".join(out), pos


def _matching_bracket(text: str, pos: int) -> int:
    depth = 0
    quote = ""
    for i in range(pos, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JSONPathError(f"unterminated '[' in {text!r}")


def _field(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        return [v[name] for v in values if isinstance(v, dict) and name in v]

    return step


def _wildcard(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v.values())
        elif isinstance(v, list):
            out.extend(v)
    return out


def _recursive(name: str) -> Step:
    def walk(v: Any, out: list[Any]) -> None:
        if isinstance(v, dict):
            if name in v:
                out.append(v[name])
            for child in v.values():
                walk(child, out)
        elif isinstance(v, list):
            for child in v:
                walk(child, out)

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            walk(v, out)
        return out

    return step


def _bracket(inner: str) -> Step:
    if inner == "*":
        return _wildcard
    if inner[:1] in "'\"" and inner[-1:] == inner[:1]:
        return _field(inner[1:-1])
    if inner.startswith("?"):
        return _filter(inner)
    if ":" in inner:
        parts = inner.split(":")
        start = int(parts[0]) if parts[0].strip() else None
        stop = int(parts[1]) if len(parts) > 1 and parts[1].strip() else None

        def slice_step(values: list[Any]) -> list[Any]:
            out: list[Any] = []
            for v in values:
                if isinstance(v, list):
                    out.extend(v[start:stop])
            return out

        return slice_step
    try:
        index = int(inner)
    except ValueError:
        raise JSONPathError(f"unsupported subscript [{inner}]") from None

    def index_step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if isinstance(v, list) and -len(v) <= index < len(v):
                out.append(v[index])
        return out

    return index_step


def _filter(inner: str) -> Step:
    m = _FILTER.match(inner)
    if not m:
        raise JSONPathError(f"unsupported filter [{inner}]")
    path, op, literal = m.group(1), m.group(2), m.group(3)
    getter = compile_path(path) if path else (lambda v: [v])
    want: Any = None
    if op:
        lit = literal.strip()
        if lit[:1] in "'\"" and lit[-1:] == lit[:1]:
            want = lit[1:-1]
        else:
            try:
                want = float(lit) if "." in lit else int(lit)
            except ValueError:
                want = lit

    def keep(item: Any) -> bool:
        found = getter(item)
        if not op:
            return bool(found)
        if not found:
            return False
        have = found[0]
        try:
            if op == "==":
                return bool(have == want)
            if op == "!=":
                return bool(have != want)
            if op == "<":
                return bool(have < want)
            if op == ">":
                return bool(have > want)
            if op == "<=":
                return bool(have <= want)
            return bool(have >= want)
        except TypeError:
            return False

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            items = v if isinstance(v, list) else [v]
            out.extend(item for item in items if keep(item))
        return out

    return step


def get_path(obj: Any, dotted: str) -> Any:
    """Value at a simple `.a.b` path, or None."""
    found = compile_path(dotted)(obj)
    return found[0] if found else None


def set_path(obj: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a simple `.a.b` path, creating intermediate maps."""
    parts = [p for p in dotted.strip(".").split(".") if p]
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value
