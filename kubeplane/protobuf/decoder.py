"""A generic protobuf wire-format reader and the conversion of Kubernetes messages into
the JSON form the same object has on the wire.

Every field is looked up in the descriptor tables; a field number a message does not
declare, a wire type that does not fit the declared type, or a payload that ends early
is an error that names the message, the field number and the JSON path. Nothing is
skipped silently: an unknown field would otherwise be data the client believes it sent."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .descriptors import SCALARS, WRAPPERS, Field, Message, Registry

MAGIC = b"k8s\x00"
# JSONSchemaProps nest without bound; a hostile body must not reach Python's recursion limit.
MAX_DEPTH = 100

# Go's zero time.Time (0001-01-01T00:00:00Z) as Unix seconds: encodes "unset".
_GO_ZERO_SECONDS = -62135596800
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

PROTO_PACKAGES = {
    "core": "k8s.io.api.core.v1",
    "meta": "k8s.io.apimachinery.pkg.apis.meta.v1",
    "apps": "k8s.io.api.apps.v1",
    "autoscaling1": "k8s.io.api.autoscaling.v1",
    "autoscaling": "k8s.io.api.autoscaling.v2",
    "coordination": "k8s.io.api.coordination.v1",
    "events": "k8s.io.api.events.v1",
    "rbac": "k8s.io.api.rbac.v1",
    "apiextensions": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
}

# The wrapper types' own messages, decoded by the same machinery so that their unknown
# fields and wire-type mismatches are reported like any other message's.
WIRE: dict[str, str] = {
    "Timestamp": "1 seconds int64!; 2 nanos int32!",
    "Quantity": "1 string string!",
    "IntOrString": "1 type int64!; 2 intVal int32!; 3 strVal string!",
    "RawExtension": "1 raw bytes!",
    "FieldsV1": "1 Raw bytes!",
    "JSON": "1 raw bytes!",
    "Unknown": "1 typeMeta TypeMeta; 2 raw bytes!; 3 contentEncoding string!; 4 contentType string!",
    "TypeMeta": "1 apiVersion string!; 2 kind string!",
}
WIRE_NAMES = {
    "wire.Timestamp": "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "wire.Quantity": "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "wire.IntOrString": "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "wire.RawExtension": "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "wire.FieldsV1": "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "wire.JSON": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "wire.Unknown": "k8s.io.apimachinery.pkg.runtime.Unknown",
    "wire.TypeMeta": "k8s.io.apimachinery.pkg.runtime.TypeMeta",
}
WIRE_REGISTRY = Registry()
WIRE_REGISTRY.add_table("wire", WIRE)

_WRAPPER_MESSAGE = {
    "Time": "wire.Timestamp",
    "MicroTime": "wire.Timestamp",
    "Quantity": "wire.Quantity",
    "IntOrString": "wire.IntOrString",
    "Raw": "wire.RawExtension",
    "FieldsV1": "wire.FieldsV1",
    "JSON": "wire.JSON",
}

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_SCALAR_WIRE = {
    "string": _BYTES,
    "bytes": _BYTES,
    "bool": _VARINT,
    "int32": _VARINT,
    "int64": _VARINT,
    "double": _FIXED64,
}

Value = int | bytes


class ProtobufError(Exception):
    """The body is not a valid encoding of the message it claims to be."""


def proto_name(msg: Message) -> str:
    if msg.name in WIRE_NAMES:
        return WIRE_NAMES[msg.name]
    package, _, name = msg.name.partition(".")
    return f"{PROTO_PACKAGES.get(package, package)}.{name}"


# ---------------------------------------------------------------------- wire format


def _varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError(f"{where}: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError(f"{where}: varint longer than 10 bytes")


def scan(data: bytes, where: str) -> Iterator[tuple[int, int, Value]]:
    """(field number, wire type, value) for each field of one message, in wire order."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos, where)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError(f"{where}: field number 0 is not valid")
        if wire == _VARINT:
            value, pos = _varint(data, pos, f"{where}: field {number}")
            yield number, wire, value
        elif wire == _BYTES:
            size, pos = _varint(data, pos, f"{where}: field {number}")
            if size > end - pos:
                raise ProtobufError(f"{where}: field {number} is truncated (length {size}, {end - pos} bytes left)")
            yield number, wire, data[pos : pos + size]
            pos += size
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if size > end - pos:
                raise ProtobufError(f"{where}: field {number} is truncated ({size}-byte value)")
            yield number, wire, int.from_bytes(data[pos : pos + size], "little")
            pos += size
        else:
            # 3/4 are proto2 groups, which no Kubernetes message uses; 6/7 do not exist
            raise ProtobufError(f"{where}: field {number} has unsupported wire type {wire}")


