"""A controller: watches (source → predicates → handler) feed a work queue of requests;
N workers take requests off the queue and call the reconciler, one request per key at a
time, and decide from the outcome whether and when the request comes back.

Clusters are bound at run time: `engage(cluster)` declares the controller's cache views
in the cluster (see `view.py`) and attaches every watch whose cluster filter matches to
the view's informer; `disengage(name)` detaches them. Cluster lifecycle (engaged, ready,
unreachable, disengaged) is a source too (`watch_clusters`). Requests for a cluster that
is gone fail with ClusterNotEngagedError and are dropped (re-engaging lists everything
again, so nothing is lost). What each reconcile outcome leads to is tabled in
`reconciler.py`.

    ctrl = mgr.new_controller("copies", reconcile, workers=4)
    ctrl.for_(WIDGETS, clusters=engaged("role=project"))
    ctrl.owns(INSTANCES, owner=WIDGETS, clusters=engaged("role=project"))
    ctrl.reads(NAMESPACES, clusters=engaged("role=project"))
    ctrl.watch_clusters(widgets_for_new_cell, clusters=engaged("role=cell"))"""

from __future__ import annotations

import inspect
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from opentelemetry.trace import TracerProvider

from . import logs
from .errors import APIError, ClusterNotEngagedError, ClusterNotReadyError, NoCacheViewError, is_conflict
from .handlers import EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler
from .indexers import IndexFunc
from .informer import ListenerHandle, ObjectEvent, Transform
from .metrics import RuntimeMetrics, default_metrics
from .objects import strip_for_cache
from .predicates import Predicate
from .ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    PartitionedRateLimiter,
    RateLimiter,
)
from .reconciler import FuncReconciler, PermanentError, ReconcileFunc, Reconciler, Result, TemporaryError
from .request import Request
from .resources import Resource
from .source import (
    ALL_CLUSTER_EVENTS,
    ENGAGED,
    ClusterEvent,
    ClusterEventType,
    ClusterFilter,
    ClusterMapFunc,
    ClusterWatch,
    Watch,
)
from .tracing import mark_error, note_conflict, note_retry, reconcile_span, tracer_for
from .view import View
from .workqueue import QueueShutDown, WorkQueue

if TYPE_CHECKING:
    from .cluster import Cluster
    from .sharding.gate import Owner, ShardGate

log = logging.getLogger(__name__)


class _Sink:
    """The RequestSink a handler writes to for one (watch, cluster) binding."""

    def __init__(self, controller: Controller, watch: Watch, cluster: str) -> None:
        self.controller = controller
        self.watch = watch
        self.cluster = cluster

    def enqueue(self, request: object) -> None:
        self.controller.enqueue(request)

    def drop(self, reason: str, detail: str) -> None:
        self.controller._dropped(reason, f"{self.watch.resource} event from {self.cluster!r}: {detail}")


_NO_SCOPE = nullcontext()  # no timeout, no shard gate: one shared (reusable) scope


