"""The manager's HTTP endpoints: /healthz and /readyz (named checks, like
controller-runtime's healthz package; `?verbose` lists each check) and /metrics
(Prometheus text from the OpenTelemetry Prometheus reader's registry), served by the
runtime's own small GET server (`routeserver.py`: aiohttp's would cost every manager
process ~12 MiB; issue 22, "a small process")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .routeserver import Reply, Request, Route, RouteServer

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


def _checks_route(kind: str, checks: Mapping[str, Check]) -> Route:
    def handle(request: Request) -> Reply:
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
            return Reply.text(500, "\n".join(lines) + f"\n{kind} check failed\n")
        return Reply.text(200, "\n".join(lines) + f"\n{kind} check passed\n" if "verbose" in request.query else "ok")

    return handle


class EndpointServer(RouteServer):
    """One HTTP server on one bind address, serving the check and metrics routes it is given."""

    def add_checks(self, path: str, kind: str, checks: Mapping[str, Check]) -> None:
        self.routes[path] = _checks_route(kind, checks)

    def add_metrics(self, registry: CollectorRegistry) -> None:
        def metrics(_request: Request) -> Reply:
            return Reply(200, generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

        self.routes["/metrics"] = metrics
