"""A cluster: a name, labels (from its registration), one connection pool, an informer
cache and a client. Running it opens the pool and runs the informers; stopping it
(cancelling `run`) stops every informer and closes every connection.

An engaged cluster is in one of three states, visible to controllers (cluster events),
in `/readyz?verbose` and as the `mcruntime_cluster_ready` metric:

| state | meaning |
| --- | --- |
| `syncing` | engaged; a declared view has not listed yet, or is not following its server again yet |
| `ready` | every declared view is synced and current (`Informer.current`) and the cluster answers |
| `unreachable` | the last attempt to reach it failed (reads of unsynced views and all writes fail fast) |

`last_contact` is the wall-clock time of its last answer. While it is unreachable, or an
informer backs off after a failure that got no answer (a broken watch), the cluster
probes it (`GET /version` every `probe_interval`), and the moment it answers every such
informer retries at once with its back-off reset (issue 18 item 3): without that, a
cluster away for a minute was re-watched only after a back-off grown to 30-60 s, while it
already looked ready. `unreachable_since` stays set through the re-sync (`syncing`) and
clears once the cluster is `ready`: its cached views are not fresh before that."""

from __future__ import annotations

import datetime
import enum
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc

from .cache import CacheOptions, InformerCache
from .client import Client
from .connection import ConnectionConfig
from .errors import APIError, TransportError
from .metrics import RuntimeMetrics
from .transport import Transport

log = logging.getLogger(__name__)


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
        self._changed = anyio.Event()  # set (and replaced) by every state refresh
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
        """When the cluster became unreachable (None once it is ready again: kept while
        its views re-sync, since until then they may still show the time it was away)."""
        at = self._unreachable_since
        return datetime.datetime.fromtimestamp(at, datetime.UTC) if at is not None else None

    def unreachable_for(self) -> float:
        """Seconds since the cluster became unreachable (0 once it is ready again)."""
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
        if self._bound and self._running and self.cache.has_synced and self.cache.current:
            return ClusterState.READY
        return ClusterState.SYNCING

    def _refresh_state(self) -> None:
        new = self._compute_state()
        old, self._state = self._state, new
        if new is not old:
            if new is ClusterState.UNREACHABLE:
                self._unreachable_since = self._unreachable_since or time.time()
            elif new is ClusterState.READY:
                self._unreachable_since = None
            if old is ClusterState.UNREACHABLE:
                self.cache.retry_now()  # it answers again: re-watch now, not after the back-off
            for listener in list(self._listeners):
                listener(self, old, new)
        self._changed.set()  # wakes the prober, which decides whether to probe
        self._changed = anyio.Event()

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
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._probe_while_unreachable, name=f"probe {self.name}")
                await self.cache.run(task_status=task_status)
        finally:
            await self.transport.aclose()
            self._running = False
            self._stopped.set()

    def _needs_probe(self) -> bool:
        return self._state is ClusterState.UNREACHABLE or (self._bound and self.cache.waiting_for_server)

    async def _probe_while_unreachable(self) -> None:
        """While unreachable or waiting for the server, ask it every `probe_interval`
        whether it answers (informers in back-off would notice only after their delay);
        an answer wakes every informer waiting for it."""
        contact = self.transport.contact
        while True:
            if not self._needs_probe():
                await self._changed.wait()
                continue
            await anyio.sleep(contact.probe_interval)
            if not self._needs_probe():
                continue
            try:
                await self.transport.request(
                    "GET", "/version", verb="probe", within=max(contact.probe_interval, 1.0), fail_fast=False
                )
            except APIError as exc:
                log.debug("cluster %s: probe answered %s", self.name, exc)  # an answer all the same
            except TransportError as exc:
                log.debug("cluster %s: probe: %s", self.name, exc)
                continue
            self.cache.retry_now()

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
