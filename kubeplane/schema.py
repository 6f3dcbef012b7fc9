"""Structural openAPIV3Schema handling for custom resources, in the order the
apiextensions apiserver applies it: prune unknown fields, apply defaults, validate.

Wording of validation messages follows kube-openapi's validator so clients see the same
`details.causes` they would from a real cluster."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from .cel import format_checker
from .cel.gostr import go_quote
from .cel.regex import Matcher, RegexError, compile_re2
from .errors import FieldError, invalid, required, unsupported
from .jsondata import json_copy, unchanged

Schema = dict[str, Any]

# Fields of ObjectMeta kept by pruning; everything else under metadata is dropped.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> Matcher:
    # schema patterns are Go (RE2) regexps: RE2 meaning, and linear time on hostile patterns
    return compile_re2(pattern)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ------------------------------------------------------------------ pruning


def prune(
    obj: Any,
    schema: Schema | None,
    path: str = "",
    *,
    root: bool = True,
    clean_old: Any = None,
    copied: frozenset[str] = frozenset(),
) -> list[str]:
    """Drop fields the schema does not specify; returns the dropped field paths. `clean_old`: an
    earlier version of the object already pruned and defaulted with this same schema: a field
    equal to its old self has nothing to drop (nor to default), so it is not walked again.
    `copied`: top-level fields of `obj` that are copies of clean_old's (the same JSON, by how the
    write made them): equal without comparing them."""
    dropped: list[str] = []
    if schema is None:
        return dropped
    _prune(obj, schema, path, dropped, root=root, old=clean_old, copied=copied if clean_old is not None else NONE)
    return dropped


NONE: frozenset[str] = frozenset()


def _prune(
    value: Any,
    schema: Schema,
    path: str,
    dropped: list[str],
    *,
    root: bool = False,
    old: Any = None,
    copied: frozenset[str] = NONE,
) -> None:
    if isinstance(value, dict):
        if root or schema.get("x-kubernetes-embedded-resource"):
            meta = value.get("metadata")
            if isinstance(meta, dict):
                for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
                    del meta[key]
                    dropped.append(_join(_join(path, "metadata"), key))
        props: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        old_map = old if isinstance(old, dict) else None
        for key in list(value):
            if (root or schema.get("x-kubernetes-embedded-resource")) and key in ("apiVersion", "kind", "metadata"):
                continue
            child_schema = props.get(key)
            if child_schema is None and isinstance(additional, dict):
                child_schema = additional
            if child_schema is None:
                if not preserve and additional is not True:
                    del value[key]
                    dropped.append(_join(path, key))
                continue
            # (==, not unchanged(): pruning and defaulting see only keys and nulls, and a Python
            # True == 1 has the same keys and nulls all the way down)
            if old_map is not None and key in old_map:
                if key in copied or value[key] == old_map[key]:
                    continue
                _prune(value[key], child_schema, _join(path, key), dropped, old=old_map[key])
            else:
                _prune(value[key], child_schema, _join(path, key), dropped)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            old_list = old if isinstance(old, list) else ()
            for i, item in enumerate(value):
                if i < len(old_list):
                    if item == old_list[i]:
                        continue
                    _prune(item, items, f"{path}[{i}]", dropped, old=old_list[i])
                else:
                    _prune(item, items, f"{path}[{i}]", dropped)


# ---------------------------------------------------------------- defaulting


def apply_defaults(
    obj: Any, schema: Schema | None, *, clean_old: Any = None, copied: frozenset[str] = frozenset()
) -> None:
    """Fill in the schema's defaults. `clean_old`, `copied`: as for prune."""
    if schema is not None:
        _default(obj, schema, clean_old, copied if clean_old is not None else NONE)


def _default(value: Any, schema: Schema, old: Any = None, copied: frozenset[str] = NONE) -> None:
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        props: dict[str, Any] = schema.get("properties") or {}
        for key, child in props.items():
            if key in value and value[key] is None and not child.get("nullable"):
                # null in a non-nullable field is treated as absent, then defaulted
                del value[key]
            if key not in value and "default" in child:
                value[key] = json_copy(child["default"])
            if key in value and key not in copied:  # (a copy of its old self: defaulted already)
                _default_child(value[key], child, old_map, key)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                if key not in props and key not in copied:
                    _default_child(value[key], additional, old_map, key)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            old_list = old if isinstance(old, list) else ()
            for i, item in enumerate(value):
                if i < len(old_list):
                    if item != old_list[i]:
                        _default(item, items, old_list[i])
                else:
                    _default(item, items)


