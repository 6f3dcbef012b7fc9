"""Structural openAPIV3Schema from the pydantic models.

Our own walker rather than pydantic's JSON Schema: a CRD schema must be structural
(every node typed, no `$ref`, no `anyOf` of types except int-or-string, no `null`),
integers need int32/int64 formats, and list merge semantics and server defaults come
from `markers`. Walking `model_fields` keeps the mapping explicit and small:

    str/int/bool/float      -> string/integer/boolean/number (+format from markers)
    Literal[...]            -> string with enum
    list[X]                 -> array of X (+x-kubernetes-list-type)
    dict[str, X]            -> object with additionalProperties X
    KubeModel subclass      -> object with properties and required
    X | None                -> X (an absent field; Kubernetes has no nulls here)
    int | str + IntOrString -> x-kubernetes-int-or-string

Python constraints (`Field(ge=0, min_length=1, pattern=...)`) become the schema's
minimum/minLength/minItems/pattern, so the model and the API server validate alike.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from .base import KubeModel
from .markers import CEL, Format, IntOrString, ListType, PreserveUnknown, ServerDefault, WireRequired

Schema = dict[str, Any]

_SCALARS: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_ROOT_META_FIELDS = ("api_version", "kind", "metadata")


class SchemaError(TypeError):
    """A model uses a Python type that has no structural schema."""


def wire_name(name: str, info: FieldInfo) -> str:
    """The JSON name of a model field."""
    return info.serialization_alias or info.alias or name


def object_schema(model: type[KubeModel], *, root: bool = False) -> Schema:
    """The schema of a model: every field a property, required where the wire needs it."""
    props: Schema = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        key = wire_name(name, info)
        if root and name in _ROOT_META_FIELDS:
            # As controller-gen does: the API server owns metadata's schema, and
            # apiVersion/kind are checked by the server against the URL, not the schema.
            props[key] = {"type": "object"} if name == "metadata" else {"type": "string"}
            continue
        metadata = list(info.metadata)
        prop = type_schema(info.annotation, metadata, where=f"{model.__name__}.{name}")
        if info.description:
            prop["description"] = info.description
        props[key] = prop
        if info.is_required() or any(isinstance(m, WireRequired) for m in _flatten(metadata)):
            required.append(key)
    schema: Schema = {"type": "object", "properties": props}
    if model.__doc__:
        schema["description"] = _first_paragraph(model.__doc__)
    if required:
        schema["required"] = sorted(required)
    return schema


def type_schema(tp: Any, metadata: list[Any], *, where: str) -> Schema:
    """The schema of one annotated Python type."""
    tp, metadata = _unwrap(tp, metadata)
    markers = _flatten(metadata)
    if any(isinstance(m, IntOrString) for m in markers):
        schema: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
        pattern = next((m.pattern for m in markers if isinstance(m, IntOrString) and m.pattern), None)
        if pattern:
            schema["pattern"] = pattern
        return _apply_markers(schema, markers)
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, KubeModel):
        schema = object_schema(tp)
    elif tp in _SCALARS:
        schema = {"type": _SCALARS[tp]}
    elif origin is Literal:
        values = list(get_args(tp))
        if not all(isinstance(v, str) for v in values):
            raise SchemaError(f"{where}: only string Literals map to an enum")
        schema = {"type": "string", "enum": values}
    elif origin is list:
        (item,) = get_args(tp)
        schema = {"type": "array", "items": type_schema(item, [], where=f"{where}[]")}
    elif origin is dict:
        key_type, value_type = get_args(tp)
        if key_type is not str:
            raise SchemaError(f"{where}: map keys must be strings")
        if any(isinstance(m, PreserveUnknown) for m in markers):
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = {"type": "object", "additionalProperties": type_schema(value_type, [], where=f"{where}{{}}")}
    else:
        raise SchemaError(f"{where}: no structural schema for {tp!r}")
    return _apply_markers(schema, markers)


def _unwrap(tp: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """Strip Annotated (collecting its metadata) and Optional (absent is not null)."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            base, *extra = get_args(tp)
            metadata = [*metadata, *extra]
            tp = base
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
            # int | str (with IntOrString): keep the markers of the members' Annotated parts.
            for member in members:
                if get_origin(member) is typing.Annotated:
                    metadata = [*metadata, *get_args(member)[1:]]
            return tp, metadata
        return tp, metadata


def _flatten(metadata: list[Any]) -> list[Any]:
    """Markers and constraints, with those nested in `Field(...)` inside Annotated lifted out."""
    out: list[Any] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(_flatten(list(item.metadata)))
        else:
            out.append(item)
    return out


def _apply_markers(schema: Schema, markers: list[Any]) -> Schema:
    kind = schema.get("type")
    for m in markers:
        if isinstance(m, Format):
            schema["format"] = m.name
        elif isinstance(m, annotated_types.Ge):
            schema["minimum"] = m.ge
        elif isinstance(m, annotated_types.Le):
            schema["maximum"] = m.le
        elif isinstance(m, annotated_types.Gt):
            schema["minimum"] = m.gt
            schema["exclusiveMinimum"] = True
        elif isinstance(m, annotated_types.Lt):
            schema["maximum"] = m.lt
            schema["exclusiveMaximum"] = True
        elif isinstance(m, annotated_types.MinLen):
            schema[_LEN_KEYS[kind][0]] = m.min_length
        elif isinstance(m, annotated_types.MaxLen):
            schema[_LEN_KEYS[kind][1]] = m.max_length
        elif isinstance(m, ListType):
            schema["x-kubernetes-list-type"] = m.kind
            if m.map_keys:
                schema["x-kubernetes-list-map-keys"] = list(m.map_keys)
        elif isinstance(m, ServerDefault):
            schema["default"] = m.value
        elif isinstance(m, CEL):
            schema.setdefault("x-kubernetes-validations", []).append({"message": m.message, "rule": m.rule})
        elif getattr(m, "pattern", None) and kind == "string":
            # pydantic keeps Field(pattern=...) in a private metadata class; duck-type it.
            schema["pattern"] = m.pattern
    return schema


_LEN_KEYS: dict[Any, tuple[str, str]] = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
    None: ("minLength", "maxLength"),
}


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n")[0].split())
