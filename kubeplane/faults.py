"""Fault injection for tests and benchmarks: error responses for a fraction of requests
(429 with Retry-After, 500, 503), added latency, optionally limited to some verbs or
resources. Dropping watches, pausing the server and expiring history live on the
control plane and server objects, since they act on state rather than on one request."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from .errors import APIError
from .http11 import Request, Response

_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
_MESSAGES = {
    429: "the server has received too many requests and has asked us to try again later",
    500: 'an error on the server ("injected fault") has prevented the request from succeeding',
    503: "the server is currently unable to handle the request",
}


@dataclass
class FaultSettings:
    error_rate: float = 0.0
    error_code: int = 503
    retry_after_seconds: int = 1
    latency_seconds: float = 0.0
    methods: list[str] = field(default_factory=list)  # empty: all methods
    path_contains: str = ""  # empty: all paths

    def validate(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError("error_rate must be between 0 and 1")
        if self.error_code not in _REASONS:
            raise ValueError(f"error_code must be one of {sorted(_REASONS)}")
        if self.latency_seconds < 0 or self.retry_after_seconds < 0:
            raise ValueError("latency_seconds and retry_after_seconds must be >= 0")


class Faults:
    def __init__(self, seed: int | None = None) -> None:
        self.settings = FaultSettings()
        self.injected = 0
        self._random = random.Random(seed)

    def configure(self, **changes: Any) -> FaultSettings:
        current = self.settings.__dict__ | changes
        unknown = set(changes) - set(FaultSettings.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown fault setting(s): {', '.join(sorted(unknown))}")
        candidate = FaultSettings(**current)
        candidate.validate()
        self.settings = candidate
        return candidate

    def clear(self) -> None:
        self.settings = FaultSettings()

    def _applies(self, request: Request) -> bool:
        s = self.settings
        if s.methods and request.method not in s.methods:
            return False
        return not s.path_contains or s.path_contains in request.path

    async def before(self, request: Request) -> Response | None:
        s = self.settings
        if not (s.latency_seconds or s.error_rate) or not self._applies(request):
            return None
        if s.latency_seconds:
            await anyio.sleep(s.latency_seconds)
        if s.error_rate and self._random.random() < s.error_rate:
            self.injected += 1
            err = APIError(s.error_code, _REASONS[s.error_code], _MESSAGES[s.error_code])
            if s.error_code in (429, 503):
                err.details = {"retryAfterSeconds": s.retry_after_seconds}
                err.headers = {"Retry-After": str(s.retry_after_seconds)}
            resp = Response(orjson.dumps(err.status()), status=err.code, content_type="application/json")
            for key, value in err.headers.items():
                resp.set_header(key, value)
            return resp
        return None
