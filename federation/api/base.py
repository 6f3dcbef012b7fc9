"""The base every wire model derives from, and the Kubernetes metadata types.

Conventions (so that `Model.model_validate(json)` then `.model_dump()` gives the JSON back):

* Python attributes are snake_case; the wire name is camelCase from the alias generator,
  or an explicit `serialization_alias`/`validation_alias` where Kubernetes is irregular
  (`networkIP`, `certificate-authority-data`). Both names are accepted on input.
* Dumps use aliases by default and leave out what Go's `omitempty` would: `None`, and
  empty lists/maps on fields whose default is an empty list/map. Required scalars (status
  counters) are always written, like Go's non-omitempty int32 fields.
* Unknown fields are ignored: the CRDs are structural, so the API server prunes unknown
  fields before anything is stored and a controller could never see them anyway.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from .markers import DateTime, Int64


class KubeModel(BaseModel):
    """Base for every API type: camelCase on the wire, Go `omitempty` on output."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
    )

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        by_alias = info.by_alias is not False
        for name, key, omit_empty in _output_keys(type(self), by_alias):
            if key not in data:
                continue
            value = getattr(self, name)
            if value is None or (omit_empty and not value):
                del data[key]
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict to send to an API server."""
        out: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        """Parse an object as an API server returned it."""
        return cls.model_validate(data)


@cache
def _output_keys(model: type[KubeModel], by_alias: bool) -> tuple[tuple[str, str, bool], ...]:
    """(attribute, output key, omit-when-empty) per field; cached because every dump of
    every nested model asks."""
    out = []
    for name, info in model.model_fields.items():
        key = (info.serialization_alias or info.alias or name) if by_alias else name
        omit_empty = info.default_factory in (list, dict)
        out.append((name, key, omit_empty))
    return tuple(out)


class OwnerReference(KubeModel):
    """Identifies an owning object; the garbage collector deletes dependents whose owners are gone."""

    api_version: str = Field(description="API version of the owner.")
    kind: str = Field(description="Kind of the owner, e.g. WorkloadDeployment.")
    name: str = Field(description="Name of the owner.")
    uid: str = Field(description="UID of the live owner object.")
    controller: bool | None = Field(default=None, description="True on the one managing controller.")
    block_owner_deletion: bool | None = Field(
        default=None, description="Foreground deletion of the owner waits for this dependent."
    )


class ObjectMeta(KubeModel):
    """Standard Kubernetes object metadata (the subset of fields the API server stores)."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: DateTime | None = None
    deletion_timestamp: DateTime | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    # Server-side apply bookkeeping: carried through unchanged, never interpreted here.
    managed_fields: list[dict[str, Any]] = Field(default_factory=list)
    self_link: str | None = None


class TemplateMeta(KubeModel):
    """Metadata carried by an instance template and stamped onto the Instances made from it."""

    name: str | None = Field(default=None, description="Ignored: Instance names are `<deployment>-<ordinal>`.")
    namespace: str | None = Field(default=None, description="Ignored: Instances live in the deployment's namespace.")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels copied onto every Instance.")
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description="Annotations copied onto every Instance; compute.datumapis.com/restartedAt here rolls them.",
    )
    finalizers: list[str] = Field(default_factory=list, description="Finalizers copied onto every Instance.")


class LocalObjectReference(KubeModel):
    """Names an object in the same namespace."""

    name: str = Field(description="Name of the referenced object.")
