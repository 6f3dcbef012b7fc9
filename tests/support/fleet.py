"""A federation on embedded API servers for integration tests: one management cluster
(ClusterProfile CRD, registration namespace), project control planes and cells (compute
CRDs), each with a kubeconfig under the test's directory. Registration writes the
ClusterProfile + kubeconfig Secret pair a platform team would (federation/registration.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federation.api.constants import REGISTRATION_NAMESPACE
from federation.join import compute_crds as join_compute_crds
from federation.join import inventory_crds
from federation.registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile
from kubeplane import EmbeddedAPIServer
from mcruntime import ConnectionConfig
from mcruntime.errors import APIError, is_not_found

from .crds import install_crd
from .plane import Plane, config_for

INVENTORY_GROUP = "multicluster.x-k8s.io"


@dataclass
class Fleet:
    tmp: Path
    stack: AsyncExitStack
    management: EmbeddedAPIServer
    projects: dict[str, EmbeddedAPIServer] = field(default_factory=dict)  # bare project name → server
    cells: dict[str, EmbeddedAPIServer] = field(default_factory=dict)
    project_paths: dict[str, str] = field(default_factory=dict)  # bare project name → org/project
    cities: dict[str, str] = field(default_factory=dict)  # cell → city code

    # ------------------------------------------------------------------ servers
    def server(self, cluster: str) -> EmbeddedAPIServer:
        if cluster == "management":
            return self.management
        return self.projects.get(cluster) or self.cells[cluster]

    def plane(self, cluster: str) -> Plane:
        return Plane(self.server(cluster))

    def config(self, cluster: str = "management") -> ConnectionConfig:
        return config_for(self.server(cluster))

    async def _start(self, name: str) -> EmbeddedAPIServer:
        server = EmbeddedAPIServer(name=name, kubeconfig=self.tmp / f"{name}.kubeconfig", bookmark_interval=1.0)
        return await self.stack.enter_async_context(server)

    async def add_project(self, path: str, *, register: bool = True) -> str:
        name = project_cluster_name(path)
        server = await self._start(name)
        for crd in compute_crds():
            await install_crd(server, crd)
        self.projects[name] = server
        self.project_paths[name] = path
        if register:
            self.register(name)
        return name

    async def add_cell(
        self, name: str, city: str, *, register: bool = True, crds: Iterable[dict[str, Any]] | None = None
    ) -> str:
        """A cell with the project's compute CRDs, or `crds` (a cell at another CRD version)."""
        server = await self._start(name)
        for crd in compute_crds() if crds is None else crds:
            await install_crd(server, crd)
        self.cells[name] = server
        self.cities[name] = city
        if register:
            self.register(name)
        return name

    # ------------------------------------------------------------------ registration
    def registration(self, cluster: str) -> list[dict[str, Any]]:
        server = self.server(cluster)
        if cluster in self.cells:
            profile = cell_profile(cluster, self.cities[cluster])
        else:
            profile = project_profile(self.project_paths[cluster])
        return [kubeconfig_secret(cluster, server.kubeconfig()), profile]

    def register(self, cluster: str) -> None:
        """Write (or overwrite) the cluster's Secret and ClusterProfile in management."""
        mgmt = Plane(self.management)
        for obj in self.registration(cluster):
            plural, group, version = _address(obj)
            try:
                mgmt.create(plural, obj, group=group, version=version)
            except APIError as exc:
                if exc.status != 409:
                    raise
                name = obj["metadata"]["name"]
                current = mgmt.get(plural, REGISTRATION_NAMESPACE, name, group=group, version=version)
                obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                mgmt.update(plural, obj, group=group, version=version)

    def deregister(self, cluster: str) -> None:
        mgmt = Plane(self.management)
        for obj in reversed(self.registration(cluster)):
            plural, group, version = _address(obj)
            try:
                mgmt.delete(plural, REGISTRATION_NAMESPACE, obj["metadata"]["name"], group=group, version=version)
            except APIError as exc:
                if not is_not_found(exc):
                    raise

    def relabel_cell(self, cell: str, city: str) -> None:
        self.cities[cell] = city
        self.register(cell)


def _address(obj: dict[str, Any]) -> tuple[str, str, str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = "secrets" if obj["kind"] == "Secret" else "clusterprofiles"
    return plural, group, version


def compute_crds() -> list[dict[str, Any]]:
    return join_compute_crds()


@asynccontextmanager
async def fleet(
    tmp: Path,
    *,
    projects: Iterable[str] = ("acme/web",),
    cells: Iterable[tuple[str, str]] = (("cell-dfw", "DFW"),),
    register: bool = True,
) -> AsyncIterator[Fleet]:
    """Start management, the projects (`org/project`) and the cells (`(name, CITY)`)."""
    async with AsyncExitStack() as stack:
        management = await stack.enter_async_context(
            EmbeddedAPIServer(name="management", kubeconfig=tmp / "management.kubeconfig", bookmark_interval=1.0)
        )
        for crd in inventory_crds():  # registrations and the Location registry
            await install_crd(management, crd)
        Plane(management).create("namespaces", {"metadata": {"name": REGISTRATION_NAMESPACE}})
        f = Fleet(tmp, stack, management)
        for path in projects:
            await f.add_project(path, register=register)
        for name, city in cells:
            await f.add_cell(name, city, register=register)
        yield f
