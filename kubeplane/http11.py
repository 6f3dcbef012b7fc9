"""HTTP/1.1 for the embedded API server: an asyncio `Protocol` around httptools' parser (llhttp,
the parser of Node.js and uvicorn), a small request type and the two kinds of response the
server writes (a fixed body with Content-Length; a chunked stream for watches).

Why not aiohttp's server: at the fan-out rates the benchmarks drive, its per-request machinery
(request and response objects, header multidicts, payload writers, a write per part) was about
30% of the API servers' CPU, and the servers share the machine's cores with the manager.

Per connection:
- one request is served at a time, in order (pipelined requests wait, reading pauses);
- keep-alive unless the client or the response says `Connection: close`;
- a connection with no request in flight is closed after `idle_timeout`, including one that
  never completes a request's headers (a slow or silent client holds nothing forever);
- request heads are bounded (431 past MAX_HEADER_BYTES, as Go's http.Server), bodies are read
  up to the caller's limit within the caller's timeout (the handler decides the answer), and a
  malformed request is a 400; both close the connection;
- `Expect: 100-continue` is answered when the handler first reads the body;
- HEAD responses carry the headers only;
- a client that disconnects cancels its handler at once (a watch ends, as in kube-apiserver);
- writes respect the transport's flow control (pause_writing/resume_writing).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, TypeVar, cast, overload
from urllib.parse import parse_qsl, unquote

import anyio
import httptools

log = logging.getLogger(__name__)

# Go's http.DefaultMaxHeaderBytes (kube-apiserver keeps Go's default): the request line and
# headers together; past it the answer is 431 and the connection closes
MAX_HEADER_BYTES = 1 << 20

_T = TypeVar("_T")


class BodyTooLarge(Exception):
    """The request body is larger than the reader's limit."""


class BodyTimeout(Exception):
    """The request body did not arrive within the reader's time."""


class BodyIncomplete(Exception):
    """The client stopped sending (or sent malformed framing) before the body's end."""


