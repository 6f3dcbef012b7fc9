"""Small helpers over objects as plain dicts (the runtime never decodes into typed models)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Obj = dict[str, Any]
Objs = list[Obj]  # for classes that also have a `list` method

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def key_of(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped."""
    m = meta(obj)
    ns = m.get("namespace")
    return f"{ns}/{m.get('name')}" if ns else str(m.get("name") or "")


def split_key(key: str) -> tuple[str, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


def make_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def resource_version_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    annotations = meta(obj).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def owner_references(obj: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    refs = meta(obj).get("ownerReferences")
    if isinstance(refs, list):
        for ref in refs:
            if isinstance(ref, Mapping):
                yield ref


def group_of(api_version: str) -> str:
    group, sep, _version = api_version.rpartition("/")
    return group if sep else ""


def strip_for_cache(obj: Obj) -> Obj:
    """The default informer transform: drop what controllers never read and what makes
    cached objects big (managedFields, kubectl's last-applied copy of the whole object)."""
    m = obj.get("metadata")
    if isinstance(m, dict):
        m.pop("managedFields", None)
        annotations = m.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            del annotations[LAST_APPLIED]
            if not annotations:
                del m["annotations"]
    return obj
