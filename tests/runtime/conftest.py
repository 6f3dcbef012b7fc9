from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import Cluster

from .support import Background, Plane, cluster_for


@pytest.fixture
def plane(apiserver: EmbeddedAPIServer) -> Plane:
    return Plane(apiserver)


@pytest.fixture
async def cluster(apiserver: EmbeddedAPIServer) -> AsyncIterator[Cluster]:
    """A running Cluster on the `apiserver` fixture."""
    c = cluster_for(apiserver, "test")
    async with Background(c.run):
        yield c


@pytest.fixture
async def second_server(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(name="second", kubeconfig=tmp_path / "second.kubeconfig", bookmark_interval=1.0) as s:
        yield s


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}

# A minimal ClusterProfile CRD with the SIG Multicluster cluster-inventory-api field names;
# the real one ships under config/crd.
CLUSTER_PROFILE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterprofiles.multicluster.x-k8s.io"},
    "spec": {
        "group": "multicluster.x-k8s.io",
        "names": {
            "plural": "clusterprofiles",
            "singular": "clusterprofile",
            "kind": "ClusterProfile",
            "listKind": "ClusterProfileList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["clusterManager"],
                                "properties": {
                                    "displayName": {"type": "string"},
                                    "clusterManager": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {"name": {"type": "string"}},
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


async def install_crd(server: EmbeddedAPIServer, crd: dict[str, Any]) -> None:
    """Create a CRD and wait until the server serves it (its Established condition)."""

    plane = Plane(server)
    plane.create("customresourcedefinitions", crd, group="apiextensions.k8s.io")
    group = crd["spec"]["group"]
    version = crd["spec"]["versions"][0]["name"]
    plural = crd["spec"]["names"]["plural"]
    from .support import eventually

    await eventually(lambda: server.plane.registry.get(group, version, plural), what=f"{plural}.{group} served")


@pytest.fixture
async def widgets(apiserver: EmbeddedAPIServer) -> None:
    await install_crd(apiserver, WIDGET_CRD)
