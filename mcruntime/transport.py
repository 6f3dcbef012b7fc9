"""The lean JSON transport: one keep-alive connection pool per cluster (`http11.py`).

Hot paths (cache fills, watch decoding, writes) send and receive bytes and parse them
with orjson; kubernetes-asyncio only loaded the configuration (see `connection.py`).
Requests go through `http11.Pool`, an HTTP/1.1 client on asyncio protocols with llhttp
parsing the answers: ~2.5x less CPU per request than aiohttp's client (bench/bench_transport.py).
Every call has a timeout: requests a total one, watches a connect timeout plus a read
timeout (no bytes for that long means the stream is dead, even without a FIN).
The pool is unbounded for watches (one long-lived connection per informer, a number
the runtime controls) and requests are bounded by a count of slots (`slots.py`), so a burst of
writes can never starve the watches of connections or the other way round.
A connection that drops before its answer is retried once on a fresh connection for
idempotent methods (a keep-alive connection the server closed while idle); a server that
cannot be connected to, or gives no answer in time, makes the cluster unreachable
(`Contact`)."""

from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import anyio
import orjson

from .connection import ConnectionConfig
from .errors import APIError, ClusterNotReadyError, TransportError
from .http11 import IDEMPOTENT_METHODS, ConnectFailed, HTTPClientError, Pool, ResponseTimeout
from .metrics import RuntimeMetrics, default_metrics
from .slots import Slots

log = logging.getLogger(__name__)

JSON = "application/json"
# metadata only (kube-apiserver's PartialObjectMetadata, as client-go's metadata client asks
# for it): a LIST's items and a WATCH's objects carry their metadata, no spec or status; a
# server that cannot answer so falls back to plain JSON, the full objects
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
MAX_LINE = 64 * 1024 * 1024
_NET_ERRORS = (HTTPClientError, OSError)
# failures that say the server cannot be reached at all (no connection, or no answer in
# time), as opposed to one connection dropping mid-answer, which a retry on a fresh
# connection fixes
_UNREACHABLE_ERRORS = (ConnectFailed, ResponseTimeout)

WRITE_FENCE: ContextVar[Callable[[], None] | None] = ContextVar("mcruntime_write_fence", default=None)
"""Called before every write made in this context; raises to refuse it (a shard's
reconciles run under their gate's fence, `sharding/gate.py`)."""


class Contact:
    """Whether a cluster answers: the wall-clock time of its last answer (any HTTP
    status, or bytes on a watch stream) and whether the last attempt to reach it got
    through. A connection that cannot be made (refused, timed out) makes the cluster
    unreachable until something gets an answer again.

    While unreachable, requests fail fast (`ClusterNotReadyError`) except one probe per
    `probe_interval` (a half-open circuit breaker): workers never queue up behind a dead
    cluster, and a cluster that came back is noticed by the next probe or informer retry."""

    __slots__ = ("_listeners", "_probe_at", "_probing", "last_contact", "last_error", "probe_interval", "reachable")

    def __init__(self, probe_interval: float = 2.0) -> None:
        self.last_contact: float | None = None
        self.reachable: bool | None = None  # None: not tried yet
        self.last_error = ""
        self.probe_interval = probe_interval
        self._probing = False
        self._probe_at = 0.0
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def answered(self) -> None:
        self.last_contact = time.time()
        if self.reachable is not True:
            self.reachable = True
            self.last_error = ""
            self._notify()

    def failed(self, error: str) -> None:
        self.last_error = error
        self._probe_at = time.monotonic() + self.probe_interval  # the next probe waits its turn
        if self.reachable is not False:
            self.reachable = False
            self._notify()

    def _notify(self) -> None:
        for callback in list(self._listeners):
            callback()

    def admit(self) -> bool:
        """May a request go out now? Always while reachable; while unreachable only as
        the single probe allowed per `probe_interval` (the caller must `end_probe`)."""
        if self.reachable is not False:
            return True
        now = time.monotonic()
        if self._probing or now < self._probe_at:
            return False
        self._probing = True
        self._probe_at = now + self.probe_interval
        return True

    def end_probe(self) -> None:
        self._probing = False


class ByteStream(Protocol):
    async def readany(self) -> bytes:
        """The next bytes (b"" at the end)."""