def _cluster_of(request: Request) -> str:
    return request.cluster


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: Reconciler | ReconcileFunc,
        *,
        workers: int = 1,
        rate_limiter: RateLimiter[Request] | None = None,
        needs_leader_election: bool = True,
        reconcile_timeout: float | None = None,
        batch_period: float = 0.0,
        metrics: RuntimeMetrics | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        if not name:
            raise ValueError("a controller needs a name")
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        if reconcile_timeout is not None and reconcile_timeout <= 0:
            raise ValueError(f"controller {name}: reconcile_timeout must be positive")
        self.name = name
        self.reconciler: Reconciler = reconciler if isinstance(reconciler, Reconciler) else FuncReconciler(reconciler)
        self.workers = workers
        self.needs_leader_election = needs_leader_election
        self.reconcile_timeout = reconcile_timeout
        if batch_period < 0:
            raise ValueError(f"controller {name}: batch_period must be >= 0")
        # events for one key within the batch period make one reconcile (the endpoints
        # controller's --endpoint-updates-batch-period): bounds a status writer's rate per
        # object when its sources change in bursts
        self.batch_period = batch_period
        # when the last batched request falls due: `idle` needs only that (the queue itself
        # keeps each key's earliest due time); per-key bookkeeping here cost O(batched) per
        # event, quadratic over a cold start's burst of 100k
        self._batched_until = 0.0
        self.metrics = metrics or default_metrics()
        self.tracer = tracer_for(tracer_provider)
        if rate_limiter is None:
            self._bucket: RateLimiter[Request] = PartitionedRateLimiter(
                _cluster_of, lambda: BucketRateLimiter[Request](10.0, 100)
            )
            rate_limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter[Request](0.005, 1000.0), self._bucket)
        else:
            self._bucket = rate_limiter
        self.queue: WorkQueue[Request] = WorkQueue(name, rate_limiter=rate_limiter, metrics=self.metrics)
        self.watches: list[Watch] = []
        self.cluster_watches: list[ClusterWatch] = []
        self._cluster_events: deque[tuple[ClusterWatch, ClusterEvent]] = deque()
        self._cluster_events_ready = anyio.Event()
        self._bindings: dict[str, list[ListenerHandle]] = {}
        self._attrs = {"controller": name}
        # per reconcile, bound to this controller's attributes once (see `Tally.bound`); the
        # results by outcome, one bound counter each
        self._active = self.metrics.active_workers.bound(self._attrs)
        self._reconcile_time = self.metrics.reconcile_time.bound(self._attrs)
        self._results: dict[str, Callable[[float], None]] = {}
        self._gate: tuple[ShardGate, Owner] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self._stopped = anyio.Event()
        self.in_flight = 0
        self.yielding_to: tuple[Controller, float] | None = None  # (to whom, for at most how long)

    def __repr__(self) -> str:
        return f"Controller({self.name!r})"

    # ------------------------------------------------------------------ wiring
    def watch(
        self,
        resource: Resource,
        handler: EventHandler,
        *,
        clusters: ClusterFilter = ENGAGED,
        predicates: Iterable[Predicate] = (),
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_for_cache,
        indexers: Mapping[str, IndexFunc] | None = None,
        alias: str = "",
        metadata_only: bool = False,
    ) -> Controller:
        """Reconcile what `handler` maps this resource's events to. The namespace,
        selectors, transform, alias and `metadata_only` (see `View`) declare the resource's
        cache view in the matching clusters: cached reads of the resource (under the alias)
        are served from the same informer."""
        if not isinstance(handler, EventHandler):
            raise TypeError(f"controller {self.name}: handler must be an EventHandler, got {handler!r}")
        view = View(resource, namespace, label_selector, field_selector, transform, alias, metadata_only)
        return self._add(Watch(view, handler, clusters, tuple(predicates), tuple((indexers or {}).items())))

    def reads(
        self,
        resource: Resource,
        *,
        clusters: ClusterFilter = ENGAGED,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_for_cache,
        indexers: Mapping[str, IndexFunc] | None = None,
        alias: str = "",
        metadata_only: bool = False,
    ) -> Controller:
        """Declare a cache view this controller reads without reconciling on its events."""
        view = View(resource, namespace, label_selector, field_selector, transform, alias, metadata_only)
        return self._add(Watch(view, None, clusters, (), tuple((indexers or {}).items())))

    def _add(self, watch: Watch) -> Controller:
        if self._bindings:
            raise RuntimeError(f"controller {self.name}: add watches before clusters are engaged")
        self.watches.append(watch)
        return self

    def for_(
        self,
        resource: Resource,
        *,
        clusters: ClusterFilter = ENGAGED,
        predicates: Iterable[Predicate] = (),
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        alias: str = "",
    ) -> Controller:
        """Reconcile `resource` itself (builder.For)."""
        return self.watch(
            resource, EnqueueRequestForObject(), clusters=clusters, predicates=predicates, namespace=namespace,
            label_selector=label_selector, field_selector=field_selector, indexers=indexers, alias=alias,
        )  # fmt: skip

    def owns(
        self,
        resource: Resource,
        *,
        owner: Resource,
        only_controller: bool = True,
        clusters: ClusterFilter = ENGAGED,
        predicates: Iterable[Predicate] = (),
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        alias: str = "",
    ) -> Controller:
        """Reconcile the owner of `resource` objects (builder.Owns)."""
        return self.watch(
            resource, EnqueueRequestForOwner(owner, only_controller=only_controller), clusters=clusters,
            predicates=predicates, namespace=namespace, label_selector=label_selector,
            field_selector=field_selector, indexers=indexers, alias=alias,
        )  # fmt: skip

    def watch_clusters(
        self,
        map_func: ClusterMapFunc,
        *,
        clusters: ClusterFilter = ENGAGED,
        types: Iterable[ClusterEventType] = ALL_CLUSTER_EVENTS,
    ) -> Controller:
        """Reconcile what `map_func` maps cluster lifecycle events to (engaged, ready,
        unreachable, disengaged), e.g. every object a newly ready cell must receive."""
        self.cluster_watches.append(ClusterWatch(map_func, clusters, frozenset(types)))
        return self

    def yields_to(self, other: Controller, *, at_most: float) -> Controller:
        """Take the next request only once `other` has taken what was queued in it then, or
        after `at_most` seconds: `other`'s work goes first while it has a backlog (its
        writes are what this one reports on), and events for one key meanwhile coalesce
        into one reconcile; the bound keeps this one going while `other`'s workers wait
        on a server that does not answer."""
        if other is self:
            raise ValueError(f"controller {self.name} cannot yield to itself")
        if at_most <= 0:
            raise ValueError(f"controller {self.name}: at_most must be positive")
        self.yielding_to = (other, at_most)
        return self

    def shard(self, gate: ShardGate, owner: Owner) -> Controller:
        """Reconcile only what this shard owns (`owner(request)` is the owned object's key,
        None when not owned: the request is dropped) and only while its Lease is fresh
        (otherwise requests wait with backoff); reconciles in flight are counted per owned
        object, so a drain is acknowledged only once none is."""
        self._gate = (gate, owner)
        return self

    @property
    def sharded(self) -> bool:
        """Gated by a shard (`shard`): runs while the manager holds its shard Lease."""
        return self._gate is not None

    # ------------------------------------------------------------------ clusters
    def engage(self, cluster: Cluster, *, is_local: bool = False) -> int:
        """Declare this controller's views in the cluster and bind the watches that cover
        it; returns how many watches were bound."""
        if cluster.name in self._bindings:
            return len(self._bindings[cluster.name])
        handles: list[ListenerHandle] = []
        for watch in self.watches:
            if not watch.clusters.matches(cluster.name, cluster.labels, is_local=is_local):
                continue
            informer = cluster.cache.declare(watch.view, indexers=dict(watch.indexers))
            if watch.handler is not None:
                handles.append(
                    informer.add_listener(self._listener(watch, cluster.name), name=f"{self.name}/{watch.resource}")
                )
        self._bindings[cluster.name] = handles
        return len(handles)

    def disengage(self, cluster_name: str) -> None:
        for handle in self._bindings.pop(cluster_name, []):
            handle.remove()
        if isinstance(self._bucket, PartitionedRateLimiter):
            self._bucket.discard(cluster_name)

    def cluster_event(self, event: ClusterEvent, *, is_local: bool = False) -> None:
        """Hand a cluster lifecycle event to the cluster watches that cover it."""
        for watch in self.cluster_watches:
            if event.type in watch.types and watch.clusters.matches(event.cluster, event.labels, is_local=is_local):
                self._cluster_events.append((watch, event))
        if self._cluster_events:
            self._cluster_events_ready.set()

    @property
    def engaged_clusters(self) -> list[str]:
        return list(self._bindings)

    @property
    def has_synced(self) -> bool:
        """Every bound watch has handed its informer's initial state to the handlers."""
        return all(h.synced for hs in self._bindings.values() for h in hs)

    @property
    def idle(self) -> bool:
        """Synced, nothing queued or batched, nothing in flight, no cluster event unmapped
        (delayed requeues do not count)."""
        now = time.monotonic()
        batching = self._batched_until > now
        return (
            self.has_synced and len(self.queue) == 0 and self.in_flight == 0 and not self._cluster_events
            and not batching
        )  # fmt: skip

    async def wait_idle(self, within: float | None = None, *, settle: float = 0.05) -> bool:
        """Wait until the controller is idle and stays idle for `settle` seconds (so an
        event still travelling from an informer to the queue is not missed); for tests
        and tools. Returns False if `within` ran out first."""
        with anyio.move_on_after(within):
            quiet_since: float | None = None
            while True:
                if self.idle:
                    now = time.monotonic()
                    quiet_since = quiet_since or now
                    if now - quiet_since >= settle:
                        return True
                else:
                    quiet_since = None
                await anyio.sleep(0.01)
        return False

    async def wait_for_sync(self, within: float | None = None) -> bool:
        """Whether every bound watch has delivered its informer's initial state."""
        with anyio.move_on_after(within):
            for handles in list(self._bindings.values()):
                for handle in handles:
                    await handle.wait_synced()
        return all(h.synced for hs in self._bindings.values() for h in hs)

    def _listener(self, watch: Watch, cluster: str) -> Any:
        sink = _Sink(self, watch, cluster)
        handler = watch.handler
        assert handler is not None, "read-only views have no listener"
        predicates = watch.predicates

        async def on_event(event: ObjectEvent) -> None:
            for predicate in predicates:
                if not predicate(event):
                    return
            await handler.handle(cluster, event, sink)

        return on_event

    # ------------------------------------------------------------------ queue
    def enqueue(self, request: object) -> None:
        if not isinstance(request, Request):
            self._dropped("invalid-request", f"{request!r} is not a Request")
            return
        if not request.cluster:
            self._dropped("empty-cluster", f"request {request.key} has no cluster name")
            return
        if not request.name:
            self._dropped("empty-name", f"request {request} has no object name")
            return
        if self._another_shards(request):
            return  # not queued at all: a shard pays nothing per event of what it does not own
        if self.batch_period:
            self._batched_until = max(self._batched_until, time.monotonic() + self.batch_period)
            self.queue.add_after(request, self.batch_period)
            return
        self.queue.add(request)

    def _another_shards(self, request: Request) -> bool:
        """Gated, and the request's object is owned by another shard (checked again before
        reconciling: ownership may move while it waits). Undecidable here (a cluster gone,
        a view not declared): queued, and `_process` decides."""
        if self._gate is None:
            return False
        try:
            return self._gate[1](request) is None
        except (ClusterNotEngagedError, NoCacheViewError):
            return False

    def _dropped(self, reason: str, detail: str) -> None:
        self.metrics.dropped_requests.add(1, {**self._attrs, "reason": reason})
        log.warning("controller %s dropped a request (%s): %s", self.name, reason, detail)

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the workers until `shutdown` (in-flight reconciles finish) or cancellation."""
        if self._started:
            raise RuntimeError(f"controller {self.name} was already started; controllers run once")
        self._started = True
        log.info("starting controller %s with %d workers", self.name, self.workers)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for i in range(self.workers):
                    tg.start_soon(self._worker, name=f"{self.name} worker {i}")
                if self.cluster_watches:
                    tg.start_soon(self._map_cluster_events, name=f"{self.name} cluster events")
                task_status.started()
        finally:
            self._tg = None
            self._stopped.set()
            log.info("controller %s stopped", self.name)

    async def shutdown(self, grace: float = 30.0) -> None:
        """Stop taking new work, let in-flight reconciles finish (up to `grace` seconds), stop."""
        self.queue.shutdown()
        self._cluster_events_ready.set()
        if not self._started:
            return
        with anyio.move_on_after(grace) as scope:
            await self._stopped.wait()
        if scope.cancelled_caught and self._tg is not None:
            log.warning("controller %s: in-flight reconciles did not finish within %.0fs; cancelling", self.name, grace)
            self._tg.cancel_scope.cancel()
            await self._stopped.wait()

    async def _map_cluster_events(self) -> None:
        """Map buffered cluster events to requests (runs with the workers, so events that
        arrived before this controller started, e.g. while campaigning, are kept)."""
        while not self.queue.shutting_down:
            while self._cluster_events:
                watch, event = self._cluster_events.popleft()
                try:
                    result = watch.map_func(event)
                    if inspect.isawaitable(result):
                        result = await result
                    requests = list(result or ())
                except Exception:
                    # a mapping bug must not stop lifecycle delivery; logged with the event
                    log.exception("controller %s: mapping cluster event %s %s failed", self.name, event.type,
                                  event.cluster)  # fmt: skip
                    continue
                for request in requests:
                    self.enqueue(request)
            self._cluster_events_ready = anyio.Event()
            if self._cluster_events:
                continue
            await self._cluster_events_ready.wait()

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                if self.yielding_to is None:
                    request = await queue.get()
                else:
                    request = await queue.get(behind=self.yielding_to[0].queue, within=self.yielding_to[1])
            except QueueShutDown:
                return
            try:
                if queue.shutting_down:
                    return  # stopping: what is still queued is re-listed by whoever runs next
                await self._process(request)
            finally:
                queue.done(request)

    async def _process(self, request: Request) -> None:
        started = time.monotonic()
        outcome = "error"
        self.in_flight += 1
        self._active(1)
        with (
            logs.bound(controller=self.name, cluster=request.cluster, namespace=request.namespace, name=request.name),
            reconcile_span(self.tracer, self.name, request) as span,
        ):
            try:
                if not request.cluster:
                    raise ClusterNotEngagedError("")
                timeout = anyio.fail_after(self.reconcile_timeout) if self.reconcile_timeout else _NO_SCOPE
                scope = self._admit(request)
                if isinstance(scope, str):
                    outcome = scope  # not admitted by the shard gate
                    return
                with timeout, scope:
                    result = await self.reconciler.reconcile(request)
                if not isinstance(result, Result):
                    raise TypeError(f"reconciler returned {result!r}; it must return a Result (Result() when done)")
                outcome = self._after_success(request, result)
            except ClusterNotReadyError as exc:
                self.queue.add_rate_limited(request)
                outcome = "cluster-not-ready"
                self._count_retry(request, span, outcome)
                log.debug("reconcile %s: %s; retrying with backoff", request, exc)
            except ClusterNotEngagedError as exc:
                if exc.cluster != request.cluster:
                    outcome = self._after_error(request, exc, span)
                else:
                    self.queue.forget(request)
                    outcome = "dropped"
                    log.debug("dropping %s: %s", request, exc)
            except PermanentError as exc:
                self.queue.forget(request)
                mark_error(span, exc)
                self.metrics.reconcile_errors.add(1, self._attrs)
                log.error("reconcile %s failed permanently (no retry until it changes): %s", request, exc)
            except TemporaryError as exc:
                if exc.delay is not None:
                    self.queue.add_after(request, exc.delay)
                    outcome = "requeue_after"
                    log.info("reconcile %s: %s; retrying in %.1fs", request, exc, exc.delay)
                else:
                    self.queue.add_rate_limited(request)
                    outcome = "temporary"
                    self._count_retry(request, span, outcome)
                    log.info("reconcile %s: %s; retrying with backoff", request, exc)
            except APIError as exc:
                if is_conflict(exc):
                    self.queue.add_rate_limited(request)
                    outcome = "conflict"
                    note_conflict(span, exc)
                    self._count_retry(request, span, outcome)
                    log.debug("reconcile %s hit a conflict; retrying: %s", request, exc)
                else:
                    outcome = self._after_error(request, exc, span)
            except Exception as exc:  # noqa: BLE001 - any reconciler failure is retried with backoff
                outcome = self._after_error(request, exc, span)
            finally:
                self.in_flight -= 1
                self._active(-1)
                self._reconcile_time(time.monotonic() - started)
                counted = self._results.get(outcome)
                if counted is None:
                    counted = self._results[outcome] = self.metrics.reconcile_total.bound(
                        {**self._attrs, "result": outcome}
                    )
                counted(1)
                span.set_attribute("result", outcome)

    def _admit(self, request: Request) -> AbstractContextManager[None] | str:
        """The scope a request is reconciled in when the shard gate admits it (always,
        unsharded); else the outcome it is recorded with."""
        if self._gate is None:
            return _NO_SCOPE
        gate, owner = self._gate
        if not gate.lease_fresh():
            self.queue.add_rate_limited(request)
            return "lease-not-fresh"
        key = owner(request)
        if key is None:
            self.queue.forget(request)
            return "not-owned"
        return gate.reconciling(key)

    def _after_success(self, request: Request, result: Result) -> str:
        self.queue.forget(request)
        if result.requeue_after:
            self.queue.add_after(request, result.requeue_after)
            return "requeue_after"
        return "success"

    def _count_retry(self, request: Request, span: Any, reason: str) -> None:
        self.metrics.cluster_retries.add(1, {**self._attrs, "cluster": request.cluster})
        note_retry(span, reason, self.queue.num_requeues(request))

    def _after_error(self, request: Request, exc: Exception, span: Any) -> str:
        self.queue.add_rate_limited(request)
        self._count_retry(request, span, type(exc).__name__)
        mark_error(span, exc)
        self.metrics.reconcile_errors.add(1, self._attrs)
        log.error(
            "reconcile %s failed (retry %d): %s: %s",
            request,
            self.queue.num_requeues(request),
            type(exc).__name__,
            exc,
            exc_info=not isinstance(exc, APIError),
        )
        return "error"
