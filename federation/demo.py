"""`federation-manager up`: the all-in-one demo on embedded API servers.

It starts a management cluster, one control plane per project and one cluster per cell,
installs the CRDs where they belong, registers every cell and project in the management
cluster the way a platform team would (ClusterProfile + kubeconfig Secret), and applies
the sample Workload to the first project. Kubeconfigs land in the state directory so
kubectl can look at every cluster while the demo runs."""

from __future__ import annotations

import base64
import signal
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import yaml

from federation.api.clusternames import encode_upstream_cluster_name, parse_upstream_cluster_name
from federation.api.constants import Annotation, Label
from federation.api.crds import all_crd_manifests
from kubeplane import EmbeddedAPIServer

FIELD_MANAGER = "federation-demo"
REGISTRATION_NAMESPACE = "federation-system"
SAMPLES = Path(__file__).resolve().parent.parent / "config" / "samples"
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)


@dataclass(frozen=True)
class Cell:
    name: str
    city_code: str


@dataclass(frozen=True)
class Project:
    path: str  # "<org>/<project>"

    @property
    def name(self) -> str:
        """The cluster name every request carries: the bare project name."""
        return parse_upstream_cluster_name(encode_upstream_cluster_name(self.path)).project


def parse_cell(text: str) -> Cell:
    name, sep, city = text.partition(":")
    if not sep or not name or not city:
        raise ValueError(f"--cell {text!r}: expected NAME:CITY, e.g. cell-dfw:DFW")
    return Cell(name, city.upper())


def parse_project(text: str) -> Project:
    project = Project(text)
    project.name  # noqa: B018 - validates the org/project path, raising ValueError naming it
    return project


class Applier:
    """Server-side apply of plain manifests over HTTP, as a user's tooling would do."""

    PATHS = {
        ("v1", "Namespace"): ("/api/v1", "namespaces", False),
        ("v1", "Secret"): ("/api/v1", "secrets", True),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
            "/apis/apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            False,
        ),
        ("multicluster.x-k8s.io/v1alpha1", "ClusterProfile"): (
            "/apis/multicluster.x-k8s.io/v1alpha1",
            "clusterprofiles",
            True,
        ),
    }

    def __init__(self, session: aiohttp.ClientSession, server: EmbeddedAPIServer) -> None:
        self.session = session
        self.server = server

    def _path(self, obj: dict[str, Any]) -> str:
        api_version, kind = obj["apiVersion"], obj["kind"]
        known = self.PATHS.get((api_version, kind))
        if known is None:
            group_version = f"/apis/{api_version}"
            plural, namespaced = kind.lower() + "s", True
        else:
            group_version, plural, namespaced = known
        meta = obj["metadata"]
        scope = f"/namespaces/{meta.get('namespace', 'default')}" if namespaced else ""
        return f"{group_version}{scope}/{plural}/{meta['name']}"

    async def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.server.url}{self._path(obj)}?fieldManager={FIELD_MANAGER}&force=true"
        headers = {"Content-Type": "application/apply-patch+yaml"}
        async with self.session.patch(url, data=yaml.safe_dump(obj), headers=headers) as resp:
            body: dict[str, Any] = await resp.json(content_type=None)
            if resp.status >= 400:
                raise RuntimeError(
                    f"{self.server.name}: applying {obj['kind']} {obj['metadata']['name']}: "
                    f"{resp.status} {body.get('message', body)}"
                )
            return body

    async def wait_established(self, crd_names: list[str]) -> None:
        with anyio.fail_after(30):
            for name in crd_names:
                url = f"{self.server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                while True:
                    async with self.session.get(url) as resp:
                        conds = (await resp.json()).get("status", {}).get("conditions", [])
                    if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                        break
                    await anyio.sleep(0.02)


def _kubeconfig_secret(name: str, server: EmbeddedAPIServer) -> dict[str, Any]:
    text = yaml.safe_dump(server.kubeconfig())
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-kubeconfig", "namespace": REGISTRATION_NAMESPACE},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
    }


def _profile(name: str, labels: Mapping[str, str], display: str) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": name,
            "namespace": REGISTRATION_NAMESPACE,
            "labels": {**labels, "x-k8s.io/cluster-manager": "federation-manager"},
            "annotations": {str(Annotation.KUBECONFIG_SECRET): f"{name}-kubeconfig"},
        },
        "spec": {"displayName": display, "clusterManager": {"name": "federation-manager"}},
    }


