"""Schema markers: the facts about a field that the wire format needs but a Python type
cannot say (int32 vs int64, int-or-string quantities, list merge semantics, server-side
defaults, CEL rules).

They ride in `typing.Annotated` metadata, where pydantic ignores them and the CRD
generator (`federation.api.openapi`) reads them, so one declaration on the model drives
both Python validation (via pydantic constraints such as `Field(ge=0)`) and the
openAPIV3Schema. This is the Python counterpart of kubebuilder's `// +kubebuilder:` markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

# The regular expression apimachinery uses for resource.Quantity strings; controller-gen
# emits the same pattern for every Quantity field, so clients see identical validation.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


@dataclass(frozen=True)
class Format:
    """OpenAPI `format` (int32, int64, date-time, byte)."""

    name: str


@dataclass(frozen=True)
class IntOrString:
    """`x-kubernetes-int-or-string: true` (quantities, ports that may be named); `pattern`
    constrains the string form only, as in controller-gen's output for Quantity."""

    pattern: str | None = None


@dataclass(frozen=True)
class ListType:
    """`x-kubernetes-list-type` (and map keys for `map`): how server-side apply merges a list."""

    kind: Literal["atomic", "set", "map"]
    map_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class WireRequired:
    """Listed under `required` in the schema although the Python model fills a default
    (metav1.Condition.message: required on the wire, but "" is a fine value to build with)."""


@dataclass(frozen=True, eq=False)  # identity hash: the value may be a dict
class ServerDefault:
    """A default the API server applies (openAPIV3Schema `default`).

    Kept apart from the Python default on purpose: a model that leaves the field unset
    must serialise without it so the server, not the client, owns the value (that is what
    makes Instance status defaults appear on objects created by any client)."""

    value: Any


@dataclass(frozen=True)
class CEL:
    """One `x-kubernetes-validations` rule."""

    rule: str
    message: str


@dataclass(frozen=True)
class PreserveUnknown:
    """`x-kubernetes-preserve-unknown-fields: true` for free-form objects."""


Int32 = Annotated[int, Format("int32")]
Int64 = Annotated[int, Format("int64")]
NonNegativeInt32 = Annotated[int, Format("int32"), Field(ge=0)]
# RFC 3339 timestamps stay strings: metav1.Time serialises as `2024-01-02T03:04:05Z` and a
# datetime round trip would rewrite it as `+00:00`, breaking byte-for-byte round trips.
DateTime = Annotated[str, Format("date-time")]
Quantity = Annotated[int | Annotated[str, Field(pattern=QUANTITY_PATTERN)], IntOrString(QUANTITY_PATTERN)]
PortNumberOrName = Annotated[int | str, IntOrString()]
ResourceList = dict[str, Quantity]
