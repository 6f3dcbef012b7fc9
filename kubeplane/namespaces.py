"""Namespace lifecycle, as kube-apiserver and kube-controller-manager's namespace
controller implement it: DELETE marks the namespace Terminating (new content is refused
by admission), the controller deletes everything in it, waits for finalizers on that
content, reports progress in status conditions, and finally removes the `kubernetes`
spec finalizer, which lets the namespace go."""

from __future__ import annotations

import logging
from collections import Counter

import anyio
import anyio.abc

from .errors import APIError
from .follow import Follower
from .meta import now_rfc3339
from .objectapi import DeleteOptions, ObjectAPI, WriteOptions
from .registry import Obj, Registry, ResourceType
from .store import ResourceStore, Waker

log = logging.getLogger(__name__)

KUBERNETES_FINALIZER = "kubernetes"


def spec_finalizers_block(obj: Obj) -> bool:
    return bool((obj.get("spec") or {}).get("finalizers"))


def mark_terminating(obj: Obj) -> None:
    obj.setdefault("status", {})["phase"] = "Terminating"


def install_namespace_semantics(registry: Registry) -> None:
    rt = registry.get("", "v1", "namespaces")
    assert rt is not None
    rt.extra["blocks_removal"] = spec_finalizers_block
    rt.extra["on_mark_deleted"] = mark_terminating


class NamespaceController:
    MANAGER = "namespace-controller"

    def __init__(self, api: ObjectAPI, registry: Registry) -> None:
        self.api = api
        self.registry = registry
        ns_rt = registry.get("", "v1", "namespaces")
        assert ns_rt is not None
        self.ns_rt = ns_rt
        self.follower = Follower(api.db, ns_rt.storage_key, namespaced=False)
        self._active: set[str] = set()
        self._wakers: set[Waker] = set()

    async def run(self, task_group: anyio.abc.TaskGroup) -> None:
        async for keys in self.follower.changes():
            for _, name in keys:
                entry = self.api.store_for(self.ns_rt).get("", name)
                if entry is None or not entry.obj["metadata"].get("deletionTimestamp"):
                    continue
                if name not in self._active:
                    self._active.add(name)
                    task_group.start_soon(self._terminate, name)

    def close(self) -> None:
        self.follower.close()
        for waker in list(self._wakers):
            waker.close()

    def _namespaced_types(self) -> list[ResourceType]:
        seen: dict[tuple[str, str], ResourceType] = {}
        for rt in self.registry.all():
            if rt.namespaced and rt.storage_key not in seen and rt.is_storage_form:
                seen[rt.storage_key] = rt
        for rt in self.registry.all():
            if rt.namespaced and rt.storage_key not in seen:
                seen[rt.storage_key] = rt
        return list(seen.values())

    async def _terminate(self, name: str) -> None:
        waker = Waker()
        self._wakers.add(waker)
        subscribed: list[tuple[ResourceType, ResourceStore]] = []
        try:
            while not waker.closed:
                waker.wake.clear()
                for _, store in subscribed:
                    store.unsubscribe(waker)
                subscribed.clear()
                remaining: Counter[str] = Counter()
                finalizers: Counter[str] = Counter()
                for rt in self._namespaced_types():
                    found = self.api.db.existing(rt.storage_key)
                    if found is None:
                        continue
                    store = found
                    for entry in list(store.iter_entries(name)):
                        meta = entry.obj["metadata"]
                        if not meta.get("deletionTimestamp"):
                            try:
                                self.api.delete(rt, name, meta["name"], DeleteOptions(propagation="Background"))
                            except APIError as exc:
                                if exc.code != 404:
                                    log.warning("namespace %s: deleting %s/%s: %s", name, rt.plural, meta["name"], exc)
                    left = list(store.iter_entries(name))
                    if left:
                        store.subscribe(waker)
                        subscribed.append((rt, store))
                        remaining[rt.plural if not rt.group else f"{rt.plural}.{rt.group}"] += len(left)
                        for entry in left:
                            for fin in entry.obj["metadata"].get("finalizers") or []:
                                finalizers[fin] += 1
                if not remaining:
                    self._finish(name)
                    return
                self._report(name, remaining, finalizers)
                await waker.wake.wait()
        finally:
            for _, store in subscribed:
                store.unsubscribe(waker)
            self._wakers.discard(waker)
            self._active.discard(name)

    def _report(self, name: str, remaining: Counter[str], finalizers: Counter[str]) -> None:
        entry = self.api.store_for(self.ns_rt).get("", name)
        if entry is None:
            return
        obj = entry.copy()
        conds = [
            c
            for c in (obj.get("status") or {}).get("conditions") or []
            if c.get("type") not in ("NamespaceContentRemaining", "NamespaceFinalizersRemaining")
        ]
        now = now_rfc3339()
        conds.append(
            {
                "type": "NamespaceContentRemaining",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "SomeResourcesRemain",
                "message": "Some resources are remaining: "
                + ", ".join(f"{res} has {n} resource instances" for res, n in sorted(remaining.items())),
            }
        )
        if finalizers:
            conds.append(
                {
                    "type": "NamespaceFinalizersRemaining",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "SomeFinalizersRemain",
                    "message": "Some content in the namespace has finalizers remaining: "
                    + ", ".join(f"{fin} in {n} resource instances" for fin, n in sorted(finalizers.items())),
                }
            )
        old = {(c.get("type"), c.get("message")) for c in (entry.obj.get("status") or {}).get("conditions") or []}
        if old == {(c.get("type"), c.get("message")) for c in conds}:
            return
        obj.setdefault("status", {})["conditions"] = conds
        self.api.commit_internal(self.ns_rt, entry, obj, self.MANAGER, subresource="status")

    def _finish(self, name: str) -> None:
        entry = self.api.store_for(self.ns_rt).get("", name)
        if entry is None:
            return
        obj = entry.copy()
        spec = obj.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != KUBERNETES_FINALIZER]
        self.api.finalize(self.ns_rt, entry, obj, WriteOptions(field_manager=self.MANAGER, field_validation="Ignore"))
