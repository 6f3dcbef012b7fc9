from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    APIError,
    Cluster,
    ClusterOptions,
    NoCacheViewError,
    Preconditions,
    Resource,
    TransportOptions,
    View,
    is_conflict,
    is_not_found,
    retry_on_conflict,
)
from mcruntime.cache import InformerCache
from mcruntime.informer import Informer
from mcruntime.resources import CONFIGMAPS, SECRETS
from tests.support import Plane, configmap, eventually

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")


def widget(name: str, **spec: object) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": dict(spec)}


async def test_create_get_update_and_stale_update_conflicts(cluster: Cluster) -> None:
    client = cluster.client
    created = await client.create(CONFIGMAPS, configmap("c", a="1"))
    assert created["metadata"]["uid"]
    live = await client.get_live(CONFIGMAPS, "c", namespace="default")
    live["data"]["a"] = "2"
    updated = await client.update(CONFIGMAPS, live)
    assert updated["data"] == {"a": "2"}
    live["data"]["a"] = "3"  # still carries the old resourceVersion
    with pytest.raises(APIError) as err:
        await client.update(CONFIGMAPS, live)
    assert is_conflict(err.value)


async def test_cached_reads_do_not_call_the_api(apiserver: EmbeddedAPIServer, cluster: Cluster, plane: Plane) -> None:
    plane.create("configmaps", configmap("cached", a="1"))
    cluster.cache.declare(View(CONFIGMAPS))
    counters = apiserver.plane.counters
    first = await cluster.client.get(CONFIGMAPS, "cached", namespace="default")
    assert first["data"] == {"a": "1"}
    for _ in range(5):
        await cluster.client.get(CONFIGMAPS, "cached", namespace="default")
    assert counters.get("get", "configmaps") == 0
    assert counters.get("list", "configmaps") == 1
    with pytest.raises(APIError) as err:
        await cluster.client.get(CONFIGMAPS, "missing", namespace="default")
    assert is_not_found(err.value)
    # get-or-none: NotFound is None (from the cache: still no request), a found object itself
    assert await cluster.client.get_or_none(CONFIGMAPS, "missing", namespace="default") is None
    found = await cluster.client.get_or_none(CONFIGMAPS, "cached", namespace="default")
    assert found is not None and found["data"] == {"a": "1"}
    assert counters.get("get", "configmaps") == 0
    cm2 = configmap("labelled")
    cm2["metadata"]["labels"] = {"app": "web"}
    plane.create("configmaps", cm2)
    informer = cluster.cache.informer_of(CONFIGMAPS)
    await eventually(lambda: informer.get("labelled", namespace="default"), what="cache update")
    listed = await cluster.client.list(CONFIGMAPS, namespace="default", label_selector="app=web")
    assert [o["metadata"]["name"] for o in listed] == ["labelled"]