def _default_child(value: Any, schema: Schema, old_map: dict[str, Any], key: str) -> None:
    if key in old_map:
        before = old_map[key]
        if value != before:
            _default(value, schema, before)
    else:
        _default(value, schema)


# ---------------------------------------------------------------- validation


def validate(obj: Any, schema: Schema | None, path: str = "", *, clean_old: Any = None) -> list[FieldError]:
    """The schema's errors for `obj`. `clean_old`: an earlier version of the object that passed this
    same schema without an error; a field (or an item at the same index) that is the same in both
    cannot have one now, so it is not checked again. The errors are the same either way."""
    errs: list[FieldError] = []
    if schema is not None:
        _validate(obj, schema, path, errs, root=True, old=clean_old)
    return errs


def _validate(
    value: Any, schema: Schema, path: str, errs: list[FieldError], *, root: bool = False, old: Any = None
) -> None:
    shown = path or "<root>"
    if value is None:
        if schema.get("nullable") or not schema.get("type"):
            return
        errs.append(invalid(shown, None, f'{shown} in body must be of type {schema["type"]}: "null"'))
        return
    declared = schema.get("type")
    actual = _type_of(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            errs.append(invalid(shown, value, f'{shown} in body must be of type integer,string: "{actual}"'))
            return
    elif declared:
        ok = actual == declared or (declared == "number" and actual == "integer")
        if not ok:
            errs.append(invalid(shown, value, f'{shown} in body must be of type {declared}: "{actual}"'))
            return

    enum = schema.get("enum")
    if enum is not None and value not in enum:
        errs.append(unsupported(shown, value, [str(e) for e in enum]))

    if actual in ("integer", "number"):
        _validate_number(value, schema, shown, errs)
    elif actual == "string":
        _validate_string(value, schema, shown, errs)
    elif actual == "array":
        _validate_array(value, schema, path, shown, errs, old if isinstance(old, list) else None)
    elif actual == "object":
        _validate_object(value, schema, path, shown, errs, root=root, old=old if isinstance(old, dict) else None)

    for sub in schema.get("allOf") or []:
        _validate(value, sub, path, errs, old=old)
    any_of = schema.get("anyOf")
    if any_of and not any(not validate(value, s, path) for s in any_of):
        errs.append(invalid(shown, value, f"{shown} in body must match at least one schema in anyOf"))
    one_of = schema.get("oneOf")
    if one_of and sum(1 for s in one_of if not validate(value, s, path)) != 1:
        errs.append(invalid(shown, value, f"{shown} in body must match exactly one schema in oneOf"))
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and not validate(value, not_schema, path):
        errs.append(invalid(shown, value, f"{shown} in body should not match the schema in not"))


def _validate_number(value: float, schema: Schema, shown: str, errs: list[FieldError]) -> None:
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and value <= minimum:
            errs.append(invalid(shown, value, f"{shown} in body should be greater than {_num(minimum)}"))
        elif value < minimum:
            errs.append(invalid(shown, value, f"{shown} in body should be greater than or equal to {_num(minimum)}"))
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(invalid(shown, value, f"{shown} in body should be less than {_num(maximum)}"))
        elif value > maximum:
            errs.append(invalid(shown, value, f"{shown} in body should be less than or equal to {_num(maximum)}"))
    multiple = schema.get("multipleOf")
    if multiple and value % multiple:
        errs.append(invalid(shown, value, f"{shown} in body should be a multiple of {_num(multiple)}"))
    # (no int32/int64 range check: kube-openapi's validator does not check number formats)


def _num(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


def _validate_string(value: str, schema: Schema, shown: str, errs: list[FieldError]) -> None:
    max_len = schema.get("maxLength")
    if max_len is not None and len(value) > max_len:
        errs.append(FieldError("Too long", shown, f"may not be more than {max_len} bytes", value, False))
    min_len = schema.get("minLength")
    if min_len is not None and len(value) < min_len:
        errs.append(invalid(shown, value, f"{shown} in body should be at least {min_len} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None and not _regex(pattern).matches(value):
        errs.append(invalid(shown, value, f"{shown} in body should match '{pattern}'"))
    fmt = schema.get("format")
    check = format_checker(fmt) if isinstance(fmt, str) else None  # None: a format Kubernetes ignores
    if check is not None and not check(value):
        errs.append(invalid(shown, value, f"{shown} in body must be of type {fmt}: {go_quote(value)}"))


def _validate_array(
    value: list[Any], schema: Schema, path: str, shown: str, errs: list[FieldError], old: list[Any] | None = None
) -> None:
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        errs.append(FieldError("Too many", shown, f"must have at most {max_items} items", len(value), True))
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        errs.append(invalid(shown, len(value), f"{shown} in body should have at least {min_items} items"))
    list_type = schema.get("x-kubernetes-list-type")
    if schema.get("uniqueItems") or list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                errs.append(FieldError("Duplicate value", f"{path}[{i}]", "", item, True))
            seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: set[tuple[Any, ...]] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = tuple(orjson_key(item.get(k)) for k in keys)
            if key in seen_keys:
                dup = {k: item.get(k) for k in keys}
                errs.append(FieldError("Duplicate value", f"{path}[{i}]", "", dup, True))
            seen_keys.add(key)
    items = schema.get("items")
    if isinstance(items, dict):
        kept = len(old) if old is not None else 0
        for i, item in enumerate(value):
            if i < kept:
                assert old is not None
                if unchanged(item, old[i]):
                    continue
                _validate(item, items, f"{path}[{i}]", errs, old=old[i])
            else:
                _validate(item, items, f"{path}[{i}]", errs)


def orjson_key(value: Any) -> Any:
    return repr(value) if isinstance(value, (dict, list)) else value


def _validate_object(
    value: dict[str, Any],
    schema: Schema,
    path: str,
    shown: str,
    errs: list[FieldError],
    *,
    root: bool,
    old: dict[str, Any] | None = None,
) -> None:
    for name in schema.get("required") or []:
        if name not in value:
            errs.append(required(_join(path, name)))
    props: dict[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, child in value.items():
        if root and key in ("apiVersion", "kind", "metadata"):
            continue
        child_schema = props.get(key)
        if child_schema is None and isinstance(additional, dict):
            child_schema = additional
        if child_schema is not None:
            if old is not None and key in old:
                before = old[key]
                if unchanged(child, before):
                    continue
                _validate(child, child_schema, _join(path, key), errs, old=before)
            else:
                _validate(child, child_schema, _join(path, key), errs)
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        errs.append(FieldError("Too many", shown, f"must have at most {max_props} items", len(value), True))
    min_props = schema.get("minProperties")
    if min_props is not None and len(value) < min_props:
        errs.append(invalid(shown, len(value), f"{shown} in body should have at least {min_props} properties"))


# ------------------------------------------------------------ schema checks


_KNOWN_TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """Reject schemas that are not structural (a type on every specified field, known types)."""
    errs: list[FieldError] = []
    _check_structural(schema, path, errs, root=True)
    return errs


def _check_structural(schema: Any, path: str, errs: list[FieldError], *, root: bool = False) -> None:
    if not isinstance(schema, dict):
        errs.append(invalid(path, schema, "must be an object"))
        return
    typ = schema.get("type")
    special = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if root and typ != "object":
        errs.append(invalid(f"{path}.type", typ or "", "must be object at the root"))
    if typ is None and not special:
        errs.append(required(f"{path}.type", "must not be empty for specified fields"))
    elif typ is not None and typ not in _KNOWN_TYPES:
        errs.append(unsupported(f"{path}.type", typ, sorted(_KNOWN_TYPES)))
    for key, child in (schema.get("properties") or {}).items():
        _check_structural(child, f"{path}.properties[{key}]", errs)
    items = schema.get("items")
    if items is not None:
        if typ != "array":
            errs.append(invalid(f"{path}.items", "...", "must only be used with type array"))
        _check_structural(items, f"{path}.items", errs)
    elif typ == "array":
        errs.append(required(f"{path}.items", "must be specified for arrays"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        if schema.get("properties"):
            errs.append(forbidden_both(path))
        _check_structural(additional, f"{path}.additionalProperties", errs)
    pattern = schema.get("pattern")
    if pattern is not None:
        try:
            compile_re2(str(pattern))
        except RegexError as exc:
            errs.append(invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {exc}"))
    if "default" in schema and schema.get("type") and not schema.get("x-kubernetes-preserve-unknown-fields"):
        for err in validate(copy.deepcopy(schema["default"]), _without_default_checks(schema), ""):
            errs.append(invalid(f"{path}.default", schema["default"], err.message()))


def forbidden_both(path: str) -> FieldError:
    return FieldError(
        "Forbidden", f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
    )


def _without_default_checks(schema: Schema) -> Schema:
    return {k: v for k, v in schema.items() if k != "required"}
