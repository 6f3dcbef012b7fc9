"""In-memory object storage with etcd-like revisions.

Everything here runs synchronously on the event loop, so each write is atomic with
respect to every reader: no locks, and a LIST plus the revision it reports are always a
consistent snapshot. Each (group, resource) keeps a bounded history of events for watch
resumption (bounded by count here, and by age through the control plane's periodic
`compact`, as etcd is compacted); a watch from a revision older than the history gets 410
Expired, exactly as an apiserver whose etcd history was compacted."""

from __future__ import annotations

import asyncio
import bisect
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from .errors import internal
from .limits import encode_for_storage
from .persist import SQLiteStore

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


class Entry:
    """A stored object. `obj` is never mutated after commit; writers build a new dict.
    `valid_under`: the schema (dict, compared by identity) the object passed without an error
    on its way in, when the write path checked it (ObjectAPI); the next write skips what it left
    unchanged (schema.validate's clean_old). `cel_cost`: with valid_under, when the object also
    passed that schema's CEL rules without an error or a warning, a bound of their cost (the
    CEL validator's old_cost)."""

    __slots__ = ("_raw", "cel_cost", "obj", "valid_under")

    def __init__(self, obj: Obj, raw: bytes | None = None) -> None:
        self.obj = obj
        self._raw = raw
        self.valid_under: object | None = None
        self.cel_cost: int | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = orjson.dumps(self.obj)
        return self._raw

    def copy(self) -> Obj:
        """A deep, independent copy for a writer to modify."""
        return orjson.loads(self.raw)  # type: ignore[no-any-return]


class Event:
    __slots__ = ("entry", "prev", "rev", "type")

    def __init__(self, rev: int, type_: str, entry: Entry, prev: Entry | None) -> None:
        self.rev = rev
        self.type = type_
        self.entry = entry  # the object after the change (for DELETED: last state, deletion revision)
        self.prev = prev  # the object before the change (None for ADDED)


