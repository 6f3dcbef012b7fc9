"""The kubelet stand-in: scheduling, Pending -> Running with Ready and container statuses,
ImagePullBackOff and CrashLoopBackOff by image pattern, graceful deletion, and a plane
with the kubelet turned off (tests then write pod status themselves)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

from kubeplane import EmbeddedAPIServer
from kubeplane.kubelet import KubeletSettings
from kubeplane.testing import Kubectl, kubectl_path

from .plane_support import Client, eventually

FAST = KubeletSettings(start_delay=0.05, crash_backoff=0.2, max_backoff=0.4, stop_seconds=0.05)
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": image}], **spec},
    }


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(kubeconfig=tmp_path / "kubeconfig", kubelet=FAST) as srv:
        yield srv


@pytest.fixture
async def client(server: EmbeddedAPIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(server, session)


@pytest.fixture
def kctl(server: EmbeddedAPIServer, tmp_path: Path) -> Kubectl:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    assert server.kubeconfig_path is not None
    return Kubectl(server.kubeconfig_path, tmp_path / "cache")


async def _status(client: Client, name: str) -> dict[str, Any]:
    return (await client.request("GET", f"{PODS}/{name}")).get("status", {})


async def test_node_is_registered_and_ready(kctl: Kubectl) -> None:
    out = await kctl("get", "nodes", "--no-headers")
    assert out.split()[:2] == ["embedded-node", "Ready"]


async def test_healthy_pod_goes_pending_to_running_seen_by_a_watch(server: EmbeddedAPIServer, client: Client) -> None:
    assert server.kubeconfig_path is not None
    api_client = await k8s_config.new_client_from_config(config_file=str(server.kubeconfig_path))
    try:
        core = k8s.CoreV1Api(api_client)
        created = await core.create_namespaced_pod("default", pod("web", "nginx:1.25"))
        phases: list[str] = [created.status.phase]
        watcher = k8s_watch.Watch()
        async with watcher:
            # resume from the creation's revision: every later change arrives, in order
            async for event in watcher.stream(
                core.list_namespaced_pod,
                "default",
                resource_version=created.metadata.resource_version,
                field_selector="metadata.name=web",
                timeout_seconds=10,
            ):
                status = event["raw_object"].get("status", {})
                phases.append(status.get("phase", ""))
                ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
                if status.get("phase") == "Running" and ready == "True":
                    break
        assert phases[0] == "Pending" and phases[-1] == "Running", phases
    finally:
        await api_client.close()
    status = await _status(client, "web")
    spec = (await client.request("GET", f"{PODS}/web"))["spec"]
    assert spec["nodeName"] == "embedded-node"
    (container,) = status["containerStatuses"]
    assert container["ready"] is True and "running" in container["state"]
    assert status["podIP"].startswith("10.244.")


async def test_unpullable_image_waits_in_image_pull_backoff(client: Client, kctl: Kubectl) -> None:
    await client.request("POST", PODS, pod("pull", "registry.example/unpullable:1.0"))

    async def backing_off() -> bool:
        statuses = (await _status(client, "pull")).get("containerStatuses", [])
        return bool(statuses) and statuses[0]["state"].get("waiting", {}).get("reason") == "ImagePullBackOff"

    await eventually(backing_off, "ImagePullBackOff")
    status = await _status(client, "pull")
    assert status["phase"] == "Pending"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "False"
    row = (await kctl("get", "pod", "pull", "--no-headers")).split()
    assert row[:3] == ["pull", "0/1", "ImagePullBackOff"]


async def test_crashing_image_loops_with_growing_restart_count(client: Client) -> None:
    await client.request("POST", PODS, pod("crash", "example/crasher:2"))

    async def restarted_twice() -> bool:
        statuses = (await _status(client, "crash")).get("containerStatuses", [])
        return bool(statuses) and statuses[0].get("restartCount", 0) >= 2

    await eventually(restarted_twice, "restartCount to reach 2")
    (container,) = (await _status(client, "crash"))["containerStatuses"]
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert container["ready"] is False


async def test_crashing_image_with_restart_never_fails(client: Client) -> None:
    await client.request("POST", PODS, pod("once", "example/crasher:2", restartPolicy="Never"))

    async def failed() -> bool:
        return (await _status(client, "once")).get("phase") == "Failed"

    await eventually(failed, "phase Failed")


async def test_scheduling_gates_keep_a_pod_unscheduled(client: Client) -> None:
    await client.request("POST", PODS, pod("gated", "nginx:1.25", schedulingGates=[{"name": "Quota"}]))

    async def gated() -> bool:
        conds = {c["type"]: c for c in (await _status(client, "gated")).get("conditions", [])}
        return conds.get("PodScheduled", {}).get("reason") == "SchedulingGated"

    await eventually(gated, "PodScheduled=False/SchedulingGated")
    obj = await client.request("GET", f"{PODS}/gated")
    assert "nodeName" not in obj["spec"]
    assert obj["status"]["phase"] == "Pending"


async def test_graceful_deletion_keeps_pod_terminating_until_containers_stop(client: Client, kctl: Kubectl) -> None:
    await client.request("POST", PODS, pod("slow", "example/slow-stop:1", terminationGracePeriodSeconds=2))

    async def running() -> bool:
        return (await _status(client, "slow")).get("phase") == "Running"

    await eventually(running, "slow pod running")
    await kctl("delete", "pod", "slow", "--wait=false")
    marked = await client.get_or_none(f"{PODS}/slow")
    assert marked is not None, "a bound pod is only marked; the kubelet finishes the deletion"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 2
    assert (await kctl("get", "pod", "slow", "--no-headers")).split()[2] == "Terminating"
    await kctl("wait", "--for=delete", "pod/slow", "--timeout=10s")


async def test_force_delete_with_zero_grace_is_immediate(client: Client, kctl: Kubectl) -> None:
    await client.request("POST", PODS, pod("force", "example/slow-stop:1", terminationGracePeriodSeconds=30))

    async def bound() -> bool:
        return bool((await client.request("GET", f"{PODS}/force"))["spec"].get("nodeName"))

    await eventually(bound, "pod bound to the node")
    await kctl("delete", "pod", "force", "--grace-period=0", "--force")
    assert await client.get_or_none(f"{PODS}/force") is None


async def test_without_kubelet_pods_stay_pending_and_status_is_the_tests_to_write(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(kubelet=False) as srv, aiohttp.ClientSession() as session:
        client = Client(srv, session)
        created = await client.request("POST", PODS, pod("manual", "nginx:1.25"))
        assert created["status"]["phase"] == "Pending"
        nodes = await client.request("GET", "/api/v1/nodes")
        assert nodes["items"] == []
        body = dict(created, status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
        await client.request("PUT", f"{PODS}/manual/status", body)
        after = await client.request("GET", f"{PODS}/manual")
        assert after["status"]["phase"] == "Running"
        assert "nodeName" not in after["spec"], "no scheduler runs with the kubelet off"
        # an unscheduled pod is deleted at once, whatever its grace period
        await client.request("DELETE", f"{PODS}/manual")
        assert await client.get_or_none(f"{PODS}/manual") is None
