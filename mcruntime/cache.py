"""One cluster's informer cache: one informer per declared view (see `view.py`), and
cached reads served from the view of the resource read.

Reads never wait long and never start a cache nobody declared:
- a resource (or namespace) outside every declared view raises `NoCacheViewError`;
- a view whose LIST was refused with 401/403 raises that refusal at once;
- on an unreachable cluster, or a view still syncing after `sync_wait` seconds, the read
  raises `ClusterNotReadyError` and the caller's request is retried with backoff. One
  dead cluster therefore costs a worker at most `sync_wait`, never the sync timeout."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import anyio
import anyio.abc

from .backoff import Backoff
from .errors import APIError, ClusterNotReadyError, NoCacheViewError
from .fields import get_str, get_str_map
from .indexers import NAMESPACE, IndexFunc
from .informer import Informer
from .metrics import RuntimeMetrics, default_metrics
from .objects import Obj, Objs, make_key
from .resources import Resource
from .selectors import LabelSelector
from .transport import Transport
from .view import View

log = logging.getLogger(__name__)


class ViewConflictError(ValueError):
    """Two different views of one resource declared in one cluster."""


@dataclass(frozen=True)
class InformerOptions:
    """Tuning shared by a cache's informers (client-go's reflector defaults)."""

    page_size: int = 500
    watch_timeout: tuple[int, int] = (300, 600)
    read_timeout: float = 120.0
    backoff: Callable[[], Backoff] = field(default=Backoff)


@dataclass(frozen=True)
class CacheOptions:
    """How long a cached read may wait for a view that is still syncing, informer tuning,
    and the label selector each view of a resource is narrowed by (`label_selectors`:
    controller-runtime's `cache.Options.ByObject[...].Label`; a sharded replica caches only
    what is labelled for its shard). An aliased view sees past that narrowing (`View.alias`)."""

    sync_wait: float = 1.0
    informer: InformerOptions = field(default_factory=InformerOptions)
    label_selectors: Mapping[Resource, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sync_wait < 0:
            raise ValueError("sync_wait must be >= 0 seconds")
        for selector in self.label_selectors.values():
            LabelSelector.parse(selector)  # a bad selector fails when configured, not in a retry loop


class InformerCache:
    def __init__(
        self,
        transport: Transport,
        *,
        cluster: str = "",
        metrics: RuntimeMetrics | None = None,
        options: CacheOptions | None = None,
    ) -> None:
        self.transport = transport
        self.cluster = cluster
        self.metrics = metrics or default_metrics()
        self.options = options or CacheOptions()
        # each view with its informer, by resource and alias (see `_key`): one lookup per read
        self._held: dict[tuple[Resource, str], tuple[View, Informer]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._on_synced: list[Callable[[], None]] = []
        # every informer held has synced (an informer never un-syncs; a new one resets it):
        # `has_synced` is asked per event and per reconcile, and answered without a walk
        self._all_synced = False

    # ------------------------------------------------------------------ views
    def _key(self, resource: Resource, alias: str) -> tuple[Resource, str]:
        """Where the view of (resource, alias) lives: an alias names a view of its own only
        where this cache narrows the resource; elsewhere it is the resource's one view.
        (On every cached read: the unaliased key is made without the narrowing lookup.)"""
        if not alias:
            return (resource, "")
        return (resource, alias if resource in self.options.label_selectors else "")

    def held(self, view: View) -> View:
        """The view this cache holds for a declared one: narrowed by the cache's selector of
        the resource (ANDed with the view's own), or, aliased, past it."""
        narrowing = self.options.label_selectors.get(view.resource)
        if narrowing is None:
            return replace(view, alias="") if view.alias else view
        if view.alias:
            return view
        selector = f"{view.label_selector},{narrowing}" if view.label_selector else narrowing
        return replace(view, label_selector=selector)

    def declare(self, view: View, *, indexers: Mapping[str, IndexFunc] | None = None) -> Informer:
        """The informer of `view` (as `held`), created (and started, when the cache runs) on
        first declaration. Declaring the same view again returns the same informer; a
        different view of a resource that already has one (under the same alias) is a
        `ViewConflictError`."""
        view = self.held(view)
        key = self._key(view.resource, view.alias)
        held = self._held.get(key)
        if held is not None and held[0] != view:
            raise ViewConflictError(
                f"cluster {self.cluster!r}: {view.resource} already has the cache view [{held[0]}]; "
                f"cannot also declare [{view}] (one view per resource and cluster, shared by watches and reads)"
            )
        if held is not None:
            informer = held[1]
        else:
            opts = self.options.informer
            informer = Informer(
                self.transport,
                view.resource,
                cluster=self.cluster,
                namespace=view.namespace,
                label_selector=view.label_selector,
                field_selector=view.field_selector,
                transform=view.transform,
                page_size=opts.page_size,
                watch_timeout=opts.watch_timeout,
                read_timeout=opts.read_timeout,
                backoff=opts.backoff(),
                metrics=self.metrics,
                metadata_only=view.metadata_only,
            )
            self._held[key] = (view, informer)
            self._all_synced = False
            informer.on_currency_change(self._currency_changed)
            if self._tg is not None:
                self._start(self._tg, informer)
        for name, func in (indexers or {}).items():
            informer.add_indexer(name, func)
        return informer

    def narrows(self, resource: Resource) -> bool:
        """Whether this cache holds only part of the resource (`CacheOptions.label_selectors`)."""
        return resource in self.options.label_selectors

    def view_of(self, resource: Resource, alias: str = "") -> View | None:
        held = self._held.get(self._key(resource, alias))
        return None if held is None else held[0]

    @property
    def views(self) -> dict[Resource, View]:
        """The declared views of the resources, by resource (aliased views left out)."""
        return {resource: view for (resource, alias), (view, _) in self._held.items() if not alias}

    def _lookup(self, resource: Resource, alias: str) -> tuple[View, Informer]:
        """The declared view of the resource (under `alias`) and its informer."""
        held = self._held.get(self._key(resource, alias))
        if held is None:
            named = f" (alias {alias!r})" if alias else ""
            raise NoCacheViewError(
                f"cluster {self.cluster!r}: no cache view of {resource}{named} is declared; declare one "
                "(Controller.watch / Controller.reads) or read it live (Client.get_live)"
            )
        return held

    def informer_of(self, resource: Resource, alias: str = "") -> Informer:
        """The informer of the resource's declared view (under `alias`, see `View.alias`)."""
        return self._lookup(resource, alias)[1]

    @property
    def informers(self) -> list[Informer]:
        return [informer for _, informer in self._held.values()]

    @property
    def has_synced(self) -> bool:
        if not self._all_synced:
            self._all_synced = all(inf.has_synced for _, inf in self._held.values())
        return self._all_synced

    @property
    def current(self) -> bool:
        """Every informer follows its server now (see `Informer.current`)."""
        return all(inf.current for _, inf in self._held.values())

    @property
    def waiting_for_server(self) -> bool:
        """Some informer backs off after a failure the server did not answer."""
        return any(inf.waiting_for_server for _, inf in self._held.values())

    def retry_now(self) -> None:
        """The server answers again: every informer waiting for it retries at once."""
        for _, informer in self._held.values():
            informer.retry_now()

    def on_synced(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever one of the informers completes its first LIST, or
        starts or stops following its server (`current`)."""
        self._on_synced.append(callback)

    def _currency_changed(self) -> None:
        for callback in list(self._on_synced):
            callback()

    async def wait_for_sync(self, within: float | None = None) -> bool:
        with anyio.move_on_after(within):
            for informer in self.informers:
                await informer.wait_for_sync()
        return self.has_synced

    # ------------------------------------------------------------------ running
    def _start(self, tg: anyio.abc.TaskGroup, informer: Informer) -> None:
        tg.start_soon(informer.run, name=repr(informer))
        tg.start_soon(self._report_sync, informer, name=f"sync report {informer!r}")

    async def _report_sync(self, informer: Informer) -> None:
        await informer.wait_for_sync()
        for callback in list(self._on_synced):
            callback()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run every informer (present and future) until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                for informer in self.informers:
                    if not informer.running:
                        self._start(tg, informer)
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._tg = None

    # ------------------------------------------------------------------ cached reads
    def _ready(self, resource: Resource, namespace: str | None, alias: str) -> Informer | None:
        """The informer that serves the read now: declared, covering the namespace and
        synced (what nearly every read finds, answered without a coroutine); else None, and
        `_synced` says why or waits."""
        held = self._held.get(self._key(resource, alias))
        if held is None or not held[0].covers_namespace(namespace) or not held[1].has_synced:
            return None
        return held[1]

    async def _synced(self, resource: Resource, namespace: str | None, alias: str) -> Informer:
        view, informer = self._lookup(resource, alias)
        if not view.covers_namespace(namespace):
            where = f"namespace {namespace!r}" if namespace else "all namespaces"
            raise NoCacheViewError(
                f"cluster {self.cluster!r}: the cache view of {resource} is [{view}]; it cannot serve {where}"
            )
        if informer.has_synced:
            return informer
        if informer.access_error is not None:
            raise informer.access_error
        contact = self.transport.contact
        if contact.reachable is False:
            raise ClusterNotReadyError(self.cluster, "unreachable", contact.last_error)
        if not await informer.wait_for_answer(self.options.sync_wait):
            if informer.access_error is not None:
                raise informer.access_error
            state = "syncing" if self.transport.contact.reachable is not False else "unreachable"
            raise ClusterNotReadyError(self.cluster, state, f"the cache of [{view}] has not synced yet")
        return informer

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None, alias: str = "") -> Obj:
        """The cached object; raises the API's NotFound error when it is not cached."""
        namespaced = resource.namespaced
        informer = self._ready(resource, namespace if namespaced else None, alias)
        if informer is None:
            informer = await self._synced(resource, namespace if namespaced else None, alias)
        obj = informer.store.get(make_key(namespace or "", name) if namespaced else name)
        if obj is None:
            raise APIError.not_found(resource.qualified, name)
        return obj

    async def get_or_none(
        self, resource: Resource, name: str, *, namespace: str | None = None, alias: str = ""
    ) -> Obj | None:
        """`get`, with an object not cached as None and no NotFound error made for it: a
        reconciler asks for what it has not created yet (a copy, a finalizer's target) on
        every reconcile, and raising and catching the error cost more than the lookup.
        Every other refusal (no view, not synced, forbidden) is raised as in `get`."""
        namespaced = resource.namespaced
        informer = self._ready(resource, namespace if namespaced else None, alias)
        if informer is None:
            informer = await self._synced(resource, namespace if namespaced else None, alias)
        return informer.store.get(make_key(namespace or "", name) if namespaced else name)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        alias: str = "",
    ) -> Objs:
        """Cached objects of the resource's view, optionally narrowed to one namespace, a
        label selector, or an index value (`index=("owner-uid", uid)`)."""
        informer = self._ready(resource, namespace, alias) or await self._synced(resource, namespace, alias)
        store = informer.store
        if index is not None:
            items = store.by_index(*index)
            if namespace:
                items = [o for o in items if get_str(o, "metadata.namespace", required=False) == namespace]
        elif namespace:
            items = store.by_index(NAMESPACE, namespace)
        else:
            items = store.list()
        if label_selector:
            selector = LabelSelector.parse(label_selector)
            items = [o for o in items if selector.matches(get_str_map(o, "metadata.labels"))]
        return items
