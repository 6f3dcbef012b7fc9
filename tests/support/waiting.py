"""The one bounded wait every test uses."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


async def eventually(
    check: Callable[[], Any | Awaitable[Any]], what: str = "condition", within: float = 10.0, *, every: float = 0.01
) -> Any:
    """Poll `check` (sync or async) until it returns something truthy and return that;
    fail naming `what` after `within` seconds."""
    with anyio.move_on_after(within):
        while True:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result
            await anyio.sleep(every)
    raise AssertionError(f"timed out after {within}s waiting for {what}")
