"""Multicluster controller runtime on asyncio: controller-runtime and
multicluster-runtime's concepts (cluster, provider, informer, cache, work queue,
handlers, predicates, reconciler, controller, manager) over plain JSON.

Writing a controller::

    mgr = Manager(await connection.load_default(), leader_election=...)
    mgr.add_provider(ClusterProfileProvider(secret_annotation=..., label_selector="role in (cell,project)"))

    async def reconcile(req: Request) -> Result:
        cluster = mgr.get_cluster(req.cluster)          # never a default cluster
        obj = await cluster.client.get(WIDGETS, req.name, req.namespace)  # from the cache
        ...
        return Result(requeue_after=30)

    ctrl = mgr.new_controller("widgets", reconcile, workers=4)
    ctrl.for_(WIDGETS, clusters=engaged("role=project"), predicates=[generation_changed])
    ctrl.watch(PODS, EnqueueRequestsFromMapFunc(to_widget, cluster_name=ClusterName.PRESERVE_MAPPED),
               clusters=engaged("role=cell"))
    await mgr.run(handle_signals=True)
"""

from . import connection, indexers, logs, predicates
from .backoff import Backoff
from .cache import InformerCache
from .client import Client, Preconditions, retry_on_conflict
from .cluster import Cluster
from .connection import ConnectionConfig
from .controller import Controller
from .errors import (
    APIError,
    CacheNotSyncedError,
    ClusterNotEngagedError,
    ConfigError,
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
from .providers import ClusterProfileProvider, KubeconfigDirProvider, KubeconfigSecretProvider, Provider
from .ratelimiter import BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter
from .reconciler import PermanentError, Reconciler, Result, TemporaryError
from .request import Request
from .resources import Resource
from .selectors import LabelSelector
from .source import ENGAGED, LOCAL, ClusterFilter, engaged, named
from .store import Store
from .transport import Transport
from .workqueue import QueueShutDown, WorkQueue

__all__ = [
    "ENGAGED",
    "LOCAL",
    "APIError",
    "Backoff",
    "BucketRateLimiter",
    "CacheNotSyncedError",
    "Client",
    "Cluster",
    "ClusterFilter",
    "ClusterName",
    "ClusterNotEngagedError",
    "ClusterProfileProvider",
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
    "ItemExponentialFailureRateLimiter",
    "KubeconfigDirProvider",
    "KubeconfigSecretProvider",
    "LabelSelector",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "MaxOfRateLimiter",
    "ObjectEvent",
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
    "WorkQueue",
    "connection",
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
