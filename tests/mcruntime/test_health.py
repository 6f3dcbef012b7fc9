"""The manager's endpoints on aiohttp's low-level server (mcruntime/health.py): the answers
aiohttp's router gave before (GET and HEAD per route, 405 with Allow for another method, 404
for another path), check results, the Prometheus text, and a clean stop."""

from __future__ import annotations

import aiohttp
import anyio
import pytest
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter

from mcruntime.health import EndpointServer, parse_bind_address


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
            async with http.post(f"{base}/healthz") as resp:
                assert resp.status == 405 and resp.headers["Allow"] == "GET,HEAD"
            async with http.get(f"{base}/nothing-here") as resp:
                assert resp.status == 404
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


def test_bind_addresses() -> None:
    assert parse_bind_address(":8080") == ("0.0.0.0", 8080)
    assert parse_bind_address("[::1]:0") == ("::1", 0)
    assert parse_bind_address("0") is None
