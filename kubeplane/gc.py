"""Garbage collector with kube-controller-manager's semantics for `ownerReferences`.

An owner reference is resolved the way the real collector does it: map apiVersion+kind
to a resource, GET the owner by name (in the dependent's namespace when the owner kind
is namespaced), and compare its uid. So a reference with the wrong kind or a dead uid
points at nothing, and its dependent is collected; a kind the server does not serve at
all cannot be resolved and the dependent is left alone (re-checked when new kinds are
registered).

- background: once every owner is gone, the dependent is deleted;
- foreground: an owner marked with the `foregroundDeletion` finalizer has its dependents
  deleted (themselves in foreground when they have dependents) and loses the finalizer
  once no dependent with `blockOwnerDeletion: true` remains — dependents with finalizers
  are waited on, never forced;
- orphan: an owner marked with the `orphan` finalizer has its uid removed from every
  dependent's ownerReferences, then loses the finalizer.

It is level-triggered over the servers's event history: every change to an object, its
owners or its dependents puts the object back in the queue, and processing reads the
current state."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .errors import APIError
from .objectapi import FOREGROUND, ORPHAN, DeleteOptions, ObjectAPI
from .registry import Obj, Registry, ResourceType
from .store import DELETED, Entry, Event, Waker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Node:
    storage_key: tuple[str, str]
    namespace: str
    name: str


class GarbageCollector:
    MANAGER = "generic-garbage-collector"

    def __init__(self, api: ObjectAPI, registry: Registry) -> None:
        self.api = api
        self.registry = registry
        self.waker = Waker()
        self.nodes: dict[str, Node] = {}
        self.owner_refs: dict[str, tuple[Obj, ...]] = {}
        self.dependents: dict[str, set[str]] = {}
        self.pending: dict[str, None] = {}
        self.unresolved: set[str] = set()
        self._cursors: dict[tuple[str, str], int] = {}
        self._registry_generation = registry.generation
        self.deletions = 0  # objects the collector deleted or marked (for tests and benchmarks)

    # ------------------------------------------------------------------ loop
    async def run(self) -> None:
        db = self.api.db
        db.subscribe_all(self.waker)
        try:
            start = db.rev
            for key, store in list(db.stores.items()):
                self._cursors[key] = start
                for entry in store.iter_entries():
                    self._observe(key, entry.obj, None)
            while not self.waker.closed:
                self.waker.wake.clear()
                progressed = self._drain()
                if self.registry.generation != self._registry_generation:
                    self._registry_generation = self.registry.generation
                    self.pending.update(dict.fromkeys(self.unresolved))
                while self.pending:
                    uid = next(iter(self.pending))
                    del self.pending[uid]
                    self._attempt(uid)
                    progressed = True
                if not progressed:
                    await self.waker.wake.wait()
        finally:
            db.unsubscribe_all(self.waker)

    def close(self) -> None:
        self.waker.close()

    def _drain(self) -> bool:
        seen = False
        db = self.api.db
        for key, store in list(db.stores.items()):
            cursor = self._cursors.get(key, 0)
            events = store.log.since(cursor)
            if events is None:
                self._resync(key)
                seen = True
                continue
            if events:
                self._cursors[key] = events[-1].rev
                for ev in events:
                    self._apply_event(key, ev)
                seen = True
        return seen

    def _resync(self, key: tuple[str, str]) -> None:
        """History for a store was compacted under us: rebuild its part of the graph."""
        store = self.api.db.stores[key]
        self._cursors[key] = self.api.db.rev
        present: set[str] = set()
        for entry in store.iter_entries():
            uid = entry.obj["metadata"].get("uid", "")
            present.add(uid)
            self._observe(key, entry.obj, None)
        for uid, node in list(self.nodes.items()):
            if node.storage_key == key and uid not in present:
                self._forget(uid)

    def _apply_event(self, key: tuple[str, str], ev: Event) -> None:
        if ev.type == DELETED:
            uid = ev.entry.obj["metadata"].get("uid", "")
            self._forget(uid)
        else:
            self._observe(key, ev.entry.obj, ev.prev.obj if ev.prev else None)

    # ------------------------------------------------------------------ graph
    def _observe(self, key: tuple[str, str], obj: Obj, prev: Obj | None) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid", "")
        self.nodes[uid] = Node(key, meta.get("namespace") or "", meta["name"])
        refs = tuple(r for r in meta.get("ownerReferences") or [] if isinstance(r, dict))
        old_refs = self.owner_refs.get(uid, ())
        if refs != old_refs:
            for ref in old_refs:
                deps = self.dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(uid)
                    if not deps:
                        del self.dependents[ref.get("uid", "")]
            for ref in refs:
                self.dependents.setdefault(ref.get("uid", ""), set()).add(uid)
            if refs:
                self.owner_refs[uid] = refs
            else:
                self.owner_refs.pop(uid, None)
        if refs:
            self.pending[uid] = None
        fins = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and (FOREGROUND in fins or ORPHAN in fins):
            self.pending[uid] = None
        if prev is not None and not prev["metadata"].get("deletionTimestamp") and meta.get("deletionTimestamp"):
            # an owner started deleting: its dependents and its own owners re-check
            self.pending.update(dict.fromkeys(self.dependents.get(uid, ())))

    def _forget(self, uid: str) -> None:
        self.nodes.pop(uid, None)
        for ref in self.owner_refs.pop(uid, ()):
            owner = ref.get("uid", "")
            deps = self.dependents.get(owner)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self.dependents[owner]
            self.pending[owner] = None  # an owner deleting in foreground may be unblocked
        self.pending.update(dict.fromkeys(self.dependents.get(uid, ())))
        self.unresolved.discard(uid)

    def _entry(self, uid: str) -> tuple[ResourceType, Entry] | None:
        node = self.nodes.get(uid)
        if node is None:
            return None
        rt = self._type_for(node.storage_key)
        store = self.api.db.existing(node.storage_key)
        if rt is None or store is None:
            return None
        entry = store.get(node.namespace, node.name)
        if entry is None or entry.obj["metadata"].get("uid") != uid:
            return None
        return rt, entry

    def _type_for(self, key: tuple[str, str]) -> ResourceType | None:
        types = self.registry.for_storage(key)
        for rt in types:
            if rt.is_storage_form:
                return rt
        return types[0] if types else None

    # ------------------------------------------------------------------ decisions
    def _attempt(self, uid: str) -> None:
        found = self._entry(uid)
        if found is None:
            return
        rt, entry = found
        meta = entry.obj["metadata"]
        fins = meta.get("finalizers") or []
        try:
            if meta.get("deletionTimestamp"):
                if ORPHAN in fins:
                    self._orphan_dependents(uid, rt, entry)
                elif FOREGROUND in fins:
                    self._delete_dependents_first(uid, rt, entry)
                return
            # decide from the object as it is now; the graph index may lag our own writes
            refs = tuple(r for r in meta.get("ownerReferences") or [] if isinstance(r, dict))
            if refs:
                self._collect_if_orphaned(uid, rt, entry, refs)
        except APIError as exc:
            # a conflict or a vanished object: the next event about it brings it back
            log.debug("garbage collector: %s/%s: %s", rt.plural, meta.get("name"), exc)

    def _classify(self, dependent: Obj, ref: Obj) -> str:
        owner_rt = self.registry.find_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if owner_rt is None:
            return "unresolved"
        dep_ns = dependent["metadata"].get("namespace") or ""
        if owner_rt.namespaced and not dep_ns:
            return "dangling"  # a cluster-scoped object cannot be owned by a namespaced one
        store = self.api.db.existing(owner_rt.storage_key)
        owner = store.get(dep_ns if owner_rt.namespaced else "", str(ref.get("name", ""))) if store else None
        if owner is None or owner.obj["metadata"].get("uid") != ref.get("uid"):
            return "dangling"
        ometa = owner.obj["metadata"]
        if ometa.get("deletionTimestamp") and FOREGROUND in (ometa.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _collect_if_orphaned(self, uid: str, rt: ResourceType, entry: Entry, refs: tuple[Obj, ...]) -> None:
        verdicts = [(ref, self._classify(entry.obj, ref)) for ref in refs]
        if any(v == "unresolved" for _, v in verdicts):
            self.unresolved.add(uid)
            return
        self.unresolved.discard(uid)
        solid = [r for r, v in verdicts if v == "solid"]
        gone = [r for r, v in verdicts if v in ("dangling", "waiting")]
        if not gone:
            return
        meta = entry.obj["metadata"]
        if solid:
            # still owned: drop only the references to absent or foreground-deleting owners
            obj = entry.copy()
            drop = {r.get("uid") for r in gone}
            obj["metadata"]["ownerReferences"] = [
                r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") not in drop
            ]
            self.api.commit_internal(rt, entry, obj, self.MANAGER)
            return
        fins = meta.get("finalizers") or []
        waiting = any(v == "waiting" for _, v in verdicts)
        if waiting and self.dependents.get(uid):
            policy = "Foreground"
        elif ORPHAN in fins:
            policy = "Orphan"
        elif FOREGROUND in fins:
            policy = "Foreground"
        else:
            policy = "Background"
        self.api.delete(rt, meta.get("namespace") or "", meta["name"], DeleteOptions(propagation=policy, uid=uid))
        self.deletions += 1

    def _delete_dependents_first(self, uid: str, rt: ResourceType, entry: Entry) -> None:
        deps = list(self.dependents.get(uid, ()))
        self.pending.update(dict.fromkeys(deps))
        blocking = [d for d in deps if self._blocks(d, uid)]
        if not blocking:
            self._remove_finalizer(rt, entry, FOREGROUND)

    def _blocks(self, dep_uid: str, owner_uid: str) -> bool:
        found = self._entry(dep_uid)
        if found is None:
            return False
        return any(
            isinstance(r, dict) and r.get("uid") == owner_uid and r.get("blockOwnerDeletion") is True
            for r in found[1].obj["metadata"].get("ownerReferences") or []
        )

    def _orphan_dependents(self, uid: str, rt: ResourceType, entry: Entry) -> None:
        for dep in list(self.dependents.get(uid, ())):
            found = self._entry(dep)
            if found is None:
                continue
            dep_rt, dep_entry = found
            obj = dep_entry.copy()
            obj["metadata"]["ownerReferences"] = [
                r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
            ]
            if not obj["metadata"]["ownerReferences"]:
                del obj["metadata"]["ownerReferences"]
            self.api.commit_internal(dep_rt, dep_entry, obj, self.MANAGER)
        self._remove_finalizer(rt, entry, ORPHAN)

    def _remove_finalizer(self, rt: ResourceType, entry: Entry, finalizer: str) -> None:
        obj: dict[str, Any] = entry.copy()
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        if not obj["metadata"]["finalizers"]:
            del obj["metadata"]["finalizers"]
        self.api.commit_internal(rt, entry, obj, self.MANAGER)
        self.deletions += 1
