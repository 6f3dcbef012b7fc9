"""The reconciler contract: `async reconcile(request) -> Result`.

What happens to the request after each outcome (one table, the only rules there are):

| the reconciler... | the controller... | logged as |
| --- | --- | --- |
| returns `Result()` | forgets the request's backoff; done until the next event | - |
| returns `Result(requeue_after=s)` | forgets the backoff; looks again in `s` seconds | - |
| raises `TemporaryError(msg, delay=s)` | looks again in `s` seconds (backoff untouched) | info |
| raises `TemporaryError(msg)` | retries with the request's exponential backoff | info |
| raises `PermanentError(msg)` | forgets it until the object changes (a new event) | error |
| raises `ClusterNotReadyError` (cluster syncing or unreachable) | retries with backoff; quietly | debug |
| raises an `APIError` 409 Conflict | retries with backoff; quietly (someone wrote first) | debug |
| raises `ClusterNotEngagedError` for its own cluster | drops the request (re-engaging lists everything) | debug |
| raises anything else | retries with backoff | error, with traceback unless it is an APIError |

Backoff is per request (5 ms doubling to 1000 s) combined with a token bucket per
cluster (10 qps, burst 100): a failing cluster only slows retries to itself.
There is no `Result(requeue=True)`: say why you want to come back (`TemporaryError`) or when
(`requeue_after`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .request import Request


@dataclass(frozen=True, slots=True)
class Result:
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        if self.requeue_after is not None and (self.requeue_after < 0 or self.requeue_after != self.requeue_after):
            raise ValueError(f"requeue_after must be a non-negative number of seconds, got {self.requeue_after!r}")

    @staticmethod
    def sooner(*results: Result) -> Result:
        """Combine results of sub-steps: the earliest requeue_after wins. Use it so no
        return path drops a requeue a sub-step computed."""
        afters = [r.requeue_after for r in results if r.requeue_after]
        return Result(requeue_after=min(afters) if afters else None)


@runtime_checkable
class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result: ...


ReconcileFunc = Callable[[Request], Awaitable[Result]]


class FuncReconciler:
    """Adapts a plain `async def reconcile(request) -> Result` function."""

    def __init__(self, func: ReconcileFunc) -> None:
        self.func = func

    async def reconcile(self, request: Request) -> Result:
        return await self.func(request)


class TemporaryError(Exception):
    """Retry later: after `delay` seconds if given, else with the request's backoff."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        if delay is not None and delay < 0:
            raise ValueError("delay must be >= 0")
        self.delay = delay


class PermanentError(Exception):
    """Do not retry: the object cannot be reconciled until it changes (a new event)."""
