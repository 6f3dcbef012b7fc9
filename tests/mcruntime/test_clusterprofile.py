from __future__ import annotations

import base64
import logging
from typing import Any

import anyio
import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from mcruntime import ClusterProfileProvider, Manager, Request, Result, engaged
from mcruntime.resources import CONFIGMAPS
from tests.support import Plane, config_for, configmap, eventually, install_project_crds

ROLE = "compute.datumapis.com/cluster-role"
SECRET_ANNOTATION = "compute.datumapis.com/kubeconfig-secret"
GROUP = "multicluster.x-k8s.io"


def profile(name: str, role: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": name, "namespace": "fleet", "labels": {ROLE: role}, "annotations": annotations or {}},
        "spec": {"displayName": name, "clusterManager": {"name": "federation"}},
    }


def kubeconfig_secret(name: str, server: EmbeddedAPIServer) -> dict[str, Any]:
    data = base64.b64encode(yaml.safe_dump(server.kubeconfig()).encode()).decode()
    return {"metadata": {"name": name, "namespace": "fleet"}, "data": {"kubeconfig": data}}


async def test_cluster_profiles_engage_rotate_relabel_and_disengage(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    await install_project_crds(apiserver)
    mgmt = Plane(apiserver)
    mgmt.create("namespaces", {"metadata": {"name": "fleet"}})
    async with EmbeddedAPIServer(name="third", bookmark_interval=1.0) as third:
        Plane(second_server).create("configmaps", configmap("in-second"))
        Plane(third).create("configmaps", configmap("in-third"))
        mgmt.create("clusterprofiles", profile("dfw-1", "cell"), group=GROUP, version="v1alpha1")
        mgmt.create("secrets", kubeconfig_secret("dfw-1-kubeconfig", second_server))
        mgmt.create(
            "clusterprofiles",
            profile("web", "project", {SECRET_ANNOTATION: "web-credentials"}),
            group=GROUP,
            version="v1alpha1",
        )
        mgmt.create("clusterprofiles", profile("ignored", "other"), group=GROUP, version="v1alpha1")
        mgmt.create("secrets", kubeconfig_secret("ignored-kubeconfig", second_server))

        mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
        provider = ClusterProfileProvider(
            secret_annotation=SECRET_ANNOTATION, namespace="fleet", label_selector=f"{ROLE} in (cell,project)"
        )
        mgr.add_provider(provider)
        cell_requests: list[Request] = []

        async def reconcile(req: Request) -> Result:
            cell_requests.append(req)
            return Result()

        mgr.new_controller("cells", reconcile).for_(CONFIGMAPS, clusters=engaged(f"{ROLE}=cell"), namespace="default")
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            await eventually(lambda: provider.has_synced, what="the provider's first pass")
            assert set(mgr.clusters) == {"dfw-1"}, "web has no Secret yet; 'ignored' does not match the selector"
            assert mgr.clusters["dfw-1"].labels == {ROLE: "cell"}
            await eventually(lambda: Request("dfw-1", "default", "in-second") in cell_requests, what="cell request")

            # the Secret named by the annotation arrives later: its event engages the project
            mgmt.create("secrets", kubeconfig_secret("web-credentials", third))
            await eventually(lambda: "web" in mgr.clusters, what="web engaged by its Secret's event")
            provider_warnings = [r for r in caplog.records if r.name.startswith("mcruntime.providers")
                                 and r.levelno >= logging.WARNING]  # fmt: skip
            assert not provider_warnings, "a Secret that arrives a moment after its profile is not a failure"
            assert mgr.clusters["web"].config.host == third.url

            # credential rotation: dfw-1 now points at the third server
            secret = mgmt.get("secrets", "fleet", "dfw-1-kubeconfig")
            secret["data"]["kubeconfig"] = kubeconfig_secret("x", third)["data"]["kubeconfig"]
            mgmt.update("secrets", secret)
            # (re-engaging disengages first: for a moment dfw-1 is not in `mgr.clusters`)
            await eventually(lambda: (c := mgr.clusters.get("dfw-1")) and c.config.host == third.url,
                             what="re-engagement")  # fmt: skip
            await eventually(lambda: Request("dfw-1", "default", "in-third") in cell_requests, what="new cell data")

            # relabel: web becomes a cell, so the cells controller now watches it too
            web = mgmt.get("clusterprofiles", "fleet", "web", group=GROUP, version="v1alpha1")
            web["metadata"]["labels"][ROLE] = "cell"
            mgmt.update("clusterprofiles", web, group=GROUP, version="v1alpha1")
            await eventually(lambda: Request("web", "default", "in-third") in cell_requests, what="rebinding")

            mgmt.delete("clusterprofiles", "fleet", "dfw-1", group=GROUP, version="v1alpha1")
            await eventually(lambda: "dfw-1" not in mgr.clusters, what="disengagement of a deleted profile")
            mgmt.delete("secrets", "fleet", "web-credentials")
            await eventually(lambda: not mgr.clusters, what="disengagement when the Secret goes")
            mgr.stop()
