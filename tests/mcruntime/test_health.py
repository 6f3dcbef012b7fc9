"""The manager's endpoints (mcruntime/health.py) on the runtime's own GET server
(mcruntime/routeserver.py): the answers aiohttp's router gave before (GET and HEAD per
route, 405 with Allow for another method, 404 for another path), check results, the
Prometheus text and a clean stop; and, on the wire, keep-alive, pipelining, HTTP/1.0, what
is not HTTP (400), an over-long target (414), idle connections closed and a client that
never reads its answers dropped."""

from __future__ import annotations

import re
import socket

import aiohttp
import anyio
import pytest
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter

from mcruntime.health import EndpointServer, parse_bind_address
from mcruntime.routeserver import MAX_TARGET, MAX_UNSENT, Reply, Request
from tests.support import eventually


async def test_routes_methods_and_unknown_paths() -> None:
    registry = CollectorRegistry()
    Counter("probe_requests", "scrapes", registry=registry).inc(3)
    server = EndpointServer("probe", ("127.0.0.1", 0))
    server.add_checks("/healthz", "healthz", {"ping": lambda: True})
    server.add_checks("/readyz", "readyz", {"cache": lambda: (False, "not synced"), "ping": lambda: True})
    server.add_metrics(registry)
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as resp:
                assert (resp.status, await resp.text()) == (200, "ok")
                assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
            async with http.get(f"{base}/healthz?verbose") as resp:
                assert await resp.text() == "[+]ping ok\nhealthz check passed\n"
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 500
                assert await resp.text() == "[-]cache failed: not synced\n[+]ping ok\nreadyz check failed\n"
            async with http.head(f"{base}/healthz") as resp:
                assert resp.status == 200 and await resp.read() == b""
            async with http.get(f"{base}/metrics") as resp:
                assert resp.status == 200 and resp.headers["Content-Type"] == CONTENT_TYPE_LATEST
                assert "probe_requests_total 3.0" in await resp.text()
            async with http.post(f"{base}/healthz", data=b"x") as resp:
                assert resp.status == 405 and resp.headers["Allow"] == "GET,HEAD"
            async with http.get(f"{base}/nothing-here") as resp:
                assert resp.status == 404
            assert len(server.connections) == 1, "one connection kept alive for all of them"
        tg.cancel_scope.cancel()
    async with aiohttp.ClientSession() as http:  # stopped: the listener is closed
        with pytest.raises(aiohttp.ClientConnectorError):
            await http.get(f"{base}/healthz")


async def test_a_check_that_raises_fails_without_a_trace() -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    server = EndpointServer("probe", ("127.0.0.1", 0))
    server.add_checks("/readyz", "readyz", {"broken": broken})
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/readyz?verbose") as resp:
            assert resp.status == 500 and await resp.text() == "[-]broken failed\nreadyz check failed\n"
        tg.cancel_scope.cancel()


async def test_a_route_that_raises_answers_500_and_the_connection_serves_on() -> None:
    def broken(_request: Request) -> Reply:
        raise RuntimeError("the registry broke")

    server = EndpointServer("probe", ("127.0.0.1", 0))
    server.add_checks("/healthz", "healthz", {"ping": lambda: True})
    server.routes["/metrics"] = broken
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert (resp.status, await resp.text()) == (500, "500: Internal Server Error")
            async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert (resp.status, await resp.text()) == (200, "ok")
            assert len(server.connections) == 1
        tg.cancel_scope.cancel()


async def exchange(port: int, data: bytes) -> bytes:
    """Send `data` on a fresh connection, half-close it, and read until the server closes."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        await stream.send_eof()
        received = b""
        with anyio.fail_after(10):
            while True:
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return received


def statuses(raw: bytes) -> list[str]:
    return re.findall(r"HTTP/1\.1 (\d{3}) ", raw.decode("latin-1"))


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        # pipelined on one connection, answered in order; the last asks to close
        (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            ["200", "200", "404"],
        ),
        # HTTP/1.0 without keep-alive: one answer, then closed
        (b"GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n", ["200"]),
        # not HTTP: 400, then closed (nothing after it is read)
        (b"HELLO THERE\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n", ["400"]),
        # a request target past the limit: 414
        (b"GET /healthz?" + b"a" * MAX_TARGET + b" HTTP/1.1\r\nConnection: close\r\n\r\n", ["414"]),
        # a protocol upgrade is ignored (RFC 9110 7.8): answered as a plain GET, then closed
        (b"GET /healthz HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /healthz", ["200"]),
    ],
    ids=["pipelined", "http-1.0", "not-http", "target-too-long", "upgrade"],
)
async def test_on_the_wire(request_bytes: bytes, expected: list[str]) -> None:
    server = EndpointServer("probe", ("127.0.0.1", 0))
    server.add_checks("/healthz", "healthz", {"ping": lambda: True})
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        raw = await exchange(port, request_bytes)
        tg.cancel_scope.cancel()
    assert statuses(raw) == expected, raw
    if expected == ["200", "200", "404"]:  # the HEAD answer: the GET's headers, no body
        assert b"Content-Length: 2\r\n\r\nHTTP/1.1 404" in raw


async def test_an_idle_connection_is_closed() -> None:
    """A connection with no complete request within the idle timeout is closed: one kept
    alive after its answer, and one whose request never finishes."""
    server = EndpointServer("probe", ("127.0.0.1", 0), idle_timeout=0.2)
    server.add_checks("/healthz", "healthz", {"ping": lambda: True})
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        for sent in (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(sent)
                received = b""
                while chunk := await anyio.to_thread.run_sync(sock.recv, 4096):
                    received += chunk
            assert statuses(received) == (["200"] if sent.endswith(b"\r\n\r\n") else [])
        await anyio.sleep(0.05)
        assert server.connections == set()
        tg.cancel_scope.cancel()


async def test_a_client_that_pipelines_without_reading_is_dropped() -> None:
    """Requests pipelined in one read, their answers never read back: the connection is
    dropped once more than MAX_UNSENT bytes of answers wait, not held in memory."""
    registry = CollectorRegistry()
    for i in range(300):
        Counter(f"probe_series_{i}", "a series " * 20, ["name"], registry=registry).labels(name="x" * 100).inc()
    server = EndpointServer("probe", ("127.0.0.1", 0))
    server.add_metrics(registry)
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.run)
        scrape = server.routes["/metrics"](Request("GET", "/metrics", {})).body
        requests = 2 * MAX_UNSENT // len(scrape) + 50  # answers past the limit and the socket buffers
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            await eventually(lambda: len(server.connections) == 1, "the server to take the connection")
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * requests)
            await eventually(lambda: not server.connections, "the unread connection dropped", within=10.0)
        tg.cancel_scope.cancel()


def test_bind_addresses() -> None:
    assert parse_bind_address(":8080") == ("0.0.0.0", 8080)
    assert parse_bind_address("[::1]:0") == ("::1", 0)
    assert parse_bind_address("0") is None
