"""One cluster's informer cache: informers shared per (resource, namespace, label
selector, field selector), started on first use, and cached reads that wait for the
informer's first LIST (a reconciler never mistakes an unsynced cache for "not found")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc

from .errors import APIError, CacheNotSyncedError
from .indexers import NAMESPACE, IndexFunc
from .informer import Informer, Transform
from .metrics import RuntimeMetrics, default_metrics
from .objects import Obj, Objs, labels_of, make_key, strip_for_cache
from .resources import Resource
from .selectors import LabelSelector
from .transport import Transport

log = logging.getLogger(__name__)

InformerKey = tuple[Resource, str | None, str | None, str | None]


class InformerCache:
    def __init__(
        self,
        transport: Transport,
        *,
        cluster: str = "",
        metrics: RuntimeMetrics | None = None,
        transform: Transform | None = strip_for_cache,
        sync_timeout: float = 60.0,
        informer_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.transport = transport
        self.cluster = cluster
        self.metrics = metrics or default_metrics()
        self.transform = transform
        self.sync_timeout = sync_timeout
        self.informer_options = dict(informer_options or {})
        self._informers: dict[InformerKey, Informer] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------------ informers
    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer:
        """The shared informer for this view of a resource (created and started if new)."""
        if label_selector:
            LabelSelector.parse(label_selector)  # a bad selector fails here, clearly, not in a retry loop
        key: InformerKey = (resource, namespace or None, label_selector or None, field_selector or None)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.transport,
                resource,
                cluster=self.cluster,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                transform=self.transform,
                metrics=self.metrics,
                **self.informer_options,
            )
            self._informers[key] = informer
            if self._tg is not None:
                self._tg.start_soon(informer.run, name=repr(informer))
        for name, func in (indexers or {}).items():
            informer.add_indexer(name, func)
        return informer

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    @property
    def has_synced(self) -> bool:
        return all(inf.has_synced for inf in self._informers.values())

    async def wait_for_sync(self, within: float | None = None) -> bool:
        with anyio.move_on_after(within):
            for informer in list(self._informers.values()):
                await informer.wait_for_sync()
        return self.has_synced

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run every informer (present and future) until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                for informer in self._informers.values():
                    if not informer.running:
                        tg.start_soon(informer.run, name=repr(informer))
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._tg = None

    # ------------------------------------------------------------------ cached reads
    async def _synced_informer(self, resource: Resource) -> Informer:
        informer = self.informer(resource)
        if not informer.has_synced and not await informer.wait_for_sync(self.sync_timeout):
            raise CacheNotSyncedError(
                f"cluster {self.cluster!r}: cache for {resource} did not sync within {self.sync_timeout}s"
            )
        return informer

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """The cached object; raises the API's NotFound error when it is not cached."""
        informer = await self._synced_informer(resource)
        obj = informer.store.get(make_key(namespace or "", name) if resource.namespaced else name)
        if obj is None:
            raise APIError.not_found(resource.qualified, name)
        return obj

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
    ) -> Objs:
        """Cached objects, optionally in one namespace, matching a label selector, or
        filed under an index value (`index=("owner-uid", uid)`)."""
        informer = await self._synced_informer(resource)
        store = informer.store
        if index is not None:
            items = store.by_index(*index)
            if namespace:
                items = [o for o in items if (o.get("metadata") or {}).get("namespace") == namespace]
        elif namespace:
            items = store.by_index(NAMESPACE, namespace)
        else:
            items = store.list()
        if label_selector:
            selector = LabelSelector.parse(label_selector)
            items = [o for o in items if selector.matches(labels_of(o))]
        return items
