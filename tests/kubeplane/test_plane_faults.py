"""Fault injection, each fault observed by a real client: kubernetes-asyncio calls and
watches, raw aiohttp. Driven both in-process and through the admin endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubeplane import EmbeddedAPIServer

from .plane_support import eventually


@pytest.fixture
async def core(apiserver: EmbeddedAPIServer) -> AsyncIterator[k8s.CoreV1Api]:
    assert apiserver.kubeconfig_path is not None
    api_client = await k8s_config.new_client_from_config(config_file=str(apiserver.kubeconfig_path))
    try:
        yield k8s.CoreV1Api(api_client)
    finally:
        await api_client.close()


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def admin(server: EmbeddedAPIServer, method: str, path: str, body: object = None) -> object:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{server.url}/_embedded/{path}", json=body) as resp,
    ):
        assert resp.status == 200, await resp.text()
        return await resp.json()


async def test_dropped_watch_ends_the_clients_stream(apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api) -> None:
    await core.create_namespaced_config_map("default", configmap("one"))
    seen: list[str] = []
    ended = asyncio.Event()

    async def consume() -> None:
        watcher = k8s_watch.Watch()
        async with watcher:
            async for event in watcher.stream(core.list_namespaced_config_map, "default", timeout_seconds=60):
                seen.append(event["type"])
        ended.set()

    task = asyncio.create_task(consume())
    await eventually(lambda: _true(bool(seen)), "the initial ADDED event")
    dropped = await admin(apiserver, "POST", "watches/drop")
    assert dropped == {"dropped": 1}
    await asyncio.wait_for(ended.wait(), 10)  # well before the watch's own 60 s timeout
    await task
    assert seen == ["ADDED"]


async def _true(value: bool) -> bool:
    return value


@pytest.mark.parametrize("code", [429, 500, 503])
async def test_error_responses_reach_the_client(apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api, code: int) -> None:
    apiserver.plane.faults.configure(error_rate=1.0, error_code=code, retry_after_seconds=3)
    with pytest.raises(ApiException) as caught:
        await core.list_namespaced_config_map("default")
    assert caught.value.status == code
    if code in (429, 503):
        assert caught.value.headers["Retry-After"] == "3"
    apiserver.plane.faults.clear()
    assert (await core.list_namespaced_config_map("default")).items == []


async def test_a_fraction_of_requests_fails_and_filters_apply(
    apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api
) -> None:
    await admin(
        apiserver,
        "PUT",
        "faults",
        {"error_rate": 0.5, "error_code": 503, "methods": ["GET"], "path_contains": "/configmaps"},
    )
    failures = 0
    for _ in range(200):
        try:
            await core.list_namespaced_config_map("default")
        except ApiException as exc:
            assert exc.status == 503
            failures += 1
    assert failures == apiserver.plane.faults.injected
    assert 0 < failures < 200
    # other methods and other resources are untouched by the filter
    await core.create_namespaced_config_map("default", configmap("post-ok"))
    await core.list_namespaced_secret("default")
    await admin(apiserver, "DELETE", "faults")
    assert len((await core.list_namespaced_config_map("default")).items) == 1


async def test_latency_is_added_to_requests(apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api) -> None:
    apiserver.plane.faults.configure(latency_seconds=2.0)
    with pytest.raises(asyncio.TimeoutError):
        await core.list_namespaced_config_map("default", _request_timeout=0.3)
    apiserver.plane.faults.clear()
    await core.list_namespaced_config_map("default", _request_timeout=5)


async def test_pause_refuses_connections_and_resume_keeps_state(
    apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api
) -> None:
    created = await core.create_namespaced_config_map("default", configmap("kept"))
    url = apiserver.url
    await apiserver.pause()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.get(f"{url}/api/v1/namespaces/default/configmaps")
    await apiserver.resume()
    assert apiserver.url == url
    again = await core.read_namespaced_config_map("kept", "default")
    assert again.metadata.resource_version == created.metadata.resource_version
    assert again.metadata.uid == created.metadata.uid


async def test_pause_through_the_admin_endpoint(apiserver: EmbeddedAPIServer) -> None:
    await admin(apiserver, "POST", "pause", {"seconds": 1.0})
    async with aiohttp.ClientSession() as session:

        async def refused() -> bool:
            try:
                async with session.get(f"{apiserver.url}/version"):
                    return False
            except aiohttp.ClientConnectorError:
                return True

        await eventually(refused, "connections to be refused")

        async def back() -> bool:
            try:
                async with session.get(f"{apiserver.url}/version") as resp:
                    return resp.status == 200
            except aiohttp.ClientConnectorError:
                return False

        await eventually(back, "the server to resume by itself")


async def test_expired_history_makes_a_resume_get_410(apiserver: EmbeddedAPIServer, core: k8s.CoreV1Api) -> None:
    listed = await core.list_namespaced_config_map("default")
    old_rv = listed.metadata.resource_version
    await core.create_namespaced_config_map("default", configmap("after"))
    # before compaction the old revision is still served
    watcher = k8s_watch.Watch()
    async with watcher:
        async for event in watcher.stream(
            core.list_namespaced_config_map, "default", resource_version=old_rv, timeout_seconds=5
        ):
            assert event["type"] == "ADDED" and event["raw_object"]["metadata"]["name"] == "after"
            break
    await admin(apiserver, "POST", "history/expire")
    with pytest.raises(ApiException) as caught:
        watcher = k8s_watch.Watch()
        async with watcher:
            async for _ in watcher.stream(
                core.list_namespaced_config_map, "default", resource_version=old_rv, timeout_seconds=5
            ):
                pytest.fail("no event may arrive from a compacted revision")
    assert caught.value.status == 410
    assert "too old resource version" in str(caught.value.reason)


async def test_bad_admin_requests_are_4xx(apiserver: EmbeddedAPIServer, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as session:
        for method, path, body, code in (
            ("PUT", "faults", {"error_rate": 2}, 400),
            ("PUT", "faults", {"error_code": 418}, 400),
            ("PUT", "faults", {"no_such_setting": 1}, 400),
            ("POST", "pause", {"seconds": -1}, 400),
            ("GET", "nothing-here", None, 404),
            ("PATCH", "counters", None, 405),
        ):
            async with session.request(method, f"{apiserver.url}/_embedded/{path}", json=body) as resp:
                assert resp.status == code, (method, path, await resp.text())
                assert (await resp.json())["kind"] == "Status"