class LineStream:
    """The lines of a chunked watch response, with no per-line size limit up to MAX_LINE."""

    def __init__(self, content: ByteStream, what: str, contact: Contact | None = None) -> None:
        self._content = content
        self._what = what
        self._contact = contact
        self._pending: deque[bytes] = deque()
        self._partial: list[bytes] = []
        self._partial_len = 0

    def __aiter__(self) -> LineStream:
        return self

    async def __anext__(self) -> bytes:
        pending = self._pending
        while not pending:
            try:
                chunk = await self._content.readany()
            except _NET_ERRORS as exc:
                raise TransportError(f"{self._what}: stream broke: {type(exc).__name__}: {exc}") from exc
            if self._contact is not None:
                self._contact.answered()
            if not chunk:
                if self._partial:
                    line = b"".join(self._partial)
                    self._partial.clear()
                    if line.strip():
                        return line
                raise StopAsyncIteration
            if b"\n" not in chunk:
                self._partial.append(chunk)
                self._partial_len += len(chunk)
                if self._partial_len > MAX_LINE:
                    raise TransportError(f"{self._what}: a watch event exceeds {MAX_LINE} bytes")
                continue
            if self._partial:
                self._partial.append(chunk)
                chunk = b"".join(self._partial)
                self._partial.clear()
            lines = chunk.split(b"\n")
            tail = lines.pop()
            if tail:
                self._partial.append(tail)
            self._partial_len = len(tail)
            pending.extend(line for line in lines if line)
        return pending.popleft()


