"""A controller: watches (source → predicates → handler) feed a work queue of requests;
N workers take requests off the queue and call the reconciler, one request per key at a
time, and decide from the outcome whether and when the request comes back.

Clusters are bound at run time: `engage(cluster)` attaches every watch whose cluster
filter matches to that cluster's shared informers; `disengage(name)` detaches them.
Requests for a cluster that is gone fail with ClusterNotEngagedError and are dropped
(re-engaging lists everything again, so nothing is lost)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from opentelemetry.trace import TracerProvider

from . import logs
from .errors import APIError, ClusterNotEngagedError, is_conflict
from .handlers import EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler
from .informer import ListenerHandle, ObjectEvent
from .metrics import RuntimeMetrics, default_metrics
from .predicates import Predicate
from .ratelimiter import RateLimiter
from .reconciler import FuncReconciler, PermanentError, ReconcileFunc, Reconciler, Result, TemporaryError
from .request import Request
from .resources import Resource
from .source import ENGAGED, ClusterFilter, Watch
from .tracing import mark_error, reconcile_span, tracer_for
from .workqueue import QueueShutDown, WorkQueue

if TYPE_CHECKING:
    from .cluster import Cluster

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
        self.metrics = metrics or default_metrics()
        self.tracer = tracer_for(tracer_provider)
        self.queue: WorkQueue[Request] = WorkQueue(name, rate_limiter=rate_limiter, metrics=self.metrics)
        self.watches: list[Watch] = []
        self._bindings: dict[str, list[ListenerHandle]] = {}
        self._attrs = {"controller": name}
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self._stopped = anyio.Event()
        self.in_flight = 0

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
    ) -> Controller:
        if not isinstance(handler, EventHandler):
            raise TypeError(f"controller {self.name}: handler must be an EventHandler, got {handler!r}")
        if self._bindings:
            raise RuntimeError(f"controller {self.name}: add watches before clusters are engaged")
        self.watches.append(
            Watch(resource, handler, clusters, tuple(predicates), namespace, label_selector, field_selector)
        )
        return self

    def for_(self, resource: Resource, **options: Any) -> Controller:
        """Reconcile `resource` itself (builder.For)."""
        return self.watch(resource, EnqueueRequestForObject(), **options)

    def owns(self, resource: Resource, *, owner: Resource, only_controller: bool = True, **options: Any) -> Controller:
        """Reconcile the owner of `resource` objects (builder.Owns)."""
        return self.watch(resource, EnqueueRequestForOwner(owner, only_controller=only_controller), **options)

    # ------------------------------------------------------------------ clusters
    def engage(self, cluster: Cluster, *, is_local: bool = False) -> int:
        """Bind the watches that cover this cluster; returns how many were bound."""
        if cluster.name in self._bindings:
            return len(self._bindings[cluster.name])
        handles: list[ListenerHandle] = []
        for watch in self.watches:
            if not watch.clusters.matches(cluster.name, cluster.labels, is_local=is_local):
                continue
            informer = cluster.cache.informer(
                watch.resource,
                namespace=watch.namespace,
                label_selector=watch.label_selector,
                field_selector=watch.field_selector,
            )
            handles.append(
                informer.add_listener(self._listener(watch, cluster.name), name=f"{self.name}/{watch.resource}")
            )
        self._bindings[cluster.name] = handles
        return len(handles)

    def disengage(self, cluster_name: str) -> None:
        for handle in self._bindings.pop(cluster_name, []):
            handle.remove()

    @property
    def engaged_clusters(self) -> list[str]:
        return list(self._bindings)

    @property
    def has_synced(self) -> bool:
        """Every bound watch has handed its informer's initial state to the handlers."""
        return all(h.synced for hs in self._bindings.values() for h in hs)

    @property
    def idle(self) -> bool:
        """Synced, nothing queued, nothing in flight (delayed requeues do not count)."""
        return self.has_synced and len(self.queue) == 0 and self.in_flight == 0

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
        self.queue.add(request)

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
                task_status.started()
        finally:
            self._tg = None
            self._stopped.set()
            log.info("controller %s stopped", self.name)

    async def shutdown(self, grace: float = 30.0) -> None:
        """Stop taking new work, let in-flight reconciles finish (up to `grace` seconds), stop."""
        self.queue.shutdown()
        if not self._started:
            return
        with anyio.move_on_after(grace) as scope:
            await self._stopped.wait()
        if scope.cancelled_caught and self._tg is not None:
            log.warning("controller %s: in-flight reconciles did not finish within %.0fs; cancelling", self.name, grace)
            self._tg.cancel_scope.cancel()
            await self._stopped.wait()

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                request = await queue.get()
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
        self.metrics.active_workers.add(1, self._attrs)
        with (
            logs.bound(controller=self.name, cluster=request.cluster, namespace=request.namespace, name=request.name),
            reconcile_span(self.tracer, self.name, request) as span,
        ):
            try:
                if not request.cluster:
                    raise ClusterNotEngagedError("")
                timeout = anyio.fail_after(self.reconcile_timeout) if self.reconcile_timeout else nullcontext()
                with timeout:
                    result = await self.reconciler.reconcile(request)
                if not isinstance(result, Result):
                    raise TypeError(f"reconciler returned {result!r}; it must return a Result (Result() when done)")
                outcome = self._after_success(request, result)
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
                    self.queue.forget(request)
                    self.queue.add_after(request, exc.delay)
                    outcome = "requeue_after"
                    log.info("reconcile %s: %s; retrying in %.1fs", request, exc, exc.delay)
                else:
                    outcome = self._after_error(request, exc, span)
            except APIError as exc:
                if is_conflict(exc):
                    self.queue.add_rate_limited(request)
                    outcome = "conflict"
                    log.debug("reconcile %s hit a conflict; retrying: %s", request, exc)
                else:
                    outcome = self._after_error(request, exc, span)
            except Exception as exc:  # noqa: BLE001 - any reconciler failure is retried with backoff
                outcome = self._after_error(request, exc, span)
            finally:
                self.in_flight -= 1
                self.metrics.active_workers.add(-1, self._attrs)
                self.metrics.reconcile_time.record(time.monotonic() - started, self._attrs)
                self.metrics.reconcile_total.add(1, {**self._attrs, "result": outcome})
                span.set_attribute("result", outcome)

    def _after_success(self, request: Request, result: Result) -> str:
        if result.requeue_after:
            self.queue.forget(request)
            self.queue.add_after(request, result.requeue_after)
            return "requeue_after"
        if result.requeue:
            self.queue.add_rate_limited(request)
            return "requeue"
        self.queue.forget(request)
        return "success"

    def _after_error(self, request: Request, exc: Exception, span: Any) -> str:
        self.queue.add_rate_limited(request)
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
