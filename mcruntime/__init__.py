"""Multicluster controller runtime on asyncio: controller-runtime and
multicluster-runtime's concepts (cluster, provider, informer, cache, work queue,
handlers, predicates, reconciler, controller, manager) over plain JSON.

Writing a controller::

    mgr = Manager(await connection.load_default(), leader_election=...)
    mgr.add_provider(ClusterProfileProvider(secret_annotation=..., label_selector="role in (cell,project)"))

    async def reconcile(req: Request) -> Result:
        cluster = mgr.get_cluster(req.cluster)          # never a default cluster
        obj = await cluster.client.get_or_none(WIDGETS, req.name, namespace=req.namespace)  # the cache view
        if obj is None:
            return Result()
        ...
        return Result()

    ctrl = mgr.new_controller("widgets", reconcile, workers=4)
    ctrl.for_(WIDGETS, clusters=engaged("role=project"), predicates=[generation_changed])
    ctrl.watch(PODS, EnqueueRequestsFromMapFunc(to_widget, cluster_name=ClusterName.PRESERVE_MAPPED),
               clusters=engaged("role=cell"), label_selector="app.example.com/widget")
    ctrl.watch_clusters(widgets_for_new_cell, clusters=engaged("role=cell"))
    await mgr.run(handle_signals=True)

Reads come from the cache view the controller declared for the resource (one informer
per cluster, resource and view, shared with the watch); what each reconcile outcome
leads to is tabled in `reconciler.py`; `controllerutil` has the author's kit."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import connection, controllerutil, indexers, logs, predicates
from .backoff import Backoff
from .cache import CacheOptions, InformerCache, InformerOptions, ViewConflictError
from .client import Client, Preconditions, retry_on_conflict
from .cluster import Cluster, ClusterOptions, ClusterState, TransportOptions
from .connection import ConnectionConfig
from .controller import Controller
from .errors import (
    APIError,
    CacheNotSyncedError,
    ClusterNotEngagedError,
    ClusterNotReadyError,
    ConfigError,
    NoCacheViewError,
    TransportError,
    is_already_exists,
    is_conflict,
    is_expired,
    is_not_found,
)
from .events import EventRecorder
from .handlers import (
    ClusterName,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
    RequestSink,
)
from .informer import EventType, Informer, ObjectEvent
from .leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector
from .manager import Manager
from .metrics import RuntimeMetrics
from .providers import Provider
from .ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    PartitionedRateLimiter,
    RateLimiter,
)
from .reconciler import PermanentError, Reconciler, Result, TemporaryError
from .request import Request
from .resources import Resource
from .selectors import LabelSelector
from .source import ENGAGED, LOCAL, ClusterEvent, ClusterEventType, ClusterFilter, engaged, named
from .store import Store
from .transport import Transport
from .view import View
from .workqueue import QueueShutDown, WorkQueue

__all__ = [
    "ENGAGED",
    "LOCAL",
    "APIError",
    "Backoff",
    "BucketRateLimiter",
    "CacheNotSyncedError",
    "CacheOptions",
    "Client",
    "Cluster",
    "ClusterEvent",
    "ClusterEventType",
    "ClusterFilter",
    "ClusterName",
    "ClusterNotEngagedError",
    "ClusterNotReadyError",
    "ClusterOptions",
    "ClusterProfileProvider",
    "ClusterState",
    "ConfigError",
    "ConnectionConfig",
    "Controller",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "EventRecorder",
    "EventType",
    "Informer",
    "InformerCache",
    "InformerOptions",
    "ItemExponentialFailureRateLimiter",
    "KubeconfigDirProvider",
    "KubeconfigSecretProvider",
    "LabelSelector",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "MaxOfRateLimiter",
    "NoCacheViewError",
    "ObjectEvent",
    "PartitionedRateLimiter",
    "PermanentError",
    "Preconditions",
    "Provider",
    "QueueShutDown",
    "RateLimiter",
    "Reconciler",
    "Request",
    "RequestSink",
    "Resource",
    "Result",
    "RuntimeMetrics",
    "Store",
    "TemporaryError",
    "Transport",
    "TransportError",
    "TransportOptions",
    "View",
    "ViewConflictError",
    "WorkQueue",
    "connection",
    "controllerutil",
    "engaged",
    "indexers",
    "is_already_exists",
    "is_conflict",
    "is_expired",
    "is_not_found",
    "logs",
    "named",
    "predicates",
    "retry_on_conflict",
]


# The cluster providers load on first use (PEP 562): a manager runs one of them, or none
# (issue 22, "a small process"; tests/test_lean_process.py).
_PROVIDERS = {
    "ClusterProfileProvider": ".providers.clusterprofile",
    "KubeconfigDirProvider": ".providers.kubeconfig_dir",
    "KubeconfigSecretProvider": ".providers.secrets",
}

if TYPE_CHECKING:
    from .providers.clusterprofile import ClusterProfileProvider
    from .providers.kubeconfig_dir import KubeconfigDirProvider
    from .providers.secrets import KubeconfigSecretProvider


def __getattr__(name: str) -> Any:
    if name in _PROVIDERS:
        return getattr(importlib.import_module(_PROVIDERS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
