"""Clusters from kubeconfig Secrets in the local cluster, selected by a label selector:
one Secret per cluster, the cluster named after the Secret (or an annotation), its
labels the Secret's labels, its kubeconfig under `data[kubeconfig_key]`. Runs as a
controller over the local cluster, so a bad Secret backs off like any failed reconcile
and a fixed one is picked up from its update event."""

from __future__ import annotations

import logging

import anyio
import anyio.abc

from ..controller import Controller
from ..errors import ConfigError
from ..fields import get_str, get_str_map, is_deleting
from ..informer import Informer
from ..reconciler import Result
from ..request import Request
from ..resources import SECRETS
from ..source import LOCAL
from ..view import View
from .base import ClusterHost, run_provider_controller
from .secretdata import config_from_secret

log = logging.getLogger(__name__)


class KubeconfigSecretProvider:
    name = "kubeconfig-secrets"

    def __init__(
        self,
        *,
        namespace: str,
        label_selector: str,
        kubeconfig_key: str = "kubeconfig",
        cluster_name_annotation: str | None = None,
        workers: int = 2,
    ) -> None:
        if not namespace:
            raise ValueError("the kubeconfig Secret provider needs a namespace")
        if not label_selector:
            raise ValueError("the kubeconfig Secret provider needs a label selector (it must not read every Secret)")
        self.namespace = namespace
        self.label_selector = label_selector
        self.kubeconfig_key = kubeconfig_key
        self.cluster_name_annotation = cluster_name_annotation
        self.workers = workers
        self.engaged: dict[str, str] = {}  # cluster name → Secret name
        self._host: ClusterHost | None = None
        self._informer: Informer | None = None
        self._controller: Controller | None = None

    @property
    def has_synced(self) -> bool:
        return self._controller is not None and self._controller.idle

    def _cluster_name(self, secret: dict[str, object]) -> str:
        if self.cluster_name_annotation:
            named = get_str_map(secret, "metadata.annotations").get(self.cluster_name_annotation)
            if named:
                return str(named)
        return get_str(secret, "metadata.name", required=False)

    async def reconcile(self, request: Request) -> Result:
        assert self._host is not None and self._informer is not None
        secret = self._informer.get(request.name, namespace=request.namespace)
        if secret is None or is_deleting(secret):
            for cluster, source in list(self.engaged.items()):
                if source == request.name:
                    del self.engaged[cluster]
                    await self._host.disengage(cluster)
            return Result()
        cluster = self._cluster_name(secret)
        owner = self.engaged.get(cluster)
        if owner is not None and owner != request.name:
            log.error("Secrets %s and %s both name cluster %r; keeping %s", owner, request.name, cluster, owner)
            return Result()
        for other, source in list(self.engaged.items()):
            if source == request.name and other != cluster:  # the annotation renamed the cluster
                del self.engaged[other]
                await self._host.disengage(other)
        try:
            config = await config_from_secret(secret, self.kubeconfig_key)
        except ConfigError as exc:
            log.error("cluster %s not engaged: %s", cluster, exc)
            if cluster in self.engaged:
                del self.engaged[cluster]
                await self._host.disengage(cluster)
            return Result()  # nothing to retry until the Secret changes
        await self._host.engage(cluster, config, get_str_map(secret, "metadata.labels"))
        self.engaged[cluster] = request.name
        return Result()

    async def run(
        self, host: ClusterHost, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        self._host = host
        local = host.local
        controller = Controller(
            f"provider-{self.name}",
            self,
            workers=self.workers,
            needs_leader_election=False,
            metrics=local.transport.metrics,
        )
        controller.for_(SECRETS, clusters=LOCAL, namespace=self.namespace, label_selector=self.label_selector)
        self._informer = local.cache.declare(View(SECRETS, self.namespace, self.label_selector))
        self._controller = controller
        await run_provider_controller(controller, host, self.engaged, task_status=task_status)
