"""WATCH: a chunked stream of `{"type": ..., "object": ...}` lines.

Semantics kept from kube-apiserver's watch cache:
- from resourceVersion R: every event after R; 410 Expired (as an ERROR event) when the
  history no longer reaches back to R;
- from "" or "0" (or with sendInitialEvents=true): synthetic ADDED for the current state,
  then live events (with sendInitialEvents, a BOOKMARK annotated
  `k8s.io/initial-events-end` marks the end of the initial state);
- selectors are applied per event: an object that stops matching is sent as DELETED (its
  previous state at the event's revision), one that starts matching as ADDED;
- BOOKMARK events carry the current revision when allowWatchBookmarks is set;
- a watcher that falls behind the history window is closed (it resumes and gets 410);
- timeoutSeconds ends the stream cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import APIError
from .http11 import Request, StreamResponse
from .registry import Obj, ResourceType
from .store import ADDED, DELETED, MODIFIED, Database, Entry, Event, ResourceStore, Waker
from .table import partial_metadata, table

INITIAL_EVENTS_END = "k8s.io/initial-events-end"

log = logging.getLogger(__name__)


@dataclass
class WatchRequest:
    rt: ResourceType
    namespace: str | None
    match: Callable[[Obj], bool]
    filtered: bool  # whether any selector applies (needs the previous state per event)
    resource_version: str
    send_initial_events: bool
    bookmarks: bool
    timeout: float
    output: str  # "object" | "table" | "metadata"
    include_object: str = "Metadata"
    table_version: str = "v1"
    warnings: tuple[str, ...] = ()  # Warning headers (a deprecated CRD version's)


def default_timeout() -> float:
    # kube-apiserver spreads watch lifetimes between min-request-timeout and twice that
    return random.uniform(1800, 3600)


class WatchStream:
    def __init__(
        self,
        db: Database,
        store: ResourceStore,
        req: WatchRequest,
        *,
        bookmark_interval: float,
        registry_waker: set[Waker],
    ) -> None:
        self.db = db
        self.store = store
        self.req = req
        self.bookmark_interval = bookmark_interval
        self.waker = Waker()
        self.all_wakers = registry_waker
        self._first_table = True

    # ------------------------------------------------------------- encoding
    def _encode(self, type_: str, entry: Entry | None, obj: Obj | None = None) -> bytes:
        rt = self.req.rt
        if self.req.output == "object":
            if obj is None and entry is not None and rt.serves_as_stored(entry.obj):
                return b'{"type":"' + type_.encode() + b'","object":' + entry.raw + b"}\n"
            body = rt.served(obj if obj is not None else entry.obj)  # type: ignore[union-attr]
            return orjson.dumps({"type": type_, "object": body}) + b"\n"
        served = rt.served(obj if obj is not None else entry.obj)  # type: ignore[union-attr]
        if self.req.output == "metadata":
            return orjson.dumps({"type": type_, "object": partial_metadata(served)}) + b"\n"
        tbl = table(
            rt,
            [served],
            resource_version=served["metadata"].get("resourceVersion", ""),
            include_object=self.req.include_object,
            table_version=self.req.table_version,
            with_columns=self._first_table,
        )
        self._first_table = False
        return orjson.dumps({"type": type_, "object": tbl}) + b"\n"

    def _bookmark(self, rev: int, initial_end: bool = False) -> bytes:
        rt = self.req.rt
        meta: Obj = {"resourceVersion": str(rev)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        if self.req.output == "object":
            obj: Obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        elif self.req.output == "metadata":
            obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        else:
            obj = {"kind": "Table", "apiVersion": f"meta.k8s.io/{self.req.table_version}", "metadata": meta, "rows": []}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def _in_scope(self, obj: Obj) -> bool:
        ns = self.req.namespace
        return ns is None or obj["metadata"].get("namespace") == ns

    def _lines_for(self, events: list[Event]) -> list[bytes]:
        out: list[bytes] = []
        match = self.req.match
        filtered = self.req.filtered
        for ev in events:
            obj = ev.entry.obj
            if not self._in_scope(obj):
                continue
            if not filtered:
                out.append(self._encode(ev.type, ev.entry))
                continue
            if ev.type == ADDED:
                if match(obj):
                    out.append(self._encode(ADDED, ev.entry))
            elif ev.type == DELETED:
                if match(obj):
                    out.append(self._encode(DELETED, ev.entry))
            else:
                now_in = match(obj)
                was_in = ev.prev is not None and match(ev.prev.obj)
                if now_in and was_in:
                    out.append(self._encode(MODIFIED, ev.entry))
                elif now_in:
                    out.append(self._encode(ADDED, ev.entry))
                elif was_in:
                    assert ev.prev is not None
                    gone = dict(ev.prev.obj)
                    gone["metadata"] = dict(gone["metadata"], resourceVersion=str(ev.rev))
                    out.append(self._encode(DELETED, None, gone))
        return out

    # ------------------------------------------------------------- serving
    async def serve(self, request: Request) -> StreamResponse:
        req = self.req
        initial: list[Entry] | None = None
        cursor: int
        if req.send_initial_events or req.resource_version in ("", "0"):
            cursor = self.db.rev
            entries = self.store.iter_entries(req.namespace if req.rt.namespaced else None)
            initial = [e for e in entries if req.match(e.obj)]
        else:
            try:
                cursor = int(req.resource_version)
            except ValueError:
                raise APIError(400, "BadRequest", f"invalid resource version: {req.resource_version!r}") from None
            if cursor > self.db.rev:
                raise APIError(
                    504,
                    "Timeout",
                    f"Too large resource version: {cursor}, current: {self.db.rev}",
                    {
                        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1,
                    },
                )

        resp = StreamResponse(
            status=200,
            headers=[("Content-Type", "application/json"), ("Cache-Control", "no-cache, private")],
        )
        for text in req.warnings:
            resp.add_header("Warning", '299 - "' + text.replace('"', '\\"') + '"')
        await resp.start(request)

        if initial is None and self.store.log.since(cursor) is None:
            await resp.write(_expired(cursor, self.store.log.compacted_rev + 1))
            return resp

        self.store.subscribe(self.waker)
        self.all_wakers.add(self.waker)
        deadline = time.monotonic() + req.timeout
        try:
            if initial is not None:
                lines = [self._encode(ADDED, e) for e in initial]
                if req.send_initial_events and req.bookmarks:
                    lines.append(self._bookmark(cursor, initial_end=True))
                if lines:
                    await resp.write(b"".join(lines))
            last_sent = time.monotonic()
            while not self.waker.closed and not self.store.dropped:
                self.waker.wake.clear()
                events = self.store.log.since(cursor)
                if events is None:
                    break  # fell behind the history window; the client resumes and learns 410
                if events:
                    cursor = events[-1].rev
                    lines = self._lines_for(events)
                    if lines:
                        await resp.write(b"".join(lines))
                        last_sent = time.monotonic()
                    continue
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = deadline - now
                if req.bookmarks:
                    due = last_sent + self.bookmark_interval - now
                    if due <= 0:
                        cursor = max(cursor, self.db.rev)
                        await resp.write(self._bookmark(cursor))
                        last_sent = time.monotonic()
                        continue
                    wait = min(wait, due)
                await _wait(self.waker, wait)
        except ConnectionError as exc:
            log.debug("watch on %s ended: client went away (%s)", req.rt.plural, exc)
        except _ENCODE_ERRORS as exc:
            # an event this watch cannot write out ends it with an ERROR the client sees (and
            # re-lists after), rather than leaving it open and silent
            log.warning("watch on %s ended: unable to encode an event: %s", req.rt.plural, exc)
            with contextlib.suppress(ConnectionError):
                await resp.write(_encode_failure(req.rt.plural, exc))
        finally:
            self.store.unsubscribe(self.waker)
            self.all_wakers.discard(self.waker)
        return resp


async def _wait(waker: Waker, seconds: float) -> None:
    """Until the waker is woken or `seconds` pass, whichever comes first. A timer that wakes the
    waker, rather than a cancel scope around the wait: every watch waits once per event it is
    sent, and a scope costs several times what a timer does; waking early is harmless (the
    stream looks again and finds nothing to send, or its deadline or bookmark due)."""
    timer = asyncio.get_running_loop().call_later(seconds, waker.wake.set)
    try:
        await waker.wake.wait()
    finally:
        timer.cancel()


# what serialising an event can raise: orjson's JSONEncodeError (a TypeError: an unsupported
# type, past its depth), and a conversion to the served form failing on a malformed value
_ENCODE_ERRORS = (TypeError, ValueError, RecursionError)


def _encode_failure(resource: str, exc: BaseException) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: unable to encode watch object for {resource}: {exc}",
        "reason": "InternalError",
        "code": 500,
    }
    return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


def _expired(requested: int, oldest: int) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {requested} ({oldest})",
        "reason": "Expired",
        "code": 410,
    }
    return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


def encode_list_item(rt: ResourceType, entry: Entry) -> Any:
    return entry.raw if rt.serves_as_stored(entry.obj) else orjson.dumps(rt.served(entry.obj))