class Transport:
    def __init__(
        self,
        config: ConnectionConfig,
        *,
        cluster: str = "",
        metrics: RuntimeMetrics | None = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_concurrent_requests: int = 64,
        max_throttle_retries: int = 3,
        user_agent: str = "mcruntime",
    ) -> None:
        if request_timeout <= 0 or connect_timeout <= 0:
            raise ValueError("request_timeout and connect_timeout must be positive")
        if "\r" in user_agent or "\n" in user_agent:
            raise ValueError("user_agent must be one line")
        self.config = config
        self.cluster = cluster
        self.metrics = metrics or default_metrics()
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.max_throttle_retries = max_throttle_retries
        self.user_agent = user_agent
        self._slots = Slots(max_concurrent_requests)
        # per (verb, status): the latency and count instruments bound once (`Tally.bound`)
        self._recorders: dict[tuple[str, int | str], tuple[Callable[[float], None], Callable[[float], None]]] = {}
        self.contact = Contact()
        self._pool: Pool | None = None
        self._base_path = ""
        self._host_lines = ""

    # ------------------------------------------------------------------ lifecycle
    async def open(self) -> None:
        if self._pool is not None:
            return
        config = self.config
        pool = Pool(
            config.host,
            ssl_context=config.ssl_context,
            server_hostname=config.tls_server_name,
            proxy=config.proxy,
            connect_timeout=self.connect_timeout,
        )
        # a server URL may carry a path prefix (a proxy in front of the API): requests go under it
        self._base_path = pool.target_prefix + _path_of(config.host)
        self._host_lines = f"Host: {pool.host_header}\r\nUser-Agent: {self.user_agent}\r\n{pool.extra_headers}"
        self._pool = pool

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with anyio.CancelScope(shield=True):
                await pool.aclose()

    @property
    def closed(self) -> bool:
        return self._pool is None

    @property
    def open_connections(self) -> int:
        """Connections to the server now open (0 while closed)."""
        return 0 if self._pool is None else self._pool.open_connections

    async def __aenter__(self) -> Transport:
        await self.open()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _require_pool(self) -> Pool:
        if self._pool is None:
            raise TransportError(f"cluster {self.cluster!r}: transport is closed")
        return self._pool

    def target(self, path: str, query: Mapping[str, str] | None = None) -> str:
        """The request target: the server's path prefix, `path` (already encoded) and the
        query, percent-encoded."""
        target = self._base_path + path
        return f"{target}?{_encoded_query(tuple(query.items()))}" if query else target

    async def _head(
        self, method: str, target: str, content_type: str | None, accept: str | None, length: int | None
    ) -> bytes:
        """The request line and headers, ending in the blank line."""
        auth = await self.config.auth.authorization()
        lines = [f"{method} {target} HTTP/1.1\r\n{self._host_lines}Accept: {accept or JSON}\r\n"]
        if auth:
            if "\r" in auth or "\n" in auth:
                raise TransportError(f"cluster {self.cluster!r}: the credentials are not a valid header value")
            lines.append(f"Authorization: {auth}\r\n")
        if content_type:
            lines.append(f"Content-Type: {content_type}\r\n")
        if length is not None:
            lines.append(f"Content-Length: {length}\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

    def _record(self, verb: str, code: int | str, started: float) -> None:
        recorders = self._recorders.get((verb, code))
        if recorders is None:
            attrs = {"cluster": self.cluster, "verb": verb}
            recorders = self._recorders[(verb, code)] = (
                self.metrics.request_latency.bound(attrs),
                self.metrics.requests.bound({**attrs, "code": str(code)}),
            )
        latency, count = recorders
        latency(time.monotonic() - started)
        count(1)

    # ------------------------------------------------------------------ requests
    async def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        within: float | None = None,
        fail_fast: bool = True,
        accept: str | None = None,
    ) -> bytes:
        """One API call; returns the response body. Raises APIError for non-2xx answers
        (after retrying throttling answers that carry Retry-After), TransportError when no
        answer came within the timeout, and ClusterNotReadyError at once while the cluster
        is unreachable (unless `fail_fast=False`, which informers use: they are the probes).
        `accept` replaces the Accept header (JSON), e.g. METADATA_LIST."""
        pool = self._require_pool()
        if method != "GET" and (fence := WRITE_FENCE.get()) is not None:
            fence()
        contact = self.contact
        probing = False
        if fail_fast and contact.reachable is False:
            if not contact.admit():
                raise ClusterNotReadyError(self.cluster, "unreachable", contact.last_error)
            probing = True
        try:
            return await self._request(pool, method, path, verb, query, body, content_type, within, accept)
        finally:
            if probing:
                contact.end_probe()

    async def _request(
        self,
        pool: Pool,
        method: str,
        path: str,
        verb: str,
        query: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        within: float | None,
        accept: str | None = None,
    ) -> bytes:
        target = self.target(path, query)
        limit = within or self.request_timeout
        retry = method in IDEMPOTENT_METHODS
        length = None if body is None else len(body)
        if length is None and method in ("POST", "PUT", "PATCH"):
            length = 0
        refreshed = False
        attempt = 0
        while True:
            started = time.monotonic()
            head = await self._head(method, target, content_type if body is not None else None, accept, length)
            if not self._slots.try_take():  # at once when one is free: no coroutine, no loop round trip
                await self._slots.take()
            try:
                resp = await pool.request(head, body, limit, retry=retry, head_method=method == "HEAD")
            except _NET_ERRORS as exc:
                self._record(verb, "error", started)
                what = "timed out" if isinstance(exc, ResponseTimeout) else f"{type(exc).__name__}: {exc}"
                if isinstance(exc, _UNREACHABLE_ERRORS):
                    self.contact.failed(what)
                raise TransportError(f"cluster {self.cluster!r}: {method} {path}: {what}") from exc
            finally:
                self._slots.give_back()
            status = resp.status
            self.contact.answered()
            self._record(verb, status, started)
            if status < 300:
                return resp.body
            err = APIError.from_response(
                status, resp.body, retry_after=resp.headers.get("retry-after"), verb=method, path=path
            )
            if status == 401 and not refreshed and await self.config.auth.refresh():
                refreshed = True
                continue
            if err.retry_after is not None and (status == 429 or status >= 500) and attempt < self.max_throttle_retries:
                attempt += 1
                await anyio.sleep(min(err.retry_after, 10.0))
                continue
            raise err

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        within: float | None = None,
        fail_fast: bool = True,
    ) -> Any:
        raw = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        data = await self.request(
            method, path, verb=verb, query=query, body=raw, content_type=content_type, within=within,
            fail_fast=fail_fast,
        )  # fmt: skip
        if not data:
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise TransportError(f"cluster {self.cluster!r}: {method} {path}: answer is not JSON: {exc}") from exc

    # ------------------------------------------------------------------ watches
    @asynccontextmanager
    async def watch(
        self, path: str, query: Mapping[str, str], *, read_timeout: float, accept: str | None = None
    ) -> AsyncIterator[LineStream]:
        """Open a WATCH and yield its event lines (`accept`: the Accept header, e.g. METADATA).
        The connection is closed on exit, whether the stream ended, failed, or the caller
        was cancelled."""
        pool = self._require_pool()
        target = self.target(path, {**query, "watch": "true"})
        started = time.monotonic()
        try:
            head = await self._head("GET", target, None, accept, None)
            # a bound on getting the headers: connected, then an answer within the read timeout
            stream = await pool.stream(
                head, headers_within=self.connect_timeout + read_timeout, read_timeout=read_timeout
            )
        except _NET_ERRORS as exc:
            self._record("watch", "error", started)
            if isinstance(exc, _UNREACHABLE_ERRORS):
                self.contact.failed(f"{type(exc).__name__}: {exc}")
            raise TransportError(f"cluster {self.cluster!r}: WATCH {path}: {type(exc).__name__}: {exc}") from exc
        try:
            self.contact.answered()
            self._record("watch", stream.status, started)
            if stream.status != 200:
                try:
                    data = await stream.read()
                except _NET_ERRORS:
                    data = b""
                if stream.status == 401:
                    await self.config.auth.refresh()
                raise APIError.from_response(
                    stream.status, data, retry_after=stream.headers.get("retry-after"), verb="WATCH", path=path
                )
            yield LineStream(stream, f"cluster {self.cluster!r}: WATCH {path}", self.contact)
        finally:
            stream.close()


@functools.lru_cache(maxsize=256)
def _encoded_query(items: tuple[tuple[str, str], ...]) -> str:
    """A query, percent-encoded; remembered, since most requests repeat a few queries (a
    write's fieldManager and force) and encoding one cost more than the rest of the target."""
    return urlencode(items, quote_via=quote, safe="")


def _path_of(url: str) -> str:
    """The path part of a server URL, without its trailing slash ("" for none)."""
    rest = url.split("://", 1)[1]
    slash = rest.find("/")
    return rest[slash:].rstrip("/") if slash >= 0 else ""
