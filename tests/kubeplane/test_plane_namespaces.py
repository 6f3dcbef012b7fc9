"""Namespace lifecycle: `kubectl delete ns` empties the namespace (honouring finalizers on
its content), refuses new content while Terminating, then removes the namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .plane_support import GROUP, Client, eventually, install_chain_crds, make_chain

NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
"""

CONTENT = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: team}
stringData: {token: abc}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader, namespace: team}
spec: {holderIdentity: me}
"""


@pytest.fixture
async def client(apiserver: EmbeddedAPIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        c = Client(apiserver, session)
        await install_chain_crds(c)
        yield c


async def test_kubectl_delete_namespace_removes_all_content(client: Client, kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NAMESPACE)
    await kubectl("apply", "-f", "-", stdin=CONTENT)
    await make_chain(client, "team", "app")
    out = await kubectl("delete", "namespace", "team", "--timeout=30s")
    assert 'namespace "team" deleted' in out
    # kubectl waited for the namespace to disappear, so everything in it is gone already
    assert (await kubectl.run("get", "namespace", "team")).returncode != 0
    for path in (
        "/api/v1/configmaps",
        "/api/v1/secrets",
        "/apis/coordination.k8s.io/v1/leases",
        "/api/v1/pods",
        f"/apis/{GROUP}/v1/instances",
        f"/apis/{GROUP}/v1/deployments",
    ):
        items = (await client.request("GET", path))["items"]
        assert [i for i in items if i["metadata"]["namespace"] == "team"] == [], path


async def test_terminating_namespace_waits_for_finalizers_and_refuses_content(client: Client, kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NAMESPACE)
    await make_chain(client, "team", "held", instance_finalizers=["chain.example.com/hold"])
    await kubectl("delete", "namespace", "team", "--wait=false")

    ns = await client.request("GET", "/api/v1/namespaces/team")
    assert ns["status"]["phase"] == "Terminating"
    assert ns["metadata"]["deletionTimestamp"]

    async def finalizer_reported() -> bool:
        conds = (await client.request("GET", "/api/v1/namespaces/team"))["status"].get("conditions", [])
        return any(
            c["type"] == "NamespaceFinalizersRemaining" and "chain.example.com/hold" in c["message"] for c in conds
        )

    await eventually(finalizer_reported, "the namespace to report the remaining finalizer")

    refused = await kubectl.run("apply", "-f", "-", stdin=CONTENT)
    assert refused.returncode != 0
    assert "unable to create new content in namespace team because it is being terminated" in refused.stderr

    # unscheduled and finalizer-free content is already gone; the held Instance is not
    assert await client.get_or_none(f"/apis/{GROUP}/v1/namespaces/team/deployments/held") is None
    assert await client.get_or_none(f"/apis/{GROUP}/v1/namespaces/team/instances/held-0") is not None

    await kubectl(
        "patch", f"instances.{GROUP}", "held-0", "-n", "team", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )

    async def namespace_gone() -> bool:
        return await client.get_or_none("/api/v1/namespaces/team") is None

    await eventually(namespace_gone, "the namespace to be removed once its content is gone")


async def test_immortal_namespaces_cannot_be_deleted(kubectl: Kubectl) -> None:
    for name in ("default", "kube-system", "kube-public"):
        result = await kubectl.run("delete", "namespace", name, "--wait=false")
        assert result.returncode != 0
        assert "Forbidden" in result.stderr and "may not be deleted" in result.stderr, result.stderr
