"""What the server serves: one `ResourceType` per (group, version, plural), grouped into
storage by (group, plural) so several versions (or API groups, as with events) share one
set of objects. Built-ins are registered at start; CRDs add and remove types at run time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldError

Obj = dict[str, Any]
Converter = Callable[[Obj], Obj]
Validator = Callable[[Obj, Obj | None], list[FieldError]]
Preparer = Callable[[Obj, Obj | None], None]
RowBuilder = Callable[[Obj], list[Any]]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ScalePaths:
    spec_replicas: str
    status_replicas: str
    label_selector: str | None = None


@dataclass(frozen=True)
class Column:
    """A Table column: `value` computes the cell from the object."""

    name: str
    type: str
    description: str
    value: Callable[[Obj], Any]
    priority: int = 0
    format: str = ""


@dataclass
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[str, ...] = ()
    name_rule: str = "subdomain"
    has_generation: bool = False
    custom: bool = False
    schema: Obj | None = None  # openAPIV3Schema; None = anything goes (built-ins we do not model)
    columns: tuple[Column, ...] = ()
    scale: ScalePaths | None = None
    field_selectors: frozenset[str] = frozenset({"metadata.name", "metadata.namespace"})
    return_deleted_object: bool = False
    # storage form -> served form and back; None means "only apiVersion differs"
    to_served: Converter | None = None
    to_storage: Converter | None = None
    prepare_create: Preparer | None = None
    prepare_update: Preparer | None = None
    validate: Validator | None = None
    storage_version: str = ""
    # the API group objects are stored under; None means the type's own group ("" is the core group,
    # so events.k8s.io Events stored with core Events pass storage_group="")
    storage_group: str | None = None
    preserve_unknown: bool = True  # built-ins whose schema we only sketch keep unknown fields
    # apps/v1 Deployments: an annotation change bumps generation too (its strategy's PrepareForUpdate)
    generation_counts_annotations: bool = False
    # sent as a Warning header on every request to this version (a CRD version marked deprecated)
    deprecation_warning: str | None = None
    # answered, never stored (SelfSubjectAccessReview, ...): only "create", handled by the HTTP front
    virtual: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.storage_version:
            self.storage_version = self.version
        if self.storage_group is None:
            self.storage_group = self.group

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_group_name(self) -> str:
        return self.group if self.storage_group is None else self.storage_group

    @property
    def storage_api_version(self) -> str:
        g = self.storage_group_name
        return f"{g}/{self.storage_version}" if g else self.storage_version

    @property
    def storage_key(self) -> tuple[str, str]:
        return (self.storage_group_name, self.plural)

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)

    def serves_as_stored(self, obj: Obj) -> bool:
        """Whether this type serves `obj` exactly as stored (so its stored bytes can be sent as they are)."""
        return self.to_served is None and obj.get("apiVersion") == self.api_version

    @property
    def is_storage_form(self) -> bool:
        return self.group == self.storage_group_name and self.version == self.storage_version

    def served(self, obj: Obj) -> Obj:
        """Storage form to this version's form (a new dict if anything changes)."""
        if self.to_served is not None:
            return self.to_served(obj)
        if obj.get("apiVersion") == self.api_version:
            # (not just is_storage_form: objects written before a CRD moved its storage version
            # keep the old apiVersion until rewritten, and read as whatever version is asked for)
            return obj
        out = dict(obj)
        out["apiVersion"] = self.api_version
        return out

    def stored(self, obj: Obj) -> Obj:
        if self.to_storage is not None:
            return self.to_storage(obj)
        if not self.is_storage_form:
            obj["apiVersion"] = self.storage_api_version
        return obj


class Registry:
    """Served resource types by group/version and by plural, plus a change counter
    that discovery and OpenAPI documents key their caches on."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._group_order: list[str] = []
        self._preferred: dict[str, str] = {}
        self._version_order: dict[str, list[str]] = {}
        self.generation = 0

    def add(self, rt: ResourceType, *, preferred: bool = False) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        if rt.group not in self._version_order:
            self._group_order.append(rt.group)
            self._version_order[rt.group] = []
        versions = self._version_order[rt.group]
        if rt.version not in versions:
            versions.append(rt.version)
            versions.sort(key=version_priority, reverse=True)
        if preferred or rt.group not in self._preferred:
            self._preferred[rt.group] = rt.version
        self.generation += 1

    def remove(self, group: str, version: str, plural: str) -> None:
        self._types.pop((group, version, plural), None)
        if not any(g == group and v == version for g, v, _ in self._types):
            versions = self._version_order.get(group, [])
            if version in versions:
                versions.remove(version)
            if not versions:
                self._version_order.pop(group, None)
                self._preferred.pop(group, None)
                if group in self._group_order:
                    self._group_order.remove(group)
            elif self._preferred.get(group) == version:
                self._preferred[group] = versions[0]
        self.generation += 1

    def set_preferred(self, group: str, version: str) -> None:
        self._preferred[group] = version
        self.generation += 1

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def has_group_version(self, group: str, version: str) -> bool:
        return version in self._version_order.get(group, [])

    def groups(self) -> list[str]:
        return list(self._group_order)

    def versions(self, group: str) -> list[str]:
        return list(self._version_order.get(group, []))

    def preferred_version(self, group: str) -> str:
        return self._preferred[group]

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in self._types.items() if g == group and v == version]

    def all(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def for_storage(self, key: tuple[str, str]) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.storage_key == key]

    def find_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._types.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (0, 0, 0, version)
    major = int(m.group(1))
    stage = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor, "")
