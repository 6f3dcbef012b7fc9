"""Run the manager in a test exactly as `federation-manager run` composes it
(settings → federation/app.py → controllers per mode), against embedded servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from opentelemetry.trace import TracerProvider

from federation.app import prepare_manager
from federation.settings import ManagerSettings
from mcruntime import Controller, Manager, Request, Result


def management_settings(kubeconfig: Path, **overrides: Any) -> ManagerSettings:
    values: dict[str, Any] = {
        "kubeconfig": kubeconfig,
        "enable_management_controllers": True,
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        "graceful_shutdown_timeout": 5.0,
        **overrides,
    }
    return ManagerSettings(**values)


def cell_settings(kubeconfig: Path, **overrides: Any) -> ManagerSettings:
    values: dict[str, Any] = {
        "kubeconfig": kubeconfig,
        "enable_cell_controllers": True,
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        "graceful_shutdown_timeout": 5.0,
        **overrides,
    }
    return ManagerSettings(**values)


@asynccontextmanager
async def running(
    settings: ManagerSettings, *, tracer_provider: TracerProvider | None = None
) -> AsyncIterator[Manager]:
    """A manager built and wired by federation/app.py, running until the block ends."""
    manager = await prepare_manager(settings, tracer_provider=tracer_provider)
    async with anyio.create_task_group() as tg:
        await tg.start(manager.run)
        try:
            yield manager
        finally:
            manager.stop()


def controller(manager: Manager, name: str) -> Controller:
    for ctrl in manager.controllers:
        if ctrl.name == name:
            return ctrl
    raise LookupError(f"no controller named {name!r}; have {[c.name for c in manager.controllers]}")


class RecordingReconciler:
    """Wraps a controller's reconciler and keeps every request it was handed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.requests.append(request)
        result: Result = await self.inner.reconcile(request)
        return result


def record(manager: Manager, name: str) -> RecordingReconciler:
    ctrl = controller(manager, name)
    recording = RecordingReconciler(ctrl.reconciler)
    ctrl.reconciler = recording
    return recording


async def all_idle(manager: Manager, within: float = 30.0) -> bool:
    """Every controller idle at once (and staying so briefly)."""
    checks: list[Callable[[], Awaitable[bool]]] = [
        lambda c=c: c.wait_idle(within=within)
        for c in manager.controllers  # type: ignore[misc]
    ]
    for check in checks:
        if not await check():
            return False
    return all(c.idle for c in manager.controllers)
