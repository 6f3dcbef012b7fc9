"""Informers: client-go's reflector + shared informer on asyncio.

LIST (paged) → replace the store → WATCH from the list's resourceVersion with bookmarks.
When a stream ends or breaks, the watch resumes from the last resourceVersion seen
(event or bookmark) without listing again; only a 410 Expired (the server's history no
longer reaches back that far) forces a re-list, after which the store is replaced and
the differences are delivered: adds, updates, and deletes for objects that vanished
while the informer was not looking. Failures back off with jitter; a stream that stays
silent longer than the read timeout is treated as dead.

`current` says whether the informer is following the server right now: True once a LIST
completed or a WATCH was established, False from a failed LIST or WATCH until the next
one succeeds (its store may then lag the server). `waiting_for_server` says it is backing
off after a failure that got no answer (connection refused, stream broken, timeout);
`retry_now()` then cuts the sleep short and resets the delay. The cluster calls it when
the server answers again (its probe), so a cluster that comes back is re-watched at once,
not after a back-off grown while it was away. A refusal the server did answer (403, 500)
keeps its back-off: answering again changes nothing for it.

Listeners (event handlers) each get their own buffer and task, like client-go's
processorListener, so a slow handler never stalls the informer or the other handlers.
A listener added to a synced informer first receives an ADDED event for every cached
object.

A `metadata_only` informer asks for PartialObjectMetadata (client-go's metadata informer):
the server sends each object's metadata only, so an informer that reads no spec or status
neither receives nor decodes them."""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import anyio
import anyio.abc
import orjson

from . import gcpause
from .backoff import Backoff
from .errors import APIError, TransportError
from .fields import get_str
from .indexers import IndexFunc
from .metrics import RuntimeMetrics, default_metrics
from .objects import Obj, key_of, strip_for_cache
from .resources import Resource
from .store import IndexValues, Store, compact_bytes
from .transport import METADATA, METADATA_LIST, Transport

log = logging.getLogger(__name__)

Transform = Callable[[Obj], Obj]


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


class ObjectEvent:
    """One change delivered to listeners. `obj` and `old` decode lazily: treat them as
    read-only. A listener `release`s what it decoded once its handler is done, so the
    decoded dicts live while one handler runs, not until the last listener got to the event:
    a LIST hands a whole cluster's objects to each listener in turn, and keeping them decoded
    for the next listener held all of them at once (the collector then walked them over and
    over: ~20% of a cold start's CPU at 100k objects).

    A watch event hands its object in decoded (kept by the event anyway), and its `old` is
    kept decoded too once a listener read it: one event at a time, each listener's
    predicates and map functions read it, and decoding it again for each of them cost as
    much as the rest of their work."""

    __slots__ = ("_decoded", "_keep_old", "_obj", "_old", "_old_raw", "_raw", "final_state_unknown", "key", "type")

    def __init__(
        self,
        type_: EventType,
        key: str,
        *,
        obj: Obj | None = None,
        raw: bytes | None = None,
        old_raw: bytes | None = None,
        final_state_unknown: bool = False,
    ) -> None:
        self.type = type_
        self.key = key
        self._obj = obj
        self._raw = raw
        self._decoded = False  # `_obj` was decoded from `_raw` here (not handed in)
        self._keep_old = obj is not None  # a watch event: `old` decoded once for every listener
        self._old: Obj | None = None
        self._old_raw = old_raw
        self.final_state_unknown = final_state_unknown  # a delete noticed by a re-list

    @property
    def obj(self) -> Obj:
        if self._obj is None:
            assert self._raw is not None
            self._obj = orjson.loads(self._raw)
            self._decoded = True
        return self._obj

    @property
    def old(self) -> Obj | None:
        if self._old is None and self._old_raw is not None:
            self._old = orjson.loads(self._old_raw)
        return self._old

    def release(self) -> None:
        """Forget what was decoded here (read again, it is decoded again); an object handed
        in with the event is kept, and so is the `old` of such an event."""
        if self._decoded:
            self._obj = None
            self._decoded = False
        if not self._keep_old:
            self._old = None

    def __repr__(self) -> str:
        return f"ObjectEvent({self.type.value} {self.key})"


