"""Request accounting: exact per-verb, per-resource counters, readable in-process and
through the admin endpoint."""

from __future__ import annotations

import aiohttp

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .plane_support import Client, install_chain_crds

CM = "/api/v1/namespaces/default/configmaps"


async def test_counters_are_exact_per_verb_and_resource(apiserver: EmbeddedAPIServer) -> None:
    async with aiohttp.ClientSession() as session:
        client = Client(apiserver, session)
        await install_chain_crds(client)
        apiserver.plane.counters.reset()
        for name in ("a", "b"):
            await client.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
        await client.request("GET", f"{CM}/a")
        await client.request("GET", CM)
        await client.request("GET", "/api/v1/configmaps?limit=1")
        await client.request("PATCH", f"{CM}/a", {"data": {"x": "1"}}, content_type="application/merge-patch+json")
        await client.request("DELETE", f"{CM}/b")
        await client.request("GET", f"{CM}/missing", expect=404)
        inst = await client.request(
            "POST",
            "/apis/chain.example.com/v1/namespaces/default/instances",
            {"apiVersion": "chain.example.com/v1", "kind": "Instance", "metadata": {"name": "i"}},
        )
        inst["status"] = {"phase": "x"}
        await client.request("PUT", "/apis/chain.example.com/v1/namespaces/default/instances/i/status", inst)
        async with session.get(f"{apiserver.url}{CM}?watch=1&timeoutSeconds=1") as resp:
            await resp.read()

        expected = {
            "configmaps": {"create": 2, "get": 2, "list": 2, "patch": 1, "delete": 1, "watch": 1},
            "instances.chain.example.com": {"create": 1},
            "instances.chain.example.com/status": {"update": 1},
        }
        assert apiserver.plane.counters.snapshot() == expected
        assert apiserver.plane.counters.writes() == 6
        assert apiserver.plane.counters.writes("instances.chain.example.com") == 2
        async with session.get(f"{apiserver.url}/_embedded/counters") as resp:
            assert await resp.json() == expected
        async with session.delete(f"{apiserver.url}/_embedded/counters") as resp:
            assert resp.status == 200
        assert apiserver.plane.counters.total() == 0


async def test_kubectl_get_is_one_list_and_discovery_is_not_counted(
    apiserver: EmbeddedAPIServer, kubectl: Kubectl
) -> None:
    apiserver.plane.counters.reset()
    await kubectl("get", "configmaps")
    assert apiserver.plane.counters.snapshot() == {"configmaps": {"list": 1}}


async def test_embedded_controllers_do_not_count_as_api_requests(apiserver: EmbeddedAPIServer) -> None:
    async with aiohttp.ClientSession() as session:
        client = Client(apiserver, session)
        apiserver.plane.counters.reset()
        await client.request(
            "POST",
            "/api/v1/namespaces/default/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            },
        )

        async def running() -> bool:
            return (await client.request("GET", "/api/v1/namespaces/default/pods/p"))["status"]["phase"] == "Running"

        from .plane_support import eventually

        await eventually(running, "the kubelet to start the pod")
        counts = apiserver.plane.counters.snapshot()["pods"]
        # only our own requests: the scheduler's binding and the kubelet's status writes are in-process
        assert counts["create"] == 1 and set(counts) == {"create", "get"}
