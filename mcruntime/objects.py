"""Object keys and the cache transform over objects as plain dicts (the runtime never decodes
into typed models; fields are read through `mcruntime.fields`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .fields import get_str

Obj = dict[str, Any]
Objs = list[Obj]  # for classes that also have a `list` method

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def key_of(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped."""
    meta = obj.get("metadata")
    if type(meta) is dict:  # every object from a server: read directly (once per listed object)
        name, ns = meta.get("name"), meta.get("namespace")
        if type(name) is str and (ns is None or type(ns) is str):
            return f"{ns}/{name}" if ns else name
    # anything else: the typed reader, which names a malformed field
    name, ns = get_str(obj, "metadata.name", required=False), get_str(obj, "metadata.namespace", required=False)
    return f"{ns}/{name}" if ns else name


def split_key(key: str) -> tuple[str, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


def make_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


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
