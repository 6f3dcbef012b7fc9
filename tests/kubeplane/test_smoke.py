from __future__ import annotations

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl


async def test_fresh_cluster_has_standard_namespaces(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> None:
    out = await kubectl("get", "namespaces", "-o", "name")
    assert out.split() == [
        "namespace/default",
        "namespace/kube-node-lease",
        "namespace/kube-public",
        "namespace/kube-system",
    ]