Callback = Callable[[ObjectEvent], Awaitable[None] | None]


class _SyncMark:
    pass


_SYNC = _SyncMark()


class ListenerHandle:
    """Returned by `Informer.add_listener`; `remove()` stops delivery."""

    def __init__(self, informer: Informer, listener: _Listener) -> None:
        self._informer = informer
        self._listener = listener

    @property
    def synced(self) -> bool:
        """The listener has processed the informer's initial state."""
        return self._listener.synced.is_set()

    async def wait_synced(self, within: float | None = None) -> bool:
        with anyio.move_on_after(within):
            await self._listener.synced.wait()
        return self.synced

    def remove(self) -> None:
        self._informer._remove_listener(self._listener)


class _Listener:
    def __init__(self, callback: Callback, name: str) -> None:
        self.callback = callback
        self.name = name
        self.pending: deque[ObjectEvent | _SyncMark] = deque()
        # while idle (nothing pending), what `run` waits on; only then does a push wake it.
        # A bare asyncio future, not an anyio Event: one per wake-up of every listener, and
        # making an anyio Event looks up the async library each time (~1% of the management
        # manager's CPU). anyio's cancel scopes (`remove`) cancel it as they did the Event's.
        self.wake: asyncio.Future[None] | None = None
        self.synced = anyio.Event()
        self.scope: anyio.CancelScope | None = None
        self.removed = False

    def push(self, item: ObjectEvent | _SyncMark) -> None:
        self.pending.append(item)
        wake = self.wake
        if wake is not None:
            self.wake = None
            if not wake.done():  # (cancelled with a removed listener's task)
                wake.set_result(None)

    async def run(self) -> None:
        with anyio.CancelScope() as scope:
            self.scope = scope
            if self.removed:
                return
            while True:
                pending = self.pending
                while pending:
                    item = pending.popleft()
                    if item is _SYNC:
                        self.synced.set()
                        continue
                    assert isinstance(item, ObjectEvent)
                    try:
                        result = self.callback(item)
                        if inspect.isawaitable(result):
                            await result
                    except Exception:
                        # a handler bug must not stop the informer or other handlers; it is
                        # logged with the event so it can be found
                        log.exception("event handler %s failed on %r", self.name, item)
                    item.release()
                wake = self.wake = asyncio.get_running_loop().create_future()
                await wake


@dataclass
class InformerStats:
    """Plain counters next to the OpenTelemetry ones, cheap for tests and benchmarks to read."""

    lists: int = 0
    relists: int = 0
    watches: int = 0
    watch_restarts: int = 0
    events: int = 0
    errors: int = 0


