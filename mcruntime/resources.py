"""What the runtime needs to address a kind of object over REST: group, version, plural,
kind and scope. No discovery round-trip: controllers name the resources they use."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from urllib.parse import quote


def init_values(obj: object) -> tuple[object, ...]:
    """A dataclass's init fields' values, in order: what a frozen dataclass with a hash
    computed once hashes (its equality compares the same fields) and is rebuilt from when
    unpickled; read from the declared fields, so a field added later is not left out."""
    return tuple(getattr(obj, f.name) for f in fields(obj) if f.init)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    # the dataclass's own hash of the fields, computed once: every cache lookup of every
    # event hashes the resource (the generated `__hash__` built and hashed a tuple each time)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(init_values(self)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Resource], tuple[object, ...]]:
        # rebuilt from the fields, never the stored hash: a string's hash differs between
        # processes (PYTHONHASHSEED)
        return Resource, init_values(self)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`plural.group` (`configmaps`, `leases.coordination.k8s.io`), as in RBAC and error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def __str__(self) -> str:
        return self.qualified

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path; a namespaced resource without a namespace means all namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        elif not self.namespaced and namespace:
            raise ValueError(f"{self.qualified} is cluster-scoped; got namespace {namespace!r}")
        base += f"/{self.plural}"
        if name is not None:
            if not name:
                raise ValueError(f"empty object name for {self.qualified}")
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return base


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
# SIG Multicluster cluster inventory (KEP-4322)
CLUSTER_PROFILES = Resource("multicluster.x-k8s.io", "v1alpha1", "clusterprofiles", "ClusterProfile")
