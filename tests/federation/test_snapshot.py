"""Reading a federation once (federation/ops/snapshot.py): registrations from the management
cluster, what projects and cells hold, and every way a cluster can fail to answer —
recorded with the reason, never raised and never waited on past the deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from federation.api.constants import REGISTRATION_NAMESPACE
from federation.fleet.placement import CellInfo
from federation.ops.snapshot import SnapshotSourceError, load_snapshot, management_kubeconfig
from federation.registration import cell_profile, kubeconfig_secret
from mcruntime import ConnectionConfig
from tests.federation.test_federator import WDs, workload_deployment
from tests.support import Plane, eventually, fleet, management_settings, running

from .inspecting import CELLS, PROJECTS

GROUP, VERSION = "compute.datumapis.com", "v1alpha"


def plain_kubeconfig(url: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A TCP server that accepts connections and never answers: the URL of a hung cluster."""

    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hold)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


async def test_a_federation_read_once(tmp_path: Path) -> None:
    async with (
        fleet(tmp_path, projects=PROJECTS, cells=CELLS) as f,
        running(management_settings(tmp_path / "management.kubeconfig")),
    ):
        created = WDs(f, "web").create(workload_deployment("api", "DFW", 3))
        await eventually(lambda: all(WDs(f, c).list() for c in ("dfw-1", "dfw-2")), "copies in both DFW cells")
        # a WD in a cell that the federation did not write is not one of its copies
        Plane(f.server("lhr-1")).create(
            "workloaddeployments", workload_deployment("local", "LHR", 1), group=GROUP, version=VERSION
        )
        snap = await load_snapshot(f.config())
    assert snap.management.reachable and snap.source == f.management.url
    assert list(snap.projects) == ["shop", "web"] and list(snap.cells) == ["dfw-1", "dfw-2", "lhr-1"]
    assert snap.projects["web"].upstream_label == "cluster-acme_web"
    assert [c.city_code for c in snap.cells.values()] == ["DFW", "DFW", "LHR"]
    assert snap.cell_infos() == [CellInfo("dfw-1", "DFW"), CellInfo("dfw-2", "DFW"), CellInfo("lhr-1", "LHR")]
    web = snap.projects["web"]
    assert [w["metadata"]["uid"] for w in web.workload_deployments] == [created["metadata"]["uid"]]
    assert web.workload_deployment("default", "api") is not None and web.namespace("default") is not None
    copies = snap.copies_of("web", "default", "api")
    assert [(c.cell, c.upstream_uid) for c in copies] == [
        ("dfw-1", created["metadata"]["uid"]),
        ("dfw-2", created["metadata"]["uid"]),
    ]
    assert snap.cells["lhr-1"].copies == (), "only federated copies (upstream-namespace label) are read"
    assert all(ns["metadata"]["name"].startswith("ns-") for c in snap.cells.values() for ns in c.namespaces)


async def test_unreachable_unregistered_and_hung_clusters_are_recorded(tmp_path: Path) -> None:
    async with fleet(tmp_path, projects=PROJECTS, cells=CELLS) as f, silent_server() as hung:
        mgmt = Plane(f.management)
        mgmt.create("secrets", kubeconfig_secret("hung", plain_kubeconfig(hung)))
        mgmt.create("clusterprofiles", cell_profile("hung", "NRT"), group="multicluster.x-k8s.io", version="v1alpha1")
        mgmt.delete("secrets", REGISTRATION_NAMESPACE, "dfw-2-kubeconfig")
        await f.cells["lhr-1"].pause()
        with anyio.fail_after(20):  # a bound on the test, not a measurement: loading must not hang
            snap = await load_snapshot(f.config(), read_timeout=0.5)
        await f.cells["lhr-1"].resume()
    health = {name: c.health for name, c in snap.cells.items()}
    assert health["dfw-1"].reachable
    assert (health["dfw-2"].reachable, health["dfw-2"].registered, health["dfw-2"].error) == (
        False,
        False,
        "kubeconfig Secret dfw-2-kubeconfig not found",
    )
    assert (health["hung"].reachable, health["hung"].registered, health["hung"].error) == (
        False,
        True,
        "no answer within 0.5s",
    )
    assert not health["lhr-1"].reachable and health["lhr-1"].registered
    assert "lhr-1" in health["lhr-1"].error and "GET" in health["lhr-1"].error
    # the manager would not engage dfw-2: placement does not see it; unreachable cells keep their place
    assert snap.cell_infos() == [
        CellInfo("dfw-1", "DFW"),
        CellInfo("hung", "NRT", False),
        CellInfo("lhr-1", "LHR", False),
    ]
    assert [c.name for c in snap.unreachable_cells()] == ["dfw-2", "hung", "lhr-1"]


async def test_an_unreadable_management_cluster_gives_an_empty_snapshot() -> None:
    async with silent_server() as hung:
        snap = await load_snapshot(ConnectionConfig.insecure(hung), read_timeout=0.3)
    assert (snap.management.reachable, snap.management.error) == (False, "no answer within 0.3s")
    assert (snap.projects, snap.cells, snap.source) == ({}, {}, hung)


async def test_the_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="read_timeout must be a positive number of seconds, got 0"):
        await load_snapshot(ConnectionConfig.insecure("http://127.0.0.1:1"), read_timeout=0)


def test_where_the_management_kubeconfig_comes_from(tmp_path: Path) -> None:
    (tmp_path / "management.kubeconfig").write_text("{}")
    assert management_kubeconfig(state_dir=tmp_path) == tmp_path / "management.kubeconfig"
    assert management_kubeconfig(kubeconfig=tmp_path / "management.kubeconfig") == tmp_path / "management.kubeconfig"
    for kwargs, message in [
        ({}, "give exactly one of --state-dir DIR or --kubeconfig FILE"),
        ({"state_dir": tmp_path, "kubeconfig": tmp_path}, "give exactly one of --state-dir DIR or --kubeconfig FILE"),
        ({"state_dir": tmp_path / "x"}, f"--state-dir {tmp_path}/x: no such directory"),
        ({"kubeconfig": tmp_path / "x"}, f"--kubeconfig {tmp_path}/x: no such file"),
    ]:
        with pytest.raises(SnapshotSourceError) as caught:
            management_kubeconfig(**kwargs)
        assert str(caught.value) == message
