"""What a CRD version declares besides its schema and subresources: `selectableFields` (custom
resource field selectors, GA in Kubernetes 1.32) and `deprecated` / `deprecationWarning`,
validated and interpreted as apiextensions-apiserver does."""

from __future__ import annotations

from typing import Any

from .errors import FieldError, invalid, required
from .registry import Obj, version_priority

# apiextensions validation.go MaxSelectableFields
MAX_SELECTABLE_FIELDS = 8
_SELECTABLE_TYPES = ("string", "boolean", "integer")


class _PathError(ValueError):
    pass


def _resolve(json_path: str, schema: Any) -> tuple[list[str], Any]:
    """The property names of a simple `.a.b.c` path and the schema it reaches (ValidFieldPath
    without array notation)."""
    if not json_path.startswith("."):
        raise _PathError("expected [ or . but got: " + json_path[:1])
    if "[" in json_path:
        raise _PathError("array notation is not allowed")
    names = json_path[1:].split(".")
    node = schema
    for name in names:
        if not name:
            raise _PathError("unexpected end of JSON path")
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or not isinstance(props.get(name), dict):
            raise _PathError("does not refer to a valid field")
        node = props[name]
    return names, node


def selectable_field_errors(fields: Any, schema: Any, path: str) -> list[FieldError]:
    """apiextensions' ValidateCustomResourceSelectableFields for one version."""
    if fields is None:
        return []
    if not isinstance(fields, list):
        return [invalid(path, fields, "must be a list")]
    errs: list[FieldError] = []
    unique: set[str] = set()
    for idx, entry in enumerate(fields):
        where = f"{path}[{idx}].jsonPath"
        json_path = entry.get("jsonPath") if isinstance(entry, dict) else None
        if not json_path:
            errs.append(required(where))
            continue
        if not isinstance(json_path, str):
            errs.append(invalid(where, json_path, "must be a string"))
            continue
        try:
            names, found = _resolve(json_path, schema)
        except _PathError as exc:
            errs.append(invalid(where, json_path, f"is an invalid path: {exc}"))
            continue
        if names[0] == "metadata":
            errs.append(invalid(where, json_path, "must not point to fields in metadata"))
        if not isinstance(found, dict) or found.get("type") not in _SELECTABLE_TYPES:
            errs.append(
                invalid(
                    where,
                    json_path,
                    "must point to a field of type string, boolean or integer. "
                    "Enum string fields and strings with formats are allowed.",
                )
            )
        dotted = ".".join(names)
        if dotted in unique:
            errs.append(FieldError("Duplicate value", where, "", json_path, True))
        unique.add(dotted)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        errs.append(FieldError("Too many", path, f"must have at most {MAX_SELECTABLE_FIELDS} items", len(unique), True))
    return errs


def selectable_fields(version: Obj) -> frozenset[str]:
    """The field selector labels a (valid) version adds: `spec.color` for `.spec.color`."""
    out = set()
    for entry in version.get("selectableFields") or []:
        if isinstance(entry, dict) and isinstance(entry.get("jsonPath"), str):
            out.add(entry["jsonPath"].lstrip("."))
    return frozenset(out)


def deprecation_warning(version: Obj, spec: Obj) -> str | None:
    """The warning every request to a deprecated version carries: its deprecationWarning, or
    apiextensions' default naming the newest served version that is not deprecated."""
    if not version.get("deprecated"):
        return None
    custom = version.get("deprecationWarning")
    if isinstance(custom, str):
        return custom
    name = str(version.get("name"))
    group, kind = spec["group"], spec["names"]["kind"]
    message = f"{group}/{name} {kind} is deprecated"
    newer = [
        str(v.get("name"))
        for v in spec.get("versions") or []
        if isinstance(v, dict)
        and v.get("served")
        and not v.get("deprecated")
        and version_priority(str(v.get("name"))) > version_priority(name)
    ]
    if newer:
        message += f"; use {group}/{max(newer, key=version_priority)} {kind}"
    return message
