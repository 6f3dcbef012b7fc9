from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.lowlevel
import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    ClusterName,
    ClusterNotEngagedError,
    EnqueueRequestsFromMapFunc,
    Manager,
    Request,
    Result,
    engaged,
)
from mcruntime.cache import CacheOptions
from mcruntime.cluster import ClusterOptions
from mcruntime.resources import CONFIGMAPS
from mcruntime.source import ENGAGED
from tests.support import Plane, config_for, configmap, eventually, open_sockets


async def test_engaging_and_disengaging_100_times_leaves_no_tasks_or_sockets(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    Plane(second_server).create("configmaps", configmap("in-cell"))
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    reconciled: list[Request] = []

    async def reconcile(req: Request) -> Result:
        reconciled.append(req)
        return Result()

    controller = mgr.new_controller("leaks", reconcile).for_(CONFIGMAPS, clusters=ENGAGED)
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await mgr.elected.wait()
        await eventually(lambda: controller.queue is not None and controller._tg is not None, what="workers")
        await anyio.sleep(0.05)  # let the workers reach their first `get`
        baseline_tasks = len(asyncio.all_tasks())
        baseline_sockets = open_sockets()
        engaged_before: list[Any] = []  # kept alive, so garbage collection cannot close what we forgot
        for _ in range(100):
            await mgr.engage("cell", config_for(second_server), {"role": "cell"})
            engaged_before.append(mgr.get_cluster("cell"))
            informer = mgr.get_cluster("cell").cache.informers[0]
            assert await controller.wait_for_sync(within=5), "the engaged cluster's watch did not sync"
            await eventually(lambda i=informer: i.stats.watches >= 1, what="the watch to open")
            assert await mgr.disengage("cell")
            with pytest.raises(ClusterNotEngagedError):
                mgr.get_cluster("cell")
        assert second_server.plane.counters.get("watch", "configmaps") >= 100
        await eventually(
            lambda: len(asyncio.all_tasks()) <= baseline_tasks,
            what=f"tasks back to {baseline_tasks} (now {len(asyncio.all_tasks())})",
        )
        await eventually(
            lambda: open_sockets() <= baseline_sockets,
            what=f"sockets back to {baseline_sockets} (now {open_sockets()})",
        )
        assert any(r.cluster == "cell" for r in reconciled)
        assert all(c.transport.closed and not c.running for c in engaged_before)
        mgr.stop()


async def test_a_map_handler_targets_another_cluster_and_empty_names_go_nowhere(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    async with EmbeddedAPIServer(name="project", bookmark_interval=1.0) as project_server:
        mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
        reconciled: list[Request] = []
        cluster_errors: list[str] = []

        async def reconcile(req: Request) -> Result:
            try:
                mgr.get_cluster(req.cluster)
            except ClusterNotEngagedError as exc:
                cluster_errors.append(str(exc))
                raise
            reconciled.append(req)
            return Result()

        def to_project(_source: str, obj: dict[str, Any]) -> list[Request]:
            labels = obj["metadata"].get("labels") or {}
            return [Request(labels.get("project", ""), "upstream", obj["metadata"]["name"])]

        controller = mgr.new_controller("federate", reconcile)
        controller.watch(
            CONFIGMAPS,
            EnqueueRequestsFromMapFunc(to_project, cluster_name=ClusterName.PRESERVE_MAPPED),
            clusters=engaged("role=cell"),
        )
        cell = Plane(second_server)
        for name, project in (("mapped", "web"), ("unmapped", None), ("to-ghost", "ghost")):
            cm = configmap(name)
            if project:
                cm["metadata"]["labels"] = {"project": project}
            cell.create("configmaps", cm)
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            await mgr.engage("cell-a", config_for(second_server), {"role": "cell"})
            await mgr.engage("web", config_for(project_server), {"role": "project"})
            await eventually(lambda: Request("web", "upstream", "mapped") in reconciled, what="the mapped request")
            await eventually(lambda: cluster_errors, what="the request for an unknown cluster to be refused")
            assert await controller.wait_for_sync(within=5)
            await eventually(lambda: controller.idle, what="the controller to go idle")
            assert reconciled == [Request("web", "upstream", "mapped")]
            assert all(r.cluster not in ("", "cell-a", "mgmt") for r in reconciled)
            assert cluster_errors == ["cluster 'ghost' is not engaged"]
            assert second_server.plane.counters.writes() == 0
            mgr.stop()


async def test_health_readiness_and_metrics_endpoints(apiserver: EmbeddedAPIServer) -> None:
    mgr = Manager(
        config_for(apiserver),
        health_probe_bind_address="127.0.0.1:0",
        metrics_bind_address="127.0.0.1:0",
    )

    async def reconcile(req: Request) -> Result:
        await mgr.local.client.get(CONFIGMAPS, req.name, namespace=req.namespace)
        return Result()

    from mcruntime import LOCAL

    controller = mgr.new_controller("probe", reconcile).for_(CONFIGMAPS, clusters=LOCAL)
    Plane(apiserver).create("configmaps", configmap("x"))
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await eventually(lambda: controller.idle and mgr.ready, what="the manager to be ready")
        async with aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{mgr.health_port}"
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/readyz?verbose") as resp:
                text = await resp.text()
                assert resp.status == 200 and "[+]local-cache ok" in text
            mgr.add_readyz_check("never", lambda: False)
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 500 and "[-]never failed" in await resp.text()
            async with http.get(f"http://127.0.0.1:{mgr.metrics_port}/metrics") as resp:
                metrics = await resp.text()
        for name in (
            "controller_runtime_reconcile_total",
            "controller_runtime_reconcile_time_seconds_bucket",
            "workqueue_depth",
            "workqueue_queue_duration_seconds_bucket",
            "rest_client_request_duration_seconds_bucket",
            "informer_lists_total",
        ):
            assert name in metrics, f"{name} missing from /metrics"
        assert 'controller="probe"' in metrics and 'verb="list"' in metrics
        mgr.stop()


async def test_sigterm_stops_the_manager_gracefully(apiserver: EmbeddedAPIServer) -> None:
    mgr = Manager(config_for(apiserver))
    finished: list[str] = []
    started = anyio.Event()

    async def reconcile(req: Request) -> Result:
        started.set()
        await anyio.sleep(0.1)
        finished.append(req.name)
        return Result()

    controller = mgr.new_controller("sig", reconcile)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(lambda task_status: mgr.run(handle_signals=True, task_status=task_status))
            controller.enqueue(Request("local", "ns", "slow"))
            await started.wait()
            os.kill(os.getpid(), signal.SIGTERM)
    assert finished == ["slow"], "the in-flight reconcile finishes before the manager exits"
    assert not mgr.running


async def test_get_cluster_never_falls_back(apiserver: EmbeddedAPIServer) -> None:
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    assert mgr.get_cluster("mgmt") is mgr.local
    with pytest.raises(ClusterNotEngagedError, match="empty cluster name"):
        mgr.get_cluster("")
    with pytest.raises(ClusterNotEngagedError, match="'nope' is not engaged"):
        mgr.get_cluster("nope")
    with pytest.raises(RuntimeError, match="not running"):
        await mgr.engage("cell", config_for(apiserver))
    with pytest.raises(ValueError, match="local cluster"):
        await mgr.engage("mgmt", config_for(apiserver))


async def test_an_engage_cut_short_by_shutdown_leaves_nothing_to_wait_for(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """A provider engaging a cluster while the manager stops (its cluster task group is
    closing, so starting the cluster's task fails): the cluster is not left registered
    without a task — a shutdown that disengages it would wait for that task forever."""
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")

    class Closing:
        async def start(self, *_args: Any, **_kwargs: Any) -> None:
            raise RuntimeError("this task group is no longer active")

    with anyio.fail_after(30):  # the shutdown below completes
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            hosting, mgr._clusters_tg = mgr._clusters_tg, Closing()  # type: ignore[assignment]
            with pytest.raises(RuntimeError, match="no longer active"):
                await mgr.engage("cell", config_for(second_server))
            mgr._clusters_tg = hosting
            assert "cell" not in mgr.clusters
            assert not await mgr.disengage("cell")
            mgr.stop()


def write_kubeconfig(path: Path, server: EmbeddedAPIServer) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(server.kubeconfig()))


async def test_kubeconfig_directory_provider(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    from mcruntime import KubeconfigDirProvider

    folder = tmp_path / "clusters"
    write_kubeconfig(folder / "cells" / "paris.yaml", second_server)
    (folder / "cells" / "paris.labels.yaml").write_text("topology.example.com/city: PAR\n")
    (folder / "cells" / "broken.yaml").write_text("clusters: [")
    write_kubeconfig(folder / "cells" / "badlabels.yaml", second_server)
    (folder / "cells" / "badlabels.labels.yaml").write_text("not a mapping")
    mgr = Manager(config_for(apiserver))
    provider = KubeconfigDirProvider(folder, poll_interval=0.05, subdir_label="role")
    mgr.add_provider(provider)
    reconciled: list[Request] = []

    async def reconcile(req: Request) -> Result:
        reconciled.append(req)
        return Result()

    mgr.new_controller("dir", reconcile).for_(CONFIGMAPS, clusters=engaged("role=cells"), namespace="default")
    Plane(second_server).create("configmaps", configmap("hello"))
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        assert provider.has_synced
        assert set(mgr.clusters) == {"paris"}, "broken files (kubeconfig or labels) must not be engaged"
        assert mgr.clusters["paris"].labels == {"role": "cells", "topology.example.com/city": "PAR"}
        (folder / "cells" / "paris.labels.yaml").write_text("topology.example.com/city: LYS\n")
        await eventually(lambda: mgr.clusters["paris"].labels.get("topology.example.com/city") == "LYS",
                         what="the sidecar's new labels")  # fmt: skip
        await eventually(lambda: Request("paris", "default", "hello") in reconciled, what="a request from paris")
        write_kubeconfig(folder / "cells" / "paris.yaml", apiserver)  # credentials now point elsewhere
        await eventually(lambda: mgr.clusters.get("paris") and mgr.clusters["paris"].config.host == apiserver.url,
                         what="re-engagement with the new kubeconfig")  # fmt: skip
        (folder / "cells" / "paris.yaml").unlink()
        await eventually(lambda: not mgr.clusters, what="disengagement after the file is removed")
        mgr.stop()


async def test_kubeconfig_secret_provider(apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer) -> None:
    import base64

    from mcruntime import KubeconfigSecretProvider

    plane = Plane(apiserver)

    def secret(name: str, kubeconfig: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
        data = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
        return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "data": {"kubeconfig": data}}

    evil = second_server.kubeconfig()
    evil["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}}
    plane.create("secrets", secret("cell-1", second_server.kubeconfig(), {"fleet": "yes", "role": "cell"}))
    plane.create("secrets", secret("evil", evil, {"fleet": "yes"}))
    plane.create("secrets", secret("unlabelled", second_server.kubeconfig(), {}))
    mgr = Manager(config_for(apiserver))
    provider = KubeconfigSecretProvider(namespace="default", label_selector="fleet=yes")
    mgr.add_provider(provider)
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await eventually(lambda: provider.has_synced, what="the provider's first pass")
        assert set(mgr.clusters) == {"cell-1"}
        assert mgr.clusters["cell-1"].labels == {"fleet": "yes", "role": "cell"}
        plane.delete("secrets", "default", "cell-1")
        await eventually(lambda: not mgr.clusters, what="disengagement after the Secret is deleted")
        mgr.stop()


async def test_a_cluster_is_listed_only_once_its_views_are_declared(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """Issue 18 item 4: a map function looping over `mgr.clusters` while another cluster is
    being engaged never meets it without its views (NoCacheViewError dropped the whole
    event's work), however the engage interleaves with it."""
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")

    async def reconcile(req: Request) -> Result:
        return Result()

    mgr.new_controller("views", reconcile).for_(CONFIGMAPS, clusters=ENGAGED)
    missing: list[str] = []
    seen = 0
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await mgr.elected.wait()
        stop = anyio.Event()

        async def look() -> None:
            nonlocal seen
            while not stop.is_set():
                for name, cluster in mgr.clusters.items():
                    seen += 1
                    if cluster.cache.view_of(CONFIGMAPS) is None:
                        missing.append(name)
                await anyio.lowlevel.checkpoint()

        tg.start_soon(look)
        for i in range(20):
            await mgr.engage(f"cell-{i}", config_for(second_server), {"role": "cell"})
        stop.set()
        assert seen > 0 and not missing, f"listed before their views were declared: {sorted(set(missing))}"
        mgr.stop()


async def test_the_engaged_clusters_are_one_read_only_mapping_until_they_change(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """`Manager.clusters` is read by map functions on every event: the same read-only mapping
    until an engage, bind or disengage makes a new one; one read earlier keeps the
    clusters as they were (a loop over it across an await sees no change mid-loop)."""
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            await mgr.elected.wait()
            await mgr.engage("cell-a", config_for(second_server), {"role": "cell"})
            first = mgr.clusters
            assert mgr.clusters is first and set(first) == {"cell-a"}
            with pytest.raises(TypeError):
                first["cell-x"] = mgr.local  # type: ignore[index]
            await mgr.engage("cell-b", config_for(second_server), {"role": "cell"})
            second = mgr.clusters
            assert set(second) == {"cell-a", "cell-b"} and set(first) == {"cell-a"}
            assert second["cell-a"] is first["cell-a"]
            # new labels on the same connection: the same cluster, relabelled in place
            await mgr.engage("cell-a", config_for(second_server), {"role": "cell", "zone": "eu"})
            assert mgr.clusters["cell-a"] is first["cell-a"] and first["cell-a"].labels["zone"] == "eu"
            assert await mgr.disengage("cell-a")
            assert set(mgr.clusters) == {"cell-b"} and set(second) == {"cell-a", "cell-b"}
            assert not await mgr.disengage("cell-a") and set(mgr.clusters) == {"cell-b"}
            mgr.stop()
    assert not mgr.clusters


async def test_an_engaged_clusters_options_follow_its_labels(
    apiserver: EmbeddedAPIServer, second_server: EmbeddedAPIServer
) -> None:
    """`cluster_options_for`: each engaged cluster's options by its labels (a sharded manager
    narrows the cells' Instances, not the projects'). A relabel that changes the options
    engages the cluster afresh (a cache's selectors are fixed); one that does not keeps it."""
    plane = Plane(second_server)
    for name, shard in (("mine", "a"), ("theirs", "b")):
        labelled = configmap(name)
        labelled["metadata"]["labels"] = {"shard": shard}
        plane.create("configmaps", labelled)
    narrowed = ClusterOptions(cache=CacheOptions(label_selectors={CONFIGMAPS: "shard=a"}))

    def options_for(labels: Mapping[str, str]) -> ClusterOptions:
        return narrowed if labels.get("role") == "cell" else ClusterOptions()

    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt", cluster_options_for=options_for)

    async def reconcile(_req: Request) -> Result:
        return Result()

    mgr.new_controller("options", reconcile).for_(CONFIGMAPS, clusters=ENGAGED)

    def cached(name: str) -> set[str]:
        return {c["metadata"]["name"] for c in mgr.get_cluster(name).cache.informer_of(CONFIGMAPS).store.list()}

    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await mgr.elected.wait()
        await mgr.engage("x", config_for(second_server), {"role": "project"})
        await eventually(lambda: {"mine", "theirs"} <= cached("x"), what="every ConfigMap cached (a project)")
        await mgr.engage("x", config_for(second_server), {"role": "cell"})
        as_cell = mgr.get_cluster("x")
        await eventually(lambda: cached("x") == {"mine"}, what="only the labelled ConfigMap cached (a cell)")
        await mgr.engage("x", config_for(second_server), {"role": "cell", "city": "dfw"})
        assert mgr.get_cluster("x") is as_cell, "same options: the cluster and its cache are kept"
        mgr.stop()