async def up(state_dir: Path, cells: list[Cell], projects: list[Project], duration: float | None) -> None:
    await anyio.Path(state_dir).mkdir(parents=True, exist_ok=True)
    crds = all_crd_manifests()
    inventory = [c for c in crds if c["spec"]["group"] == "multicluster.x-k8s.io"]
    compute = [c for c in crds if c["spec"]["group"] != "multicluster.x-k8s.io"]
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession(timeout=REQUEST_TIMEOUT))

        async def start(name: str) -> EmbeddedAPIServer:
            server = EmbeddedAPIServer(name=name, kubeconfig=state_dir / f"{name}.kubeconfig")
            return await stack.enter_async_context(server)

        management = await start("management")
        project_servers = {p: await start(p.name) for p in projects}
        cell_servers = {c: await start(c.name) for c in cells}

        mgmt = Applier(session, management)
        for crd in inventory:
            await mgmt.apply(crd)
        await mgmt.wait_established([c["metadata"]["name"] for c in inventory])
        for server in [*project_servers.values(), *cell_servers.values()]:
            applier = Applier(session, server)
            for crd in compute:
                await applier.apply(crd)
            await applier.wait_established([c["metadata"]["name"] for c in compute])

        await mgmt.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REGISTRATION_NAMESPACE}})
        for cell, server in cell_servers.items():
            await mgmt.apply(_kubeconfig_secret(cell.name, server))
            await mgmt.apply(
                _profile(
                    cell.name,
                    {str(Label.CLUSTER_ROLE): "cell", str(Label.TOPOLOGY_CITY_CODE): cell.city_code},
                    f"{cell.city_code} cell {cell.name}",
                )
            )
        for project, server in project_servers.items():
            await mgmt.apply(_kubeconfig_secret(project.name, server))
            labels = {
                str(Label.CLUSTER_ROLE): "project",
                str(Label.UPSTREAM_CLUSTER_NAME): encode_upstream_cluster_name(project.path),
            }
            await mgmt.apply(_profile(project.name, labels, f"project {project.path}"))

        workload = yaml.safe_load(await anyio.Path(SAMPLES / "compute_v1alpha_workload.yaml").read_text())
        first = projects[0]
        await Applier(session, project_servers[first]).apply(workload)

        _print_summary(state_dir, management, project_servers, cell_servers, workload)
        await _wait(duration)


def _print_summary(
    state_dir: Path,
    management: EmbeddedAPIServer,
    projects: dict[Project, EmbeddedAPIServer],
    cells: dict[Cell, EmbeddedAPIServer],
    workload: dict[str, Any],
) -> None:
    lines = ["federation-manager demo is up on embedded API servers:", ""]
    lines.append(f"  {'cluster':<14}{'role':<12}{'city':<6}{'url':<28}kubeconfig")
    lines.append(f"  {'management':<14}{'management':<12}{'':<6}{management.url:<28}{management.kubeconfig_path}")
    for p, s in projects.items():
        lines.append(f"  {p.name:<14}{'project':<12}{'':<6}{s.url:<28}{s.kubeconfig_path}")
    for c, s in cells.items():
        lines.append(f"  {c.name:<14}{'cell':<12}{c.city_code:<6}{s.url:<28}{s.kubeconfig_path}")
    first = next(iter(projects))
    lines += [
        "",
        f"Registered {len(cells)} cells and {len(projects)} projects as ClusterProfiles; applied Workload "
        f"{workload['metadata']['name']!r} to project {first.name!r}.",
        "Try:",
        f"  kubectl --kubeconfig {state_dir / 'management.kubeconfig'} get clusterprofiles -A --show-labels",
        f"  kubectl --kubeconfig {state_dir / (first.name + '.kubeconfig')} get workloads",
        "",
        "The federator, cell controllers and projector arrive with later issues: nothing reconciles the",
        "Workload yet. Stop with Ctrl-C.",
    ]
    print("\n".join(lines), flush=True)


async def _wait(duration: float | None) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        with anyio.move_on_after(duration if duration is not None else float("inf")):
            async for _ in signals:
                break
    print("federation-manager demo: shutting down", flush=True)
