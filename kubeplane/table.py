"""Server-side printing: `meta.k8s.io/v1` Table responses for `kubectl get`, built from
a type's columns (built-in printers or a CRD's additionalPrinterColumns)."""

from __future__ import annotations

from typing import Any

import orjson

from .jsonpath import JSONPathError, compile_path
from .meta import human_age
from .registry import Column, Obj, ResourceType


def column_definitions(rt: ResourceType) -> list[Obj]:
    return [
        {
            "name": c.name,
            "type": c.type,
            "format": c.format,
            "description": c.description,
            "priority": c.priority,
        }
        for c in rt.columns
    ]


def partial_metadata(obj: Obj, table_version: str = "v1") -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{table_version}", "metadata": obj["metadata"]}


def row(rt: ResourceType, obj: Obj, include_object: str, table_version: str = "v1") -> Obj:
    cells: list[Any] = []
    for col in rt.columns:
        try:
            cells.append(col.value(obj))
        except (KeyError, TypeError, ValueError, AttributeError):
            cells.append(None)
    out: Obj = {"cells": cells}
    if include_object == "Object":
        out["object"] = obj
    elif include_object != "None":
        out["object"] = partial_metadata(obj, table_version)
    return out


def table(
    rt: ResourceType,
    objs: list[Obj],
    *,
    resource_version: str,
    include_object: str,
    table_version: str = "v1",
    continue_token: str = "",
    remaining: int | None = None,
    with_columns: bool = True,
) -> Obj:
    meta: Obj = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    out: Obj = {"kind": "Table", "apiVersion": f"meta.k8s.io/{table_version}", "metadata": meta}
    if with_columns:
        out["columnDefinitions"] = column_definitions(rt)
    out["rows"] = [row(rt, o, include_object, table_version) for o in objs]
    return out


# ------------------------------------------------------------ CRD printer columns


def crd_columns(printer_columns: list[Obj] | None) -> tuple[Column, ...]:
    cols = [
        Column(
            "Name",
            "string",
            "Name must be unique within a namespace. Is required when creating resources, although some "
            "resources may allow a client to request the generation of an appropriate name automatically.",
            lambda o: o["metadata"]["name"],
            format="name",
        )
    ]
    specs = printer_columns or [
        {
            "name": "Age",
            "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
            "description": "CreationTimestamp is a timestamp representing the server time when this object was "
            "created.",
        }
    ]
    for spec in specs:
        cols.append(_printer_column(spec))
    return tuple(cols)


def _printer_column(spec: Obj) -> Column:
    ctype = str(spec.get("type", "string"))
    try:
        finder = compile_path(str(spec.get("jsonPath", "")))
    except JSONPathError:

        def finder(_obj: Any) -> list[Any]:
            return []

    def value(obj: Obj) -> Any:
        found = finder(obj)
        if not found:
            return None
        return _cell(ctype, found[0])

    return Column(
        str(spec.get("name", "")),
        "string" if ctype == "date" else ctype,
        str(spec.get("description", "")),
        value,
        priority=int(spec.get("priority", 0) or 0),
        format=str(spec.get("format", "")),
    )


def _cell(ctype: str, value: Any) -> Any:
    if ctype == "date":
        return human_age(value) if isinstance(value, str) else None
    if ctype == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return None
    if ctype == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
