"""A small HTTP/1.1 server for a fixed table of GET routes: the manager's /healthz, /readyz
and /metrics (`health.py`).

Why not aiohttp's server: importing aiohttp costs a manager process ~12 MiB of memory and
~0.3 CPU-s at every start (it loads its client, connector and SSL contexts with its
server), a fifth of an idle manager, for three fixed paths that a probe or a scraper asks
for every few seconds (issue 22, "a small process"; bench/bench_idle_memory.py,
tests/test_lean_process.py). Requests are parsed by llhttp through `httptools`, as the
runtime's client parses answers (`http11.py`).

What it does: GET and HEAD (HEAD: the GET answer's headers, no body) on each route, 405
with `Allow` for another method, 404 for another path, 400 (and the connection closed)
for what is not HTTP/1.1, 414 for a target over `MAX_TARGET` bytes; an `Upgrade` ignored
(the request answered, then the connection closed); keep-alive and
pipelined requests answered in order; a connection with no complete request for
`idle_timeout` seconds is closed (an idle keep-alive, or a client that never finishes its
request). Flow control: while the client does not take what was written, nothing more is
read, and a connection with more than `MAX_UNSENT` bytes of answers waiting (requests
pipelined in one read, never read back) is dropped. Routes are plain functions: every
answer is computed and written at once, so stopping needs no grace period (closing a
transport flushes what it was given)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import cast
from urllib.parse import parse_qs

import anyio
import anyio.abc
import httptools

log = logging.getLogger(__name__)

METHODS = ("GET", "HEAD")
MAX_TARGET = 8192  # bytes of a request target (path and query); longer: 414
# answers written but not yet taken by a client that pipelines requests without reading
# them: past this the connection is dropped (one read of pipelined `GET /metrics` could
# otherwise queue thousands of whole scrapes in memory)
MAX_UNSENT = 4 * 1024 * 1024
IDLE_TIMEOUT = 60.0  # seconds a connection may go without a complete request
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]]  # `?verbose` is {"verbose": [""]}


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes = b""
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def text(cls, status: int, text: str) -> Reply:
        return cls(status, text.encode())


Route = Callable[[Request], Reply]


def encode(reply: Reply, *, head: bool, close: bool) -> bytes:
    """The reply on the wire: status line, headers, and the body unless `head`."""
    lines = [
        f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
        f"Content-Type: {reply.content_type}",
        f"Content-Length: {len(reply.body)}",
        *(f"{name}: {value}" for name, value in reply.headers),
    ]
    if close:
        lines.append("Connection: close")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head_bytes if head else head_bytes + reply.body


def answer(routes: Mapping[str, Route], method: str, target: bytes) -> Reply:
    """The reply to one request: its route's (500 if it raises), or 404 / 405 / 400."""
    try:
        url = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError:
        return Reply.text(400, "400: Bad Request")
    path = (url.path or b"/").decode("latin-1")
    route = routes.get(path)
    if route is None:
        return Reply.text(404, "404: Not Found")
    if method not in METHODS:
        return Reply(405, b"405: Method Not Allowed", headers=(("Allow", ",".join(METHODS)),))
    query = parse_qs((url.query or b"").decode("latin-1"), keep_blank_values=True)
    try:
        return route(Request(method, path, query))
    except Exception:  # the server's edge: a failing route is a 500 (logged), the connection serves on
        log.exception("route %s failed", path)
        return Reply.text(500, "500: Internal Server Error")


class _Connection(asyncio.Protocol):
    """One client connection: each complete request answered as the parser finishes it."""

    def __init__(self, server: RouteServer) -> None:
        self._server = server
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._target = bytearray()
        self._too_long = False
        self._closing = False
        self._timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass asyncio's
        self._server.connections.add(self)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # answered with Connection: close; whatever follows is not read
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.close()  # its request answered as a plain one (RFC 9110 7.8); what follows is not HTTP
        except httptools.HttpParserError as exc:
            log.debug("%s endpoint: a request that is not HTTP/1.1: %s", self._server.name, exc)
            self._reply(Reply.text(400, "400: Bad Request"), head=False, close=True)

    def pause_writing(self) -> None:
        if self._transport is not None:
            self._transport.pause_reading()  # no new requests until the answers are taken

    def resume_writing(self) -> None:
        if self._transport is not None and not self._closing:
            self._transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------- parser callbacks
    def on_message_begin(self) -> None:
        self._target.clear()
        self._too_long = False

    def on_url(self, url: bytes) -> None:
        if len(self._target) + len(url) > MAX_TARGET:
            self._too_long = True
        else:
            self._target += url

    def on_message_complete(self) -> None:
        if self._closing:
            return
        method = self._parser.get_method().decode("latin-1")
        close = not self._parser.should_keep_alive()
        if self._too_long:
            reply = Reply.text(414, "414: URI Too Long")
        else:
            reply = answer(self._server.routes, method, bytes(self._target))
        self._reply(reply, head=method == "HEAD", close=close)
        if not close:
            self._arm()

    # ------------------------------------------------------------- own
    def _reply(self, reply: Reply, *, head: bool, close: bool) -> None:
        assert self._transport is not None
        self._transport.write(encode(reply, head=head, close=close))
        if self._transport.get_write_buffer_size() > MAX_UNSENT:
            log.warning("%s endpoint: a client left over %d bytes of answers unread; dropping it",
                        self._server.name, MAX_UNSENT)  # fmt: skip
            self._closing = True
            self._transport.abort()
        elif close:
            self.close()

    def _arm(self) -> None:
        """(Re)start the idle clock: a complete request must come within `idle_timeout`."""
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._server.idle_timeout, self.close)

    def close(self) -> None:
        """Close once what was written is sent."""
        self._closing = True
        if self._transport is not None:
            self._transport.close()


@dataclass(eq=False)
class RouteServer:
    """The routes `routes` on one bind address; `run` serves them until cancelled."""

    name: str
    bind: tuple[str, int]
    routes: dict[str, Route] = field(default_factory=dict)
    idle_timeout: float = IDLE_TIMEOUT
    port: int | None = None
    connections: set[_Connection] = field(default_factory=set)

    async def run(self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await asyncio.get_running_loop().create_server(
            lambda: _Connection(self), self.bind[0], self.bind[1], reuse_address=True
        )
        try:
            self.port = int(listener.sockets[0].getsockname()[1])
            log.info("%s endpoint listening on %s:%s", self.name, self.bind[0], self.port)
            task_status.started(self.port)
            await anyio.sleep_forever()
        finally:
            # no new connections, then the open ones closed (every answer is already written)
            listener.close()
            for connection in list(self.connections):
                connection.close()
