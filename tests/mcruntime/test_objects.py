"""`key_of`: client-go's MetaNamespaceKeyFunc over plain dicts, and a malformed name or
namespace named in the error (the fast path for server objects must not swallow it)."""

from __future__ import annotations

from typing import Any

import pytest

from mcruntime.objects import key_of, split_key


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        ({"metadata": {"name": "a", "namespace": "ns"}}, "ns/a"),
        ({"metadata": {"name": "a"}}, "a"),
        ({"metadata": {"name": "a", "namespace": ""}}, "a"),
        ({"metadata": {"name": "a", "namespace": None}}, "a"),
        ({"metadata": {}}, ""),
        ({}, ""),
    ],
)
def test_key_of(obj: dict[str, Any], key: str) -> None:
    assert key_of(obj) == key
    if key:
        assert split_key(key) == (obj["metadata"].get("namespace") or "", "a")


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"metadata": {"name": 1, "namespace": "ns"}}, "metadata.name"),
        ({"metadata": {"name": "a", "namespace": ["ns"]}}, "metadata.namespace"),
        ({"metadata": "a"}, "metadata"),
    ],
)
def test_key_of_names_a_malformed_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}"):
        key_of(obj)
