"""Index functions for the cache: each maps an object to the index values it is filed
under (client-go's `cache.IndexFunc`). Register them on an informer or the cache and
query with `store.by_index(name, value)`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .fields import get_objects, get_str_map

IndexFunc = Callable[[dict[str, Any]], Iterable[str]]

NAMESPACE = "namespace"  # built into every store
OWNER_UID = "owner-uid"
CONTROLLER_UID = "controller-uid"


def owner_uid(obj: dict[str, Any]) -> list[str]:
    """Every owner's UID (find the dependents of an object)."""
    return [str(ref["uid"]) for ref in get_objects(obj, "metadata.ownerReferences") if ref.get("uid")]


def controller_uid(obj: dict[str, Any]) -> list[str]:
    """The controlling owner's UID only."""
    return [
        str(ref["uid"])
        for ref in get_objects(obj, "metadata.ownerReferences")
        if ref.get("controller") and ref.get("uid")
    ]


@dataclass(frozen=True)
class label_value:
    """Index by one label's value (objects without the label are not indexed). Two
    instances for the same label are equal, so registering it twice is harmless."""

    label: str

    def __call__(self, obj: dict[str, Any]) -> list[str]:
        value = get_str_map(obj, "metadata.labels").get(self.label)
        return [str(value)] if value is not None else []


def label_index_name(label: str) -> str:
    return f"label:{label}"


@dataclass(frozen=True)
class field_value:
    """Index by a scalar at a dotted path (`spec.nodeName`)."""

    path: str

    def __call__(self, obj: dict[str, Any]) -> list[str]:
        cur: Any = obj
        for part in self.path.split("."):
            if not isinstance(cur, dict):
                return []
            cur = cur.get(part)
        return [str(cur)] if isinstance(cur, (str, int, float, bool)) else []