def _wire_type(f: Field) -> int:
    if f.map_value or f.type not in SCALARS:
        return _BYTES
    return _SCALAR_WIRE[f.type]


def _unpack(f: Field, chunk: bytes, where: str) -> list[Value]:
    """A packed repeated scalar: gogo writes Kubernetes' repeated ints unpacked, but
    protobuf readers must accept both forms."""
    out: list[Value] = []
    if f.type == "double":
        if len(chunk) % 8:
            raise ProtobufError(f"{where}: packed doubles of {len(chunk)} bytes")
        return [int.from_bytes(chunk[i : i + 8], "little") for i in range(0, len(chunk), 8)]
    pos = 0
    while pos < len(chunk):
        value, pos = _varint(chunk, pos, where)
        out.append(value)
    return out


def collect(msg: Message, data: bytes, path: str) -> dict[int, list[Value]]:
    """The raw values of each field of `msg`, checked against its descriptor."""
    where = f"{proto_name(msg)} at {path or '<root>'}"
    found: dict[int, list[Value]] = {}
    for number, wire, value in scan(data, where):
        f = msg.fields.get(number)
        if f is None:
            raise ProtobufError(f"{where}: unknown field number {number} (wire type {wire})")
        expected = _wire_type(f)
        if wire == expected:
            found.setdefault(number, []).append(value)
        elif wire == _BYTES and f.repeated and expected != _BYTES:
            assert isinstance(value, bytes)
            found.setdefault(number, []).extend(_unpack(f, value, f"{where}: field {number} ({f.name})"))
        else:
            raise ProtobufError(
                f"{where}: field {number} ({f.name}) has wire type {wire}, expected {expected} for {f.type}"
            )
    return found


# ---------------------------------------------------------------------- scalars


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def scalar(f: Field, raw: Value, where: str) -> Any:
    """A scalar as it appears in JSON (`bytes` as base64, like encoding/json does)."""
    if f.type == "string":
        assert isinstance(raw, bytes)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtobufError(f"{where}: field {f.name} is not valid UTF-8") from None
    if f.type == "bytes":
        assert isinstance(raw, bytes)
        return base64.b64encode(raw).decode("ascii")
    assert isinstance(raw, int)
    if f.type == "bool":
        return raw != 0
    if f.type == "int64":
        return _signed64(raw)
    if f.type == "int32":
        # Go converts the varint with int32(v): keep the low 32 bits, sign-extended
        return ((raw & 0xFFFF_FFFF) ^ 0x8000_0000) - 0x8000_0000
    value = struct.unpack("<d", raw.to_bytes(8, "little"))[0]
    if not math.isfinite(value):
        raise ProtobufError(f"{where}: field {f.name} is {value}, which JSON cannot represent")
    # encoding/json writes integral floats without a fraction (5, not 5.0)
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _last_raw(found: dict[int, list[Value]], number: int) -> Value | None:
    values = found.get(number)
    return values[-1] if values else None


# ---------------------------------------------------------------------- conversion


