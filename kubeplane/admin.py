"""Admin endpoints of an embedded API server, for tests and benchmarks driving it from
another process (the same operations exist as Python methods):

  GET    /_embedded/counters          request counts per resource and verb
                                      (?by=user: per authenticated user, resource and verb)
  DELETE /_embedded/counters          reset them
  GET    /_embedded/faults            current fault settings
  PUT    /_embedded/faults            set them: {"error_rate": 0.2, "error_code": 429, ...}
  DELETE /_embedded/faults            clear them
  POST   /_embedded/watches/drop      close every open watch
  POST   /_embedded/history/expire    compact the watch history (resumes get 410)
  POST   /_embedded/pause             {"seconds": 2}: refuse connections for a while, keep state

A server started with a token (every `--tls` server) requires it here as on the API.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any

import anyio
import orjson

from .errors import APIError, bad_request
from .http import json_response, read_body, status_response
from .http11 import AnyResponse, Request


class AdminEndpoints:
    def __init__(self, server: Any, spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], None]) -> None:
        self.server = server  # EmbeddedAPIServer (typed loosely to avoid an import cycle)
        self.spawn = spawn

    async def handle(self, request: Request) -> AnyResponse:
        try:
            return await self._route(request)
        except APIError as err:
            return status_response(err)

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = await read_body(request, self.server.plane.request_timeout)
        if not raw.strip():
            return {}
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"admin request body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise bad_request("admin request body must be a JSON object")
        return body

    async def _route(self, request: Request) -> AnyResponse:
        plane = self.server.plane
        path, method = request.path, request.method
        if path == "/_embedded/counters":
            if method == "GET":
                by = request.query.get("by", "")
                if by not in ("", "user"):
                    raise bad_request(f"by must be 'user' or absent, not {by!r}")
                counts = plane.counters.snapshot_by_user() if by == "user" else plane.counters.snapshot()
                return json_response(orjson.dumps(counts))
            if method == "DELETE":
                plane.counters.reset()
                return json_response(b"{}")
        elif path == "/_embedded/faults":
            if method == "GET":
                return json_response(orjson.dumps(asdict(plane.faults.settings)))
            if method == "PUT":
                try:
                    settings = plane.faults.configure(**await self._body(request))
                except (TypeError, ValueError) as exc:
                    raise bad_request(f"invalid fault settings: {exc}") from None
                return json_response(orjson.dumps(asdict(settings)))
            if method == "DELETE":
                plane.faults.clear()
                return json_response(b"{}")
        elif path == "/_embedded/watches/drop" and method == "POST":
            return json_response(orjson.dumps({"dropped": plane.drop_watches()}))
        elif path == "/_embedded/history/expire" and method == "POST":
            plane.expire_history()
            return json_response(orjson.dumps({"compactedRevision": plane.db.rev}))
        elif path == "/_embedded/pause" and method == "POST":
            seconds = (await self._body(request)).get("seconds", 1.0)
            if not isinstance(seconds, (int, float)) or not 0 < seconds <= 300:
                raise bad_request("seconds must be a number in (0, 300]")
            self.spawn(lambda: self._pause_for(float(seconds)))
            return json_response(orjson.dumps({"pausedFor": seconds}))
        else:
            raise APIError(404, "NotFound", f"no admin endpoint {method} {path}")
        raise APIError(405, "MethodNotAllowed", f"{method} is not supported on {path}")

    async def _pause_for(self, seconds: float) -> None:
        await anyio.sleep(0.05)  # let the response to the pause request go out first
        await self.server.pause()
        await anyio.sleep(seconds)
        await self.server.resume()
