"""Clusters from SIG Multicluster `ClusterProfile` objects (multicluster.x-k8s.io/v1alpha1)
in the local cluster. The profile's name is the cluster name and its labels are the
cluster's labels; credentials come from a kubeconfig Secret in the profile's namespace,
named by an annotation on the profile (default `<profile>-kubeconfig`).

Runs as a controller over the local cluster: profile events and events of the Secrets
they reference both lead to the profile's reconcile, which engages, re-engages (new
credentials or labels) or disengages the cluster. A profile whose Secret is missing or
unusable is disengaged and logged; the Secret's own events bring it back."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.abc

from ..controller import Controller
from ..errors import ConfigError
from ..fields import get_str, get_str_map, is_deleting
from ..handlers import ClusterName, EnqueueRequestsFromMapFunc
from ..indexers import NAMESPACE
from ..informer import Informer
from ..reconciler import Result
from ..request import Request
from ..resources import CLUSTER_PROFILES, SECRETS
from ..source import LOCAL
from ..view import View
from .base import ClusterHost, run_provider_controller
from .secretdata import config_from_secret

log = logging.getLogger(__name__)


class ClusterProfileProvider:
    name = "clusterprofiles"

    def __init__(
        self,
        *,
        secret_annotation: str,
        namespace: str | None = None,
        label_selector: str = "",
        secret_suffix: str = "-kubeconfig",
        kubeconfig_key: str = "kubeconfig",
        workers: int = 2,
    ) -> None:
        if not secret_annotation:
            raise ValueError(
                "the ClusterProfile provider needs the name of the annotation naming the kubeconfig Secret"
            )
        self.secret_annotation = secret_annotation
        self.namespace = namespace or None
        self.label_selector = label_selector or None
        self.secret_suffix = secret_suffix
        self.kubeconfig_key = kubeconfig_key
        self.workers = workers
        self.engaged: dict[str, str] = {}  # cluster name → namespace of its profile
        self._host: ClusterHost | None = None
        self._profiles: Informer | None = None
        self._secrets: Informer | None = None
        self._controller: Controller | None = None

    @property
    def has_synced(self) -> bool:
        return self._controller is not None and self._controller.idle

    def secret_name(self, profile: dict[str, Any]) -> str:
        return str(
            get_str_map(profile, "metadata.annotations").get(self.secret_annotation)
            or f"{get_str(profile, 'metadata.name', required=False)}{self.secret_suffix}"
        )

    def _profiles_for_secret(self, _cluster: str, secret: dict[str, Any]) -> list[Request]:
        assert self._profiles is not None and self._host is not None
        ns, name = (
            get_str(secret, "metadata.namespace", required=False),
            get_str(secret, "metadata.name", required=False),
        )
        local = self._host.local.name
        return [
            Request(local, ns, get_str(p, "metadata.name", required=False))
            for p in self._profiles.store.by_index(NAMESPACE, ns)
            if self.secret_name(p) == name
        ]

    async def _drop(self, cluster: str, namespace: str) -> None:
        assert self._host is not None
        if self.engaged.get(cluster) == namespace:
            del self.engaged[cluster]
            await self._host.disengage(cluster)

    async def reconcile(self, request: Request) -> Result:
        assert self._host is not None and self._profiles is not None and self._secrets is not None
        cluster, ns = request.name, request.namespace
        profile = self._profiles.get(cluster, namespace=ns)
        if profile is None or is_deleting(profile):
            await self._drop(cluster, ns)
            return Result()
        owner = self.engaged.get(cluster)
        if owner is not None and owner != ns:
            log.error("ClusterProfiles %s/%s and %s/%s both name cluster %r; keeping the first", owner, cluster, ns,
                      cluster, cluster)  # fmt: skip
            return Result()
        secret_name = self.secret_name(profile)
        secret = self._secrets.get(secret_name, namespace=ns)
        if secret is None:
            # the normal order of `kubectl apply` for a profile and its Secret: the Secret's
            # own event engages the cluster a moment later
            log.info("ClusterProfile %s/%s: waiting for its kubeconfig Secret %s/%s", ns, cluster, ns,
                     secret_name)  # fmt: skip
            await self._drop(cluster, ns)
            return Result()
        try:
            config = await config_from_secret(secret, self.kubeconfig_key)
        except ConfigError as exc:
            log.error("ClusterProfile %s/%s: cluster not engaged: %s", ns, cluster, exc)
            await self._drop(cluster, ns)
            return Result()
        await self._host.engage(cluster, config, get_str_map(profile, "metadata.labels"))
        self.engaged[cluster] = ns
        return Result()

    async def run(
        self, host: ClusterHost, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        self._host = host
        local = host.local
        controller = Controller(
            f"provider-{self.name}", self, workers=self.workers, needs_leader_election=False,
            metrics=local.transport.metrics,
        )  # fmt: skip
        controller.for_(CLUSTER_PROFILES, clusters=LOCAL, namespace=self.namespace, label_selector=self.label_selector)
        controller.watch(
            SECRETS,
            EnqueueRequestsFromMapFunc(self._profiles_for_secret, cluster_name=ClusterName.INJECT_SOURCE),
            clusters=LOCAL,
            namespace=self.namespace,
        )
        self._profiles = local.cache.declare(View(CLUSTER_PROFILES, self.namespace, self.label_selector))
        self._secrets = local.cache.declare(View(SECRETS, self.namespace))
        self._controller = controller
        await run_provider_controller(controller, host, self.engaged, task_status=task_status)
