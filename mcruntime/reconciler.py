"""The reconciler contract: `async reconcile(request) -> Result`.

- Return `Result()` when done, `Result(requeue_after=s)` to look again in s seconds
  (the item's error backoff is reset), `Result(requeue=True)` to retry with backoff.
- Raise anything to retry with per-item exponential backoff (logged as an error).
- A 409 Conflict is retried with backoff but logged quietly: someone else wrote first,
  the next attempt reads the newer object.
- kopf-style: `TemporaryError(msg, delay=s)` retries after s seconds (or with backoff
  if no delay), `PermanentError(msg)` gives up until the object changes again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .request import Request


@dataclass(frozen=True, slots=True)
class Result:
    requeue: bool = False
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        if self.requeue_after is not None and (self.requeue_after < 0 or self.requeue_after != self.requeue_after):
            raise ValueError(f"requeue_after must be a non-negative number of seconds, got {self.requeue_after!r}")

    @staticmethod
    def sooner(*results: Result) -> Result:
        """Combine results of sub-steps: the earliest requeue_after wins, any requeue sticks.
        Use it so no return path drops a requeue a sub-step computed."""
        afters = [r.requeue_after for r in results if r.requeue_after]
        return Result(requeue=any(r.requeue for r in results), requeue_after=min(afters) if afters else None)


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
    """Retry later: after `delay` seconds if given, else with the item's backoff."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        if delay is not None and delay < 0:
            raise ValueError("delay must be >= 0")
        self.delay = delay


class PermanentError(Exception):
    """Do not retry: the object cannot be reconciled until it changes (a new event)."""
