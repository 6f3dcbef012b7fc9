"""Copying and comparing JSON-shaped data (dicts, lists and immutable leaves, as decoded from a request).

`json_copy` is `copy.deepcopy` for such data at about a third of its cost: no memo (JSON data
has no shared or cyclic parts worth preserving) and no per-type dispatch. Leaves are shared, as
deepcopy shares them; a float NaN or a huge int from a YAML body survives, which an encode and
decode round trip would not promise."""

from __future__ import annotations

from typing import Any

import orjson


def json_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def unchanged(value: Any, old: Any) -> bool:
    """Whether `value` is `old` to the schema: equal, and with the same JSON types all the way
    down (Python's == has True == 1 == 1.0, which a schema tells apart). A key order that differs
    counts as changed: only a cost, never a wrong answer."""
    if value is old:
        return True
    try:
        return value == old and orjson.dumps(value) == orjson.dumps(old)
    except (orjson.JSONEncodeError, RecursionError):  # a huge int from YAML, hostile nesting: check it
        return False