class EventLog:
    """Bounded, revision-ordered history of one resource's events."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.events: list[Event] = []
        self.compacted_rev = 0  # every event with rev <= this has been discarded

    def append(self, event: Event) -> None:
        self.events.append(event)
        if len(self.events) > self.capacity + max(16, self.capacity // 4):
            drop = len(self.events) - self.capacity
            self.compacted_rev = self.events[drop - 1].rev
            del self.events[:drop]

    def since(self, rev: int) -> list[Event] | None:
        """Events with revision > rev, or None when some of them were discarded."""
        if rev < self.compacted_rev:
            return None
        events = self.events
        if not events or events[-1].rev <= rev:
            return []
        idx = bisect.bisect_right(events, rev, key=lambda e: e.rev)
        return events[idx:]

    def compact(self, rev: int) -> None:
        keep = bisect.bisect_right(self.events, rev, key=lambda e: e.rev)
        del self.events[:keep]
        self.compacted_rev = max(self.compacted_rev, rev)


class Waker:
    """Something waiting for changes (a watch stream, an embedded controller)."""

    __slots__ = ("closed", "wake")

    def __init__(self) -> None:
        self.wake = asyncio.Event()
        self.closed = False  # set when the server drops the watch (shutdown, fault injection)

    def close(self) -> None:
        self.closed = True
        self.wake.set()


class ResourceStore:
    """The objects of one (group, resource), indexed by namespace."""

    def __init__(self, key: tuple[str, str], namespaced: bool, history: int) -> None:
        self.key = key
        self.namespaced = namespaced
        self.by_ns: dict[str, dict[str, Entry]] = {}
        self.count = 0
        self.log = EventLog(history)
        self.watchers: set[Waker] = set()
        self.dropped = False
        self.last_rev = 0  # revision of the latest change (caches of derived state key on it)
        self._sorted: list[Key] | None = None
        self._sorted_ns: dict[str, list[Key]] = {}

    # ------------------------------------------------------------- reads
    def get(self, ns: str, name: str) -> Entry | None:
        bucket = self.by_ns.get(ns)
        return bucket.get(name) if bucket else None

    def iter_entries(self, ns: str | None = None) -> Iterator[Entry]:
        if ns is not None:
            yield from (self.by_ns.get(ns) or {}).values()
            return
        for bucket in self.by_ns.values():
            yield from bucket.values()

    def sorted_keys(self, ns: str | None = None) -> list[Key]:
        """Keys in etcd order (namespace, then name); cached until a key comes or goes."""
        if ns is not None:
            cached = self._sorted_ns.get(ns)
            if cached is None:
                cached = self._sorted_ns[ns] = [(ns, name) for name in sorted(self.by_ns.get(ns) or {})]
            return cached
        if self._sorted is None:
            self._sorted = sorted((n, name) for n, bucket in self.by_ns.items() for name in bucket)
        return self._sorted

    # ------------------------------------------------------------ change feed
    def subscribe(self, waker: Waker) -> None:
        self.watchers.add(waker)

    def unsubscribe(self, waker: Waker) -> None:
        self.watchers.discard(waker)

    def _notify(self) -> None:
        for waker in self.watchers:
            waker.wake.set()

    # ------------------------------------------------------------ writes
    def _put(self, ns: str, name: str, entry: Entry) -> bool:
        bucket = self.by_ns.get(ns)
        if bucket is None:
            bucket = self.by_ns[ns] = {}
        is_new = name not in bucket
        bucket[name] = entry
        if is_new:
            self.count += 1
            self._sorted = None
            self._sorted_ns.pop(ns, None)
        return is_new

    def _drop(self, ns: str, name: str) -> None:
        bucket = self.by_ns.get(ns)
        if bucket and name in bucket:
            del bucket[name]
            if not bucket:
                del self.by_ns[ns]
            self.count -= 1
            self._sorted = None
            self._sorted_ns.pop(ns, None)


class Database:
    """All resource stores of one API server and their shared revision counter. With
    `persistence` (kubeplane/persist.py) every commit and delete is written there before it
    is applied here, and the stored objects are loaded at construction."""

    def __init__(self, history: int = 10_000, persistence: SQLiteStore | None = None) -> None:
        self.rev = 1
        self.history = history
        self.stores: dict[tuple[str, str], ResourceStore] = {}
        # wakers subscribed to every store, including stores created later (garbage collector)
        self.global_wakers: set[Waker] = set()
        self.persistence = persistence
        self.history_floor = 0  # no watch history before this revision (a restart's: 410 from before it)
        if persistence is not None:
            self._restore(persistence)

    def _restore(self, persistence: SQLiteStore) -> None:
        stored_rev = persistence.revision()
        for row in persistence.objects():
            st = self.store((row.group, row.resource), row.namespaced)
            st._put(row.namespace, row.name, Entry(orjson.loads(row.raw), row.raw))
        if stored_rev == 0:
            return  # a new data directory
        # one above the last stored revision: resourceVersions keep increasing, and every
        # revision a client saw before the restart is older than the (empty) history
        self.rev = stored_rev + 1
        self.history_floor = self.rev
        persistence.set_revision(self.rev)
        for st in self.stores.values():
            st.last_rev = self.rev
            st.log.compacted_rev = self.rev

    def close(self) -> None:
        if self.persistence is not None:
            self.persistence.close()
            self.persistence = None

    def store(self, key: tuple[str, str], namespaced: bool) -> ResourceStore:
        st = self.stores.get(key)
        if st is None:
            st = self.stores[key] = ResourceStore(key, namespaced, self.history)
            st.log.compacted_rev = self.history_floor
            for waker in self.global_wakers:
                st.subscribe(waker)
                waker.wake.set()
        return st

    def subscribe_all(self, waker: Waker) -> None:
        self.global_wakers.add(waker)
        for st in self.stores.values():
            st.subscribe(waker)

    def unsubscribe_all(self, waker: Waker) -> None:
        self.global_wakers.discard(waker)
        for st in self.stores.values():
            st.unsubscribe(waker)

    def existing(self, key: tuple[str, str]) -> ResourceStore | None:
        return self.stores.get(key)

    def drop_store(self, key: tuple[str, str]) -> None:
        if self.persistence is not None:
            self._durably(self.persistence.drop, key)
        st = self.stores.pop(key, None)
        if st is not None:
            st.dropped = True
            st._notify()

    def commit(self, store: ResourceStore, obj: Obj, prev: Entry | None) -> Entry:
        """Store `obj` (create or update) at a new revision and record the event. The object is
        serialised first and refused (APIError) if it cannot be, or is larger than etcd stores,
        so nothing is committed that cannot be served back; the bytes are kept for reads."""
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rev + 1)
        raw = encode_for_storage(obj)
        ns = meta.get("namespace") or ""
        if self.persistence is not None:  # durable before anyone can see it
            self._durably(self.persistence.put, store.key, store.namespaced, ns, meta["name"], raw, self.rev + 1)
        self.rev += 1
        store.last_rev = self.rev
        entry = Entry(obj, raw)
        store._put(ns, meta["name"], entry)
        store.log.append(Event(self.rev, ADDED if prev is None else MODIFIED, entry, prev))
        store._notify()
        return entry

    def delete(self, store: ResourceStore, prev: Entry) -> Entry:
        """Remove an object; the DELETED event carries its last state at the deletion revision."""
        meta = prev.obj["metadata"]
        if self.persistence is not None:
            self._durably(self.persistence.delete, store.key, meta.get("namespace") or "", meta["name"], self.rev + 1)
        self.rev += 1
        store.last_rev = self.rev
        store._drop(meta.get("namespace") or "", meta["name"])
        last = dict(prev.obj)
        last["metadata"] = dict(meta, resourceVersion=str(self.rev))
        gone = Entry(last)
        store.log.append(Event(self.rev, DELETED, gone, prev))
        store._notify()
        return gone

    @staticmethod
    def _durably(write: Any, *args: Any) -> None:
        """A storage write; its failure (disk full, file removed) refuses the API write (500)."""
        try:
            write(*args)
        except sqlite3.Error as exc:
            raise internal(f"storage: {exc}") from None

    def compact_all(self) -> None:
        """Discard all watch history up to now (what etcd compaction does)."""
        self.compact(self.rev)

    def compact(self, rev: int) -> None:
        """Discard the watch history up to `rev`: watches and lists from before it get 410."""
        for st in self.stores.values():
            st.log.compact(rev)

    def entries(self, keys: Iterable[tuple[str, str]]) -> Iterator[ResourceStore]:
        for key in keys:
            st = self.stores.get(key)
            if st is not None:
                yield st
