"""How a cell or project is registered in the management cluster (DESIGN §2, docs/api.md):
a `ClusterProfile` named after the cluster, labelled with its role (and a cell's city
code, a project's encoded upstream cluster name), whose annotation names a Secret holding
the cluster's kubeconfig under the data key `kubeconfig`. Pure: `up`, the tests and the
docs build registrations with these functions, and the ClusterProfile provider reads them."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import yaml

from federation.api.clusternames import encode_upstream_cluster_name, parse_upstream_cluster_name
from federation.api.constants import (
    CLUSTER_INVENTORY_API_VERSION,
    CLUSTER_MANAGER_NAME,
    KUBECONFIG_SECRET_KEY,
    KUBECONFIG_SECRET_SUFFIX,
    REGISTRATION_NAMESPACE,
    Annotation,
    ClusterRole,
    Kind,
    Label,
)


def project_cluster_name(project_path: str) -> str:
    """The cluster name every request for a project carries: the bare project name of
    `org/project` (a malformed path raises ValueError naming it)."""
    return parse_upstream_cluster_name(encode_upstream_cluster_name(project_path)).project


def kubeconfig_secret(
    cluster: str, kubeconfig: Mapping[str, Any], *, namespace: str = REGISTRATION_NAMESPACE
) -> dict[str, Any]:
    text = yaml.safe_dump(dict(kubeconfig), sort_keys=False)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{cluster}{KUBECONFIG_SECRET_SUFFIX}", "namespace": namespace},
        "type": "Opaque",
        "data": {KUBECONFIG_SECRET_KEY: base64.b64encode(text.encode()).decode()},
    }


def _profile(cluster: str, labels: Mapping[str, str], display: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_INVENTORY_API_VERSION,
        "kind": str(Kind.CLUSTER_PROFILE),
        "metadata": {
            "name": cluster,
            "namespace": namespace,
            "labels": {**labels, str(Label.CLUSTER_MANAGER): CLUSTER_MANAGER_NAME},
            "annotations": {str(Annotation.KUBECONFIG_SECRET): f"{cluster}{KUBECONFIG_SECRET_SUFFIX}"},
        },
        "spec": {"displayName": display, "clusterManager": {"name": CLUSTER_MANAGER_NAME}},
    }


def cell_profile(cell: str, city_code: str, *, namespace: str = REGISTRATION_NAMESPACE) -> dict[str, Any]:
    if not city_code:
        raise ValueError(f"cell {cell!r}: a city code is required")
    labels = {str(Label.CLUSTER_ROLE): str(ClusterRole.CELL), str(Label.TOPOLOGY_CITY_CODE): city_code}
    return _profile(cell, labels, f"{city_code} cell {cell}", namespace)


def project_profile(project_path: str, *, namespace: str = REGISTRATION_NAMESPACE) -> dict[str, Any]:
    labels = {
        str(Label.CLUSTER_ROLE): str(ClusterRole.PROJECT),
        str(Label.UPSTREAM_CLUSTER_NAME): encode_upstream_cluster_name(project_path),
    }
    return _profile(project_cluster_name(project_path), labels, f"project {project_path}", namespace)
