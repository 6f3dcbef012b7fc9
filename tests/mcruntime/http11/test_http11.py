"""The transport's own HTTP/1.1 client (mcruntime/http11.py) against a scripted server
that answers with exactly the bytes each test needs: keep-alive reuse, a dropped
keep-alive connection retried on a fresh one (idempotent methods only), timeouts for
requests and watch streams, chunked / Content-Length / until-EOF / gzip bodies, the
server's Status on errors, TLS (verification, SNI name, client certificates), proxies, and
shutdown; each on asyncio's loop and on uvloop's (conftest.py)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import gzip
import ssl
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeplane.tls import make_serving_cert
from mcruntime import connection
from mcruntime.connection import ConnectionConfig
from mcruntime.errors import APIError, ClusterNotReadyError, TransportError
from mcruntime.transport import MAX_LINE, Transport
from tests.support import eventually


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int  # which accepted connection (0, 1, ...) carried it
    peer: str = ""  # the common name of the client's TLS certificate, if it sent one


Answer = Callable[[Request], Awaitable[bytes | list[bytes] | None]]


@dataclass
class RawServer:
    """An HTTP/1.1 server scripted by `answer`: the bytes to write back (a list: written
    one after another with a pause, to arrive in separate reads; a last b"" closes the
    connection after them), or None to close the connection without answering."""

    answer: Answer
    ssl_context: ssl.SSLContext | None = None
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    closed: int = 0  # connections that ended (either side)
    url: str = ""
    _server: asyncio.Server | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self.stopping.set()  # answers held with `hold` end
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._handlers)
        await self._server.wait_closed()

    async def hold(self) -> None:
        """Never answer (until the server stops, then close the connection)."""
        await self.stopping.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        number = self.connections
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                    return
                line, *lines = head.decode("latin-1").split("\r\n")
                method, target, _ = line.split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                cert = writer.get_extra_info("peercert") or {}
                names = dict(pair[0] for pair in cert.get("subject", ()))
                request = Request(method, target, headers, body, number, names.get("commonName", ""))
                self.requests.append(request)
                out = await self.answer(request)
                if out is None:
                    return
                for part in out if isinstance(out, list) else [out]:
                    if not part:
                        return
                    writer.write(part)
                    await writer.drain()
                    if isinstance(out, list):
                        await asyncio.sleep(0.01)
        finally:
            self.closed += 1
            writer.close()


def answer(status: int = 200, body: bytes = b"{}", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(parts: list[bytes], status: int = 200) -> list[bytes]:
    head = f"HTTP/1.1 {status} X\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n".encode()
    return [head, *(b"%x\r\n%s\r\n" % (len(p), p) for p in parts), b"0\r\n\r\n"]


def always(out: bytes | list[bytes] | None) -> Answer:
    async def reply(_: Request) -> bytes | list[bytes] | None:
        return out

    return reply


def transport_for(server: RawServer, **options: Any) -> Transport:
    return Transport(ConnectionConfig.insecure(server.url, token="secret"), cluster="raw", **options)


async def test_requests_reuse_one_keep_alive_connection_and_send_the_headers() -> None:
    async with RawServer(always(answer(body=b'{"kind": "Thing"}'))) as server, transport_for(server) as t:
        for _ in range(5):
            assert await t.request_json(
                "GET", "/api/v1/things", verb="list", query={"labelSelector": "a in (b,c)"}
            ) == {"kind": "Thing"}
        await t.request_json("POST", "/api/v1/things", verb="create", body={"n": 1})
        assert server.connections == 1  # one connection for all six
        first, post = server.requests[0], server.requests[-1]
        assert first.target == "/api/v1/things?labelSelector=a%20in%20%28b%2Cc%29"
        assert first.headers["authorization"] == "Bearer secret"
        assert first.headers["accept"] == "application/json"
        assert first.headers["user-agent"] == "mcruntime"
        assert first.headers["host"] == server.url.split("://")[1]
        assert (post.method, post.body, post.headers["content-type"]) == ("POST", b'{"n":1}', "application/json")


async def test_connections_idle_longer_than_the_keepalive_are_closed() -> None:
    async with RawServer(always(answer())) as server, transport_for(server) as t:
        assert t._pool is not None
        t._pool.keepalive = 0.2
        await asyncio.gather(*(t.request("GET", "/", verb="get") for _ in range(3)))
        assert t.open_connections == 3
        # no request since: the pool closes them by itself
        await eventually(lambda: t.open_connections == 0, what="idle connections closed")
        await t.request("GET", "/", verb="get")
        assert server.connections == 4


async def test_requests_beyond_the_concurrency_limit_wait_their_turn_first_come_first_served() -> None:
    """`max_concurrent_requests`: never more requests in flight than the limit; the others go
    out as slots come back, in the order they were made; one cancelled while it waits
    gives up its place and takes no slot with it."""
    gates: dict[str, asyncio.Event] = {}
    in_flight, most = 0, 0

    def gate(target: str) -> asyncio.Event:
        return gates.setdefault(target, asyncio.Event())

    async def reply(request: Request) -> bytes:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await gate(request.target).wait()
        in_flight -= 1
        return answer()

    def sent() -> list[str]:
        return [r.target for r in server.requests]

    async with RawServer(reply) as server, transport_for(server, max_concurrent_requests=2) as t:
        try:
            calls = [asyncio.ensure_future(t.request("GET", f"/r{i}", verb="get")) for i in range(5)]
            await eventually(lambda: len(server.requests) == 2, what="two requests in flight")
            await asyncio.sleep(0.05)  # the others wait for a slot: nothing more reaches the server
            assert sorted(sent()) == ["/r0", "/r1"]  # (their connections race each other)
            calls[2].cancel()
            gate("/r1").set()
            await eventually(lambda: len(server.requests) == 3, what="a slot handed on")
            assert sent()[2] == "/r3"  # /r2 left the line
            for target in ("/r0", "/r3", "/r4"):
                gate(target).set()
            assert await asyncio.gather(calls[0], calls[1], calls[3], calls[4]) == [b"{}"] * 4
            assert calls[2].cancelled() and sent()[2:] == ["/r3", "/r4"] and most == 2
            # every slot came back: two requests are in flight together again
            again = [asyncio.ensure_future(t.request("GET", f"/s{i}", verb="get")) for i in range(2)]
            await eventually(lambda: len(server.requests) == 6, what="both slots free")
            for target in ("/s0", "/s1"):
                gate(target).set()
            assert await asyncio.gather(*again) == [b"{}"] * 2
        finally:
            for target in [*gates, "/r0", "/r1", "/r3", "/r4", "/s0", "/s1"]:
                gate(target).set()  # a failed check leaves no answer held


async def test_a_dropped_keep_alive_connection_is_retried_on_a_fresh_one_for_idempotent_requests() -> None:
    async def reply(request: Request) -> bytes | None:
        # the first connection answers once, then closes on the next request without an
        # answer, as a server closing an idle keep-alive connection while it is reused
        if request.connection == 0 and len(server.requests) > 1:
            return None
        return answer(body=b'{"n": %d}' % len(server.requests))

    async with RawServer(reply) as server, transport_for(server) as t:
        await t.request("GET", "/a", verb="get")
        assert await t.request_json("GET", "/a", verb="get") == {"n": 3}
        assert server.connections == 2
        assert t.contact.reachable is True


async def test_a_dropped_connection_is_not_retried_for_a_create_and_does_not_make_the_cluster_unreachable() -> None:
    async with RawServer(always(None)) as server, transport_for(server) as t:
        with pytest.raises(TransportError, match="ConnectionDropped"):
            await t.request("POST", "/a", verb="create", body=b"{}")
        assert len(server.requests) == 1  # sent once: a create is not repeated
        assert t.contact.reachable is not False  # the server answered the connection; one dropped
        with pytest.raises(TransportError, match="ConnectionDropped"):
            await t.request("PUT", "/a", verb="update", body=b"{}")
        assert len(server.requests) == 3  # an update is idempotent: once more on a fresh connection


async def test_a_request_without_an_answer_times_out_and_makes_the_cluster_unreachable() -> None:
    async def never(_: Request) -> None:
        await server.hold()

    async with RawServer(never) as server, transport_for(server, request_timeout=0.2) as t:
        with pytest.raises(TransportError, match="timed out"):
            await t.request("GET", "/slow", verb="get")
        assert t.contact.reachable is False
        assert t.open_connections == 0  # the connection of the unanswered request was closed, not reused
        t.contact.probe_interval = 3600
        with pytest.raises(ClusterNotReadyError):
            await t.request("GET", "/slow", verb="get")  # fails fast while unreachable


async def test_a_refused_connection_makes_the_cluster_unreachable() -> None:
    async with RawServer(always(answer())) as server:
        url = server.url
    t = Transport(ConnectionConfig.insecure(url), cluster="gone", connect_timeout=1)
    async with t:
        with pytest.raises(TransportError, match="ConnectFailed"):
            await t.request("GET", "/", verb="get")
        assert t.contact.reachable is False and "ConnectFailed" in t.contact.last_error


async def test_chunked_until_eof_and_gzip_bodies() -> None:
    big = b"x" * 300_000
    replies: Iterator[bytes | list[bytes]] = iter(
        [
            chunked([b'{"items": [', b'"', big, b'"', b"]}"]),
            [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b'{"until": ', b'"eof"}', b""],
            answer(body=gzip.compress(b'{"zipped": true}'), headers={"Content-Encoding": "gzip"}),
        ]
    )

    async def reply(_: Request) -> bytes | list[bytes] | None:
        return next(replies)

    async with RawServer(reply) as server, transport_for(server) as t:
        assert await t.request_json("GET", "/chunked", verb="get") == {"items": [big.decode()]}
        assert await t.request_json("GET", "/eof", verb="get") == {"until": "eof"}  # ended by the FIN
        assert await t.request_json("GET", "/gzip", verb="get") == {"zipped": True}
        assert "accept-encoding" not in server.requests[0].headers  # compression is not asked for


async def test_error_answers_carry_the_servers_status() -> None:
    status = {
        "kind": "Status",
        "status": "Failure",
        "reason": "NotFound",
        "message": 'things "x" not found',
        "code": 404,
    }
    replies = iter([answer(404, orjson.dumps(status)), answer(429, b"{}", {"Retry-After": "0"}), answer(200)])

    async def reply(_: Request) -> bytes:
        return next(replies)

    async with RawServer(reply) as server, transport_for(server) as t:
        with pytest.raises(APIError) as caught:
            await t.request("GET", "/x", verb="get")
        assert (caught.value.status, caught.value.reason) == (404, "NotFound")
        assert 'things "x" not found' in str(caught.value)
        assert await t.request("GET", "/x", verb="get") == b"{}"  # 429 with Retry-After: retried
        assert server.connections == 1
        assert t.contact.reachable is True  # an error answer is an answer


async def test_watch_lines_across_chunks_without_a_per_line_limit() -> None:
    long_line = b'{"type": "ADDED", "object": {"data": "' + b"y" * (MAX_LINE // 64) + b'"}}'
    events = chunked([b'{"type": "ADDED"}\n{"type": "MOD', b'IFIED"}\n', long_line[:1000], long_line[1000:] + b"\n"])
    async with RawServer(always(events)) as server, transport_for(server) as t:
        async with t.watch("/w", {"resourceVersion": "1"}, read_timeout=5) as lines:
            received = [line async for line in lines]
        assert received == [b'{"type": "ADDED"}', b'{"type": "MODIFIED"}', long_line]
        assert server.requests[0].target == "/w?resourceVersion=1&watch=true"
        await asyncio.sleep(0.05)
        assert server.closed == 1  # the watch's connection is closed with it


async def test_a_silent_watch_stream_times_out() -> None:
    async def stall(_: Request) -> list[bytes]:
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        return [head, b'8\r\n{"a":1}\n\r\n']  # then nothing, and no FIN

    async with RawServer(stall) as server, transport_for(server) as t, t.watch("/w", {}, read_timeout=0.3) as lines:
        assert await anext(lines) == b'{"a":1}'
        with pytest.raises(TransportError, match=r"no bytes for 0\.3s"):
            await anext(lines)


async def test_a_watch_refused_carries_the_status_and_a_watch_with_no_answer_times_out() -> None:
    gone = {"kind": "Status", "reason": "Expired", "message": "too old resource version", "code": 410}

    async def reply(request: Request) -> bytes | None:
        if "stall" in request.target:
            await server.hold()
            return None
        return answer(410, orjson.dumps(gone))

    async with RawServer(reply) as server, transport_for(server, connect_timeout=0.1) as t:
        with pytest.raises(APIError) as caught:
            async with t.watch("/w", {}, read_timeout=5):
                raise AssertionError("no stream for a refused watch")
        assert caught.value.status == 410 and "too old" in str(caught.value)
        with pytest.raises(TransportError, match=r"no answer within 0\.4s"):
            async with t.watch("/stall", {}, read_timeout=0.3):
                raise AssertionError("no stream without an answer")


async def test_tls_is_verified_and_the_sni_name_is_the_configured_one() -> None:
    cert = make_serving_cert(["kube.example"])  # not 127.0.0.1: only the SNI name matches
    async with RawServer(always(answer()), ssl_context=cert.server_context()) as server:
        client = ssl.create_default_context(cadata=cert.ca_pem.decode())
        named = ConnectionConfig(host=server.url, ssl_context=client, tls_server_name="kube.example")
        async with Transport(named, cluster="tls") as t:
            assert await t.request("GET", "/", verb="get") == b"{}"
            assert await t.request("GET", "/", verb="get") == b"{}"
        assert server.connections == 1
        unnamed = ConnectionConfig(host=server.url, ssl_context=client)
        async with Transport(unnamed, cluster="tls") as t:
            with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
                await t.request("GET", "/", verb="get")
            assert t.contact.reachable is False


def client_certificate(common_name: str) -> tuple[bytes, bytes, bytes]:
    """A CA and a client certificate it signed: (CA PEM, certificate PEM, key PEM)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client-ca")])

    def build(subject: x509.Name, public: ec.EllipticCurvePublicKey, ca: bool) -> x509.Certificate:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )

    ca = build(ca_name, ca_key.public_key(), True)
    cert = build(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]), key.public_key(), False)
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


