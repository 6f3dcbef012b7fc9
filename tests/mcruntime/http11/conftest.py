"""The HTTP/1.1 client's tests run on asyncio's event loop and on uvloop's, which
`federation-manager run` uses: its transports are not asyncio's classes, and it has its
own TLS and timers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
