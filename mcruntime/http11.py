"""A lean HTTP/1.1 client for one API server: keep-alive connections on asyncio
protocols, responses parsed by llhttp (through `httptools`, the parser uvicorn uses).

Why not aiohttp's client: a request through it cost ~135 µs of CPU (its request and
response objects, multidict headers, yarl URLs, a stream reader, timer contexts, trace
and middleware hooks), the lean transport on top ~50 µs more, and requests are a fifth of
the manager's CPU at fan-out (issue 22, "CPU per write"). Here a request is one bytes
write, one future and one timer handle; llhttp (C) parses the answer, and only the few
headers the transport reads are kept.

What it promises (`transport.py` builds on it):
- `Pool.request` sends one request with a total time limit (connect included) and returns
  the whole answer. Connections are kept alive and reused (most recently used first);
  an idle one is dropped after `keepalive` seconds, before the server's own idle timeout
  would race with a reuse. When an established connection drops before the answer (the
  server closed a reused connection, or reset it), an idempotent request is sent once
  more on a fresh connection (RFC 9112 §9.3.1, as aiohttp did).
- `Pool.stream` sends a request on a connection of its own (an idle one or a new one;
  never returned to the pool, closed with the stream) whose body is read as it arrives:
  `Stream.readany`, with a read-idle time limit (no bytes for that long means the stream
  is dead, even without a FIN) and flow control (reading pauses while more than
  `STREAM_HIGH_WATER` bytes wait for the reader).
- Failures are typed: `ConnectFailed` (refused, unresolvable, TLS handshake, proxy
  refused) and `ConnectTimeout` mean the server cannot be reached; `ConnectionDropped`
  an established connection that ended before a whole answer; `ResponseTimeout` no
  (whole) answer in time; `ProtocolError` an answer that is not HTTP/1.1.
- Chunked and Content-Length bodies (and bodies up to EOF), gzip/deflate answers
  decoded (the transport does not ask for them; a server that sends them anyway is
  understood), TLS through the caller's `ssl.SSLContext` with an optional SNI name, and
  plain-HTTP proxies (`http://` targets in absolute form, `https://` ones through CONNECT).
- `aclose` closes every connection, idle or in use (in-flight calls then fail with
  `ConnectionDropped`), and waits briefly for them to be gone."""

from __future__ import annotations

import asyncio
import base64
import ssl
import zlib
from collections import deque
from typing import Any, cast
from urllib.parse import unquote, urlsplit

import httptools

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
STREAM_HIGH_WATER = 4 * 1024 * 1024
# the response headers the transport reads; the rest are parsed by llhttp and not kept
_KEPT_HEADERS = frozenset({b"retry-after", b"content-encoding", b"content-length", b"transfer-encoding"})
_CLOSE_WAIT = 1.0  # how long aclose waits for connections to finish closing
_WBITS_AUTO = 47  # zlib: gzip or zlib header, detected (32 + 15)


class HTTPClientError(Exception):
    """No (whole) HTTP answer."""


class ConnectFailed(HTTPClientError):
    """The connection could not be made: the server cannot be reached."""


class ConnectTimeout(ConnectFailed):
    """The connection was not made within its time limit."""


class ConnectionDropped(HTTPClientError):
    """An established connection ended before a whole answer arrived."""


class ResponseTimeout(HTTPClientError):
    """No whole answer (or, on a stream, no bytes) within the time limit."""


class ProtocolError(HTTPClientError):
    """The server's bytes are not a valid HTTP/1.1 answer."""