class Headers(Mapping[str, str]):
    """Request headers by case-insensitive name (repeated headers joined with ", ")."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items  # lower-case names

    @overload
    def get(self, name: str, /) -> str | None: ...
    @overload
    def get(self, name: str, default: str | _T, /) -> str | _T: ...
    def get(self, name: str, default: Any = None, /) -> Any:
        return self._items.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Query(Mapping[str, str]):
    """Query parameters decoded as Go's url.ParseQuery does (`+` is a space, blank values kept);
    `get` gives the first value of a name, `getall` every value."""

    __slots__ = ("_items",)

    def __init__(self, query_string: str) -> None:
        # (shared between the requests that send the same short query: nothing here changes it)
        self._items = (
            _parsed_remembered(query_string) if len(query_string) <= REMEMBERED_QUERY else _parsed(query_string)
        )

    @overload
    def get(self, name: str, /) -> str | None: ...
    @overload
    def get(self, name: str, default: str | _T, /) -> str | _T: ...
    def get(self, name: str, default: Any = None, /) -> Any:
        values = self._items.get(name)
        return values[0] if values else default

    def getall(self, name: str, default: list[str] | None = None) -> list[str]:
        values = self._items.get(name)
        if values is None:
            if default is None:
                raise KeyError(name)
            return default
        return list(values)

    def __getitem__(self, name: str) -> str:
        return self._items[name][0]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


REMEMBERED_QUERY = 256  # (a client repeats its short queries: ?fieldManager=...&force=true, watch options)


def _parsed(query_string: str) -> dict[str, list[str]]:
    items: dict[str, list[str]] = {}
    if query_string:
        for key, value in parse_qsl(query_string, keep_blank_values=True):
            items.setdefault(key, []).append(value)
    return items


@functools.lru_cache(maxsize=128)
def _parsed_remembered(query_string: str) -> dict[str, list[str]]:
    return _parsed(query_string)


class Request:
    """One request: method, decoded path, query, headers, and its body as it arrives."""

    __slots__ = (
        "_body",
        "_complete",
        "_conn",
        "_continue",
        "_cut",
        "_discard",
        "_overflow",
        "_query",
        "_waiter",
        "headers",
        "keep_alive",
        "method",
        "path",
        "query_string",
        "raw_path",
        "user",
    )

    def __init__(
        self, conn: HTTPConnection, method: str, raw_path: str, query_string: str, headers: Headers, keep_alive: bool
    ) -> None:
        self._conn = conn
        self.method = method
        self.raw_path = raw_path
        # percent-decoded as Go's URL.Path (%2F too), dot segments left for the router to refuse
        self.path = unquote(raw_path) if "%" in raw_path else raw_path
        self.query_string = query_string
        self._query: Query | None = None
        self.headers = headers
        self.keep_alive = keep_alive
        self.user: Any = None  # the authenticated user, where authentication ran (RBAC mode)
        self._body = bytearray()
        self._complete = False
        self._overflow = False  # the body passed the server's limit: the rest is dropped
        self._discard = False  # answered without reading the body: the rest is dropped
        self._cut = False  # the connection ended, or its framing broke, before the body's end
        self._waiter: asyncio.Future[None] | None = None
        self._continue = headers.get("expect", "").lower() == "100-continue"

    @property
    def query(self) -> Query:
        if self._query is None:
            self._query = Query(self.query_string)
        return self._query

    @property
    def path_qs(self) -> str:
        return self.raw_path + ("?" + self.query_string if self.query_string else "")

    @property
    def content_length(self) -> int | None:
        value = self.headers.get("content-length")
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:  # (llhttp refuses malformed lengths; repeated equal ones are joined)
            return int(value.split(",")[0])

    @property
    def transport(self) -> asyncio.Transport | None:
        return self._conn.transport

    @property
    def remote(self) -> str | None:
        transport = self._conn.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        return str(peer[0]) if peer else None

    async def read(self, within: float) -> bytes:
        """The whole body: BodyTooLarge past the server's `max_body` bytes (data past it is
        dropped as it arrives), BodyTimeout if it is not all here within `within` seconds,
        BodyIncomplete if the client stopped before its end."""
        length = self.content_length
        if length is not None and length > self._conn.server.max_body:
            raise BodyTooLarge
        if not self._complete and not self._overflow:
            if self._continue:
                self._continue = False
                self._conn.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            try:
                with anyio.fail_after(within):
                    while not self._complete and not self._overflow:
                        self._waiter = asyncio.get_running_loop().create_future()
                        await self._waiter
            except TimeoutError:
                raise BodyTimeout from None
            finally:
                self._waiter = None
        if self._overflow:
            raise BodyTooLarge
        if self._cut:
            raise BodyIncomplete
        return bytes(self._body)

    # ---------------------------------------------------------------- fed by the connection
    def _feed(self, data: bytes) -> None:
        if self._overflow or self._discard:
            return
        self._body += data
        if len(self._body) > self._conn.server.max_body:
            self._overflow = True
            self._body.clear()  # nothing past the limit is kept
            self._wake()

    def _ended_cleanly(self) -> bool:
        return self._complete and not self._cut

    def _finish(self, *, cut: bool = False) -> None:
        self._cut = cut
        self._complete = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Response:
    """A response with a fixed body (Content-Length is added when it is written)."""

    __slots__ = ("body", "headers", "status")

    prepared = False

    def __init__(
        self,
        body: bytes = b"",
        *,
        status: int = 200,
        content_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.body = body
        self.status = status
        self.headers: list[tuple[str, str]] = headers if headers is not None else []
        if content_type is not None:
            self.headers.append(("Content-Type", content_type))

    def add_header(self, name: str, value: str) -> None:
        self.headers.append((name, value))

    def set_header(self, name: str, value: str) -> None:
        lower = name.lower()
        self.headers = [(n, v) for n, v in self.headers if n.lower() != lower]
        self.headers.append((name, value))

    def header(self, name: str) -> str | None:
        lower = name.lower()
        return next((v for n, v in self.headers if n.lower() == lower), None)


class StreamResponse:
    """A chunked response, written as it goes: `await start(request)`, then `await write(data)`
    per piece (each waits while the client is not reading); the connection ends the stream."""

    __slots__ = ("_conn", "_head", "headers", "prepared", "status")

    def __init__(self, *, status: int = 200, headers: list[tuple[str, str]] | None = None) -> None:
        self.status = status
        self.headers: list[tuple[str, str]] = headers if headers is not None else []
        self.prepared = False
        self._conn: HTTPConnection | None = None
        self._head = True  # a HEAD request: no chunks are written

    def add_header(self, name: str, value: str) -> None:
        self.headers.append((name, value))

    async def start(self, request: Request) -> None:
        conn = request._conn
        self._conn = conn
        self._head = request.method == "HEAD"
        self.prepared = True
        close = not request.keep_alive
        head = _head(self.status, self.headers, b"Transfer-Encoding: chunked\r\n", close)
        conn.write(head)
        await conn.drain()

    async def write(self, data: bytes) -> None:
        conn = self._conn
        if conn is None:
            raise RuntimeError("write before start")
        if not data or self._head:
            return
        if conn.closing:
            raise ConnectionResetError("the client closed the connection")
        conn.write(b"%x\r\n%b\r\n" % (len(data), data))
        await conn.drain()

    def _finish(self) -> None:
        if self._conn is not None and not self._head:
            self._conn.write(b"0\r\n\r\n")


AnyResponse = Response | StreamResponse
Handler = Callable[[Request], Awaitable[AnyResponse]]

_REASONS: dict[int, bytes] = {}
_date_cache: list[Any] = [0, b""]


def _status_line(status: int) -> bytes:
    line = _REASONS.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        line = _REASONS[status] = f"HTTP/1.1 {status} {phrase}\r\n".encode()
    return line


def _date() -> bytes:
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = b"Date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
    return _date_cache[1]  # type: ignore[no-any-return]


def _head(status: int, headers: list[tuple[str, str]], framing: bytes, close: bool) -> bytes:
    parts = [_status_line(status)]
    for name, value in headers:
        if name.lower() == "connection":
            continue  # decided below, from the request and the response together
        if "\n" in value or "\r" in value:  # a value never ends the head early
            parts.append(f"{name}: {value.replace(chr(13), ' ').replace(chr(10), ' ')}\r\n".encode())
        else:
            parts.append(f"{name}: {value}\r\n".encode())
    parts.append(_date())
    parts.append(framing)
    if close:
        parts.append(b"Connection: close\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def _wants_close(headers: list[tuple[str, str]]) -> bool:
    return any(n.lower() == "connection" and v.lower() == "close" for n, v in headers)


def _plain_error(status: int) -> bytes:
    text = f"{status} {HTTPStatus(status).phrase}".encode()
    return _status_line(
        status
    ) + b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%b" % (
        len(text),
        text,
    )


class HTTPConnection(asyncio.Protocol):
    """One client connection: parses requests, serves them one at a time with `handler`."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.closing = False
        self._draining = False  # the server is stopping: end after the request in flight
        self._url = bytearray()
        self._headers: dict[str, str] = {}
        self._head_bytes = 0
        self._parsing: Request | None = None  # the request whose bytes are arriving
        self._queue: deque[Request | int] = deque()  # requests (or a final error status) to serve
        self._ready: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._idle_since: float | None = None  # loop time since no request is in flight
        self._busy = False
        self._reading = True

    # ---------------------------------------------------------------- transport events
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is not a subclass)
        self.server.connections.add(self)
        self._task = asyncio.get_running_loop().create_task(self._serve(), name="kubeplane-http-connection")
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # an upgrade (exec, port-forward) is not served: the request is answered, then the
            # connection ends since what follows is not HTTP
            self._stop_parsing(None)
        except httptools.HttpParserError as exc:
            status = 431 if self._head_bytes > MAX_HEADER_BYTES else 400
            peer = self.transport.get_extra_info("peername") if self.transport else None
            log.debug("bad request from %s: %s", peer, exc)
            self._stop_parsing(status)

    def eof_received(self) -> bool | None:
        # the client closed its side: as Go's server does, that cancels the request in flight
        # (a watch ends at once) and ends the connection
        self.close()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.server.connections.discard(self)
        self._cancel_idle()
        for future in (self._ready, self._writable):
            if future is not None and not future.done():
                future.set_result(None)
        if self._task is not None and not self._task.done():
            self._task.cancel()  # the handler (a watch above all) ends with its client

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    # ---------------------------------------------------------------- parser callbacks
    def on_message_begin(self) -> None:
        self._url.clear()
        self._headers = {}
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._count_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        previous = self._headers.get(key)
        self._headers[key] = text if previous is None else previous + ", " + text

    def on_headers_complete(self) -> None:
        url = bytes(self._url).decode("latin-1")
        path, _, query = url.partition("?")
        path = path.partition("#")[0]
        if not path.startswith("/"):  # absolute-form (a proxy's request line): keep the path
            path = httptools.parse_url(self._url).path.decode("latin-1") or "/"
        method = self.parser.get_method().decode("ascii")
        request = Request(self, method, path, query, Headers(self._headers), self.parser.should_keep_alive())
        self._parsing = request
        self._queue.append(request)
        self._disarm_idle()
        if self._busy and self._reading and self.transport is not None:
            self._reading = False  # pipelined: read on once the request before it is answered
            self.transport.pause_reading()
        self._signal()

    def on_body(self, body: bytes) -> None:
        if self._parsing is not None:
            self._parsing._feed(body)

    def on_message_complete(self) -> None:
        request, self._parsing = self._parsing, None
        if request is not None:
            request._finish()
        self._signal()

    def _count_head(self, n: int) -> None:
        self._head_bytes += n
        if self._head_bytes > MAX_HEADER_BYTES:
            raise httptools.HttpParserError("request headers too large")

    # ---------------------------------------------------------------- serving
    def _stop_parsing(self, status: int | None) -> None:
        """No more requests from this connection: serve what is queued, then `status` (an
        error answer) if given, then close."""
        if self.closing:
            return
        self.closing = True
        if status is not None:
            self._queue.append(status)
        if self._parsing is not None:
            self._parsing._finish(cut=True)  # a body cut short: its reader is told so
        self._signal()

    def _signal(self) -> None:
        ready = self._ready
        if ready is not None and not ready.done():
            ready.set_result(None)

    async def _next(self) -> Request | int | None:
        while not self._queue:
            if self.closing:
                return None
            self._ready = asyncio.get_running_loop().create_future()
            try:
                await self._ready
            finally:
                self._ready = None
        return self._queue.popleft()

    async def _serve(self) -> None:
        try:
            while True:
                item = await self._next()
                if item is None:
                    break
                if isinstance(item, int):
                    self.write(_plain_error(item))
                    break
                self._busy = True
                try:
                    keep_alive = await self._serve_one(item)
                except ConnectionError:
                    break  # the client went away mid-response
                self._busy = False
                if not keep_alive or self._draining:
                    break
                if not self._reading and self.transport is not None and not self.closing:
                    self._reading = True
                    self.transport.resume_reading()
                if not self._queue:
                    self._arm_idle()
        except asyncio.CancelledError:
            pass  # the client went away, or the server stopped
        finally:
            self._close()

    async def _serve_one(self, request: Request) -> bool:
        try:
            response = await self.server.handler(request)
        except ConnectionError:
            raise
        except Exception:
            log.exception("unhandled error serving %s %s", request.method, request.path_qs)
            response = Response(b"500 Internal Server Error", status=500, content_type="text/plain")
        if isinstance(response, StreamResponse):
            if not response.prepared:
                await response.start(request)
            response._finish()
            keep_alive = request.keep_alive
        else:
            keep_alive = request.keep_alive and not _wants_close(response.headers)
            if not request._complete and request._continue:
                keep_alive = False  # the client still holds a body it was never asked for
            body = response.body
            head = _head(response.status, response.headers, b"Content-Length: %d\r\n" % len(body), not keep_alive)
            if request.method == "HEAD":
                self.write(head)
            elif len(body) < 65536:
                self.write(head + body)
            else:  # (no copy of a large body just to put the head in front of it)
                self.writelines(head, body)
        await self.drain()
        if keep_alive and not request._complete:
            # answered before its body was read: skip the rest of it (within the idle timeout)
            # so the connection can carry the next request
            request._discard = True
            request._body.clear()
            with anyio.move_on_after(self.server.idle_timeout):
                while not request._complete and not self.closing:
                    request._waiter = asyncio.get_running_loop().create_future()
                    await request._waiter
            return request._ended_cleanly() and not self.closing
        return keep_alive

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def writelines(self, *data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.writelines(data)

    async def drain(self) -> None:
        writable = self._writable
        if writable is not None:
            await writable
        if self.closing and self.transport is not None and self.transport.is_closing():
            raise ConnectionResetError("the client closed the connection")

    # ---------------------------------------------------------------- timers and closing
    # one timer per connection, moved on lazily: a request costs no timer of its own
    def _arm_idle(self) -> None:
        loop = asyncio.get_running_loop()
        self._idle_since = loop.time()
        if self._idle is None:
            self._idle = loop.call_later(self.server.idle_timeout, self._on_idle)

    def _disarm_idle(self) -> None:
        self._idle_since = None  # busy: the timer finds this and waits for the next _arm_idle

    def _cancel_idle(self) -> None:
        self._idle_since = None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _on_idle(self) -> None:
        self._idle = None
        since = self._idle_since
        if since is None or self._busy:
            return
        left = since + self.server.idle_timeout - asyncio.get_running_loop().time()
        if left > 0:
            self._idle = asyncio.get_running_loop().call_later(left, self._on_idle)
        else:
            self.close()

    def drain_and_close(self) -> None:
        """End the connection after the request in flight (now, if there is none)."""
        self._draining = True
        if not self._busy:
            self.close()

    def close(self) -> None:
        """End the connection now: its handler is cancelled, the transport closed."""
        self.closing = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._close()

    def _close(self) -> None:
        self.closing = True
        self._cancel_idle()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task


class HTTPServer:
    """Listens on a host and port (TLS with `ssl`) and serves every connection with `handler`."""

    def __init__(self, handler: Handler, *, idle_timeout: float, max_body: int) -> None:
        self.handler = handler
        self.idle_timeout = idle_timeout
        self.max_body = max_body  # the most of a request body kept (readers refuse past it)
        self.connections: set[HTTPConnection] = set()
        self._server: asyncio.AbstractServer | None = None

    async def listen(self, host: str, port: int, ssl: Any = None) -> int:
        """Start listening; the port bound (the one asked for, or the one picked for 0)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HTTPConnection(self), host, port, ssl=ssl, reuse_address=True, backlog=1024
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self, grace: float = 2.0) -> None:
        """Stop listening and end every connection: idle ones at once, requests in flight
        after up to `grace` seconds to finish (as aiohttp's shutdown_timeout), then cancelled;
        every connection's task has ended on return."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        connections = list(self.connections)
        for conn in connections:
            conn.drain_and_close()
        tasks = [conn.task for conn in connections if conn.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for conn in connections:
                if conn.task in pending:
                    conn.close()
            if pending:
                await asyncio.wait(pending)
        if server is not None:
            # (3.12+ waits here for the transports to finish closing; TLS ones may linger)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 2.0)