class Decoder:
    def __init__(self, registry: Registry, nested: Callable[[bytes, int], dict[str, Any]]) -> None:
        self.registry = registry
        # RawExtension payloads may themselves be protobuf envelopes: nested(raw, depth)
        # decodes one, counting its depth on top of the enclosing message's
        self.nested = nested

    def message(self, msg: Message, data: bytes, path: str, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise ProtobufError(f"{proto_name(msg)} at {path}: nested more than {MAX_DEPTH} levels deep")
        found = collect(msg, data, path)
        out: dict[str, Any] = {}
        for f in msg.order:
            values = found.get(f.number)
            if values is None:
                if f.keep_zero and (f.repeated or f.map_value):
                    # a nil slice or map without `omitempty` is JSON null (`rules: null`)
                    out[f.name] = None
                continue
            sub = f"{path}.{f.name}" if path else f.name
            if f.map_value:
                out[f.name] = self._map(msg, f, values, sub, depth)
            elif f.repeated:
                out[f.name] = [self._value(f, v, f"{sub}[{i}]", depth) for i, v in enumerate(values)]
            elif f.type in SCALARS:
                value = scalar(f, values[-1], f"{proto_name(msg)} at {path or '<root>'}")
                if value or f.keep_zero:
                    out[f.name] = value
            else:
                # protobuf merges repeated occurrences of a message field; concatenating
                # the encodings and decoding once is exactly that merge
                joined = b"".join(v for v in values if isinstance(v, bytes))
                value = self._value(f, joined, sub, depth)
                if f.inline:
                    if isinstance(value, dict):
                        out.update(value)
                else:
                    # A message on the wire is a struct or a non-nil pointer in Go, which
                    # encoding/json always writes, even when empty: a zero Time becomes
                    # null (`creationTimestamp: null`), an empty struct `{}`.
                    out[f.name] = value
        return out

    def _map(self, msg: Message, f: Field, entries: list[Value], path: str, depth: int) -> dict[str, Any]:
        entry_msg = Message(f"{msg.name}.{f.name}Entry")
        key_field = Field(1, "key", "string", keep_zero=True)
        value_field = Field(2, "value", f.type, keep_zero=True)
        entry_msg.fields = {1: key_field, 2: value_field}
        entry_msg.order = [key_field, value_field]
        out: dict[str, Any] = {}
        for raw in entries:
            assert isinstance(raw, bytes)
            found = collect(entry_msg, raw, path)
            key_raw = _last_raw(found, 1)
            key = scalar(key_field, key_raw, path) if key_raw is not None else ""
            values = found.get(2)
            sub = f"{path}[{key}]"
            if value_field.type in SCALARS:
                default: Value = b"" if _wire_type(value_field) == _BYTES else 0
                out[key] = scalar(value_field, values[-1] if values else default, sub)
            else:
                joined = b"".join(v for v in values or [] if isinstance(v, bytes))
                out[key] = self._value(value_field, joined, sub, depth)
        return out

    def _value(self, f: Field, raw: Value, path: str, depth: int) -> Any:
        if f.type in SCALARS:
            return scalar(f, raw, path)
        assert isinstance(raw, bytes)
        if f.type in WRAPPERS:
            return self._wrapper(f.type, raw, path, depth)
        decoded = self.message(self.registry.get(f.type), raw, path, depth + 1)
        union = _UNIONS.get(f.type)
        return union(decoded) if union is not None else decoded

    def _wrapper(self, kind: str, raw: bytes, path: str, depth: int) -> Any:
        msg = WIRE_REGISTRY.get(_WRAPPER_MESSAGE[kind])
        found = collect(msg, raw, path)
        where = f"{proto_name(msg)} at {path}"

        def get(number: int, default: Value) -> Any:
            value = _last_raw(found, number)
            return scalar(msg.fields[number], default if value is None else value, where)

        if kind in ("Time", "MicroTime"):
            if not found:
                return None
            return _timestamp(get(1, 0), get(2, 0), micro=kind == "MicroTime", where=where)
        if kind == "Quantity":
            return get(1, b"0") or "0"
        if kind == "IntOrString":
            kind_code = get(1, 0)
            if kind_code == 0:
                return get(2, 0)
            if kind_code == 1:
                return get(3, b"")
            raise ProtobufError(f"{where}: IntOrString type {kind_code} is neither 0 (int) nor 1 (string)")
        # Raw, FieldsV1 and JSON all carry one bytes field holding serialized JSON
        payload = _last_raw(found, 1)
        if not isinstance(payload, bytes) or not payload:
            return None
        if kind == "Raw" and payload.startswith(MAGIC):
            return self.nested(payload, depth + 1)
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise ProtobufError(f"{where}: embedded JSON does not parse: {exc}") from None


def _timestamp(seconds: int, nanos: int, *, micro: bool, where: str) -> str | None:
    if seconds == _GO_ZERO_SECONDS and nanos == 0:
        return None  # Go's zero time, which JSON renders as null
    if not micro:
        nanos = 0  # metav1.Time keeps whole seconds only (its Unmarshal drops nanos)
    elif not 0 <= nanos < 1_000_000_000:
        raise ProtobufError(f"{where}: nanos {nanos} out of range")
    try:
        moment = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise ProtobufError(f"{where}: seconds {seconds} is out of the supported time range") from None
    # years are always 4 digits in Go's RFC 3339 output; strftime does not pad year 1..999
    date = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    text = f"{date}T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    return f"{text}.{moment.microsecond:06d}Z" if micro else f"{text}Z"


# apiextensions' "X or Y" unions are messages on the wire but a single JSON value.
def _or_array(d: dict[str, Any]) -> Any:
    return d["JSONSchemas"] if d.get("JSONSchemas") else d.get("schema")


def _or_bool(d: dict[str, Any]) -> Any:
    return d["schema"] if "schema" in d else bool(d.get("allows", False))


def _or_string_array(d: dict[str, Any]) -> Any:
    if d.get("property"):
        return d["property"]
    return d.get("schema")


_UNIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "apiextensions.JSONSchemaPropsOrArray": _or_array,
    "apiextensions.JSONSchemaPropsOrBool": _or_bool,
    "apiextensions.JSONSchemaPropsOrStringArray": _or_string_array,
}
