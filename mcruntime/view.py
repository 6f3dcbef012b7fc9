"""Cache views: which slice of a resource a cluster's cache holds.

A view is a resource narrowed by namespace, label selector and field selector, plus
the transform applied before objects are cached (controller-runtime's per-object cache
options, `cache.Options.ByObject`). Each cluster's cache holds at most ONE view per
resource, declared by the controllers that watch or read it; watches and cached reads
of that resource share the view's single informer (one LIST+WATCH stream), so what a
controller reads is exactly what it is told about. Declaring a second, different view
of the same resource in the same cluster is a wiring error, raised when it happens.

A cache may narrow every view of a resource by a label selector of its own
(`CacheOptions.label_selectors`, controller-runtime's `cache.Options.ByObject` Label): a
sharded replica caches only the objects labelled for its shard. A view with an `alias`
is a second, named view of the resource that sees past that narrowing (the elected
replica's view of every object, next to its shard's); in a cache that does not narrow
the resource, an aliased view is simply the resource's one view.

A `metadata_only` view lists and watches PartialObjectMetadata (client-go's metadata
informer, `metadatainformer`): its objects carry their metadata only (`kind:
PartialObjectMetadata`), for readers of names, labels and owner references that would
otherwise receive and decode every spec and status the server sends."""

from __future__ import annotations

from dataclasses import dataclass, field

from .informer import Transform
from .objects import strip_for_cache
from .resources import Resource, init_values
from .selectors import LabelSelector


@dataclass(frozen=True, slots=True)
class View:
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    transform: Transform | None = strip_for_cache
    alias: str = ""  # a second view past the cache's narrowing of the resource (see above)
    metadata_only: bool = False  # PartialObjectMetadata: each object's metadata only (see above)
    # the dataclass's own hash of the fields, computed once (after the normalisation below):
    # the cache looks views up on every read, and the generated `__hash__` hashed 7 fields
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.namespace and not self.resource.namespaced:
            raise ValueError(f"{self.resource} is cluster-scoped; its view cannot name namespace {self.namespace!r}")
        if self.label_selector:
            LabelSelector.parse(self.label_selector)  # a bad selector fails at wiring time, not in a retry loop
        # "" and None mean the same (no narrowing); normalise so equal views compare equal
        for name in ("namespace", "label_selector", "field_selector"):
            if getattr(self, name) == "":
                object.__setattr__(self, name, None)
        object.__setattr__(self, "_hash", hash(init_values(self)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[View], tuple[object, ...]]:
        # rebuilt from the fields, never the stored hash (it differs between processes)
        return View, init_values(self)

    def __str__(self) -> str:
        parts = [self.resource.qualified]
        if self.alias:
            parts.append(f"alias={self.alias}")
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector}")
        if self.metadata_only:
            parts.append("metadata-only")
        return " ".join(parts)

    def covers_namespace(self, namespace: str | None) -> bool:
        """Whether reads in `namespace` (None: all namespaces) can be served from this view."""
        return self.namespace is None or namespace == self.namespace