async def test_a_client_certificate_from_the_kubeconfig_authenticates() -> None:
    serving = make_serving_cert(["127.0.0.1"])
    client_ca, cert_pem, key_pem = client_certificate("system:admin")
    server_ctx = serving.server_context()
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    server_ctx.load_verify_locations(cadata=client_ca.decode())

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    async with RawServer(always(answer()), ssl_context=server_ctx) as server:
        user = {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)}
        kubeconfig = {
            "clusters": [
                {"name": "c", "cluster": {"server": server.url, "certificate-authority-data": b64(serving.ca_pem)}}
            ],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
        async with Transport(await connection.from_kubeconfig_dict(kubeconfig), cluster="mtls") as t:
            assert await t.request("GET", "/", verb="get") == b"{}"
        assert server.requests[0].peer == "system:admin"
        assert "authorization" not in server.requests[0].headers
        kubeconfig["users"] = [{"name": "u", "user": {}}]
        async with Transport(await connection.from_kubeconfig_dict(kubeconfig), cluster="mtls") as t:
            with pytest.raises(TransportError):  # without it the server refuses the handshake
                await t.request("GET", "/", verb="get")
        assert len(server.requests) == 1


async def test_plain_http_through_a_proxy_uses_the_absolute_form() -> None:
    async with RawServer(always(answer())) as proxy:
        config = ConnectionConfig(
            host="http://kube.invalid:6443/prefix", ssl_context=None, proxy=proxy.url.replace("://", "://u:p%40@")
        )
        async with Transport(config, cluster="proxied") as t:
            await t.request("GET", "/api", verb="get")
        request = proxy.requests[0]
        assert request.target == "http://kube.invalid:6443/prefix/api"
        assert request.headers["proxy-authorization"] == "Basic dTpwQA=="  # u:p@
        assert request.headers["host"] == "kube.invalid:6443"


async def test_https_through_a_proxy_tunnels_with_connect() -> None:
    cert = make_serving_cert(["kube.example"])
    async with RawServer(always(answer(body=b'{"through": "tunnel"}')), ssl_context=cert.server_context()) as target:
        port = int(target.url.rsplit(":", 1)[1])

        async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"CONNECT kube.example:443 HTTP/1.1\r\n")
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                while data := await src.read(65536):
                    dst.write(data)
                dst.close()

            await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

        proxy = await asyncio.start_server(tunnel, "127.0.0.1", 0)
        try:
            config = ConnectionConfig(
                host="https://kube.example",
                ssl_context=ssl.create_default_context(cadata=cert.ca_pem.decode()),
                proxy=f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}",
            )
            async with Transport(config, cluster="tunnel") as t:
                assert await t.request_json("GET", "/api", verb="get") == {"through": "tunnel"}
        finally:
            proxy.close()
            await proxy.wait_closed()


