"""Patch types the apiserver accepts: JSON merge patch (RFC 7386), JSON patch (RFC 6902)
and strategic merge patch for built-in kinds. Strategic merge reads list merge keys and
strategies from the `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy`
annotations of the built-in schemas, as kubectl's patch computation expects."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from .errors import APIError, bad_request
from .jsondata import json_copy
from .limits import (
    JSON_PATCH_MAX_COPY_BYTES,
    MANAGED_FIELDS_EXTRA_DEPTH,
    MAX_DEPTH,
    MAX_JSON_PATCH_OPERATIONS,
    nesting_depth,
    request_entity_too_large,
)

Obj = dict[str, Any]


class PatchError(Exception):
    """A patch that cannot be applied to the object (answered 422)."""


def _unprocessable(message: str) -> APIError:
    return APIError(422, "Invalid", message)


# ------------------------------------------------------------ JSON merge patch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 on JSON data: a new result, sharing what the patch leaves alone with `target`, and
    nothing with `patch` (its values are copied: json_copy, a third of deepcopy's cost)."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ------------------------------------------------------------ JSON patch


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise request_entity_too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}"
        )
    copied = 0
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op:
            raise bad_request(f"invalid JSON patch operation at index {i}: missing 'op'")
        kind = op["op"]
        path = op.get("path")
        if not isinstance(path, str):
            raise bad_request(f"invalid JSON patch operation at index {i}: missing 'path'")
        try:
            if kind == "add":
                doc = _add(doc, _pointer(path), _placed(i, path, _value(op)))
            elif kind == "remove":
                doc = _remove(doc, _pointer(path))
            elif kind == "replace":
                value = _placed(i, path, _value(op))
                doc = _remove(doc, _pointer(path), replacing=True)
                doc = _add(doc, _pointer(path), value)
            elif kind in ("move", "copy"):
                src = op.get("from")
                if not isinstance(src, str):
                    raise PatchError(f"{kind} operation does not have a 'from' path")
                value = _get(doc, _pointer(src))
                if kind == "copy":
                    copied += len(orjson.dumps(value))
                    if copied > JSON_PATCH_MAX_COPY_BYTES:
                        raise PatchError(
                            f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                            f"exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
                        )
                value = _placed(i, path, value)
                if kind == "move":
                    doc = _remove(doc, _pointer(src))
                doc = _add(doc, _pointer(path), value)
            elif kind == "test":
                have = _get(doc, _pointer(path))
                if have != _value(op):
                    raise PatchError(f"testing value {path} failed: test failed")
            else:
                raise bad_request(f"Unexpected kind: {kind}")
        except PatchError as exc:
            raise _unprocessable(str(exc)) from None
    return doc


def _placed(index: int, path: str, value: Any) -> Any:
    """A copy of `value` to put at `path`, refused when the document would nest past MAX_DEPTH
    there (the value's own levels below the containers the path goes through)."""
    limit = MAX_DEPTH + MANAGED_FIELDS_EXTRA_DEPTH if path.startswith("/metadata/managedFields") else MAX_DEPTH
    if path.count("/") + nesting_depth(value) > limit:
        raise PatchError(
            f"the operation at index {index} would nest the object past the max depth of {MAX_DEPTH} at {path}"
        )
    return json_copy(value)


def _value(op: Obj) -> Any:
    if "value" not in op:
        raise PatchError(f"{op['op']} operation does not have a 'value'")
    return op["value"]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict):
            if part not in cur:
                raise PatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
            cur = cur[part]
        elif isinstance(cur, list):
            idx = _index(part, len(cur))
            cur = cur[idx]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
    return cur


def _index(part: str, size: int, *, allow_end: bool = False) -> int:
    if part == "-" and allow_end:
        return size
    try:
        idx = int(part)
    except ValueError:
        raise PatchError(f"invalid array index {part!r}") from None
    limit = size if allow_end else size - 1
    if idx < 0 or idx > limit:
        raise PatchError(f"Unable to access invalid index: {idx}: invalid index referenced")
    return idx


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _container(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to get nonexistent key: {last}: missing value")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent))]
    raise PatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _container(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
    return doc


def _remove(doc: Any, parts: list[str], *, replacing: bool = False) -> Any:
    if not parts:
        return None
    parent = _container(doc, parts)
    last = parts[-1]
    verb = "replace" if replacing else "remove"
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"Unable to {verb} nonexistent key: {last}: missing value")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(last, len(parent))]
    else:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
    return doc


