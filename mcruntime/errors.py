"""Errors the runtime raises, classified the way client-go's `apierrors` classifies them,
so reconcilers can branch on `is_not_found(err)` / `is_conflict(err)` instead of codes."""

from __future__ import annotations

from typing import Any

import orjson


class APIError(Exception):
    """A Kubernetes API request answered with a non-2xx `Status`."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
        verb: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.details = details or {}
        self.retry_after = retry_after
        self.verb = verb
        self.path = path

    def __str__(self) -> str:
        where = f" ({self.verb} {self.path})" if self.verb else ""
        return f"{self.status} {self.reason}: {self.message}{where}"

    @classmethod
    def from_response(
        cls, status: int, body: bytes, *, retry_after: str | None = None, verb: str = "", path: str = ""
    ) -> APIError:
        reason, message = _reason_for(status), body[:300].decode(errors="replace").strip()
        details: dict[str, Any] = {}
        try:
            parsed = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            reason = str(parsed.get("reason") or reason)
            message = str(parsed.get("message") or message)
            found = parsed.get("details")
            details = found if isinstance(found, dict) else {}
        after: float | None = None
        if retry_after:
            try:
                after = float(retry_after)
            except ValueError:
                after = None
        if after is None and isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int):
            after = float(details["retryAfterSeconds"])
        return cls(status, reason, message or reason, details=details, retry_after=after, verb=verb, path=path)

    @classmethod
    def not_found(cls, resource: str, name: str) -> APIError:
        """The error a cached read raises, shaped like the API server's own NotFound."""
        return cls(404, "NotFound", f'{resource} "{name}" not found', details={"name": name, "kind": resource})


def _reason_for(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Expired",
        415: "UnsupportedMediaType",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown")


class TransportError(Exception):
    """The request never got an HTTP answer (connection refused or reset, timeout, TLS)."""


class ConfigError(ValueError):
    """A kubeconfig, in-cluster configuration or runtime option is unusable; the message says why."""


class ClusterNotEngagedError(LookupError):
    """A request names a cluster the manager does not (or no longer) serve, or no cluster at all."""

    def __init__(self, name: str) -> None:
        why = "a request with an empty cluster name" if not name else f"cluster {name!r} is not engaged"
        super().__init__(why)
        self.cluster = name


class CacheNotSyncedError(TimeoutError):
    """A cached read waited for its informer's first LIST longer than allowed."""


class ClusterNotReadyError(CacheNotSyncedError):
    """A read or write on a cluster that is not ready (still syncing, or unreachable):
    raised at once instead of waiting, so one bad cluster never holds a worker. The
    controller requeues the request with that cluster's backoff."""

    def __init__(self, cluster: str, state: str, detail: str = "") -> None:
        super().__init__(f"cluster {cluster!r} is {state}" + (f": {detail}" if detail else ""))
        self.cluster = cluster
        self.state = state


class NoCacheViewError(LookupError):
    """A cached read of a resource (or namespace) no cache view covers. Reads come from
    the view a controller declared (`watch`, `reads`); a read outside every view is a
    wiring bug, not a reason to start a second, unfiltered cache of the whole kind."""


def _status(err: BaseException) -> int | None:
    return err.status if isinstance(err, APIError) else None


def is_not_found(err: BaseException) -> bool:
    return _status(err) == 404


def is_conflict(err: BaseException) -> bool:
    """An optimistic-concurrency conflict (stale resourceVersion), not AlreadyExists."""
    return isinstance(err, APIError) and err.status == 409 and err.reason != "AlreadyExists"


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, APIError) and err.status == 409 and err.reason == "AlreadyExists"


def is_expired(err: BaseException) -> bool:
    return _status(err) == 410


def is_invalid(err: BaseException) -> bool:
    return _status(err) == 422


def is_forbidden(err: BaseException) -> bool:
    return _status(err) == 403


def is_unauthorized(err: BaseException) -> bool:
    return _status(err) == 401


def is_retryable(err: BaseException) -> bool:
    """Worth retrying unchanged: throttling, server trouble, or no answer at all."""
    if isinstance(err, TransportError):
        return True
    status = _status(err)
    return status is not None and (status == 429 or status >= 500)
