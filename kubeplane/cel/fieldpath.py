"""A rule's `fieldPath` (`.spec.replicas`, `.labels['app.kubernetes.io/name']`), checked
against the schema the way apiextensions' ValidFieldPath does, and normalized to the
field.Path text that is appended to the error's field (`spec.replicas`, `labels[app...]`)."""

from __future__ import annotations

import re
from typing import Any

_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]']+")
_UNESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


class FieldPathError(ValueError):
    pass


def _unquote(token: str) -> str:
    out = []
    i = 1
    while i < len(token) - 1:
        ch = token[i]
        if ch == "\\":
            nxt = token[i + 1]
            if nxt not in _UNESCAPES:
                raise FieldPathError(f"invalid string literal: invalid escape char \\{nxt}")
            out.append(_UNESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def normalize_field_path(path: str, schema: dict[str, Any]) -> str:
    """The field.Path text for a valid fieldPath; FieldPathError when it does not resolve."""
    tokens = _TOKENS.findall(path)
    if "".join(tokens) != path:
        raise FieldPathError("does not refer to a valid field")
    out = ""
    node: Any = schema
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == ".":
            if i + 1 >= len(tokens):
                raise FieldPathError("unexpected end of JSON path")
            name = tokens[i + 1]
            i += 2
        elif tok == "[":
            if i + 2 >= len(tokens):
                raise FieldPathError("unexpected end of JSON path")
            quoted = tokens[i + 1]
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise FieldPathError(f"expected single quoted string but got {quoted}")
            name = _unquote(quoted)
            if tokens[i + 2] != "]":
                raise FieldPathError(f"expected ] but got {tokens[i + 2]}")
            i += 3
        else:
            raise FieldPathError(f"expected [ or . but got: {tok}")
        if not isinstance(node, dict):
            raise FieldPathError("does not refer to a valid field")
        props = node.get("properties")
        additional = node.get("additionalProperties")
        if props is not None:
            if name not in props:
                raise FieldPathError("does not refer to a valid field")
            out = f"{out}.{name}" if out else name
            node = props[name]
        elif isinstance(additional, dict):
            out = f"{out}[{name}]"
            node = additional
        else:
            raise FieldPathError("does not refer to a valid field")
    return out
