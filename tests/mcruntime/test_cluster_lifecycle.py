"""Many clusters, one of them dead or failing: readiness states, lifecycle events as a
source, and per-cluster isolation of retries."""

from __future__ import annotations

import socket
import time
from typing import Any

import aiohttp
import anyio
from prometheus_client import generate_latest

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    Cluster,
    ClusterEvent,
    ClusterEventType,
    ClusterOptions,
    ClusterState,
    ConnectionConfig,
    Manager,
    Request,
    Result,
    TemporaryError,
    TransportOptions,
    controllerutil,
    engaged,
)
from mcruntime.backoff import Backoff
from mcruntime.cache import CacheOptions, InformerOptions
from mcruntime.resources import CONFIGMAPS
from mcruntime.source import LOCAL
from mcruntime.view import View
from tests.support import Plane, config_for, configmap, eventually

TARGETS = "role=target"


def closed_port_config() -> ConnectionConfig:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ConnectionConfig.insecure(f"http://127.0.0.1:{port}")


def copy_of(source: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": source["metadata"]["name"], "namespace": "default"},
        "data": source.get("data") or {},
    }


def copier(mgr: Manager, *, workers: int = 4) -> Any:
    """Copies every ConfigMap of the local cluster into every engaged target cluster,
    writing the reachable ones even when another target fails (as the federator does)."""

    async def reconcile(req: Request) -> Result:
        source = await mgr.local.client.get_or_none(CONFIGMAPS, req.name, namespace=req.namespace)
        if source is None:
            return Result()
        failed: list[str] = []
        for name, cluster in sorted(mgr.clusters.items()):
            if cluster.labels.get("role") != "target":
                continue
            try:
                await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, copy_of(source))
            except Exception as exc:  # noqa: BLE001 - the test records which targets failed
                failed.append(f"{name}: {exc}")
        if failed:
            raise TemporaryError("; ".join(failed))
        return Result()

    def all_sources(event: ClusterEvent) -> list[Request]:
        if event.type is not ClusterEventType.READY:
            return []
        informer = mgr.local.cache.informer_of(CONFIGMAPS)
        return [Request(mgr.local.name, "default", o["metadata"]["name"]) for o in informer.list(namespace="default")]

    ctrl = mgr.new_controller("copier", reconcile, workers=workers)
    ctrl.for_(CONFIGMAPS, clusters=LOCAL, namespace="default")
    ctrl.reads(CONFIGMAPS, clusters=engaged(TARGETS), namespace="default")
    ctrl.watch_clusters(all_sources, clusters=engaged(TARGETS))
    return ctrl


async def test_a_dead_cluster_never_stalls_the_workers_and_is_reported(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    source = Plane(apiserver)
    for i in range(20):
        source.create("configmaps", configmap(f"obj-{i}", i=str(i)))
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt", health_probe_bind_address="127.0.0.1:0")
    copier(mgr, workers=4)
    target = Plane(second_server)
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await mgr.engage("dead", closed_port_config(), {"role": "target"})
        await mgr.engage("healthy", config_for(second_server), {"role": "target"})
        started = time.monotonic()

        def copied() -> bool:
            return {f"obj-{i}" for i in range(20)} <= target.names("configmaps", "default")

        await eventually(copied, "20 copies in the healthy cluster", within=10)
        elapsed = time.monotonic() - started
        states = mgr.cluster_states()
        assert states == {"dead": ClusterState.UNREACHABLE, "healthy": ClusterState.READY}, states
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{mgr.health_port}/readyz?verbose") as resp,
        ):
            body = await resp.text()
        assert resp.status == 200, "an unreachable cell does not make the manager unready"
        assert "dead: unreachable (last contact never)" in body and "healthy: ready" in body
        gauges = {
            (line.split('cluster="')[1].split('"')[0], line.split('state="')[1].split('"')[0]): line.rsplit(" ", 1)[1]
            for line in generate_latest(mgr.registry).decode().splitlines()
            if line.startswith("mcruntime_cluster_state{")
        }
        assert gauges[("dead", "unreachable")] == "1.0" and gauges[("healthy", "ready")] == "1.0"
        assert gauges[("dead", "syncing")] == "0.0"
        mgr.stop()
    assert elapsed < 10


