"""A cluster: a name, labels (from its registration), one connection pool, an informer
cache and a client. Running it opens the pool and runs the informers; stopping it
(cancelling `run`) stops every informer and closes every connection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from .cache import InformerCache
from .client import Client
from .connection import ConnectionConfig, from_kubeconfig_dict, from_kubeconfig_file
from .metrics import RuntimeMetrics
from .transport import Transport


class Cluster:
    def __init__(
        self,
        name: str,
        config: ConnectionConfig,
        *,
        labels: Mapping[str, str] | None = None,
        metrics: RuntimeMetrics | None = None,
        field_manager: str = "mcruntime",
        transport_options: Mapping[str, Any] | None = None,
        cache_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not name:
            raise ValueError("a cluster needs a non-empty name")
        self.name = name
        self.config = config
        self.labels: dict[str, str] = dict(labels or {})
        self.transport = Transport(config, cluster=name, metrics=metrics, **dict(transport_options or {}))
        self.cache = InformerCache(self.transport, cluster=name, metrics=metrics, **dict(cache_options or {}))
        self.client = Client(self.transport, self.cache, field_manager=field_manager)
        self._stopped = anyio.Event()
        self._running = False

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, {self.config.host})"

    @classmethod
    async def from_kubeconfig(
        cls, kubeconfig: str | Path | Mapping[str, Any], *, name: str, context: str | None = None, **kwargs: Any
    ) -> Cluster:
        if isinstance(kubeconfig, Mapping):
            config = await from_kubeconfig_dict(kubeconfig, context=context, source=f"kubeconfig for {name}")
        else:
            config = await from_kubeconfig_file(kubeconfig, context=context)
        return cls(name, config, **kwargs)

    @property
    def running(self) -> bool:
        return self._running

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the connection pool and run the cache until cancelled; then close everything."""
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        try:
            await self.transport.open()
            await self.cache.run(task_status=task_status)
        finally:
            await self.transport.aclose()
            self._running = False
            self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    @asynccontextmanager
    async def started(self) -> AsyncIterator[Cluster]:
        """`async with cluster.started():` run the cluster for the block's duration."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.run)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
