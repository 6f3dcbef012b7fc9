"""An embedded cell for the cell-mode integration tests: one API server with the kubelet
stand-in and the project's CRDs, a downstream namespace labelled as the federator labels
it, the manager built exactly as `federation-manager run --enable-cell-controllers` builds
it, and the real kubectl pointed at the cell."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cells.readiness import is_ready
from federation.api.constants import Label
from federation.api.resources import INSTANCES, WORKLOAD_DEPLOYMENTS
from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path
from mcruntime import EventType, Manager, ObjectEvent, View
from tests.support import Background, Plane, cell_settings, cluster_for, eventually, install_project_crds, running

GROUP, VERSION = "compute.datumapis.com", "v1alpha"
QUOTA_GROUP = f"quota.{GROUP}"
NS = "ns-0c3e0e5a-7d2b-4b7e-9a55-3f1d7c0b9e21"
UPSTREAM_LABELS = {Label.UPSTREAM_CLUSTER_NAME.value: "cluster-acme_web", Label.UPSTREAM_NAMESPACE.value: "default"}
IMAGE = "docker.io/library/nginx:1.27"


def template(image: str = IMAGE, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "api", **labels}},
        "spec": {
            "runtime": {
                "resources": {"instanceType": "datumcloud/d1-standard-2"},
                "sandbox": {"containers": [{"name": "api", "image": image}]},
            },
            "networkInterfaces": [{"network": {"name": "default"}}],
        },
    }


def workload_deployment(
    name: str = "api",
    replicas: int | None = 3,
    *,
    image: str = IMAGE,
    ordinal_start: int | None = None,
    **scale: Any,
) -> dict[str, Any]:
    """A downstream WorkloadDeployment as the federator writes it into a cell."""
    spec: dict[str, Any] = {
        "workloadRef": {"name": "api", "uid": "4f0c54f6-5a37-4a59-9c7e-2f7f3f1f9a01"},
        "placementName": "edge",
        "cityCode": "DFW",
        "template": template(image),
        "scaleSettings": {"minReplicas": 1, **scale},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "labels": {Label.TOPOLOGY_CITY_CODE.value: "DFW", Label.UPSTREAM_NAMESPACE.value: "default"},
    }
    if ordinal_start is not None:
        metadata["annotations"] = {"compute.datumapis.com/ordinal-start": str(ordinal_start)}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadDeployment", "metadata": metadata, "spec": spec}


@dataclass
class Cell:
    server: EmbeddedAPIServer
    manager: Manager
    kubectl: Kubectl
    plane: Plane

    # ------------------------------------------------------------------ reads (straight from the plane)
    def wd(self, name: str = "api") -> dict[str, Any] | None:
        found = [o for o in self.plane.list("workloaddeployments", NS, group=GROUP, version=VERSION)]
        return next((o for o in found if o["metadata"]["name"] == name), None)

    def instances(self, wd: str = "api") -> dict[str, dict[str, Any]]:
        """The Instances named `<wd>-<n>`, by name."""
        found = self.plane.list("instances", NS, group=GROUP, version=VERSION)
        prefix = f"{wd}-"
        return {
            o["metadata"]["name"]: o
            for o in found
            if o["metadata"]["name"].startswith(prefix) and o["metadata"]["name"][len(prefix) :].isdigit()
        }

    def pods(self) -> dict[str, dict[str, Any]]:
        return {o["metadata"]["name"]: o for o in self.plane.list("pods", NS)}

    def claims(self) -> dict[str, dict[str, Any]]:
        return {
            o["metadata"]["name"]: o for o in self.plane.list("resourceclaims", NS, group=QUOTA_GROUP, version=VERSION)
        }

    def hpa(self, name: str) -> dict[str, Any] | None:
        found = self.plane.list("horizontalpodautoscalers", NS, group="autoscaling", version="v2")
        return next((o for o in found if o["metadata"]["name"] == name), None)

    def ready_names(self, wd: str = "api") -> set[str]:
        return {n for n, o in self.instances(wd).items() if is_ready(o) and not o["metadata"].get("deletionTimestamp")}

    def running_pods(self) -> set[str]:
        return {
            n
            for n, p in self.pods().items()
            if not p["metadata"].get("deletionTimestamp")
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in p.get("status", {}).get("conditions", [])
            )
        }

    # ------------------------------------------------------------------ writes
    def create_wd(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.plane.create("workloaddeployments", obj, group=GROUP, version=VERSION)

    def edit_wd(self, change: Callable[[dict[str, Any]], None], name: str = "api") -> dict[str, Any]:
        current = self.wd(name)
        assert current is not None, f"WorkloadDeployment {name} not found"
        edited = copy.deepcopy(current)
        change(edited)
        return self.plane.update("workloaddeployments", edited, group=GROUP, version=VERSION)

    # ------------------------------------------------------------------ waits
    async def converged(self, wd: str = "api", names: set[str] | None = None, within: float = 20.0) -> dict[str, Any]:
        """Every wanted Instance Ready with a running Pod, and the WD status saying so at its generation."""
        wanted = names if names is not None else {f"{wd}-{i}" for i in range(3)}

        def check() -> dict[str, Any] | None:
            obj = self.wd(wd)
            if obj is None or set(self.instances(wd)) != wanted or self.ready_names(wd) != wanted:
                return None
            if not wanted <= self.running_pods():
                return None
            status = obj.get("status") or {}
            n = len(wanted)
            counters = [status.get(k) for k in ("replicas", "readyReplicas", "updatedReplicas", "currentReplicas")]
            if counters != [n] * 4 or status.get("observedGeneration") != obj["metadata"]["generation"]:
                return None
            return obj

        result: dict[str, Any] = await eventually(check, f"{wd}: {sorted(wanted)} ready and reported", within=within)
        return result


class History:
    """Every Instance and WorkloadDeployment event of the namespace, in the server's order
    (a watch, as a user's `kubectl get -w` would see them), and what they add up to."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.instances: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []  # Instances in the order they were marked for deletion
        self.created: list[str] = []  # Instances in the order they were created
        self.down: list[int] = []  # after each Instance event: wanted Instances missing, deleting or not ready
        self.updated_replicas: list[int] = []  # each distinct WD status.updatedReplicas, in order
        self.resumed: list[tuple[str, set[str]]] = []  # status.suspended true -> not: (Instance, the ready ones then)

    def _is_down(self, name: str) -> bool:
        obj = self.instances.get(name)
        return obj is None or bool(obj["metadata"].get("deletionTimestamp")) or not is_ready(obj)

    async def on_instance(self, event: ObjectEvent) -> None:
        name = event.obj["metadata"]["name"]
        if event.type is EventType.DELETED:
            self.instances.pop(name, None)
        else:
            old = self.instances.get(name)
            if old is None:
                self.created.append(name)
            elif event.obj["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
                self.deleted.append(name)
            elif (old.get("status") or {}).get("suspended") and not (event.obj.get("status") or {}).get("suspended"):
                self.resumed.append((name, {n for n, o in self.instances.items() if is_ready(o)}))
            self.instances[name] = event.obj
        self.down.append(sum(self._is_down(n) for n in self.wanted))

    async def on_wd(self, event: ObjectEvent) -> None:
        value = (event.obj.get("status") or {}).get("updatedReplicas")
        if isinstance(value, int) and (not self.updated_replicas or self.updated_replicas[-1] != value):
            self.updated_replicas.append(value)


@asynccontextmanager
async def history(server: EmbeddedAPIServer, wanted: set[str]) -> AsyncIterator[History]:
    """Record from now on (the current state first, as ADDED events)."""
    observer = cluster_for(server, "observer")
    seen = History(wanted)
    instances = observer.cache.declare(View(INSTANCES, namespace=NS))
    wds = observer.cache.declare(View(WORKLOAD_DEPLOYMENTS, namespace=NS))
    handles = [instances.add_listener(seen.on_instance), wds.add_listener(seen.on_wd)]
    async with Background(observer.run):
        for handle in handles:
            assert await handle.wait_synced(10)
        seen.created.clear()  # the initial listing is neither a creation nor a step of the roll
        seen.down.clear()
        yield seen


@asynccontextmanager
async def cell(tmp: Path, *, feature_gates: str = "PodRuntime=true", **settings: Any) -> AsyncIterator[Cell]:
    """An embedded cell with the cell controllers running against it."""
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    kubeconfig = tmp / "cell.kubeconfig"
    async with EmbeddedAPIServer(name="cell-dfw", kubeconfig=kubeconfig, bookmark_interval=1.0) as server:
        await install_project_crds(server)
        plane = Plane(server)
        plane.create("namespaces", {"metadata": {"name": NS, "labels": dict(UPSTREAM_LABELS)}})
        values = {"site_name": "cell-dfw", "city_code": "DFW", "local_cluster_name": "cell-dfw", **settings}
        async with running(cell_settings(kubeconfig, feature_gates=feature_gates, **values)) as manager:
            yield Cell(server, manager, Kubectl(kubeconfig, tmp / "kubectl-cache"), plane)
