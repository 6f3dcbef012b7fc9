"""Validation of object metadata with the rules and wording of apimachinery's
`validation` packages (names, labels, annotations, owner references, finalizers)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .errors import FieldError, forbidden, invalid, required

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


@lru_cache(maxsize=8192)  # the same label keys and values recur across objects
def _dns1123_label_errors(value: str) -> tuple[str, ...]:
    return tuple(_dns1123_label_errors_uncached(value))


def dns1123_label_errors(value: str) -> list[str]:
    return list(_dns1123_label_errors(value))


def _dns1123_label_errors_uncached(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(LABEL_MSG)
    return errs


@lru_cache(maxsize=8192)  # the same label keys and values recur across objects
def _dns1123_subdomain_errors(value: str) -> tuple[str, ...]:
    return tuple(_dns1123_subdomain_errors_uncached(value))


def dns1123_subdomain_errors(value: str) -> list[str]:
    return list(_dns1123_subdomain_errors(value))


def _dns1123_subdomain_errors_uncached(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(SUBDOMAIN_MSG)
    return errs


def path_segment_name_errors(value: str) -> list[str]:
    """Names that only need to be usable as a URL path segment (e.g. some built-ins)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    for bad in ("/", "%"):
        if bad in value:
            return [f"may not contain '{bad}'"]
    return []


NAME_RULES = {
    "label": dns1123_label_errors,
    "subdomain": dns1123_subdomain_errors,
    "path": path_segment_name_errors,
}


@lru_cache(maxsize=8192)  # the same label keys and values recur across objects
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    return tuple(_qualified_name_errors_uncached(value))


def qualified_name_errors(value: str) -> list[str]:
    return list(_qualified_name_errors(value))


def _qualified_name_errors_uncached(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        errs.append(QUALIFIED_MSG)
    return errs


@lru_cache(maxsize=8192)  # the same label keys and values recur across objects
def _label_value_errors(value: str) -> tuple[str, ...]:
    return tuple(_label_value_errors_uncached(value))


def label_value_errors(value: str) -> list[str]:
    return list(_label_value_errors(value))


def _label_value_errors_uncached(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(LABEL_VALUE_MSG)
    return errs


def validate_object_meta(
    meta: dict[str, Any], *, namespaced: bool, name_rule: str, is_create: bool, kube_finalizers: bool = True
) -> list[FieldError]:
    """ObjectMeta errors. `kube_finalizers` adds kube-apiserver's rule for built-in kinds that a
    finalizer without a "/" must be a standard one; apiextensions (CRDs and custom resources)
    validates with apimachinery only, where such names draw a warning (`finalizer_warnings`)."""
    errs: list[FieldError] = []
    name = meta.get("name")
    if not name:
        if not (is_create and meta.get("generateName")):
            errs.append(required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        errs.append(invalid("metadata.name", name, "must be a string"))
    else:
        for msg in NAME_RULES[name_rule](name):
            errs.append(invalid("metadata.name", name, msg))
    gen = meta.get("generateName")
    if gen is not None and not isinstance(gen, str):
        errs.append(invalid("metadata.generateName", gen, "must be a string"))
    ns = meta.get("namespace")
    if namespaced:
        if not ns:
            errs.append(required("metadata.namespace"))
        elif isinstance(ns, str):
            for msg in dns1123_label_errors(ns):
                errs.append(invalid("metadata.namespace", ns, msg))
    elif ns:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    errs.extend(_validate_map(meta.get("labels"), "metadata.labels", labels=True))
    errs.extend(_validate_map(meta.get("annotations"), "metadata.annotations", labels=False))
    errs.extend(_validate_owner_refs(meta.get("ownerReferences")))
    fins = meta.get("finalizers")
    if fins is not None:
        if not isinstance(fins, list):
            errs.append(invalid("metadata.finalizers", fins, "must be a list of strings"))
        else:
            seen: set[str] = set()
            for i, fin in enumerate(fins):
                path = f"metadata.finalizers[{i}]"
                if not isinstance(fin, str):
                    errs.append(invalid(path, fin, "must be a string"))
                    continue
                for msg in qualified_name_errors(fin):
                    errs.append(invalid(path, fin, msg))
                if kube_finalizers and "/" not in fin and fin not in _STANDARD_FINALIZERS:
                    errs.append(
                        invalid(path, fin, "name is neither a standard finalizer name nor is it fully qualified")
                    )
                if fin in seen:
                    errs.append(FieldError("Duplicate value", path, "", fin, True))
                seen.add(fin)
    return errs


_STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}


def finalizer_warnings(meta: dict[str, Any], old_meta: dict[str, Any] | None = None) -> list[str]:
    """The warnings apiextensions-apiserver sends for a custom resource's finalizer names that are not
    domain-qualified (on update only for the names the update adds)."""
    before = set((old_meta or {}).get("finalizers") or [])
    return [
        f'metadata.finalizers: "{fin}": prefer a domain-qualified finalizer name including a path (/) to avoid '
        "accidental conflicts with other finalizer writers"
        for fin in meta.get("finalizers") or []
        if isinstance(fin, str) and "/" not in fin and fin not in _STANDARD_FINALIZERS and fin not in before
    ]


def _validate_map(value: Any, path: str, *, labels: bool) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [invalid(path, value, "must be a map of string keys to string values")]
    errs: list[FieldError] = []
    total = 0
    for key, val in value.items():
        for msg in qualified_name_errors(key):
            errs.append(invalid(path, key, msg))
        if not isinstance(val, str):
            errs.append(invalid(f"{path}.{key}", val, "must be a string"))
            continue
        total += len(key) + len(val)
        if labels:
            for msg in label_value_errors(val):
                errs.append(invalid(path, val, msg))
    if not labels and total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(FieldError("Too long", path, f"must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"))
    return errs


def _validate_owner_refs(refs: Any) -> list[FieldError]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [invalid("metadata.ownerReferences", refs, "must be a list")]
    errs: list[FieldError] = []
    controllers = 0
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, dict):
            errs.append(invalid(path, ref, "must be an object"))
            continue
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                errs.append(required(f"{path}.{key}", f"{key} must not be empty"))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        errs.append(invalid("metadata.ownerReferences", refs, "Only one reference can have Controller set to true"))
    return errs
