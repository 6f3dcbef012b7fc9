"""The manager's HTTP endpoints: /healthz and /readyz (named checks, like
controller-runtime's healthz package; `?verbose` lists each check) and /metrics
(Prometheus text from the OpenTelemetry Prometheus reader's registry)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import anyio
import anyio.abc
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

CheckResult = bool | tuple[bool, str]
Check = Callable[[], CheckResult]
"""A named check: pass/fail, optionally with a detail shown by `?verbose`."""


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


def _checks_handler(kind: str, checks: Mapping[str, Check]) -> Callable[[web.Request], object]:
    async def handle(request: web.Request) -> web.Response:
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
            return web.Response(status=500, text=body)
        body = "\n".join(lines) + f"\n{kind} check passed\n" if "verbose" in request.query else "ok"
        return web.Response(text=body)

    return handle


class EndpointServer:
    """One aiohttp server on one bind address, serving the routes it is given."""

    def __init__(self, name: str, bind: tuple[str, int]) -> None:
        self.name = name
        self.bind = bind
        self.app = web.Application()
        self.port: int | None = None

    def add_checks(self, path: str, kind: str, checks: Mapping[str, Check]) -> None:
        self.app.router.add_get(path, _checks_handler(kind, checks))  # type: ignore[arg-type]

    def add_metrics(self, registry: CollectorRegistry) -> None:
        async def metrics(_request: web.Request) -> web.Response:
            body = generate_latest(registry)
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        self.app.router.add_get("/metrics", metrics)

    async def run(self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.bind[0], self.bind[1], reuse_address=True)
            await site.start()
            for addr in runner.addresses:
                self.port = int(addr[1])
                break
            log.info("%s endpoint listening on %s:%s", self.name, self.bind[0], self.port)
            task_status.started(self.port or 0)
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await runner.cleanup()
