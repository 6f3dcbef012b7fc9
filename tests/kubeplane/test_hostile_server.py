"""Hostile clients at the server level: the admin endpoints of a server with a token require
it; settings that would make the server spin (a zero bookmark interval) are refused; idle,
half-sent and trickling connections are cut; watch history is bounded by age as well as by
count, as etcd compaction bounds it."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer

from .conftest import eventually

CMS = "/api/v1/namespaces/default/configmaps"


# ------------------------------------------------------------------ admin endpoints


async def test_admin_endpoints_require_the_token_on_a_tls_server(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(tls=True, kubeconfig=tmp_path / "kc") as server:
        assert server.token
        ca = server.kubeconfig()["clusters"][0]["cluster"]["certificate-authority-data"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
        connector = aiohttp.TCPConnector(ssl=ctx)
        async with aiohttp.ClientSession(connector=connector) as session:
            for method, path, body in (
                ("PUT", "/_embedded/faults", {"error_rate": 1.0, "error_code": 500}),
                ("POST", "/_embedded/pause", {"seconds": 30}),
                ("GET", "/_embedded/counters", None),
                ("POST", "/_embedded/watches/drop", None),
            ):
                for auth in ({}, {"Authorization": "Bearer not-the-token"}):
                    async with session.request(method, server.url + path, json=body, headers=auth) as resp:
                        assert resp.status == 401, (method, path)
                        status = await resp.json()
                        assert status["kind"] == "Status" and status["reason"] == "Unauthorized"
            assert server.plane.faults.settings.error_rate == 0.0
            assert not server.paused
            ok = {"Authorization": f"Bearer {server.token}"}
            async with session.get(server.url + "/_embedded/counters", headers=ok) as resp:
                assert resp.status == 200


async def test_admin_endpoints_stay_open_on_a_server_without_a_token(apiserver: EmbeddedAPIServer) -> None:
    async with aiohttp.ClientSession() as session, session.get(apiserver.url + "/_embedded/faults") as resp:
        assert resp.status == 200


# ------------------------------------------------------------------ settings


@pytest.mark.parametrize("value", [0, 0.0, -1, math.nan, math.inf, "60", True])
@pytest.mark.parametrize("setting", ["bookmark_interval", "idle_timeout", "request_timeout", "compaction_interval"])
def test_durations_must_be_positive_seconds(setting: str, value: Any) -> None:
    with pytest.raises(ValueError, match=rf"^{setting} must be a positive number of seconds, got "):
        EmbeddedAPIServer(**{setting: value})


@pytest.mark.parametrize("history", [0, -5, 2.5, True])
def test_history_must_be_a_positive_count(history: Any) -> None:
    with pytest.raises(ValueError, match=r"^history must be a positive number of events, got "):
        EmbeddedAPIServer(history=history)


# ------------------------------------------------------------------ connections


async def _open(server: EmbeddedAPIServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def _closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (bounded, not timed)."""
    return await asyncio.wait_for(reader.read(), 10.0)


async def test_silent_and_half_sent_connections_are_closed() -> None:
    async with EmbeddedAPIServer(idle_timeout=0.3) as server:
        silent_reader, silent_writer = await _open(server)
        partial_reader, partial_writer = await _open(server)
        partial_writer.write(b"GET /api HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # headers never finished
        idle_reader, idle_writer = await _open(server)
        idle_writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # one request, then silence
        assert await _closed_by_server(silent_reader) == b""
        assert await _closed_by_server(partial_reader) == b""
        answered = await _closed_by_server(idle_reader)
        assert answered.startswith(b"HTTP/1.1 200") and answered.endswith(b"ok")
        for writer in (silent_writer, partial_writer, idle_writer):
            writer.close()


async def test_a_body_that_trickles_is_cut_with_a_504() -> None:
    async with EmbeddedAPIServer(request_timeout=0.3) as server:
        reader, writer = await _open(server)
        writer.write(
            f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"metadata":'
        )
        # the answer comes while the client still owes most of the body
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
        assert head.startswith(b"HTTP/1.1 504")
        assert b"Connection: close" in head
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")).split(b":")[1])
        status = json.loads(await asyncio.wait_for(reader.readexactly(length), 10.0))
        assert status["reason"] == "Timeout" and status["code"] == 504
        assert status["message"] == (
            "Timeout: request did not complete within requested timeout - context deadline exceeded"
        )
        writer.close()
        # the server goes on serving
        async with aiohttp.ClientSession() as session, session.get(server.url + "/healthz") as resp:
            assert resp.status == 200


# ------------------------------------------------------------------ watch history


async def test_watch_history_is_compacted_by_age() -> None:
    async with EmbeddedAPIServer(compaction_interval=0.2) as server, aiohttp.ClientSession() as session:
        async with session.post(server.url + CMS, json={"metadata": {"name": "old"}}) as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        async with session.post(server.url + CMS, json={"metadata": {"name": "newer"}}) as resp:
            assert resp.status == 201

        async def expired() -> bool:
            async with session.get(f"{server.url}{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=1") as resp:
                first = json.loads(await resp.content.readline() or b"{}")
            return first.get("type") == "ERROR" and first["object"]["code"] == 410

        # with no write after the second one, the history behind rv still ages out
        await eventually(expired, "the watch history behind an old resourceVersion to be compacted")
        async with session.get(f"{server.url}{CMS}?resourceVersion={rv}&resourceVersionMatch=Exact") as resp:
            assert resp.status == 410 and (await resp.json())["reason"] == "Expired"
        # a fresh watch is unaffected
        async with session.get(f"{server.url}{CMS}?watch=1&timeoutSeconds=1") as resp:
            first = json.loads(await resp.content.readline())
        assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] in ("old", "newer")