async def test_a_proxy_refusing_the_tunnel_makes_the_cluster_unreachable() -> None:
    async with RawServer(always(answer(403, b"no"))) as proxy:
        config = ConnectionConfig(host="https://kube.example", ssl_context=None, proxy=proxy.url)
        async with Transport(config, cluster="tunnel") as t:
            with pytest.raises(TransportError, match=r"the proxy refused CONNECT kube\.example:443: HTTP 403"):
                await t.request("GET", "/api", verb="get")
            assert t.contact.reachable is False
        assert proxy.requests[0].method == "CONNECT"


async def test_closing_the_transport_closes_its_connections_and_fails_calls_in_flight() -> None:
    async def slow(request: Request) -> bytes | None:
        if request.target == "/slow":
            await server.hold()
            return None
        return answer()

    async with RawServer(slow) as server:
        t = transport_for(server)
        await t.open()
        await t.request("GET", "/fast", verb="get")
        in_flight = asyncio.ensure_future(t.request("GET", "/slow", verb="get"))  # on the idle connection
        await asyncio.sleep(0.1)
        await t.request("GET", "/fast", verb="get")  # on a second one, idle after
        assert t.open_connections == 2  # the idle one and the busy one
        pool = t._pool
        await t.aclose()
        with pytest.raises(TransportError, match="ConnectionDropped"):
            await in_flight
        assert pool is not None and pool.open_connections == 0
        with pytest.raises(TransportError, match="closed"):
            await t.request("GET", "/fast", verb="get")


async def test_bad_header_values_are_refused() -> None:
    with pytest.raises(ValueError, match="one line"):
        Transport(ConnectionConfig.insecure("http://127.0.0.1:1"), user_agent="a\r\nX-Evil: 1")
    async with RawServer(always(answer())) as server:
        config = ConnectionConfig.insecure(server.url, token="a\r\nX-Evil: 1")
        async with Transport(config) as t:
            with pytest.raises(TransportError, match="not a valid header value"):
                await t.request("GET", "/", verb="get")
        assert server.requests == []
