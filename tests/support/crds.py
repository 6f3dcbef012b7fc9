"""CRDs in tests: the project's own (generated from federation/api, the same ones
config/crd ships) and a schemaless test kind, installed straight into an embedded plane."""

from __future__ import annotations

from typing import Any

from federation.api.crds import all_crd_manifests
from kubeplane import EmbeddedAPIServer

from .plane import Plane
from .waiting import eventually

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


async def install_crd(server: EmbeddedAPIServer, crd: dict[str, Any]) -> None:
    """Create a CRD and wait until the server serves it (its Established condition)."""
    Plane(server).create("customresourcedefinitions", crd, group="apiextensions.k8s.io")
    group = crd["spec"]["group"]
    version = crd["spec"]["versions"][0]["name"]
    plural = crd["spec"]["names"]["plural"]
    await eventually(lambda: server.plane.registry.get(group, version, plural), f"{plural}.{group} served")


async def install_project_crds(server: EmbeddedAPIServer) -> None:
    """Every CRD the project ships (compute kinds and the ClusterProfile)."""
    for crd in all_crd_manifests():
        await install_crd(server, crd)