async def test_a_cached_get_or_none_of_a_missing_object_makes_no_not_found_error(
    cluster: Cluster, plane: Plane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reconciler asks for what it has not created yet on every reconcile: from the cache
    that is a None, with no NotFound error built and caught; `get` still raises it, and a
    read the cache cannot serve still fails as before."""
    plane.create("configmaps", configmap("cached", a="1"))
    cluster.cache.declare(View(CONFIGMAPS))
    made: list[str] = []
    real = APIError.not_found.__func__  # type: ignore[attr-defined]

    def not_found(cls: type[APIError], resource: str, name: str) -> APIError:
        made.append(name)
        return real(cls, resource, name)  # type: ignore[no-any-return]

    monkeypatch.setattr(APIError, "not_found", classmethod(not_found))
    assert await cluster.client.get_or_none(CONFIGMAPS, "missing", namespace="default") is None
    found = await cluster.client.get_or_none(CONFIGMAPS, "cached", namespace="default")
    assert found is not None and found["data"] == {"a": "1"}
    assert made == []
    with pytest.raises(APIError) as err:
        await cluster.client.get(CONFIGMAPS, "missing", namespace="default")
    assert is_not_found(err.value) and made == ["missing"]
    with pytest.raises(NoCacheViewError):
        await cluster.client.get_or_none(SECRETS, "any", namespace="default")


async def test_a_read_of_a_synced_view_is_served_without_the_waiting_path(
    cluster: Cluster, plane: Plane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nearly every cached read finds its view declared and synced: it is served at once,
    not through the coroutine that waits for a sync or explains a refusal; a read the view
    cannot serve still takes that path and is refused as before."""
    plane.create("configmaps", configmap("cached", a="1"))
    cache = cluster.cache
    cache.declare(View(CONFIGMAPS, namespace="default"))
    assert await cache.wait_for_sync(5)
    waited: list[str] = []
    real = InformerCache._synced

    async def counting(self: InformerCache, resource: Resource, namespace: str | None, alias: str) -> Informer:
        waited.append(resource.plural)
        return await real(self, resource, namespace, alias)

    monkeypatch.setattr(InformerCache, "_synced", counting)
    assert (await cache.get(CONFIGMAPS, "cached", namespace="default"))["data"] == {"a": "1"}
    assert await cache.get_or_none(CONFIGMAPS, "missing", namespace="default") is None
    assert [o["metadata"]["name"] for o in await cache.list(CONFIGMAPS, namespace="default")] == ["cached"]
    with pytest.raises(APIError) as err:
        await cache.get(CONFIGMAPS, "missing", namespace="default")
    assert is_not_found(err.value)
    assert waited == []
    with pytest.raises(NoCacheViewError, match="cannot serve namespace 'other'"):
        await cache.get_or_none(CONFIGMAPS, "cached", namespace="other")
    with pytest.raises(NoCacheViewError):
        await cache.list(SECRETS, namespace="default")
    assert waited == ["configmaps", "secrets"]


async def test_a_synced_cache_answers_has_synced_without_asking_each_informer(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked per event and per reconcile: once every informer has synced (they never
    un-sync), the cache says so without a walk; a view declared later counts again."""
    cache = cluster.cache
    cache.declare(View(CONFIGMAPS))
    assert await cache.wait_for_sync(5)
    asked: list[Informer] = []
    real = Informer.has_synced

    def counted(self: Informer) -> bool:
        asked.append(self)
        return bool(real.fget(self))  # type: ignore[attr-defined]

    monkeypatch.setattr(Informer, "has_synced", property(counted))
    assert cache.has_synced
    asked.clear()
    for _ in range(5):
        assert cache.has_synced
    assert asked == [], "the synced cache walked its informers again"
    secrets = cache.declare(View(SECRETS))
    assert await secrets.wait_for_sync(5)
    asked.clear()
    assert cache.has_synced and secrets in asked, "a newly declared view is asked until it has synced"
    asked.clear()
    assert cache.has_synced and asked == []


async def test_merge_and_json_patches(cluster: Cluster) -> None:
    client = cluster.client
    await client.create(CONFIGMAPS, configmap("p", a="1", b="2"))
    merged = await client.patch(CONFIGMAPS, "p", {"data": {"a": "x", "b": None}}, namespace="default")
    assert merged["data"] == {"a": "x"}
    patched = await client.patch(
        CONFIGMAPS, "p", [{"op": "add", "path": "/data/c", "value": "3"}], namespace="default", patch_type="json"
    )
    assert patched["data"] == {"a": "x", "c": "3"}
    with pytest.raises(ValueError, match="list of operations"):
        await client.patch(CONFIGMAPS, "p", {"op": "add"}, namespace="default", patch_type="json")


async def test_server_side_apply_with_field_managers(cluster: Cluster) -> None:
    client = cluster.client
    mine = configmap("ssa", owned="mine")
    applied = await client.apply(CONFIGMAPS, mine, field_manager="alpha")
    assert applied["data"] == {"owned": "mine"}
    with pytest.raises(APIError) as err:
        await client.apply(CONFIGMAPS, configmap("ssa", owned="theirs"), field_manager="beta")
    assert err.value.status == 409
    forced = await client.apply(CONFIGMAPS, configmap("ssa", owned="theirs"), field_manager="beta", force=True)
    assert forced["data"] == {"owned": "theirs"}
    managers = {m["manager"] for m in forced["metadata"]["managedFields"]}
    assert "beta" in managers


@pytest.mark.usefixtures("widgets")
async def test_status_subresource_update_and_apply(cluster: Cluster) -> None:
    client = cluster.client
    created = await client.create(WIDGETS, widget("w", size=1))
    created["status"] = {"phase": "Ready"}
    created["spec"] = {"size": 99}  # ignored by the status subresource
    after = await client.update_status(WIDGETS, created)
    assert after["status"] == {"phase": "Ready"} and after["spec"] == {"size": 1}
    # an Update and an Apply by the same manager name are two field managers (as in Kubernetes)
    body = {"metadata": {"name": "w", "namespace": "default"}, "status": {"phase": "Done"}}
    with pytest.raises(APIError) as err:
        await client.apply_status(WIDGETS, body)
    assert err.value.status == 409
    applied = await client.apply_status(WIDGETS, body, force=True)
    assert applied["status"]["phase"] == "Done"


async def test_delete_with_preconditions_and_propagation(cluster: Cluster) -> None:
    client = cluster.client
    created = await client.create(CONFIGMAPS, configmap("d"))
    with pytest.raises(APIError) as err:
        await client.delete(CONFIGMAPS, "d", namespace="default", preconditions=Preconditions(uid="not-the-uid"))
    assert is_conflict(err.value)
    with pytest.raises(APIError) as err:
        await client.delete(CONFIGMAPS, "d", namespace="default", preconditions=Preconditions(resource_version="1"))
    assert is_conflict(err.value)
    marked = await client.delete(
        CONFIGMAPS,
        "d",
        namespace="default",
        preconditions=Preconditions(uid=created["metadata"]["uid"]),
        propagation_policy="Foreground",
    )
    assert marked is not None
    assert "foregroundDeletion" in marked["metadata"].get("finalizers", [])
    assert await client.delete(CONFIGMAPS, "never-there", namespace="default", ignore_not_found=True) is None
    with pytest.raises(ValueError, match="propagation_policy"):
        await client.delete(CONFIGMAPS, "d", namespace="default", propagation_policy="Sideways")  # type: ignore[arg-type]


async def test_retry_on_conflict_reruns_the_read_modify_write(cluster: Cluster, plane: Plane) -> None:
    client = cluster.client
    await client.create(CONFIGMAPS, configmap("r", n="0"))
    attempts = 0

    async def bump() -> dict[str, object]:
        nonlocal attempts
        attempts += 1
        live = await client.get_live(CONFIGMAPS, "r", namespace="default")
        if attempts == 1:  # someone else writes between our read and our write
            other = plane.get("configmaps", "default", "r")
            other["data"] = {"n": "10"}
            plane.update("configmaps", other)
        live["data"]["n"] = str(int(live["data"]["n"]) + 1)
        return await client.update(CONFIGMAPS, live)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("test").start_as_current_span("bump"):
        result = await retry_on_conflict(bump)
    assert attempts == 2
    assert result["data"] == {"n": "11"}
    (span,) = exporter.get_finished_spans()
    (event,) = span.events
    assert event.name == "conflict" and event.attributes is not None
    assert event.attributes["retry.attempt"] == 1 and event.attributes["http.request.method"] == "PUT"


async def test_throttling_is_retried_after_retry_after(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    counters = apiserver.plane.counters
    apiserver.plane.faults.configure(error_rate=1.0, error_code=429, retry_after_seconds=0, methods=["POST"])
    with pytest.raises(APIError) as err:
        await cluster.client.create(CONFIGMAPS, configmap("t"))
    assert err.value.status == 429
    assert counters.get("create", "configmaps") == 0, "faults answer before the request is counted"
    assert apiserver.plane.faults.injected == 1 + cluster.transport.max_throttle_retries


async def test_every_call_has_a_timeout(apiserver: EmbeddedAPIServer) -> None:
    from mcruntime import TransportError
    from tests.support import config_for

    apiserver.plane.faults.configure(latency_seconds=2.0, methods=["GET"])
    c = Cluster("slow", config_for(apiserver), options=ClusterOptions(transport=TransportOptions(request_timeout=0.2)))
    async with c.started():
        with anyio.fail_after(5), pytest.raises(TransportError, match="timed out"):
            await c.client.get_live(CONFIGMAPS, "x", namespace="default")


async def test_bad_calls_fail_clearly(cluster: Cluster) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "nons"}})
    with pytest.raises(ValueError, match="is v1/Secret but the call is for v1/ConfigMap"):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "default"}}
        await cluster.client.create(CONFIGMAPS, secret)