class Response:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers  # lower-case names; only `_KEPT_HEADERS`
        self.body = body


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one exchange at a time, its answer parsed as it arrives."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.lost: asyncio.Future[None] = loop.create_future()
        self.idle_since = 0.0
        self.status = 0
        self.headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._streaming = False
        self._head_method = False
        self._interim = False  # a 1xx answer: the real one follows
        self._headers_done = False
        self.done = False
        self.keep_alive = False
        self._until_eof = False
        self._exc: HTTPClientError | None = None
        self._paused = False
        self._last_data = 0.0
        self._idle_limit = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None

    # ---------------------------------------------------------------- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self._idle_timer is not None:
            self._last_data = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolError(f"the answer is not valid HTTP/1.1: {exc}"))
            self.abort()

    def eof_received(self) -> bool | None:
        self.closed = True  # the server sends no more answers here; never reuse it
        return None  # the transport closes itself; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if not self.lost.done():
            self.lost.set_result(None)
        if self._waiter is None and not self._streaming:
            return  # idle: nothing to tell
        if self._headers_done and self._until_eof and not self.done:
            self._complete()  # a body delimited by the end of the connection
            return
        if not self.done:
            why = f"{type(exc).__name__}: {exc}" if exc is not None else "the server closed the connection"
            self._fail(ConnectionDropped(why))

    # ---------------------------------------------------------------- llhttp callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.lower()
        if key in _KEPT_HEADERS:
            self.headers[key.decode()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._interim = True  # 100 Continue and the like: no body, the real answer follows
            self.headers = {}
            return
        self.status = status
        self._headers_done = True
        headers = self.headers
        self._until_eof = (
            "content-length" not in headers
            and "chunked" not in headers.get("transfer-encoding", "").lower()
            and status not in (204, 304)
            and not self._head_method
        )
        if self._head_method:
            self._complete()  # no body follows a HEAD answer; llhttp would wait for one
            self.keep_alive = False
        elif self._streaming:
            self._wake()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        if self._streaming:
            self._buffered += len(body)
            if self._buffered > STREAM_HIGH_WATER and not self._paused and self._transport is not None:
                self._paused = True
                self._transport.pause_reading()
            self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        if self.done:
            return
        self.keep_alive = self._parser.should_keep_alive() and not self._until_eof
        self._complete()

    # ---------------------------------------------------------------- state
    def _complete(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, exc: HTTPClientError) -> None:
        if self._exc is None:
            self._exc = exc
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def timed_out(self, why: str) -> None:
        self._fail(ResponseTimeout(why))
        self.abort()

    def abort(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    def send(self, data: bytes, *, streaming: bool = False, head_method: bool = False) -> asyncio.Future[None]:
        """Write one request; the future resolves when the whole answer is in (or, when
        `streaming`, its headers)."""
        assert self._transport is not None
        self.status = 0
        self.headers = {}
        self._body = []
        self._buffered = 0
        self._streaming = streaming
        self._head_method = head_method
        self._headers_done = False
        self.done = False
        self.keep_alive = False
        self._until_eof = False
        self._exc = None
        self._waiter = waiter = self._loop.create_future()
        if self._transport.is_closing():  # lost in the meantime: as if it dropped on the way
            waiter.set_exception(ConnectionDropped("the connection closed before the request was sent"))
        else:
            self._transport.write(data)
        return waiter

    def finish(self) -> Response:
        """The answer of a completed exchange (the connection is idle again)."""
        self._waiter = None
        body = b"".join(self._body) if len(self._body) != 1 else self._body[0]
        self._body = []
        if body and (encoding := self.headers.get("content-encoding")):
            body = _decode(body, encoding)
        return Response(self.status, self.headers, body)

    def restart_parser(self) -> None:
        """After a CONNECT tunnel is up: the next bytes are the tunnelled server's."""
        self._parser = httptools.HttpResponseParser(self)
        self._waiter = None
        self._streaming = False
        self.done = False

    def set_transport(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    @property
    def transport(self) -> asyncio.Transport | None:
        return self._transport

    # ---------------------------------------------------------------- streams
    def watch_idle(self, limit: float) -> None:
        self._idle_limit = limit
        self._last_data = self._loop.time()
        self._idle_timer = self._loop.call_later(limit, self._check_idle)

    def _check_idle(self) -> None:
        self._idle_timer = None
        if self.closed or self.done:
            return
        idle = self._loop.time() - self._last_data
        if idle >= self._idle_limit and not self._paused:
            self.timed_out(f"no bytes for {self._idle_limit:g}s")
            return
        wait = self._idle_limit if self._paused else self._idle_limit - idle
        self._idle_timer = self._loop.call_later(wait, self._check_idle)

    async def read_chunk(self) -> bytes:
        """The body bytes received since the last call (waiting for some); b"" at the end."""
        while not self._body:
            if self._exc is not None:
                raise self._exc
            if self.done:
                return b""
            if self.lost.done():
                raise ConnectionDropped("the connection is closed")
            self._waiter = self._loop.create_future()
            await self._waiter
        chunk = b"".join(self._body) if len(self._body) != 1 else self._body[0]
        self._body = []
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            self._last_data = self._loop.time()
            self._transport.resume_reading()
        return chunk


def _decode(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ProtocolError(f"the answer is encoded as {encoding!r}, which this client does not decode")
    try:
        return zlib.decompress(body, _WBITS_AUTO)
    except zlib.error as exc:
        raise ProtocolError(f"the {encoding} answer does not decompress: {exc}") from exc


class Stream:
    """An answer whose body is read as it arrives (a watch); `aclose` closes its connection."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self.status = conn.status
        self.headers = conn.headers
        encoding = conn.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            conn.abort()
            raise ProtocolError(f"the answer is encoded as {encoding!r}, which this client does not decode")
        self._inflate = zlib.decompressobj(_WBITS_AUTO) if encoding not in ("", "identity") else None

    async def readany(self) -> bytes:
        """The next bytes of the body (b"" at its end). Raises `ResponseTimeout` after the
        read-idle limit without bytes, `ConnectionDropped` if the connection ends early."""
        while True:
            chunk = await self._conn.read_chunk()
            if self._inflate is None or not chunk:
                return chunk
            try:
                chunk = self._inflate.decompress(chunk)
            except zlib.error as exc:
                raise ProtocolError(f"the compressed stream is corrupt: {exc}") from exc
            if chunk:
                return chunk

    async def read(self) -> bytes:
        """The whole remaining body (an error answer's Status)."""
        parts = []
        while chunk := await self.readany():
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        self._conn.abort()


async def _exchange(waiter: asyncio.Future[None], conn: _Connection, deadline: float, within: str) -> None:
    """Wait for the answer (`waiter`, from `conn.send`) until `deadline` (loop time); a
    connection that failed, timed out or was cancelled mid-exchange is aborted: its state
    is unknown, so it is never reused."""
    timer = asyncio.get_running_loop().call_at(deadline, conn.timed_out, f"no answer within {within}")
    answered = False
    try:
        await waiter
        answered = True
    finally:
        timer.cancel()
        if not answered:
            conn.abort()


class Pool:
    """Keep-alive connections to the server at `url` (scheme, host and port; any path is
    the caller's). Unbounded: the caller bounds what it sends at once."""

    def __init__(
        self,
        url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        proxy: str | None = None,
        connect_timeout: float = 10.0,
        keepalive: float = 15.0,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server URL {url!r}: needs http:// or https:// and a host")
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self.host_header = parts.netloc.rpartition("@")[2]
        self._ssl: ssl.SSLContext | None = None
        if self._tls:
            self._ssl = ssl_context if ssl_context is not None else ssl.create_default_context()
        self._server_hostname = server_hostname or self._host
        self.connect_timeout = connect_timeout
        self.keepalive = keepalive
        self._proxy: tuple[str, int] | None = None
        self._proxy_auth = ""
        # http:// through a proxy: the request line names the whole URL (absolute form)
        self.target_prefix = ""
        if proxy:
            p = urlsplit(proxy)
            if p.scheme != "http" or not p.hostname:
                raise ValueError(f"proxy {proxy!r}: only http:// proxies are supported")
            self._proxy = (p.hostname, p.port or 80)
            if p.username is not None:
                pair = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
                self._proxy_auth = f"Proxy-Authorization: Basic {base64.b64encode(pair).decode()}\r\n"
            if not self._tls:
                self.target_prefix = f"http://{self.host_header}"
        self._idle: deque[_Connection] = deque()
        self._connections: set[_Connection] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def open_connections(self) -> int:
        """Connections made and not yet closed (idle, in use, or streaming)."""
        return sum(1 for conn in self._connections if not conn.closed)

    @property
    def extra_headers(self) -> str:
        """Header lines every request through a plain-HTTP proxy carries."""
        return self._proxy_auth if self.target_prefix else ""

    # ---------------------------------------------------------------- connections
    def _idle_connection(self, now: float) -> _Connection | None:
        self._idle_connection_trim(now)
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close the connections idle longer than `keepalive` (one timer per pool, not per
        request): a quiet manager keeps no sockets open it will not reuse."""
        self._sweeper = None
        self._idle_connection_trim(loop.time())
        if self._idle and not self._closed:
            self._sweeper = loop.call_later(self.keepalive, self._sweep, loop)

    def _idle_connection_trim(self, now: float) -> None:
        idle = self._idle
        while idle and (idle[0].closed or now - idle[0].idle_since > self.keepalive):
            idle.popleft().close()  # the oldest first: they would be the next to go stale

    async def _connect(self, limit: float) -> _Connection:
        if self._closed:
            raise ConnectionDropped("the connection pool is closed")
        loop = asyncio.get_running_loop()
        target = self._proxy or (self._host, self._port)
        conn = _Connection(loop)
        made = False
        try:
            async with asyncio.timeout(max(0.0, min(limit, self.connect_timeout))):
                await loop.create_connection(
                    lambda: conn,
                    target[0],
                    target[1],
                    ssl=None if self._proxy else self._ssl,
                    server_hostname=None if self._proxy or not self._tls else self._server_hostname,
                )
                self._connections.add(conn)
                if self._proxy and self._tls:
                    await self._tunnel(loop, conn)
            if self._closed:  # closed while this connection was being made
                raise ConnectionDropped("the connection pool is closed")
            made = True
        except TimeoutError as exc:
            raise ConnectTimeout(f"connecting to {target[0]}:{target[1]} timed out") from exc
        except (OSError, ProtocolError) as exc:  # ssl.SSLError is an OSError
            raise ConnectFailed(f"connecting to {target[0]}:{target[1]}: {type(exc).__name__}: {exc}") from exc
        finally:
            if not made:  # failed, timed out or cancelled: nothing half-made stays open
                conn.abort()
                self._connections.discard(conn)
        conn.lost.add_done_callback(lambda _: self._connections.discard(conn))
        return conn

    async def _tunnel(self, loop: asyncio.AbstractEventLoop, conn: _Connection) -> None:
        """CONNECT through the proxy, then TLS to the server inside the tunnel."""
        where = f"{self._host}:{self._port}" if ":" not in self._host else f"[{self._host}]:{self._port}"
        try:
            await conn.send(
                f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n{self._proxy_auth}\r\n".encode("latin-1"), streaming=True
            )
        except ConnectionDropped as exc:
            raise ConnectFailed(f"the proxy closed the connection on CONNECT {where}: {exc}") from exc
        if conn.status != 200:
            raise ConnectFailed(f"the proxy refused CONNECT {where}: HTTP {conn.status}")
        conn.restart_parser()
        transport = conn.transport
        assert transport is not None and self._ssl is not None
        tls = await loop.start_tls(transport, conn, self._ssl, server_hostname=self._server_hostname)
        if tls is None:
            raise ConnectFailed(f"TLS through the proxy to {where} could not start")
        conn.set_transport(tls)

    # ---------------------------------------------------------------- exchanges
    async def request(
        self, head: bytes, body: bytes | None, within: float, *, retry: bool, head_method: bool = False
    ) -> Response:
        """Send `head` (the request line and headers, ending in the blank line) and `body`;
        the whole answer within `within` seconds. `retry`: the method is idempotent, so a
        connection that drops before the answer is retried once on a fresh one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        data = head if not body else head + body
        fresh_only = False
        while True:
            conn = None if fresh_only else self._idle_connection(loop.time())
            if conn is None:
                conn = await self._connect(deadline - loop.time())
            try:
                await _exchange(conn.send(data, head_method=head_method), conn, deadline, f"{within:g}s")
            except ConnectionDropped:
                if not retry or fresh_only:
                    raise
                fresh_only = True  # once, and not on another connection that may be as stale
                continue
            response = conn.finish()
            if conn.keep_alive and not conn.closed and not self._closed:
                conn.idle_since = loop.time()
                self._idle.append(conn)
                if self._sweeper is None:
                    self._sweeper = loop.call_later(self.keepalive, self._sweep, loop)
            else:
                conn.close()
            return response

    async def stream(self, head: bytes, *, headers_within: float, read_timeout: float) -> Stream:
        """Send a GET whose answer is read as it arrives, on a connection it keeps (an idle
        one, or a new one made within the connect timeout): the answer's headers within
        `headers_within` seconds, then no more than `read_timeout` seconds without bytes.
        An idle connection that turns out dropped is replaced by a fresh one, once."""
        loop = asyncio.get_running_loop()
        reused = self._idle_connection(loop.time())
        while True:
            conn = reused or await self._connect(self.connect_timeout)
            try:
                headers_by = loop.time() + headers_within
                await _exchange(conn.send(head, streaming=True), conn, headers_by, f"{headers_within:g}s")
            except ConnectionDropped:
                if reused is None:
                    raise
                reused = None
                continue
            conn.watch_idle(read_timeout)
            return Stream(conn)

    async def aclose(self) -> None:
        """Close every connection; in-flight exchanges fail with `ConnectionDropped`."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._idle.clear()
        connections = list(self._connections)
        for conn in connections:
            conn.close()
        pending: list[Any] = [conn.lost for conn in connections if not conn.lost.done()]
        if pending:
            _, stragglers = await asyncio.wait(pending, timeout=_CLOSE_WAIT)
            if stragglers:
                for conn in connections:
                    conn.abort()
