"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm:

- a candidate acquires the lease when it is free, released (empty holder), or its
  holder has not renewed for `lease_duration` — measured on *our* clock from when we
  last saw the record change, so clock skew between replicas cannot shorten a lease;
- the leader renews every `retry_period`; if it cannot renew within `renew_deadline`
  it has lost the lease and must stop acting as leader at once. A renewal is one
  update onto the Lease as the holder last wrote it (client-go's fast path for the
  leader, while its own view of the lease is valid); only when that fails (someone else
  wrote it since: a conflict) does it read the Lease and decide as a candidate would;
- on shutdown the leader releases the lease (empty holder, 1 s duration) so the next
  leader need not wait out the lease.

Writes are optimistic (resourceVersion), so two candidates never both win.

Renewals never wait behind reconcile work: given the cluster's `ConnectionConfig`, the
leader renews from a dedicated thread running its own event loop and its own HTTP client
(`_RenewalLoop`), so a main loop saturated by CPU-bound reconciles (or a full connection
pool) cannot make the lease lapse; Python's thread switch interval (5 ms) bounds how long
the renewal thread waits for the interpreter. Without a config (a bare Client) renewals
run on the caller's loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from .client import Client
from .connection import ConnectionConfig
from .errors import APIError, TransportError, is_already_exists, is_conflict, is_not_found
from .fields import get_str, get_str_map
from .metrics import RuntimeMetrics, default_metrics
from .resources import LEASES
from .transport import Transport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    labels: tuple[tuple[str, str], ...] = ()  # kept on the Lease (a shard's ring label)

    def __post_init__(self) -> None:
        if not (self.namespace and self.name and self.identity):
            raise ValueError("leader election needs a namespace, a lease name and an identity")
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0 "
                f"(got {self.lease_duration}, {self.renew_deadline}, {self.retry_period})"
            )


class LeaderElectionLost(Exception):
    """This process was leader and could not renew the lease in time."""