async def test_a_target_registered_later_is_filled_and_a_removed_one_is_announced(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """No periodic requeue: the READY event of the new cluster enqueues the sources."""
    source = Plane(apiserver)
    for i in range(5):
        source.create("configmaps", configmap(f"obj-{i}", i=str(i)))
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    ctrl = copier(mgr)
    events: list[tuple[ClusterEventType, str, str]] = []

    def record(event: ClusterEvent) -> list[Request]:
        events.append((event.type, event.cluster, event.labels.get("role", "")))
        return []

    ctrl.watch_clusters(record, clusters=engaged(TARGETS))
    target = Plane(second_server)
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        assert await ctrl.wait_idle(within=5)
        assert second_server.plane.counters.snapshot() == {}, "nothing reaches a cluster that is not engaged"
        await mgr.engage("late", config_for(second_server), {"role": "target"})

        def copied() -> bool:
            return {f"obj-{i}" for i in range(5)} <= target.names("configmaps", "default")

        await eventually(copied, "the late target filled")
        assert (ClusterEventType.ENGAGED, "late", "target") in events
        assert (ClusterEventType.READY, "late", "target") in events
        assert await mgr.disengage("late")
        await eventually(lambda: (ClusterEventType.DISENGAGED, "late", "target") in events, "the disengaged event")
        mgr.stop()


async def test_a_failing_cluster_does_not_slow_retries_for_another(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """300 objects in a cluster whose every write fails drain a shared retry bucket (10 qps,
    burst 100) for ~20 s; with buckets per cluster a change elsewhere that needs one retry
    lands within 3 s."""
    async with EmbeddedAPIServer(name="healthy", bookmark_interval=1.0) as healthy:
        mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
        done: set[str] = set()
        attempts: dict[str, int] = {}

        async def reconcile(req: Request) -> Result:
            client = mgr.get_cluster(req.cluster).client
            obj = await client.get_or_none(CONFIGMAPS, req.name, namespace=req.namespace)
            if obj is None:
                return Result()
            n = attempts[req.name] = attempts.get(req.name, 0) + 1
            if req.cluster == "healthy" and n == 1:
                raise TemporaryError("first attempt fails, as a transient conflict would")
            await client.patch(CONFIGMAPS, req.name, {"data": {"seen": "yes"}}, namespace=req.namespace)
            done.add(f"{req.cluster}/{req.name}")
            return Result()

        ctrl = mgr.new_controller("patcher", reconcile, workers=4)
        ctrl.for_(CONFIGMAPS, clusters=engaged("role=member"), namespace="default")
        failing = Plane(second_server)
        for i in range(300):
            failing.create("configmaps", configmap(f"f-{i}"))
        second_server.plane.faults.configure(error_rate=1.0, error_code=500, methods=["PATCH"])
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            await mgr.engage("failing", config_for(second_server), {"role": "member"})
            await eventually(lambda: sum(1 for k in attempts if k.startswith("f-")) >= 300, "all failing ones tried")
            await eventually(lambda: attempts.get("f-0", 0) >= 2, "failing objects retried")
            await mgr.engage("healthy", config_for(healthy), {"role": "member"})
            Plane(healthy).create("configmaps", configmap("change"))
            started = time.monotonic()
            await eventually(lambda: "healthy/change" in done, "the healthy change", within=3)
            assert time.monotonic() - started < 3
            assert not any(k.startswith("failing/") for k in done)
            mgr.stop()


async def test_a_cluster_that_answers_again_is_rewatched_at_once(apiserver: EmbeddedAPIServer) -> None:
    """Issue 18 item 3: the informers' back-off grows while a cluster is away (client-go's
    reaches 30-60 s); when the cluster answers again they retry at once, so a change made
    then is seen without waiting out that delay. The back-off here starts at 10 minutes:
    without the reset, nothing after the outage would be seen for that long. Meanwhile the
    cluster says `syncing` (its views do not follow the server yet), never `ready`."""
    slow = InformerOptions(backoff=lambda: Backoff(initial=600.0, maximum=600.0))
    options = ClusterOptions(transport=TransportOptions(probe_interval=0.2), cache=CacheOptions(informer=slow))
    cluster = Cluster("cell", config_for(apiserver), options=options)
    informer = cluster.cache.declare(View(CONFIGMAPS, namespace="default"))
    states: list[ClusterState] = []
    cluster.on_state_change(lambda _c, _old, new: states.append(new))
    async with cluster.started():
        assert await informer.wait_for_sync(within=10)
        await eventually(lambda: cluster.state is ClusterState.READY, "ready")
        await apiserver.pause()
        await eventually(lambda: cluster.state is ClusterState.UNREACHABLE, "unreachable")
        await eventually(lambda: not informer.current, "the informer stops following the server")
        assert cluster.unreachable_since is not None
        await apiserver.resume()
        Plane(apiserver).create("configmaps", configmap("after-the-outage"))
        await eventually(lambda: informer.get("after-the-outage", namespace="default") is not None,
                         "the change made after the outage, seen without waiting out the back-off")  # fmt: skip
        await eventually(lambda: cluster.state is ClusterState.READY, "ready again")
        assert cluster.unreachable_since is None
    back = states[states.index(ClusterState.UNREACHABLE) :]
    assert back[:3] == [ClusterState.UNREACHABLE, ClusterState.SYNCING, ClusterState.READY], states
