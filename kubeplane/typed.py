"""JSON bodies of built-in kinds, read the way kube-apiserver reads them: through the Go
types. Decoding into a struct drops fields the type does not have (reported as unknown
fields per `fieldValidation`), rejects values of the wrong JSON type (400, "cannot
unmarshal ... into Go struct field ..."), and re-encoding leaves out zero values of
`omitempty` fields (an empty string, 0, false, an empty list or map).

The field facts come from the protobuf descriptor tables, which describe every field of
every built-in kind the server stores (see kubeplane/protobuf/descriptors.py; `!` there
marks a field whose zero value is kept). One thing this does not do: fill in
non-`omitempty` fields a body leaves out (the tables do not tell a pointer from a
required non-pointer field), so an absent field stays absent."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .errors import APIError
from .protobuf import KINDS, REGISTRY
from .protobuf.descriptors import SCALARS, Field, Message

Obj = dict[str, Any]

_GO_TYPES = {
    "string": "string",
    "bool": "bool",
    "int32": "int32",
    "int64": "int64",
    "double": "float64",
    "bytes": "[]uint8",
}


@dataclass
class Outcome:
    unknown: list[str] = field(default_factory=list)


class TypeMismatch(Exception):
    def __init__(self, got: str, at: _At, go_type: str) -> None:
        super().__init__(f"json: cannot unmarshal {got} into Go struct field {at.struct}.{at.go} of type {go_type}")


class _At:
    """Where a value sits, as a cheap link to its parent; the two spellings of the path are
    only built when something is reported: `path` as strict decoding prints it (with list
    indexes), `go`/`struct` as Go's json errors do (dotted from the root, no indexes or map
    keys, innermost struct type)."""

    __slots__ = ("kind", "parent", "segment", "struct")

    def __init__(self, parent: _At | None, segment: str, struct: str, kind: str = "field") -> None:
        self.parent = parent
        self.segment = segment
        self.struct = struct
        self.kind = kind  # "field" | "index" | "key"

    def child(self, name: str) -> _At:
        return _At(self, name, self.struct)

    def index(self, i: int) -> _At:
        return _At(self, str(i), self.struct, "index")

    def key(self, k: str) -> _At:
        return _At(self, k, self.struct, "key")

    def inside(self, message: str) -> _At:
        return _At(self.parent, self.segment, message.rpartition(".")[2], self.kind)

    def _chain(self) -> list[_At]:
        out: list[_At] = []
        node: _At | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    @property
    def path(self) -> str:
        text = ""
        for node in self._chain():
            if node.kind == "index":
                text += f"[{node.segment}]"
            elif node.segment:
                text = _join(text, node.segment)
        return text

    @property
    def go(self) -> str:
        return ".".join(n.segment for n in self._chain() if n.kind == "field" and n.segment)


def supports(api_version: str, kind: str) -> bool:
    return (api_version, kind) in KINDS


@lru_cache(maxsize=512)
def _fields_by_name(message_name: str) -> dict[str, Field]:
    """JSON name -> field, with the fields of `json:",inline"` members lifted into the parent."""
    message: Message = REGISTRY.get(message_name)
    out: dict[str, Field] = {}
    for f in message.order:
        if f.inline:
            out.update(_fields_by_name(f.type))
        else:
            out[f.name] = f
    return out


def normalize(obj: Obj, api_version: str, kind: str) -> Outcome:
    """Normalize `obj` (a built-in kind in the given version) in place; raise a 400 on type errors."""
    message_name = KINDS[(api_version, kind)]
    outcome = Outcome()
    try:
        _object(obj, message_name, _At(None, "", kind), outcome, top=True)
    except TypeMismatch as exc:
        version = api_version.rpartition("/")[2]
        raise APIError(
            400, "BadRequest", f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        ) from None
    return outcome


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _object(obj: Obj, message_name: str, at: _At, outcome: Outcome, *, top: bool = False) -> None:
    fields = _fields_by_name(message_name)
    for key in list(obj):
        if top and key in ("apiVersion", "kind"):
            continue
        f = fields.get(key)
        if f is None:
            del obj[key]
            outcome.unknown.append(at.child(key).path)
            continue
        value = obj[key]
        if f.type == "string" and type(value) is str and not (f.repeated or f.map_value):
            # the commonest field by far: no path node, no call
            if not value and not f.keep_zero:
                del obj[key]
            continue
        keep = _field_value(value, f, at.child(key), outcome)
        if keep is _DROP:
            del obj[key]
        else:
            obj[key] = keep


_DROP = object()


def _field_value(value: Any, f: Field, at: _At, outcome: Outcome) -> Any:
    if value is None:
        # JSON null decodes to the Go zero value: absent for anything omitempty
        return None if f.keep_zero or f.type in ("Time", "MicroTime") else _DROP
    if f.repeated:
        if not isinstance(value, list):
            raise TypeMismatch(_json_type(value), at, f"[]{_go(f)}")
        if f.type == "string" and all(type(v) is str for v in value):
            items = value
        else:
            items = [_element(v, f, at.index(i), outcome) for i, v in enumerate(value)]
        return items if items or f.keep_zero else _DROP
    if f.map_value:
        if not isinstance(value, dict):
            raise TypeMismatch(_json_type(value), at, f"map[string]{_go(f)}")
        if f.type == "string" and all(type(v) is str for v in value.values()):
            out = value  # labels, annotations, data: the common case needs no walk
        else:
            out = {k: _element(v, f, at.key(k), outcome) for k, v in value.items()}
        return out if out or f.keep_zero else _DROP
    if f.type == "string" and type(value) is str:
        return value if value or f.keep_zero else _DROP
    converted = _element(value, f, at, outcome)
    if f.type in SCALARS and not f.keep_zero and converted in ("", 0, False) and not isinstance(converted, float):
        return _DROP
    return converted


def _element(value: Any, f: Field, at: _At, outcome: Outcome) -> Any:
    kind = f.type
    if kind == "string":
        if not isinstance(value, str):
            raise TypeMismatch(_json_type(value), at, "string")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeMismatch(_json_type(value), at, "bool")
        return value
    if kind in ("int32", "int64"):
        if isinstance(value, bool) or not isinstance(value, int):
            got = "number " + str(value) if isinstance(value, float) else _json_type(value)
            raise TypeMismatch(got, at, kind)
        limit = 2**31 if kind == "int32" else 2**63
        if not -limit <= value < limit:
            raise TypeMismatch(f"number {value}", at, kind)
        return value
    if kind == "double":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeMismatch(_json_type(value), at, "float64")
        return value
    if kind == "bytes":
        if not isinstance(value, str):
            raise TypeMismatch(_json_type(value), at, "[]uint8")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise TypeMismatch("string (illegal base64 data)", at, "[]uint8") from None
        return value
    if kind in ("Time", "MicroTime"):
        if value is not None and not isinstance(value, str):
            raise TypeMismatch(_json_type(value), at, "v1." + kind)
        return value
    if kind == "Quantity":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeMismatch(_json_type(value), at, "resource.Quantity")
        if isinstance(value, (int, float)):
            return _quantity_text(value)
        return value
    if kind == "IntOrString":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise TypeMismatch(_json_type(value), at, "intstr.IntOrString")
        return value
    if kind in ("Raw", "JSON", "FieldsV1"):
        return value
    union = _UNIONS.get(kind)
    if union is not None:
        return _union(value, union, at, outcome)
    # a nested message
    if not isinstance(value, dict):
        raise TypeMismatch(_json_type(value), at, kind.rpartition(".")[2])
    _object(value, kind, at.inside(kind), outcome)
    return value


# JSON unions with custom (un)marshalling in apiextensions: a schema, or the other form.
_SCHEMA = "apiextensions.JSONSchemaProps"
_UNIONS = {
    "apiextensions.JSONSchemaPropsOrArray": "array of schemas",
    "apiextensions.JSONSchemaPropsOrBool": "bool",
    "apiextensions.JSONSchemaPropsOrStringArray": "array of strings",
}


def _union(value: Any, other: str, at: _At, outcome: Outcome) -> Any:
    if isinstance(value, dict):
        _object(value, _SCHEMA, at.inside(_SCHEMA), outcome)
        return value
    if other == "bool" and isinstance(value, bool):
        return value
    if other == "array of strings" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    if other == "array of schemas" and isinstance(value, list):
        for idx, item in enumerate(value):
            if not isinstance(item, dict):
                raise TypeMismatch(_json_type(item), at.index(idx), "v1.JSONSchemaProps")
            _object(item, _SCHEMA, at.index(idx).inside(_SCHEMA), outcome)
        return value
    raise TypeMismatch(_json_type(value), at, f"v1.JSONSchemaProps or {other}")


def _quantity_text(value: float) -> str:
    """A JSON number given for a Quantity, in the canonical text the apiserver stores."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    milli = value * 1000
    if float(milli).is_integer():
        return f"{int(milli)}m"
    return repr(value)


def _go(f: Field) -> str:
    if f.type in _GO_TYPES:
        return _GO_TYPES[f.type]
    return f.type.rpartition(".")[2]