# ------------------------------------------------------- strategic merge patch

_DIRECTIVE = "$patch"
_RETAIN = "$retainKeys"
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def _child(schema: Obj | None, key: str) -> Obj | None:
    if not schema:
        return None
    props = schema.get("properties") or {}
    if key in props:
        return props[key]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _items(schema: Obj | None) -> Obj | None:
    if not schema:
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _strategy(schema: Obj | None) -> tuple[set[str], str | None]:
    if not schema:
        return set(), None
    raw = schema.get("x-kubernetes-patch-strategy") or ""
    return {s for s in raw.split(",") if s}, schema.get("x-kubernetes-patch-merge-key")


def strategic_merge_patch(original: Obj, patch: Obj, schema: Obj | None) -> Obj:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    try:
        return _smp_map(copy.deepcopy(original), patch, schema)
    except PatchError as exc:
        raise _unprocessable(str(exc)) from None


def _smp_map(original: Obj, patch: Obj, schema: Obj | None) -> Obj:
    directive = patch.get(_DIRECTIVE)
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != _DIRECTIVE})  # type: ignore[no-any-return]
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}")

    retain = patch.get(_RETAIN)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(_ORDER):
            orders[key[len(_ORDER) :]] = value
        elif key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [v for v in current if v not in (value or [])]

    for key, pval in patch.items():
        if key in (_DIRECTIVE, _RETAIN) or key.startswith((_ORDER, _DELETE_PRIMITIVE)):
            continue
        sub = _child(schema, key)
        if pval is None:
            original.pop(key, None)
            continue
        oval = original.get(key)
        if isinstance(pval, dict):
            if pval.get(_DIRECTIVE) == "delete":
                original.pop(key, None)
            elif isinstance(oval, dict):
                original[key] = _smp_map(oval, pval, sub)
            else:
                original[key] = _smp_map({}, pval, sub)
        elif isinstance(pval, list):
            strategies, merge_key = _strategy(sub)
            if "merge" in strategies and isinstance(oval, list):
                original[key] = _smp_list(oval, pval, _items(sub), merge_key)
            else:
                original[key] = [_strip(v) for v in pval if not _is_directive_item(v)]
        else:
            original[key] = copy.deepcopy(pval)

    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError("$retainKeys must be a list")
        for key in [k for k in original if k not in retain]:
            del original[key]
    for field, order in orders.items():
        if isinstance(original.get(field), list):
            _, merge_key = _strategy(_child(schema, field))
            original[field] = _reorder(original[field], order, merge_key)
    return original


def _is_directive_item(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {_DIRECTIVE}


def _smp_list(original: list[Any], patch: list[Any], items: Obj | None, merge_key: str | None) -> list[Any]:
    result = list(original)
    if any(isinstance(p, dict) and p.get(_DIRECTIVE) == "replace" for p in patch):
        return [_strip(p) for p in patch if not _is_directive_item(p)]
    if merge_key is None:
        # merge strategy on a list of primitives: union, keeping order
        for value in patch:
            if value not in result:
                result.append(copy.deepcopy(value))
        return result
    for pitem in patch:
        if not isinstance(pitem, dict):
            raise PatchError(f"cannot merge non-object into a list keyed by {merge_key}")
        if merge_key not in pitem:
            raise PatchError(f"map: {pitem} does not contain declared merge key: {merge_key}")
        key = pitem[merge_key]
        idx = next((i for i, o in enumerate(result) if isinstance(o, dict) and o.get(merge_key) == key), None)
        if pitem.get(_DIRECTIVE) == "delete":
            if idx is not None:
                del result[idx]
            continue
        if idx is None:
            result.append(_strip(pitem))
        else:
            result[idx] = _smp_map(result[idx], pitem, items)
    return result


def _reorder(values: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    def ident(v: Any) -> Any:
        if merge_key and isinstance(v, dict):
            return v.get(merge_key)
        return v

    wanted = [ident(o) for o in order]
    placed = [v for w in wanted for v in values if ident(v) == w]
    rest = [v for v in values if ident(v) not in wanted]
    return placed + rest


def _strip(value: Any) -> Any:
    """Remove patch directives from a value that is being set wholesale."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in (_DIRECTIVE, _RETAIN) and not k.startswith((_ORDER, _DELETE_PRIMITIVE))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value if not _is_directive_item(v)]
    return value
