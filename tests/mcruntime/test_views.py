"""Cache views: a controller's watch and its cached reads share one informer per
(cluster, resource, view); reads outside every view are refused; a LIST refused with
401/403 fails reads fast."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest
from aiohttp import web

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    APIError,
    CacheOptions,
    Cluster,
    ClusterNotReadyError,
    ConnectionConfig,
    Manager,
    NoCacheViewError,
    Request,
    Result,
    View,
    ViewConflictError,
)
from mcruntime.cluster import ClusterOptions
from mcruntime.handlers import EnqueueRequestForObject
from mcruntime.resources import CONFIGMAPS, NAMESPACES, SECRETS, Resource
from mcruntime.source import ENGAGED, LOCAL, engaged
from tests.support import Background, Plane, cluster_for, config_for, configmap, eventually


def labelled(name: str, **data: str) -> dict[str, Any]:
    cm = configmap(name, **data)
    cm["metadata"]["labels"] = {"app": "web"}
    return cm


@pytest.mark.slow
async def test_a_narrowed_watch_and_cached_reads_share_one_list_and_watch(apiserver: EmbeddedAPIServer) -> None:
    """The watch narrows by label; `client.get` reads the same view. Exactly one LIST and
    one WATCH of configmaps reach the server, and after watch drops and failing GETs every
    update is what the reconciler reads (12 of 12 trials)."""
    plane = Plane(apiserver)
    plane.create("configmaps", labelled("tracked", round="0"))
    plane.create("configmaps", configmap("other", round="0"))  # outside the view
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    seen: dict[str, str] = {}

    async def reconcile(req: Request) -> Result:
        obj = await mgr.get_cluster(req.cluster).client.get(CONFIGMAPS, req.name, namespace=req.namespace)
        seen[req.name] = obj["data"]["round"]
        return Result()

    ctrl = mgr.new_controller("narrow", reconcile).for_(CONFIGMAPS, clusters=LOCAL, label_selector="app=web")
    counters = apiserver.plane.counters
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await eventually(lambda: seen.get("tracked") == "0", "first reconcile")
        assert "other" not in seen
        for trial in range(1, 13):
            apiserver.plane.drop_watches()
            apiserver.plane.faults.configure(error_rate=0.5, error_code=500, methods=["GET"])
            current = plane.get("configmaps", "default", "tracked")
            current["data"]["round"] = str(trial)
            plane.update("configmaps", current)
            await anyio.sleep(0.05)
            apiserver.plane.faults.clear()
            await eventually(lambda t=trial: seen.get("tracked") == str(t), f"trial {trial} reflected")
        assert await ctrl.wait_idle(within=5)
        views = mgr.local.cache.views
        assert views == {CONFIGMAPS: View(CONFIGMAPS, label_selector="app=web")}
        assert len(mgr.local.cache.informers) == 1
        mgr.stop()
    assert counters.get("list", "configmaps") == 1, "reads must not start a second informer"
    # the watch resumed after every drop; a second informer would have doubled these
    assert counters.get("watch", "configmaps") == 1 + 12


async def test_reads_outside_every_view_are_refused_not_cached(cluster: Cluster, apiserver: EmbeddedAPIServer) -> None:
    with pytest.raises(NoCacheViewError, match="no cache view of configmaps"):
        await cluster.client.get(CONFIGMAPS, "x", namespace="default")
    cluster.cache.declare(View(CONFIGMAPS, namespace="team-a"))
    with pytest.raises(NoCacheViewError, match="cannot serve namespace 'default'"):
        await cluster.client.get(CONFIGMAPS, "x", namespace="default")
    with pytest.raises(NoCacheViewError, match="cannot serve all namespaces"):
        await cluster.client.list(CONFIGMAPS)
    with pytest.raises(ViewConflictError, match="already has the cache view"):
        cluster.cache.declare(View(CONFIGMAPS))
    assert cluster.cache.declare(View(CONFIGMAPS, namespace="team-a")) is cluster.cache.informer_of(CONFIGMAPS)
    assert apiserver.plane.counters.get("list", "configmaps") <= 1
    # an explicitly uncached read is always possible
    with pytest.raises(APIError) as err:
        await cluster.client.get_live(CONFIGMAPS, "x", namespace="default")
    assert err.value.status == 404


def test_the_manager_refuses_two_views_of_one_resource_for_overlapping_clusters() -> None:
    async def reconcile(_req: Request) -> Result:
        return Result()

    mgr = Manager(None)
    mgr.new_controller("a", reconcile).for_(CONFIGMAPS, clusters=engaged("role=cell"), namespace="x")
    mgr.new_controller("b", reconcile).for_(CONFIGMAPS, clusters=engaged("role=project"))  # disjoint: fine
    mgr.new_controller("c", reconcile).reads(SECRETS, clusters=ENGAGED)
    mgr.check_views()
    mgr.new_controller("d", reconcile).for_(CONFIGMAPS, clusters=engaged("zone=eu"), label_selector="app=web")
    with pytest.raises(ValueError, match="controllers 'a' and 'd' declare different cache views of configmaps"):
        mgr.check_views()


def test_an_aliased_view_may_differ_where_a_cache_may_narrow_the_resource() -> None:
    """A second (aliased) view with a transform of its own, as the sharder's slim FLEET
    views: refused where no cache narrows the resource (it would be the one view there),
    allowed when the manager's caches may narrow it (then it lives apart)."""

    async def reconcile(_req: Request) -> Result:
        return Result()

    def slim(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": obj.get("metadata", {})}

    def wire(mgr: Manager) -> Manager:
        mgr.new_controller("own", reconcile).for_(CONFIGMAPS, clusters=ENGAGED)
        mgr.new_controller("fleet", reconcile).watch(
            CONFIGMAPS, EnqueueRequestForObject(), clusters=ENGAGED, alias="fleet", transform=slim
        )
        return mgr

    with pytest.raises(ValueError, match="controllers 'own' and 'fleet' declare different cache views"):
        wire(Manager(None)).check_views()
    narrowing = ClusterOptions(cache=CacheOptions(label_selectors={CONFIGMAPS: "shard=a"}))
    wire(Manager(None, cluster_options=narrowing)).check_views()
    wire(Manager(None, cluster_options_for=lambda _labels: narrowing)).check_views()


class RefusingServer:
    """A server that answers every request with 403 Forbidden, as an API server does for a
    Role that does not allow LIST."""

    def __init__(self) -> None:
        self.url = ""
        self.requests = 0
        self.answering = anyio.Event()  # the refusal is held back until this is set
        self.answering.set()

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        await self.answering.wait()
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Forbidden",
            "code": 403,
            "message": 'namespaces is forbidden: User "robot" cannot list resource "namespaces" in API group ""',
        }
        return web.Response(status=403, body=orjson.dumps(status), content_type="application/json")


