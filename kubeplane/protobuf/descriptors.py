"""Message descriptors: which protobuf field number is which JSON field, and of which type.

The tables (`tables_*.py`) describe each message in a compact one-line-per-field form
instead of generated classes, because the server only ever *decodes* and only needs the
facts that decide the JSON form:

    "<number> <jsonName> <type>[flags]"

`<type>` is a scalar (`string`, `bool`, `int32`, `int64`, `double`, `bytes`), one of the
well-known Kubernetes wrappers (`Time`, `MicroTime`, `Quantity`, `IntOrString`, `Raw`,
`FieldsV1`, `JSON`), or a message name (unqualified names are looked up in the same
table, `pkg.Name` in another one). `[]T` is a repeated field, `{T}` a `map<string, T>`.

Flags:
  `!`  keep a zero scalar. gogo-protobuf writes every non-pointer scalar even when it is
       zero, so a zero on the wire usually means "unset" and the JSON form (`omitempty`)
       leaves it out. Pointer fields (`*int32 replicas`) are only written when set, and
       fields without `omitempty` always appear in JSON: for both, a zero is real data.
       On a repeated or map field it means "no `omitempty`": absent is JSON null.
       (Message-typed fields need no flag: present on the wire means present in JSON.)
  `^`  the field is a Go struct embedded with `json:",inline"`: its fields are merged
       into the parent object instead of nesting under the field name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCALARS = frozenset({"string", "bool", "int32", "int64", "double", "bytes"})
WRAPPERS = frozenset({"Time", "MicroTime", "Quantity", "IntOrString", "Raw", "FieldsV1", "JSON"})


@dataclass(frozen=True)
class Field:
    number: int
    name: str  # JSON name
    type: str  # scalar, wrapper or fully qualified message name
    repeated: bool = False
    map_value: bool = False  # map<string, type>
    keep_zero: bool = False
    inline: bool = False

    @property
    def is_message(self) -> bool:
        return self.type not in SCALARS and self.type not in WRAPPERS


@dataclass
class Message:
    name: str  # fully qualified, e.g. "core.PodSpec"
    fields: dict[int, Field] = field(default_factory=dict)
    order: list[Field] = field(default_factory=list)  # declaration order = Go struct order


class DescriptorError(Exception):
    """A table entry that does not parse: a programming error, raised at import time."""


def _parse_field(package: str, message: str, spec: str) -> Field:
    parts = spec.split()
    if len(parts) != 3:
        raise DescriptorError(f"{package}.{message}: bad field spec {spec!r}")
    number_s, name, type_s = parts
    keep_zero = inline = False
    while type_s and type_s[-1] in "!^":
        if type_s[-1] == "!":
            keep_zero = True
        else:
            inline = True
        type_s = type_s[:-1]
    repeated = map_value = False
    if type_s.startswith("[]"):
        repeated, type_s = True, type_s[2:]
    elif type_s.startswith("{") and type_s.endswith("}"):
        map_value, type_s = True, type_s[1:-1]
    if type_s not in SCALARS and type_s not in WRAPPERS and "." not in type_s:
        type_s = f"{package}.{type_s}"
    return Field(int(number_s), name, type_s, repeated, map_value, keep_zero, inline)


class Registry:
    """All known messages, by fully qualified name."""

    def __init__(self) -> None:
        self.messages: dict[str, Message] = {}

    def add_table(self, package: str, table: dict[str, str]) -> None:
        for name, spec in table.items():
            msg = Message(f"{package}.{name}")
            for raw_part in spec.split(";"):
                part = raw_part.strip()
                if not part:
                    continue
                f = _parse_field(package, name, part)
                if f.number in msg.fields:
                    raise DescriptorError(f"{msg.name}: field number {f.number} declared twice")
                msg.fields[f.number] = f
                msg.order.append(f)
            if msg.name in self.messages:
                raise DescriptorError(f"{msg.name} declared twice")
            self.messages[msg.name] = msg

    def check(self) -> None:
        """Every referenced message must exist (catches typos in the tables at import)."""
        for msg in self.messages.values():
            for f in msg.order:
                if f.is_message and f.type not in self.messages:
                    raise DescriptorError(f"{msg.name}.{f.name}: unknown message type {f.type}")

    def get(self, name: str) -> Message:
        return self.messages[name]
