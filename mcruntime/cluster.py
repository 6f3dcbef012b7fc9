"""A cluster: a name, labels (from its registration), one connection pool, an informer
cache and a client. Running it opens the pool and runs the informers; stopping it
(cancelling `run`) stops every informer and closes every connection.

An engaged cluster is in one of three states, visible to controllers (cluster events),
in `/readyz?verbose` and as the `mcruntime_cluster_ready` metric:

| state | meaning |
| --- | --- |
| `syncing` | engaged; some declared view has not completed its first LIST |
| `ready` | every declared view is synced and the cluster answers |
| `unreachable` | the last attempt to reach it failed (reads of unsynced views and all writes fail fast) |

`last_contact` is the wall-clock time of its last answer."""

from __future__ import annotations

import datetime
import enum
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc

from .cache import CacheOptions, InformerCache
from .client import Client
from .connection import ConnectionConfig
from .metrics import RuntimeMetrics
from .transport import Transport


class ClusterState(enum.StrEnum):
    SYNCING = "syncing"
    READY = "ready"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class TransportOptions:
    request_timeout: float = 30.0
    connect_timeout: float = 10.0
    max_concurrent_requests: int = 64
    max_throttle_retries: int = 3
    user_agent: str = "mcruntime"
    probe_interval: float = 2.0


@dataclass(frozen=True)
class ClusterOptions:
    """Options every cluster a manager builds gets (typed, instead of keyword pass-through)."""

    transport: TransportOptions = field(default_factory=TransportOptions)
    cache: CacheOptions = field(default_factory=CacheOptions)


StateListener = Callable[["Cluster", ClusterState, ClusterState], None]


class Cluster:
    def __init__(
        self,
        name: str,
        config: ConnectionConfig,
        *,
        labels: Mapping[str, str] | None = None,
        metrics: RuntimeMetrics | None = None,
        field_manager: str = "mcruntime",
        options: ClusterOptions | None = None,
    ) -> None:
        if not name:
            raise ValueError("a cluster needs a non-empty name")
        opts = options or ClusterOptions()
        self.name = name
        self.config = config
        self.labels: dict[str, str] = dict(labels or {})
        t = opts.transport
        self.transport = Transport(
            config,
            cluster=name,
            metrics=metrics,
            request_timeout=t.request_timeout,
            connect_timeout=t.connect_timeout,
            max_concurrent_requests=t.max_concurrent_requests,
            max_throttle_retries=t.max_throttle_retries,
            user_agent=t.user_agent,
        )
        self.transport.contact.probe_interval = t.probe_interval
        self.cache = InformerCache(self.transport, cluster=name, metrics=metrics, options=opts.cache)
        self.client = Client(self.transport, self.cache, field_manager=field_manager)
        self._stopped = anyio.Event()
        self._running = False
        self._bound = False
        self._state = ClusterState.SYNCING
        self._unreachable_since: float | None = None
        self._listeners: list[StateListener] = []
        self.transport.contact.on_change(self._refresh_state)
        self.cache.on_synced(self._refresh_state)

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, {self.config.host})"

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> ClusterState:
        return self._state

    @property
    def last_contact(self) -> datetime.datetime | None:
        at = self.transport.contact.last_contact
        return datetime.datetime.fromtimestamp(at, datetime.UTC) if at is not None else None

    @property
    def unreachable_since(self) -> datetime.datetime | None:
        """When the cluster became unreachable (None while it is not)."""
        at = self._unreachable_since
        return datetime.datetime.fromtimestamp(at, datetime.UTC) if at is not None else None

    def unreachable_for(self) -> float:
        """Seconds the cluster has been unreachable (0 while it is not)."""
        return time.time() - self._unreachable_since if self._unreachable_since is not None else 0.0

    @property
    def last_error(self) -> str:
        return self.transport.contact.last_error

    def describe(self) -> str:
        """One line for logs and /readyz: state, last contact, last error."""
        contact = self.last_contact
        when = contact.strftime("%Y-%m-%dT%H:%M:%SZ") if contact else "never"
        text = f"{self.state} (last contact {when})"
        if self.state is ClusterState.UNREACHABLE and self.last_error:
            text += f": {self.last_error}"
        return text

    def on_state_change(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    def mark_bound(self) -> None:
        """Controllers have declared their views: from now on `ready` means all of them synced."""
        self._bound = True
        self._refresh_state()

    def _compute_state(self) -> ClusterState:
        if self.transport.contact.reachable is False:
            return ClusterState.UNREACHABLE
        if self._bound and self._running and self.cache.has_synced:
            return ClusterState.READY
        return ClusterState.SYNCING

    def _refresh_state(self) -> None:
        new = self._compute_state()
        old, self._state = self._state, new
        if new is not old:
            self._unreachable_since = time.time() if new is ClusterState.UNREACHABLE else None
            for listener in list(self._listeners):
                listener(self, old, new)

    # ------------------------------------------------------------------ running
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
            self.mark_bound()
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