class Informer:
    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        *,
        cluster: str = "",
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_for_cache,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int = 500,
        watch_timeout: tuple[int, int] = (300, 600),
        read_timeout: float = 120.0,
        backoff: Backoff | None = None,
        metrics: RuntimeMetrics | None = None,
        metadata_only: bool = False,
    ) -> None:
        if namespace and not resource.namespaced:
            raise ValueError(f"{resource} is cluster-scoped; an informer for it cannot take a namespace")
        if page_size < 0 or read_timeout <= 0 or not 0 < watch_timeout[0] <= watch_timeout[1]:
            raise ValueError("informer needs page_size >= 0, read_timeout > 0 and 0 < watch_timeout[0] <= [1]")
        self.transport = transport
        self.resource = resource
        self.cluster = cluster
        self.namespace = namespace or None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.transform = transform
        self.store = Store(indexers)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.read_timeout = read_timeout
        self.backoff = backoff or Backoff()
        self.metrics = metrics or default_metrics()
        self.stats = InformerStats()
        self.resource_version: str | None = None  # the last version seen (event, bookmark or list)
        # the last LIST refusal that retrying cannot fix by itself (401/403): reads fail
        # fast with it instead of waiting for a sync that needs someone to grant access
        self.access_error: APIError | None = None
        self._synced = anyio.Event()
        # set once a reader has an answer: synced, or the LIST refused for access (a read
        # that began waiting before the refusal came back ends with it, not at its deadline)
        self._answered = anyio.Event()
        self._current = False
        self._wake = anyio.Event()  # set by retry_now: ends a back-off sleep early
        self._unanswered = False  # the last failure got no answer from the server
        self._currency_listeners: list[Callable[[], None]] = []
        self._listeners: list[_Listener] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._running = False
        self._attrs = {"cluster": cluster, "resource": resource.qualified}
        self._unreported_events = 0  # added to the events Tally in batches (hot path: an int add per event)
        self._path = resource.path(self.namespace)
        self.metadata_only = metadata_only
        # the Accept headers of LIST and WATCH (None: the transport's JSON); see the module doc
        self._accept: tuple[str | None, str | None] = (METADATA_LIST, METADATA) if metadata_only else (None, None)

    def __repr__(self) -> str:
        sel = f" labels={self.label_selector}" if self.label_selector else ""
        sel += f" fields={self.field_selector}" if self.field_selector else ""
        ns = f" ns={self.namespace}" if self.namespace else ""
        meta = " metadata-only" if self.metadata_only else ""
        return f"Informer({self.cluster or '-'}:{self.resource}{ns}{sel}{meta})"

    # ------------------------------------------------------------------ state
    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def running(self) -> bool:
        return self._running

    @property
    def current(self) -> bool:
        """Following the server now: the last LIST or WATCH attempt succeeded."""
        return self._current

    def on_currency_change(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever `current` changes."""
        self._currency_listeners.append(callback)

    def _set_current(self, value: bool) -> None:
        if value is not self._current:
            self._current = value
            for callback in list(self._currency_listeners):
                callback()

    @property
    def waiting_for_server(self) -> bool:
        """Not following the server because the last attempt got no answer from it."""
        return not self._current and self._unanswered

    def retry_now(self) -> None:
        """The server answers again: if this informer is waiting for it, reset the
        back-off and end the back-off sleep now."""
        if self.waiting_for_server:
            self.backoff.reset()
            self._wake.set()

    def _failed(self, unanswered: bool) -> None:
        self._unanswered = unanswered
        self._set_current(False)

    async def _back_off(self, delay: float) -> None:
        with anyio.move_on_after(delay):
            await self._wake.wait()
        self._wake = anyio.Event()

    async def wait_for_sync(self, within: float | None = None) -> bool:
        with anyio.move_on_after(within):
            await self._synced.wait()
        return self._synced.is_set()

    async def wait_for_answer(self, within: float | None = None) -> bool:
        """Wait until synced or refused for access (`access_error`); True when synced."""
        with anyio.move_on_after(within):
            await self._answered.wait()
        return self._synced.is_set()

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self.store.add_indexer(name, func)

    # ------------------------------------------------------------------ listeners
    def add_listener(self, callback: Callback, *, name: str = "") -> ListenerHandle:
        listener = _Listener(callback, name or getattr(callback, "__qualname__", repr(callback)))
        if self.has_synced:
            for key, raw in self.store.items_raw():
                listener.push(ObjectEvent(EventType.ADDED, key, raw=raw))
            listener.push(_SYNC)
        self._listeners.append(listener)
        if self._tg is not None:
            self._tg.start_soon(listener.run, name=f"listener {listener.name}")
        return ListenerHandle(self, listener)

    def _remove_listener(self, listener: _Listener) -> None:
        listener.removed = True
        if listener in self._listeners:
            self._listeners.remove(listener)
        if listener.scope is not None:
            listener.scope.cancel()

    @property
    def listener_count(self) -> int:
        return len(self._listeners)

    def _emit(self, event: ObjectEvent) -> None:
        for listener in self._listeners:
            listener.push(event)

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """List and watch until cancelled."""
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for listener in self._listeners:
                    tg.start_soon(listener.run, name=f"listener {listener.name}")
                task_status.started()
                await self._reflect()
        finally:
            self._tg = None
            self._running = False

    def _selector_query(self) -> dict[str, str]:
        query: dict[str, str] = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query

    async def _reflect(self) -> None:
        need_list = True
        listed_before = False
        while True:
            if need_list:
                try:
                    await self._list_and_replace()
                except (APIError, TransportError) as exc:
                    if isinstance(exc, APIError) and exc.status in (401, 403):
                        self.access_error = exc
                        self._answered.set()
                    self._failed(unanswered=isinstance(exc, TransportError))
                    self.stats.errors += 1
                    delay = self.backoff.next()
                    log.warning("%r: LIST failed, retrying in %.1fs: %s", self, delay, exc)
                    await self._back_off(delay)
                    continue
                if listed_before:
                    self.stats.relists += 1
                    self.metrics.informer_relists.add(1, self._attrs)
                listed_before = True
                need_list = False
            else:
                self.stats.watch_restarts += 1
                self.metrics.informer_watch_restarts.add(1, self._attrs)
            outcome = await self._watch_once()
            if outcome == "expired":
                log.info("%r: resourceVersion %s expired (410); re-listing", self, self.resource_version)
                self._failed(unanswered=False)
                need_list = True
            elif outcome in ("failed", "unanswered"):
                self._failed(unanswered=outcome == "unanswered")
                self.stats.errors += 1
                await self._back_off(self.backoff.next())

    # ------------------------------------------------------------------ LIST
    async def _list_and_replace(self) -> None:
        # key → (JSON, index values): the index values are taken from the dict in hand, so
        # storing the JSON later does not decode it again (a cold start's second decode)
        fresh: dict[str, tuple[bytes, IndexValues | None]] = {}
        list_rv = ""
        continue_token = ""
        while True:
            query = self._selector_query()
            if self.page_size:
                query["limit"] = str(self.page_size)
            if continue_token:
                query["continue"] = continue_token
            try:
                body = await self.transport.request(
                    "GET", self._path, verb="list", query=query, fail_fast=False, accept=self._accept[0]
                )
            except APIError as exc:
                if exc.status == 410 and continue_token:
                    # the continue token outlived the server's history: start over from scratch
                    log.info("%r: continue token expired mid-list; listing from the start", self)
                    fresh.clear()
                    continue_token = ""
                    continue
                raise
            with gcpause.paused():  # see gcpause: a page is acyclic garbage the collector would only walk
                list_rv, continue_token = self._take_page(body, fresh, list_rv)
            if not continue_token:
                break
        with gcpause.paused():
            self._replace(fresh)
        self.access_error = None
        self.resource_version = list_rv
        self.stats.lists += 1
        self.metrics.informer_lists.add(1, self._attrs)
        self._unanswered = False
        self._set_current(True)
        if not self._synced.is_set():
            self._synced.set()
            self._answered.set()
            for listener in self._listeners:
                listener.push(_SYNC)

    def _take_page(
        self, body: bytes, fresh: dict[str, tuple[bytes, IndexValues | None]], list_rv: str
    ) -> tuple[str, str]:
        """Decode one LIST page into `fresh` (each item transformed, as its compact JSON and
        index values); returns the list's resourceVersion so far and the continue token."""
        try:
            page = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise TransportError(f"{self!r}: LIST answer is not JSON: {exc}") from exc
        if not isinstance(page, dict) or not isinstance(page.get("items"), list):
            raise TransportError(f"{self!r}: LIST answer is not a list object")
        transform = self.transform
        index_values = self.store.index_values
        for item in page["items"]:
            if not isinstance(item, dict):
                continue
            obj = self._transform(item, transform)
            key = key_of(obj)
            # exact-size now, so the store keeps these very bytes: a complete LIST is
            # held once, not twice (see store.compact_bytes)
            fresh[key] = (compact_bytes(orjson.dumps(obj)), index_values(key, obj))
        list_rv = get_str(page, "metadata.resourceVersion", required=False) or list_rv
        return list_rv, get_str(page, "metadata.continue", required=False)

    def _transform(self, obj: Obj, transform: Transform | None) -> Obj:
        # LIST items of built-in kinds come without apiVersion/kind; cached objects always
        # carry them, so owner references and Events can be made from what a reconciler read
        if "kind" not in obj:
            obj["apiVersion"] = self.resource.api_version
            obj["kind"] = self.resource.kind
        if transform is None:
            return obj
        try:
            return transform(obj)
        except Exception:
            log.exception("%r: transform failed for %s; caching the object unchanged", self, key_of(obj))
            return obj

    def _replace(self, fresh: dict[str, tuple[bytes, IndexValues | None]]) -> None:
        """Make the store equal to a complete LIST and deliver only the differences."""
        store = self.store
        vanished = [key for key in store if key not in fresh]
        for key, (raw, values) in fresh.items():
            old = store.get_raw(key)
            if old == raw:
                continue
            store.put(key, None, raw, compact=True, index_values=values)
            if old is None:
                self._emit(ObjectEvent(EventType.ADDED, key, raw=raw))
            else:
                self._emit(ObjectEvent(EventType.MODIFIED, key, raw=raw, old_raw=old))
        for key in vanished:
            old = store.delete(key)
            if old is not None:
                self._emit(ObjectEvent(EventType.DELETED, key, raw=old, final_state_unknown=True))

    # ------------------------------------------------------------------ WATCH
    async def _watch_once(self) -> str:
        """One WATCH stream: "ended" (resume), "expired" (re-list), "failed" (back off,
        resume) or "unanswered" (no answer, or the stream broke: back off until the
        server answers again, resume)."""
        assert self.resource_version is not None
        query = self._selector_query()
        query["resourceVersion"] = self.resource_version
        query["allowWatchBookmarks"] = "true"
        query["timeoutSeconds"] = str(random.randint(*self.watch_timeout))
        self.stats.watches += 1
        started = time.monotonic()
        received = 0
        try:
            watch = self.transport.watch(self._path, query, read_timeout=self.read_timeout, accept=self._accept[1])
            async with watch as lines:
                self._unanswered = False
                self._set_current(True)  # established: events since our resourceVersion follow
                async for line in lines:
                    received += 1
                    outcome = self._handle_line(line)
                    if outcome is not None:
                        return outcome
        except APIError as exc:
            if exc.status == 410:
                return "expired"
            log.warning("%r: WATCH refused: %s", self, exc)
            return "failed"
        except TransportError as exc:
            log.info("%r: WATCH interrupted, resuming from %s: %s", self, self.resource_version, exc)
            return "unanswered"
        finally:
            self._report_events()
        if received == 0 and time.monotonic() - started < 1.0:
            return "failed"  # a server that closes watches at once must not make us spin
        self.backoff.reset()
        return "ended"

    def _handle_line(self, line: bytes) -> str | None:
        try:
            event = orjson.loads(line)
            type_ = event["type"]
            obj = event["object"]
            if not isinstance(obj, dict):
                raise TypeError("object is not a JSON object")
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            log.error("%r: undecodable watch event (%s): %.200r", self, exc, line)
            return "failed"
        if type_ == "BOOKMARK":
            rv = get_str(obj, "metadata.resourceVersion", required=False)
            if rv:
                self.resource_version = rv
            return None
        if type_ == "ERROR":
            code = obj.get("code")
            if code == 410:
                return "expired"
            log.warning("%r: watch ERROR event: %s %s", self, code, obj.get("message"))
            return "failed"
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%r: ignoring watch event of unknown type %r", self, type_)
            return None
        self._apply(type_, obj)
        return None

    def _apply(self, type_: str, obj: Obj) -> None:
        rv, key = get_str(obj, "metadata.resourceVersion", required=False), key_of(obj)
        obj = self._transform(obj, self.transform)
        store = self.store
        if type_ == "DELETED":
            old = store.delete(key)
            self._emit(ObjectEvent(EventType.DELETED, key, obj=obj, old_raw=old))
        else:
            raw = orjson.dumps(obj)
            old = store.put(key, obj, raw)
            kind = EventType.ADDED if old is None else EventType.MODIFIED
            self._emit(ObjectEvent(kind, key, obj=obj, raw=raw, old_raw=old))
        if rv:
            self.resource_version = rv
        self.stats.events += 1
        self._unreported_events += 1
        if self._unreported_events >= 256:
            self._report_events()

    def _report_events(self) -> None:
        if self._unreported_events:
            self.metrics.informer_events.add(self._unreported_events, self._attrs)
            self._unreported_events = 0

    # ------------------------------------------------------------------ reads
    def get(self, name: str, *, namespace: str = "") -> Obj | None:
        """The cached object (name first, namespace by keyword, as everywhere in the runtime)."""
        return self.store.get(f"{namespace}/{name}" if namespace else name)

    def list(self, *, namespace: str | None = None) -> list[Obj]:
        return self.store.list(namespace)
