"""The one typed reader of plain JSON objects (as the runtime's caches hand them out), with
errors that name the field.

Controllers, projectors, operator tools and the runtime itself read wire dicts, never
models, and read them only through these functions (`get_str(obj, "metadata.name")`, not
`obj["metadata"]["name"]` nor `.get("metadata", {}).get(...)` chains): a wrong type or a
missing required field becomes a `ValueError` whose message starts with the full dotted
field path (`spec.template.spec: expected an object, got list`), never a `KeyError` or
`TypeError` from deep inside a controller. Absent optional values read as empty (`{}`,
`[]`, `""` when not required, `None` for integers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

_NOT_OBJECTS = frozenset({str, int, float, bool, type(None), list})  # exact JSON types, none a Mapping


def is_object(value: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether `value` reads as a JSON object: any Mapping. Decoded JSON is plain dicts,
    lists and scalars, told by their exact type first, which spares the Mapping ABC's
    instance check (~150 ns, on every event of the most watched objects)."""
    kind = type(value)
    return kind is dict or (kind not in _NOT_OBJECTS and isinstance(value, Mapping))


def join(base: str, path: str) -> str:
    """`base.path` (just `path` when there is no base)."""
    return f"{base}.{path}" if base else path


_KEYS: dict[str, tuple[str, ...]] = {}  # a dotted path's keys; paths are literals in the code (a few hundred)


def _keys(path: str) -> tuple[str, ...]:
    keys = _KEYS.get(path)
    if keys is None:
        keys = tuple(path.split("."))
        if len(_KEYS) < 4096:  # bounded, should a caller ever build paths at run time
            _KEYS[path] = keys
    return keys


def _walk(obj: Mapping[str, Any], path: str, base: str) -> Any:
    # on every event of every controller: plain dicts take the fast test, and the walked
    # path is spelled only for an error
    current: Any = obj
    keys = _KEYS.get(path) or _keys(path)
    for key in keys:
        if type(current) is not dict:
            if current is None:
                return None
            if not isinstance(current, Mapping):
                raise _not_an_object(obj, keys, base)
        current = current.get(key)
    return current


def _not_an_object(obj: Mapping[str, Any], keys: tuple[str, ...], base: str) -> ValueError:
    """The error for a walk that met a value that is not an object, naming where (found
    again here: the walk itself does not count its steps)."""
    current: Any = obj
    for index, key in enumerate(keys):
        if not isinstance(current, Mapping):
            walked = keys[:index]
            where = ".".join((base, *walked) if base else walked)
            return ValueError(f"{where}: expected an object, got {type(current).__name__}")
        current = current.get(key)
    return ValueError(f"{'.'.join(keys)}: expected an object")  # not reached: the walk met a non-object


def get_mapping(obj: Mapping[str, Any], path: str, *, base: str = "", required: bool = False) -> Mapping[str, Any]:
    """The object at dotted `path`; `{}` when absent (an error when `required`)."""
    value = _walk(obj, path, base)
    if value is None:
        if required:
            raise ValueError(f"{join(base, path)}: required")
        return {}
    if not is_object(value):
        raise ValueError(f"{join(base, path)}: expected an object, got {type(value).__name__}")
    return value


def get_list(obj: Mapping[str, Any], path: str, *, base: str = "") -> list[Any]:
    """The list at dotted `path`; `[]` when absent."""
    value = _walk(obj, path, base)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{join(base, path)}: expected a list, got {type(value).__name__}")
    return value


def get_objects(obj: Mapping[str, Any], path: str, *, base: str = "") -> list[Mapping[str, Any]]:
    """The list of objects at dotted `path` (ownerReferences, conditions); `[]` when absent."""
    items = get_list(obj, path, base=base)
    for index, item in enumerate(items):
        if not is_object(item):
            raise ValueError(f"{join(base, path)}[{index}]: expected an object, got {type(item).__name__}")
    return items


def get_str(obj: Mapping[str, Any], path: str, *, base: str = "", required: bool = True) -> str:
    """The string at dotted `path`; `""` when absent and not `required` (required means non-empty)."""
    value = _walk(obj, path, base)
    if type(value) is str and value:
        return value
    if value is None or value == "":
        if required:
            raise ValueError(f"{join(base, path)}: required")
        return ""
    if isinstance(value, str):  # a str subclass (an enum member in an object built here)
        return value
    raise ValueError(f"{join(base, path)}: expected a string, got {type(value).__name__}")


def get_int(obj: Mapping[str, Any], path: str, *, base: str = "") -> int | None:
    """The non-negative integer at dotted `path`; None when absent."""
    value = _walk(obj, path, base)
    if value is None:
        return None
    field = join(base, path)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field}: expected an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{field}: must be >= 0, got {value}")
    return value


def get_str_map(obj: Mapping[str, Any], path: str, *, base: str = "") -> dict[str, str]:
    """The string-to-string map (labels, annotations) at dotted `path`; `{}` when absent."""
    out: dict[str, str] = {}
    for key, value in get_mapping(obj, path, base=base).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"{join(base, path)}: expected string keys and values, got {key!r}: {value!r}")
        out[key] = value
    return out


def generation(obj: Mapping[str, Any]) -> int:
    """metadata.generation (every object an API server returns has one)."""
    value = get_int(obj, "metadata.generation")
    if value is None:
        raise ValueError("metadata.generation: required")
    return value


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object is marked for deletion (metadata.deletionTimestamp set)."""
    return bool(get_str(obj, "metadata.deletionTimestamp", required=False))