def _micro_time(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class _RenewalLoop:
    """A daemon thread running its own asyncio event loop, for work that must not queue
    behind the main loop's."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, bool]) -> concurrent.futures.Future[bool]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def close(self, within: float) -> None:
        """Cancel what still runs there, let it finish (its client closes), stop the thread."""

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(drain(), self._loop).result(within)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


class LeaderElector:
    def __init__(
        self,
        client: Client,
        config: LeaderElectionConfig,
        *,
        metrics: RuntimeMetrics | None = None,
        connection: ConnectionConfig | None = None,
    ):
        self.client = client
        self.config = config
        self.metrics = metrics or default_metrics()
        self.connection = connection  # renew from a dedicated thread, with a client of its own
        self._observed: dict[str, Any] | None = None  # the lease spec last seen
        self._observed_at = 0.0  # monotonic time it last changed
        self._last_lease: dict[str, Any] | None = None  # as last read or written (the fast path's base)
        self.is_leader = False
        self.last_renew = 0.0  # monotonic time of our last successful renewal
        self.transitions_seen = 0

    # ------------------------------------------------------------------ one attempt
    async def try_acquire_or_renew(self, client: Client | None = None) -> bool:
        cfg = self.config
        client = client or self.client
        now = _now()
        # 1. the holder's fast path: renew onto the Lease as last seen, without reading it first
        if self._holds_valid_lease() and await self._renew_as_last_seen(client, now):
            return True
        # 2. read (or create) the Lease and decide as a candidate
        lease: dict[str, Any] | None
        try:
            lease = await client.get_live(LEASES, cfg.name, namespace=cfg.namespace)
        except APIError as exc:
            if not is_not_found(exc):
                raise
            lease = None
        if lease is None:
            spec = {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": int(max(1, round(cfg.lease_duration))),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            }
            body = {"metadata": {"name": cfg.name, "namespace": cfg.namespace, **self._labels(None)}, "spec": spec}
            try:
                created = await client.create(LEASES, body)
            except APIError as exc:
                if is_already_exists(exc):
                    return False
                raise
            self._observe(created)
            return True
        self._observe(lease)
        spec = dict(lease.get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if holder and holder != cfg.identity and self._observed_at + cfg.lease_duration > time.monotonic():
            return False  # someone else holds an unexpired lease
        new_spec = dict(spec)
        if holder != cfg.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = int(str(spec.get("leaseTransitions") or 0)) + (1 if holder else 0)
        try:
            updated = await client.update(LEASES, self._renewal(lease, new_spec, now))
        except APIError as exc:
            if is_conflict(exc):
                return False
            raise
        self._observe(updated)
        return True

    def _holds_valid_lease(self) -> bool:
        """This candidate holds the Lease as it last saw it, and that view has not expired
        (client-go's `IsLeader() && isLeaseValid(now)`)."""
        return (
            self._last_lease is not None
            and self.holder == self.config.identity
            and self._observed_at + self.config.lease_duration > time.monotonic()
        )

    async def _renew_as_last_seen(self, client: Client, now: datetime.datetime) -> bool:
        """One update onto the Lease as this holder last wrote or read it (its
        resourceVersion): True if it took. Any failure (a conflict: someone else wrote it
        since; an error) leaves the decision to a fresh read, as client-go's fast path does."""
        assert self._last_lease is not None and self._observed is not None
        try:
            updated = await client.update(LEASES, self._renewal(self._last_lease, dict(self._observed), now))
        except (APIError, TransportError) as exc:
            log.info("leader election %s/%s: renewal onto the Lease as last seen failed (%s); reading it",
                     self.config.namespace, self.config.name, exc)  # fmt: skip
            return False
        self._observe(updated)
        return True

    def _renewal(self, lease: dict[str, Any], spec: dict[str, Any], now: datetime.datetime) -> dict[str, Any]:
        """The update that makes `lease` (with `spec`, its acquire time and transitions
        already decided) held by this candidate and renewed `now`, guarded by its resourceVersion."""
        spec["holderIdentity"] = self.config.identity
        spec["leaseDurationSeconds"] = int(max(1, round(self.config.lease_duration)))
        spec["renewTime"] = _micro_time(now)
        return self._guarded_update(lease, spec)

    def _guarded_update(self, lease: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        """The whole Lease with `spec`, onto `lease`'s resourceVersion (a conflict if it
        changed since), its labels kept and ours merged in."""
        return {
            "metadata": {
                "name": self.config.name,
                "namespace": self.config.namespace,
                "resourceVersion": get_str(lease, "metadata.resourceVersion"),
                **self._labels(lease),
            },
            "spec": spec,
        }

    def _labels(self, lease: dict[str, Any] | None) -> dict[str, Any]:
        """The Lease's labels with ours merged in (an update replaces the whole object)."""
        labels = get_str_map(lease, "metadata.labels") if lease is not None else {}
        labels.update(self.config.labels)
        return {"labels": labels} if labels else {}

    def _observe(self, lease: dict[str, Any]) -> None:
        self._last_lease = lease
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed = dict(spec)
            self._observed_at = time.monotonic()

    async def _attempt(self, client: Client | None = None) -> bool:
        try:
            with anyio.fail_after(self.config.renew_deadline):
                return await self.try_acquire_or_renew(client)
        except (APIError, TransportError, TimeoutError) as exc:
            log.warning("leader election %s/%s: %s", self.config.namespace, self.config.name, exc)
            return False

    @property
    def holder(self) -> str:
        return str((self._observed or {}).get("holderIdentity") or "")

    # ------------------------------------------------------------------ the loop
    async def run(
        self,
        lead: Callable[[], Awaitable[None]],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Campaign until elected, then run `lead()` while renewing. Raises
        LeaderElectionLost when renewal fails (after cancelling `lead`); returns when
        `lead()` returns; releases the lease on the way out either way."""
        cfg = self.config
        task_status.started()
        while not await self._attempt():  # noqa: ASYNC110 - polling the Lease is the algorithm
            await anyio.sleep(cfg.retry_period * (1.0 + random.random() * 0.2))
        self._became_leader()
        lost = False
        try:
            async with anyio.create_task_group() as tg:

                async def lead_then_stop() -> None:
                    await lead()
                    tg.cancel_scope.cancel()

                tg.start_soon(lead_then_stop, name="leader work")
                lost = await (self._renew_in_own_thread() if self.connection else self._renew_until_lost())
                tg.cancel_scope.cancel()
        finally:
            self._stopped_leading()
            if not lost and cfg.release_on_cancel:
                with anyio.CancelScope(shield=True):
                    await self.release()
        if lost:
            raise LeaderElectionLost(
                f"lost lease {cfg.namespace}/{cfg.name}: could not renew within {cfg.renew_deadline}s"
            )

    async def _renew_in_own_thread(self) -> bool:
        """`_renew_until_lost` on a dedicated thread and loop; cancelling this cancels it there."""
        assert self.connection is not None
        renewals = _RenewalLoop(f"lease-renewal-{self.config.name}")
        try:
            # cancelling this wait cancels the renewal task in its own loop
            return await asyncio.wrap_future(renewals.submit(self._renew_with_own_client(self.connection)))
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(renewals.close, self.config.renew_deadline)

    async def _renew_with_own_client(self, connection: ConnectionConfig) -> bool:
        async with Transport(
            connection, cluster=self.client.transport.cluster, metrics=self.metrics, user_agent="mcruntime-lease"
        ) as transport:
            return await self._renew_until_lost(Client(transport))

    async def _renew_until_lost(self, client: Client | None = None) -> bool:
        cfg = self.config
        while True:
            await anyio.sleep(cfg.retry_period)
            deadline = self.last_renew + cfg.renew_deadline
            renewed = False
            while time.monotonic() < deadline:
                with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
                    renewed = await self._attempt(client)
                if renewed:
                    break
                await anyio.sleep(min(cfg.retry_period / 4, max(0.0, deadline - time.monotonic())))
            if not renewed:
                log.error(
                    "leader election %s/%s: failed to renew within %.1fs", cfg.namespace, cfg.name, cfg.renew_deadline
                )
                return True
            self.last_renew = time.monotonic()

    def _became_leader(self) -> None:
        self.is_leader = True
        self.last_renew = time.monotonic()
        self.metrics.leader.add(1, {"name": self.config.name})
        log.info(
            "leader election %s/%s: %s became leader", self.config.namespace, self.config.name, self.config.identity
        )

    def _stopped_leading(self) -> None:
        if self.is_leader:
            self.is_leader = False
            self.metrics.leader.add(-1, {"name": self.config.name})
            log.info(
                "leader election %s/%s: %s stopped leading",
                self.config.namespace,
                self.config.name,
                self.config.identity,
            )

    async def release(self) -> bool:
        """Give the lease up if we hold it (empty holder, 1 s duration)."""
        cfg = self.config
        try:
            with anyio.fail_after(cfg.retry_period * 2):
                lease = await self.client.get_live(LEASES, cfg.name, namespace=cfg.namespace)
                spec = dict(lease.get("spec") or {})
                if spec.get("holderIdentity") != cfg.identity:
                    return False
                now = _micro_time(_now())
                spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
                released = await self.client.update(LEASES, self._guarded_update(lease, spec))
        except (APIError, TransportError, TimeoutError) as exc:
            log.warning("leader election %s/%s: release failed: %s", cfg.namespace, cfg.name, exc)
            return False
        self._observe(released)  # no longer the holder: a renewal reads the Lease first
        log.info("leader election %s/%s: released", cfg.namespace, cfg.name)
        return True

    def healthy(self, tolerance: float = 10.0) -> bool:
        """client-go's healthz adaptor: unhealthy when leading but the last renewal is
        older than lease duration plus `tolerance` (the renew loop is stuck)."""
        if not self.is_leader:
            return True
        return time.monotonic() - self.last_renew < self.config.lease_duration + tolerance