@pytest.fixture
async def refusing() -> AsyncIterator[RefusingServer]:
    srv = RefusingServer()
    runner = web.ServerRunner(web.Server(srv.handle), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    srv.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield srv
    finally:
        await runner.cleanup()


async def test_a_forbidden_list_fails_reads_fast_with_that_error(refusing: RefusingServer) -> None:
    cluster = Cluster("locked", ConnectionConfig.insecure(refusing.url))
    async with cluster.started():
        cluster.cache.declare(View(NAMESPACES))
        informer = cluster.cache.informers[0]
        await eventually(lambda: informer.access_error is not None, "the first LIST refused")
        with anyio.fail_after(0.5), pytest.raises(APIError) as err:
            await cluster.client.get(NAMESPACES, "default")
        assert err.value.status == 403 and "cannot list" in err.value.message
        assert cluster.state.value == "syncing"


async def test_a_read_waiting_for_the_first_list_ends_with_its_refusal(refusing: RefusingServer) -> None:
    """A read that began while the first LIST was in flight raises the refusal when it comes
    back, not after the read's whole wait for a sync (here 60 s)."""
    refusing.answering = anyio.Event()
    options = ClusterOptions(cache=CacheOptions(sync_wait=60.0))
    cluster = Cluster("locked", ConnectionConfig.insecure(refusing.url), options=options)
    async with cluster.started():
        cluster.cache.declare(View(NAMESPACES))
        await eventually(lambda: refusing.requests >= 1, "the first LIST in flight")
        refusals: list[APIError] = []

        async def read() -> None:
            with pytest.raises(APIError) as err:
                await cluster.client.get(NAMESPACES, "default")
            refusals.append(err.value)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.wait_all_tasks_blocked()
                refusing.answering.set()
        assert [e.status for e in refusals] == [403]


async def test_a_syncing_view_makes_reads_fail_fast_not_block(tmp_path: Any) -> None:
    """A cluster that never answers (a port nobody listens on) is reported unreachable and
    reads of it raise ClusterNotReadyError at once."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cluster = Cluster("dead", ConnectionConfig.insecure(f"http://127.0.0.1:{port}"))
    async with cluster.started():
        cluster.cache.declare(View(CONFIGMAPS))
        await eventually(lambda: cluster.state.value == "unreachable", "the dead cluster reported unreachable")
        with anyio.fail_after(0.2), pytest.raises(ClusterNotReadyError, match="'dead' is unreachable"):
            await cluster.client.get(CONFIGMAPS, "x", namespace="default")
        with anyio.fail_after(0.2), pytest.raises(ClusterNotReadyError):
            await cluster.client.create(CONFIGMAPS, configmap("x"))
        assert "unreachable (last contact never)" in cluster.describe()


def shard_cm(name: str, shard: str) -> dict[str, Any]:
    cm = configmap(name)
    cm["metadata"]["labels"] = {"shard": shard}
    return cm


def relabel(plane: Plane, name: str, shard: str) -> None:
    current = plane.get("configmaps", "default", name)
    current["metadata"]["labels"] = {"shard": shard}
    plane.update("configmaps", current)


async def test_a_narrowing_cache_selects_every_view_by_its_label_and_an_alias_sees_past_it(
    apiserver: EmbeddedAPIServer,
) -> None:
    """`CacheOptions.label_selectors` (a shard's cache): every view of the resource holds only
    what carries the label (ANDed with the view's own selector); an object relabelled out
    arrives as DELETED and one relabelled in as ADDED (kube-apiserver's watch semantics);
    an aliased view is a second informer that sees every object."""
    plane = Plane(apiserver)
    plane.create("configmaps", shard_cm("mine", "a"))
    plane.create("configmaps", shard_cm("theirs", "b"))
    options = ClusterOptions(cache=CacheOptions(label_selectors={CONFIGMAPS: "shard=a"}))
    cluster = cluster_for(apiserver, "shard-a", options=options)
    events: list[tuple[str, str]] = []
    async with Background(cluster.run):
        narrowed = cluster.cache.declare(View(CONFIGMAPS))
        assert cluster.cache.view_of(CONFIGMAPS) == View(CONFIGMAPS, label_selector="shard=a")
        fleet = cluster.cache.declare(View(CONFIGMAPS, alias="fleet"))
        assert fleet is not narrowed and fleet.label_selector is None
        assert cluster.cache.declare(View(CONFIGMAPS)) is narrowed
        narrowed.add_listener(lambda e: events.append((str(e.type), e.key)), name="events")
        assert await cluster.cache.wait_for_sync(10)
        assert [o["metadata"]["name"] for o in await cluster.client.list(CONFIGMAPS)] == ["mine"]
        assert sorted(o["metadata"]["name"] for o in await cluster.client.list(CONFIGMAPS, alias="fleet")) == [
            "mine",
            "theirs",
        ]
        relabel(plane, "mine", "b")  # leaves the selection: DELETED here, still there for the alias
        relabel(plane, "theirs", "a")  # enters it: ADDED
        await eventually(lambda: events[1:] == [("DELETED", "default/mine"), ("ADDED", "default/theirs")], "events")
        assert await cluster.client.get_or_none(CONFIGMAPS, "mine", namespace="default") is None
        assert await cluster.client.get_or_none(CONFIGMAPS, "mine", namespace="default", alias="fleet") is not None
        assert len(cluster.cache.informers) == 2
    # a view of the resource ANDed with the cache's selector; a bad selector fails when configured
    other = cluster_for(apiserver, "x", options=options)
    assert other.cache.declare(View(CONFIGMAPS, label_selector="app")).label_selector == "app,shard=a"
    with pytest.raises(ValueError):
        CacheOptions(label_selectors={CONFIGMAPS: "a in"})


async def test_an_alias_is_the_one_view_where_the_cache_does_not_narrow(cluster: Cluster) -> None:
    """Unsharded, the FLEET-style alias costs nothing: it is the resource's one view."""
    plain = cluster.cache.declare(View(CONFIGMAPS))
    assert cluster.cache.declare(View(CONFIGMAPS, alias="fleet")) is plain
    assert cluster.cache.informer_of(CONFIGMAPS, "fleet") is plain
    assert len(cluster.cache.informers) == 1


async def test_a_metadata_only_view_lists_and_watches_partial_object_metadata(apiserver: EmbeddedAPIServer) -> None:
    """A `metadata_only` view (the sharder's FLEET views) asks for PartialObjectMetadata on
    its LIST and its WATCH, so the server sends no spec, data or status: what it caches and
    hands its listeners is the objects' metadata (kind PartialObjectMetadata), and a change
    of it (a relabel) arrives as for any view. The full view beside it is plain JSON."""
    plane = Plane(apiserver)
    listed = shard_cm("listed", "a")
    listed["data"] = {"payload": "x" * 1000}
    plane.create("configmaps", listed)
    options = ClusterOptions(cache=CacheOptions(label_selectors={CONFIGMAPS: "shard=a"}))
    cluster = cluster_for(apiserver, "sharder", options=options)
    counters = apiserver.plane.counters
    seen: list[dict[str, Any]] = []
    async with Background(cluster.run):
        cluster.cache.declare(View(CONFIGMAPS))
        slim = cluster.cache.declare(View(CONFIGMAPS, alias="fleet", transform=None, metadata_only=True))
        assert slim.metadata_only and not cluster.cache.informer_of(CONFIGMAPS).metadata_only
        slim.add_listener(lambda e: seen.append(e.obj), name="seen")
        assert await cluster.cache.wait_for_sync(10)
        full = await cluster.client.list(CONFIGMAPS)
        assert [(o["kind"], o["data"]) for o in full] == [("ConfigMap", listed["data"])]
        plane.create("configmaps", shard_cm("watched", "b"))
        relabel(plane, "listed", "c")
        await eventually(lambda: [o["metadata"]["labels"]["shard"] for o in seen] == ["a", "b", "c"], "events")
        cached = await cluster.client.list(CONFIGMAPS, alias="fleet")
    assert {o["kind"] for o in [*seen, *cached]} == {"PartialObjectMetadata"}
    assert all(set(o) == {"kind", "apiVersion", "metadata"} for o in [*seen, *cached]), "no data sent"
    assert {o["metadata"]["name"]: o["metadata"]["labels"] for o in cached} == {
        "listed": {"shard": "c"}, "watched": {"shard": "b"}}  # fmt: skip
    assert counters.get_as("metadata", "list", "configmaps") == 1
    assert counters.get_as("metadata", "watch", "configmaps") >= 1
    assert counters.get_as("json", "list", "configmaps") == 1  # the full view's


async def test_lookups_by_an_equal_resource_find_the_declared_view(apiserver: EmbeddedAPIServer) -> None:
    """Views are found by resource equality, never identity: a Resource built anew (a
    deserialised or separately spelled one) finds the view declared with the constant, in
    a narrowing cache as in a plain one, by alias and for cached reads."""
    Plane(apiserver).create("configmaps", shard_cm("mine", "a"))
    options = ClusterOptions(cache=CacheOptions(label_selectors={CONFIGMAPS: "shard=a"}))
    cluster = cluster_for(apiserver, "shard-a", options=options)

    def same() -> Resource:
        return Resource(CONFIGMAPS.group, CONFIGMAPS.version, CONFIGMAPS.plural, CONFIGMAPS.kind)

    async with Background(cluster.run):
        narrowed = cluster.cache.declare(View(CONFIGMAPS))
        fleet = cluster.cache.declare(View(same(), alias="fleet"))
        assert cluster.cache.declare(View(same())) is narrowed
        assert cluster.cache.declare(View(CONFIGMAPS, alias="fleet")) is fleet
        assert cluster.cache.informer_of(same()) is narrowed and cluster.cache.informer_of(same(), "fleet") is fleet
        assert cluster.cache.view_of(same()) == View(CONFIGMAPS, label_selector="shard=a")
        assert cluster.cache.view_of(same(), "fleet") == View(CONFIGMAPS, alias="fleet")
        assert cluster.cache.views == {CONFIGMAPS: View(CONFIGMAPS, label_selector="shard=a")}
        assert cluster.cache.narrows(same())
        assert await cluster.cache.wait_for_sync(10)
        assert (await cluster.cache.get(same(), "mine", namespace="default"))["metadata"]["name"] == "mine"
        assert [o["metadata"]["name"] for o in await cluster.cache.list(same(), alias="fleet")] == ["mine"]
        with pytest.raises(NoCacheViewError, match="secrets"):
            cluster.cache.informer_of(Resource("", "v1", "secrets", "Secret"))
        with pytest.raises(ViewConflictError):
            cluster.cache.declare(View(same(), alias="fleet", namespace="default"))
    plain = cluster_for(apiserver, "plain")
    informer = plain.cache.declare(View(CONFIGMAPS))
    assert plain.cache.informer_of(same(), "fleet") is informer
    assert plain.cache.view_of(same(), "any") == View(CONFIGMAPS)
    assert not plain.cache.narrows(same()) and plain.cache.informers == [informer]
