"""The informer's object store, compact by design.

A parsed Python dict costs ~6.5x its JSON size, so the store keeps each (transformed)
object as its compact JSON bytes and decodes on read (orjson decodes a 2 KB object in
microseconds). Indexes hold only small strings. Every read returns a fresh dict, so a
reconciler may modify what it read without corrupting the cache (what controller-runtime
needs DeepCopy for)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from .indexers import NAMESPACE, IndexFunc
from .objects import split_key

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Objs = list[Obj]  # aliases, since `list` is also a method name below
Keys = list[str]
IndexValues = dict[str, tuple[str, ...]]  # index name → the values an object is indexed under


def compact_bytes(raw: bytes) -> bytes:
    """An exact-size copy of `raw`. orjson's output buffer is over-allocated and shrunk in
    place; keeping those blocks for the life of the cache fragments the heap. Measured at
    100k objects, copying halves the RSS per cached object (bench/bench_cache_memory.py)."""
    return bytes(memoryview(raw))


class Store:
    __slots__ = ("_by_namespace", "_index_funcs", "_indices", "_items", "_values")

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, bytes] = {}
        self._by_namespace: dict[str, set[str]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {}
        for name, func in (indexers or {}).items():
            self.add_indexer(name, func)

    # ------------------------------------------------------------------ indexers
    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Add an index; existing objects are indexed at once. Re-adding the same
        function is a no-op, a different function under a taken name is an error."""
        if name == NAMESPACE:
            raise ValueError(f"index {NAMESPACE!r} is built in")
        existing = self._index_funcs.get(name)
        if existing is not None:
            if existing is func or existing == func:
                return
            raise ValueError(f"index {name!r} already exists with a different function")
        self._index_funcs[name] = func
        self._indices[name] = {}
        self._values[name] = {}
        for key, raw in self._items.items():
            self._index_one(name, func, key, orjson.loads(raw))

    @property
    def index_names(self) -> list[str]:
        return [NAMESPACE, *self._index_funcs]

    def _index_one(self, name: str, func: IndexFunc, key: str, obj: Obj) -> None:
        self._add_values(name, key, self._values_of(name, func, key, obj))

    @staticmethod
    def _values_of(name: str, func: IndexFunc, key: str, obj: Obj) -> tuple[str, ...]:
        try:
            values = func(obj)
            if type(values) is list and len(values) < 2:
                return tuple(values)  # the usual one value (or none): nothing to deduplicate
            return tuple(dict.fromkeys(values))
        except Exception:
            # a faulty custom index must not take the informer down; the object stays
            # readable by key and simply is not found through this index
            log.exception("index function %r failed for %s", name, key)
            return ()

    def _add_values(self, name: str, key: str, values: tuple[str, ...]) -> None:
        if not values:
            return
        self._values[name][key] = values
        index = self._indices[name]
        for value in values:
            bucket = index.get(value)
            if bucket is None:
                index[value] = {key}
            else:
                bucket.add(key)

    def index_values(self, key: str, obj: Obj) -> IndexValues | None:
        """What `put` would index `obj` under, for a caller that holds the dict now and
        stores its JSON later (an informer's LIST): `put(..., index_values=...)` then
        indexes without decoding the JSON again. None when the store has no indexers."""
        if not self._index_funcs:
            return None
        return {name: self._values_of(name, func, key, obj) for name, func in self._index_funcs.items()}

    def _unindex_one(self, name: str, key: str) -> None:
        values = self._values[name].pop(key, None)
        if not values:
            return
        index = self._indices[name]
        for value in values:
            bucket = index.get(value)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del index[value]

    # ------------------------------------------------------------------ writes
    def put(
        self,
        key: str,
        obj: Obj | None,
        raw: bytes | None = None,
        *,
        compact: bool = False,
        index_values: IndexValues | None = None,
    ) -> bytes | None:
        """Store an object given as a dict, its JSON, or both; return the previous JSON.
        `compact=True` says `raw` is already an exact-size copy (see `compact_bytes`);
        `index_values` (from `index_values`) spares decoding `raw` to index it."""
        if raw is None and obj is None:
            raise ValueError("put needs the object or its JSON")
        data = raw if compact and raw is not None else compact_bytes(raw if raw is not None else orjson.dumps(obj))
        old = self._items.get(key)
        self._items[key] = data
        if old is None:
            ns, _name = split_key(key)
            bucket = self._by_namespace.get(ns)
            if bucket is None:
                self._by_namespace[ns] = {key}
            else:
                bucket.add(key)
        for name, func in self._index_funcs.items():
            if old is not None:
                self._unindex_one(name, key)
            values = index_values.get(name) if index_values is not None else None
            if values is None:  # not given, or an indexer added since they were computed
                if obj is None:
                    obj = orjson.loads(data)
                values = self._values_of(name, func, key, obj)
            self._add_values(name, key, values)
        return old

    def delete(self, key: str) -> bytes | None:
        old = self._items.pop(key, None)
        if old is None:
            return None
        ns, _name = split_key(key)
        bucket = self._by_namespace.get(ns)
        if bucket is not None:
            bucket.discard(key)
            if not bucket:
                del self._by_namespace[ns]
        for name in self._index_funcs:
            self._unindex_one(name, key)
        return old

    def clear(self) -> None:
        self._items.clear()
        self._by_namespace.clear()
        for name in self._index_funcs:
            self._indices[name].clear()
            self._values[name].clear()

    # ------------------------------------------------------------------ reads
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def keys(self) -> Keys:
        return list(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def get_raw(self, key: str) -> bytes | None:
        return self._items.get(key)

    def get(self, key: str) -> Obj | None:
        raw = self._items.get(key)
        return orjson.loads(raw) if raw is not None else None

    def items_raw(self) -> Iterator[tuple[str, bytes]]:
        return iter(list(self._items.items()))

    def list(self, namespace: str | None = None) -> Objs:
        if namespace is None:
            return [orjson.loads(raw) for raw in self._items.values()]
        return self._decode(self._by_namespace.get(namespace, ()))

    def index_keys(self, index: str, value: str) -> Keys:
        if index == NAMESPACE:
            return sorted(self._by_namespace.get(value, ()))
        try:
            bucket = self._indices[index].get(value, ())
        except KeyError:
            raise KeyError(f"no index named {index!r}; have {', '.join(self.index_names)}") from None
        return sorted(bucket)

    def indexed(self, index: str, value: str, key: str) -> bool:
        """Whether the object at `key` is indexed under `value` (O(1), nothing decoded)."""
        if index == NAMESPACE:
            return key in self._by_namespace.get(value, ())
        try:
            return key in self._indices[index].get(value, ())
        except KeyError:
            raise KeyError(f"no index named {index!r}; have {', '.join(self.index_names)}") from None

    def values_of(self, index: str, key: str) -> tuple[str, ...]:
        """The values `index` holds the object at `key` under (O(1), nothing decoded); ()
        when the object is not stored or not indexed there."""
        if index == NAMESPACE:
            return (split_key(key)[0],) if key in self._items else ()
        try:
            return self._values[index].get(key, ())
        except KeyError:
            raise KeyError(f"no index named {index!r}; have {', '.join(self.index_names)}") from None

    def by_index(self, index: str, value: str) -> Objs:
        return self._decode(self.index_keys(index, value))

    def _decode(self, keys: Iterable[str]) -> Objs:
        items = self._items
        return [orjson.loads(items[k]) for k in keys if k in items]
