"""The manager's HTTP endpoints: /healthz and /readyz (named checks, like
controller-runtime's healthz package; `?verbose` lists each check) and /metrics
(Prometheus text from the OpenTelemetry Prometheus reader's registry).

Served by aiohttp's low-level server (`aiohttp.web_server.Server`) with one table of GET
routes: `aiohttp.web` (applications, the URL dispatcher, static files, runners) would add
~1.2 MiB to every manager process for three fixed paths (issue 22, "a small process";
tests/test_lean_process.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

import anyio
import anyio.abc
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import Response
from aiohttp.web_server import Server
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

CheckResult = bool | tuple[bool, str]
Check = Callable[[], CheckResult]
"""A named check: pass/fail, optionally with a detail shown by `?verbose`."""
Handler = Callable[[BaseRequest], Awaitable[Response]]

# the methods every route answers (HEAD: the GET answer without its body, as aiohttp's router does)
METHODS = ("GET", "HEAD")
SHUTDOWN_TIMEOUT = 1.0  # seconds in-flight probe and scrape requests get when the manager stops


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """`:8080` (all interfaces), `127.0.0.1:0` (ephemeral port), `0` (disabled → None)."""
    text = address.strip()
    if text in ("0", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r}: expected [host]:port, or 0 to disable")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"bind address {address!r}: port {port!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"bind address {address!r}: port {number} is out of range")
    return (host.strip("[]") or "0.0.0.0", number)


def _checks_handler(kind: str, checks: Mapping[str, Check]) -> Handler:
    async def handle(request: BaseRequest) -> Response:
        failed: list[str] = []
        lines: list[str] = []
        for name, check in checks.items():
            detail = ""
            try:
                result = check()
                ok, detail = (bool(result[0]), str(result[1])) if isinstance(result, tuple) else (bool(result), "")
            except Exception as exc:  # noqa: BLE001 - a broken check reports failure, not a 500 trace
                log.warning("%s check %s raised: %s", kind, name, exc)
                ok = False
            lines.append(f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" + (f": {detail}" if detail else ""))
            if not ok:
                failed.append(name)
        if failed:
            body = "\n".join(lines) + f"\n{kind} check failed\n"
            return Response(status=500, text=body)
        body = "\n".join(lines) + f"\n{kind} check passed\n" if "verbose" in request.query else "ok"
        return Response(text=body)

    return handle


class EndpointServer:
    """One HTTP server on one bind address, serving the GET routes it is given."""

    def __init__(self, name: str, bind: tuple[str, int]) -> None:
        self.name = name
        self.bind = bind
        self.routes: dict[str, Handler] = {}
        self.port: int | None = None

    def add_checks(self, path: str, kind: str, checks: Mapping[str, Check]) -> None:
        self.routes[path] = _checks_handler(kind, checks)

    def add_metrics(self, registry: CollectorRegistry) -> None:
        async def metrics(_request: BaseRequest) -> Response:
            body = generate_latest(registry)
            return Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        self.routes["/metrics"] = metrics

    async def _dispatch(self, request: BaseRequest) -> Response:
        handler = self.routes.get(request.path)
        if handler is None:
            return Response(status=404, text="404: Not Found")
        if request.method not in METHODS:
            return Response(status=405, text="405: Method Not Allowed", headers={"Allow": ",".join(METHODS)})
        return await handler(request)

    async def run(self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        server = Server(self._dispatch, access_log=None)
        listener = await asyncio.get_running_loop().create_server(
            server, self.bind[0], self.bind[1], reuse_address=True
        )
        try:
            self.port = int(listener.sockets[0].getsockname()[1])
            log.info("%s endpoint listening on %s:%s", self.name, self.bind[0], self.port)
            task_status.started(self.port)
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                # as aiohttp's runners stop: no new connections, then open ones closed
                listener.close()
                server.pre_shutdown()
                await server.shutdown(SHUTDOWN_TIMEOUT)
