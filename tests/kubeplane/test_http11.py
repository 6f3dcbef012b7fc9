"""The embedded API server's HTTP/1.1 (kubeplane/http11.py) on the wire: keep-alive and
pipelining in order, `Connection: close`, HEAD, `Expect: 100-continue`, 431 for oversized
heads and 400 for malformed ones, chunked watches that end when their client goes away,
write backpressure for a client that does not read, stop leaving no connection task
behind, and kubectl over TLS. (Idle and half-sent connections, trickling bodies:
test_hostile_server.py; body limits: test_hostile_sizes.py.)"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer, http11
from kubeplane.http11 import MAX_HEADER_BYTES, Query
from kubeplane.testing import Kubectl, kubectl_path

from .conftest import configmap, eventually

CMS = "/api/v1/namespaces/default/configmaps"
CONN_TASK = "kubeplane-http-connection"


async def _open(server: EmbeddedAPIServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    """One response with a Content-Length body: status line, headers (lower-case), body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    status, *lines = head.decode().split("\r\n")[:-2]
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), 10.0)
    return status.encode(), headers, body


def _post(name: str, extra: str = "") -> bytes:
    body = json.dumps(configmap(name)).encode()
    head = f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}"
    return head.encode() + b"\r\n" + body


async def test_keep_alive_serves_pipelined_requests_in_order(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    # three requests in one write: answered one after another, in order, on the same connection
    writer.write(_post("first") + f"GET {CMS}/first HTTP/1.1\r\nHost: x\r\n\r\n".encode() + _post("second"))
    answers = [await _response(reader) for _ in range(3)]
    assert [status for status, _, _ in answers] == [
        b"HTTP/1.1 201 Created",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 201 Created",
    ]
    assert [json.loads(body)["metadata"]["name"] for _, _, body in answers] == ["first", "first", "second"]
    assert all(h["content-type"] == "application/json" and "connection" not in h for _, h, _ in answers)
    # still open: one more, asking the server to close after it
    writer.write(f"GET {CMS}/second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    status, headers, _ = await _response(reader)
    assert status == b"HTTP/1.1 200 OK" and headers["connection"] == "close"
    assert await asyncio.wait_for(reader.read(), 10.0) == b""
    writer.close()
    assert apiserver.plane.counters.snapshot()["configmaps"] == {"create": 2, "get": 2}


async def test_http_1_0_closes_after_the_response(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    writer.write(b"GET /healthz HTTP/1.0\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 10.0)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok")
    writer.close()


async def test_head_answers_headers_only(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    writer.write(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 2\r\n" in head
    # no body followed the HEAD answer: the next bytes are the GET's answer
    status, _, body = await _response(reader)
    assert status == b"HTTP/1.1 200 OK" and body == b"ok"
    writer.close()


async def test_expect_100_continue_is_answered_before_the_body(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    body = json.dumps(configmap("asked")).encode()
    writer.write(
        f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
    )
    assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0) == b"HTTP/1.1 100 Continue\r\n\r\n"
    writer.write(body)
    status, _, created = await _response(reader)
    assert status == b"HTTP/1.1 201 Created" and json.loads(created)["metadata"]["name"] == "asked"
    writer.close()


async def test_a_refusal_before_the_body_skips_it_and_keeps_the_connection(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    # an unsupported media type is refused before the body is read; the body is skipped
    writer.write(
        f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: 5\r\n\r\n".encode() + b"a,b,c"
    )
    status, _, answer = await _response(reader)
    assert status == b"HTTP/1.1 415 Unsupported Media Type" and json.loads(answer)["reason"] == "UnsupportedMediaType"
    writer.write(_post("after"))
    status, _, _ = await _response(reader)
    assert status == b"HTTP/1.1 201 Created"
    writer.close()


async def test_an_oversized_head_is_a_431_and_a_malformed_one_a_400(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 10) + b"\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 10.0)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n") and b"Connection: close" in answer
    writer.close()
    reader, writer = await _open(apiserver)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 10.0)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"Connection: close" in answer
    writer.close()
    # a head just under the limit is served
    pad = {"X-Pad": "a" * 60_000}
    async with aiohttp.ClientSession() as session, session.get(apiserver.url + "/healthz", headers=pad) as resp:
        assert resp.status == 200


async def test_a_watch_ends_when_its_client_goes_away(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    writer.write(f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Transfer-Encoding: chunked\r\n" in head
    assert len(apiserver.plane.watchers) == 1
    # an event arrives as one chunk holding one JSON line
    async with aiohttp.ClientSession() as session:
        async with session.post(apiserver.url + CMS, json=configmap("seen")) as resp:
            assert resp.status == 201
        size = int((await asyncio.wait_for(reader.readline(), 10.0)).strip(), 16)
        event = json.loads(await asyncio.wait_for(reader.readexactly(size), 10.0))
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "seen"
        writer.close()
        await eventually(lambda: not apiserver.plane.watchers, "the watch to end with its connection")
        # the server goes on serving
        async with session.get(apiserver.url + "/healthz") as resp:
            assert resp.status == 200


async def test_a_watch_whose_client_does_not_read_is_held_back(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    writer.write(f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    # ~24 MiB of events the client never reads: far more than the sockets' buffers hold
    big = "x" * 480_000
    async with aiohttp.ClientSession() as session:
        for i in range(50):
            async with session.post(apiserver.url + CMS, json=configmap(f"big{i}", {"k": big})) as resp:
                assert resp.status == 201
    assert apiserver._http is not None
    (conn,) = [
        c for c in apiserver._http.connections if c.transport is not None and c.transport.get_write_buffer_size()
    ]
    assert conn.transport is not None
    # the watch waits for the client instead of queueing every event in memory
    assert conn.transport.get_write_buffer_size() < 2 * 1024 * 1024
    writer.close()
    await eventually(lambda: not apiserver.plane.watchers, "the watch to end with its connection")


async def test_stop_ends_every_connection_and_leaves_no_task() -> None:
    server = EmbeddedAPIServer()
    await server.start()
    async with aiohttp.ClientSession() as session:
        watch = await session.get(server.url + CMS + "?watch=1")
        assert watch.status == 200
        reader, writer = await _open(server)  # a connection that never sends a request
        await eventually(lambda: server._http is not None and len(server._http.connections) == 2, "2 connections")
        await server.stop()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == CONN_TASK and not t.done()]
        assert await asyncio.wait_for(watch.content.read(), 10.0) == b""
        assert await asyncio.wait_for(reader.read(), 10.0) == b""
        watch.close()
        writer.close()


async def test_pause_closes_connections_and_resume_serves_again(apiserver: EmbeddedAPIServer) -> None:
    reader, writer = await _open(apiserver)
    await eventually(lambda: apiserver._http is not None and apiserver._http.connections, "the connection")
    await apiserver.pause()
    assert apiserver.paused and await asyncio.wait_for(reader.read(), 10.0) == b""
    writer.close()
    with pytest.raises(OSError):
        await _open(apiserver)
    await apiserver.resume()
    async with aiohttp.ClientSession() as session, session.get(apiserver.url + "/healthz") as resp:
        assert resp.status == 200 and await resp.text() == "ok"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {}),
        ("a=1&b=2", {"a": ["1"], "b": ["2"]}),
        ("dryRun=All&dryRun=x", {"dryRun": ["All", "x"]}),
        ("labelSelector=app%3Dweb%2Ctier+in+%28a%29", {"labelSelector": ["app=web,tier in (a)"]}),
        ("watch&x=", {"watch": [""], "x": [""]}),
        ("plus=%2B&space=a+b", {"plus": ["+"], "space": ["a b"]}),
    ],
)
def test_query_strings_decode_as_go_does(query: str, expected: dict[str, list[str]]) -> None:
    q = Query(query)
    assert {name: q.getall(name) for name in q} == expected
    for name, values in expected.items():
        assert q.get(name) == values[0] and name in q
    assert q.get("absent") is None and q.getall("absent", []) == [] and "absent" not in q


def test_a_repeated_short_query_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client repeats its queries (?fieldManager=...&force=true): the parse is remembered and
    shared, and what a Query answers stays its own (getall returns a new list)."""
    parses: list[str] = []
    real = http11.parse_qsl

    def counted(query: str, **kwargs: bool) -> list[tuple[str, str]]:
        parses.append(query)
        return real(query, **kwargs)

    monkeypatch.setattr(http11, "parse_qsl", counted)
    http11._parsed_remembered.cache_clear()
    query = "fieldManager=repeated-manager&force=true&dryRun=All&dryRun=x"
    first, second = Query(query), Query(query)
    assert parses == [query]
    first.getall("dryRun").append("changed")
    assert second.getall("dryRun") == ["All", "x"] and second.get("force") == "true"
    long = "labelSelector=" + "a" * http11.REMEMBERED_QUERY  # (not remembered: parsed each time)
    assert Query(long).get("labelSelector") == Query(long).get("labelSelector")
    assert parses == [query, long, long]


@pytest.mark.kubectl
@pytest.mark.skipif(kubectl_path() is None, reason="kubectl is not installed")
async def test_kubectl_over_tls_lists_watches_and_disconnects(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(tls=True, kubeconfig=tmp_path / "kubeconfig") as server:
        assert server.kubeconfig_path is not None
        kubectl = Kubectl(server.kubeconfig_path, tmp_path / "cache")
        await kubectl("create", "configmap", "over-tls", "--from-literal=k=v")
        assert await kubectl("get", "cm", "over-tls", "-o", "jsonpath={.data.k}") == "v"
        out = await kubectl("get", "--raw", f"{CMS}?watch=1&timeoutSeconds=1")
        assert [json.loads(line)["object"]["metadata"]["name"] for line in out.splitlines()] == ["over-tls"]
        env = dict(os.environ, KUBECONFIG=str(server.kubeconfig_path), KUBECACHEDIR=str(tmp_path / "cache"))
        proc = await asyncio.create_subprocess_exec(
            kubectl.binary, "get", "cm", "-w", stdout=asyncio.subprocess.DEVNULL, env=env
        )
        try:
            await eventually(lambda: server.plane.watchers, "kubectl's watch over TLS")
        finally:
            proc.kill()
            await proc.wait()
        await eventually(lambda: not server.plane.watchers, "the watch to end when kubectl exits")
