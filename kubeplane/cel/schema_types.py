"""How a structural schema appears inside CEL, as apiextensions' model.SchemaDeclType and
UnstructuredToVal define it:

- objects with properties are object types whose fields are the escaped property names
  (`x-y` is `x__dash__y`, `namespace` is `__namespace__`); unknown fields are not visible
  to field selection (but, as in apiextensions, take part in equality);
- objects with additionalProperties are `map(string, T)`; arrays are `list(T)`, and lists
  of `x-kubernetes-list-type` set/map compare without regard to order;
- integer is int, number is double, boolean is bool, int-or-string is dyn; strings with
  format byte/duration/date/date-time are bytes/duration/timestamp values;
- a resource root (and an embedded resource) always shows apiVersion, kind and
  metadata.name/metadata.generateName, and no other metadata."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .celtypes import BOOL, BYTES, DOUBLE, DURATION, DYN, INT, STRING, TIMESTAMP, CelT, ListT, MapT, ObjT
from .formats import decode_base64, parse_date, parse_datetime, parse_duration
from .lexer import RESERVED
from .values import CelError, Duration, MapList, SetList, Timestamp

Schema = dict[str, Any]

# property names CEL cannot use as identifiers: its literals, `in`, and the reserved words
_RESERVED = RESERVED | {"true", "false", "null", "in"}
_ALLOWED = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")
_EXPAND = re.compile(r"__|[-./]")
_REPLACEMENTS = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


@lru_cache(maxsize=4096)
def escape(name: str) -> str | None:
    """cel.Escape: the CEL field name for a property, or None when it cannot be addressed."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if not _ALLOWED.match(name):
        return None
    return _EXPAND.sub(lambda m: _REPLACEMENTS[m.group(0)], name)


def is_resource(schema: Schema) -> bool:
    return bool(schema.get("x-kubernetes-embedded-resource"))


def decl_type(schema: Schema | None, resource_root: bool = False) -> CelT | None:
    """The CEL type of values of this schema node; None when CEL cannot see it."""
    if schema is None:
        return None
    if schema.get("x-kubernetes-int-or-string"):
        return DYN
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return None
        elem = decl_type(items, is_resource(items))
        return ListT(elem) if elem is not None else None
    if kind == "object":
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            value = decl_type(additional, is_resource(additional))
            return MapT(STRING, value) if value is not None else None
        fields: dict[str, CelT] = {}
        originals: dict[str, str] = {}
        for name, prop in (schema.get("properties") or {}).items():
            if not isinstance(prop, dict):
                continue
            t = decl_type(prop, is_resource(prop))
            escaped = escape(name)
            if t is not None and escaped is not None:
                fields[escaped] = t
                originals[escaped] = name
        if resource_root:
            fields["apiVersion"] = STRING
            fields["kind"] = STRING
            fields["metadata"] = ObjT("object", {"name": STRING, "generateName": STRING})
        return ObjT("object", fields, originals)
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "byte":
            return BYTES
        if fmt == "duration":
            return DURATION
        if fmt in ("date", "date-time"):
            return TIMESTAMP
        return STRING
    return {"boolean": BOOL, "number": DOUBLE, "integer": INT}.get(str(kind))


Converter = Callable[[Any], Any]


def converter(schema: Schema | None, resource_root: bool = False) -> Converter | None:
    """A function from JSON to the CEL value for this schema node, or None when the JSON value
    already is the CEL value (the common case: objects and maps are used as they are, field
    names being unescaped when the rule is checked). Only strings with a format, numbers
    written as integers and set/map lists need converting. (CelError when a formatted
    string does not parse.)"""
    if schema is None or schema.get("x-kubernetes-int-or-string"):
        return None
    kind = schema.get("type")
    if kind == "object":
        return _object_converter(schema)
    if kind == "array":
        return _array_converter(schema)
    if kind == "string":
        parse = _FORMAT_PARSERS.get(str(schema.get("format")))
        return _guarded(parse) if parse is not None else None
    if kind == "number":
        return _to_double
    return None


def _object_converter(schema: Schema) -> Converter | None:
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        inner = converter(additional, is_resource(additional))
        if inner is None:
            return None
        return lambda v: {k: inner(x) for k, x in v.items()} if isinstance(v, dict) else v
    children: dict[str, Converter] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            child = converter(prop, is_resource(prop))
            if child is not None:
                children[name] = child
    if not children:
        return None

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for name, child in children.items():
            item = value.get(name)
            if item is not None:
                out[name] = child(item)
        return out

    return convert


def _array_converter(schema: Schema) -> Converter | None:
    items = schema.get("items")
    inner = converter(items, is_resource(items)) if isinstance(items, dict) else None
    list_type = schema.get("x-kubernetes-list-type")
    keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())

    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        items = [inner(v) if v is not None else None for v in value] if inner is not None else value
        if list_type == "set":
            return SetList(items)
        if list_type == "map":
            return MapList(items, keys)
        return items

    if inner is None and list_type not in ("set", "map"):
        return None
    return convert


def _to_double(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _guarded(parse: Callable[[str], Any]) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return parse(value)
        except ValueError as exc:
            raise CelError(str(exc)) from None

    return convert


_FORMAT_PARSERS: dict[str, Callable[[str], Any]] = {
    "byte": decode_base64,
    "duration": lambda s: Duration(parse_duration(s)),
    "date": lambda s: Timestamp(parse_date(s)),
    "date-time": lambda s: Timestamp(parse_datetime(s)),
}
