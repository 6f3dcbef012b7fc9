"""LIST and WATCH through kubernetes-asyncio: selectors, limit/continue, list revisions, and
`kubernetes_asyncio.watch.Watch` from a revision, from ""/"0", 410 Expired, bookmarks,
timeoutSeconds and selector transitions delivered as ADDED/DELETED.

The generated API classes are typed `Any` here: their annotations do not admit the dict bodies
and `_content_type` overrides that the client accepts at run time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from kubeplane import EmbeddedAPIServer

from .conftest import GROUP, Obj, configmap, namespace, widget


async def _collect(stream: Any, count: int, within: float = 10.0) -> list[tuple[str, str]]:
    """Read `count` events from a Watch stream as (type, name)."""
    out: list[tuple[str, str]] = []

    async def read() -> None:
        async for event in stream:
            obj = event["raw_object"]
            out.append((event["type"], obj["metadata"].get("name", "")))
            if len(out) >= count:
                return

    try:
        await asyncio.wait_for(read(), within)
    except TimeoutError:
        raise AssertionError(f"expected {count} watch events within {within}s, got {out}") from None
    return out


async def test_list_selectors_paging_and_revisions(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    await core.create_namespace(namespace("b-ns"))
    for name, labels in (("a", {"app": "x", "env": "prod"}), ("b", {"app": "x"}), ("c", {"app": "y"}), ("d", {})):
        await core.create_namespaced_config_map("default", configmap(name, labels=labels))
    await core.create_namespaced_config_map("b-ns", configmap("a", labels={"app": "x"}))

    async def names(**kw: Any) -> list[str]:
        return [i.metadata.name for i in (await core.list_namespaced_config_map("default", **kw)).items]

    assert await names(label_selector="app=x") == ["a", "b"]
    assert await names(label_selector="app==y") == ["c"]
    assert await names(label_selector="app!=x") == ["c", "d"]
    assert await names(label_selector="app in (x,y),env notin (prod)") == ["b", "c"]
    assert await names(label_selector="env") == ["a"]
    assert await names(label_selector="!app") == ["d"]
    assert await names(field_selector="metadata.name=c") == ["c"]
    assert await names(field_selector="metadata.name!=c,metadata.namespace=default") == ["a", "b", "d"]
    everywhere = await core.list_config_map_for_all_namespaces(label_selector="app=x")
    assert [(i.metadata.namespace, i.metadata.name) for i in everywhere.items] == [
        ("b-ns", "a"),
        ("default", "a"),
        ("default", "b"),
    ]
    with pytest.raises(ApiException) as info:
        await core.list_namespaced_config_map("default", field_selector="data.x=1")
    assert info.value.status == 400

    page = await core.list_namespaced_config_map("default", limit=3)
    assert [i.metadata.name for i in page.items] == ["a", "b", "c"]
    assert page.metadata.remaining_item_count == 1 and page.metadata._continue
    rest = await core.list_namespaced_config_map("default", limit=3, _continue=page.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["d"] and rest.metadata._continue is None
    assert rest.metadata.resource_version == page.metadata.resource_version
    # a filtered page does not count what remains
    filtered = await core.list_namespaced_config_map("default", limit=1, label_selector="app")
    assert filtered.metadata._continue and filtered.metadata.remaining_item_count is None

    # the list revision is the latest write's; an exact list at an older revision sees the past
    before = page.metadata.resource_version
    await core.delete_namespaced_config_map("d", "default")
    changed = await core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "z"}}})
    now = await core.list_namespaced_config_map("default")
    assert now.metadata.resource_version == changed.metadata.resource_version
    past = await core.list_namespaced_config_map(
        "default", resource_version=before, resource_version_match="Exact", label_selector="app=x"
    )
    assert [i.metadata.name for i in past.items] == ["a", "b"]
    assert past.metadata.resource_version == before


async def test_watch_from_revision_and_initial_state(k8s: ApiClient) -> None:
    core: Any = client.CoreV1Api(k8s)
    first = await core.create_namespaced_config_map("default", configmap("one"))
    await core.create_namespaced_config_map("default", configmap("two"))
    await core.patch_namespaced_config_map("one", "default", {"data": {"k": "v"}})
    await core.delete_namespaced_config_map("two", "default")

    # from a revision: the events after it, in order, with their objects decoded
    w = watch.Watch()
    events: list[Any] = []
    async with w.stream(
        core.list_namespaced_config_map, "default", resource_version=first.metadata.resource_version, timeout_seconds=1
    ) as stream:
        async for event in stream:
            events.append(event)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "two"),
        ("MODIFIED", "one"),
        ("DELETED", "two"),
    ]
    assert events[1]["object"].data == {"k": "v"}
    revs = [int(e["object"].metadata.resource_version) for e in events]
    assert revs == sorted(revs) and revs[0] > int(first.metadata.resource_version)
    resumed_at: Any = w.resource_version  # where a resumed watch would continue from
    assert resumed_at == str(revs[-1])

    # from "" (no resource_version) and "0": the current state as ADDED, then live events
    for index, rv in enumerate((None, "0")):
        w = watch.Watch()
        kwargs: dict[str, Any] = {"timeout_seconds": 5}
        if rv is not None:
            kwargs["resource_version"] = rv
        async with w.stream(core.list_namespaced_config_map, "default", **kwargs) as stream:
            initial = await _collect(stream, 1 + index)
            assert sorted(initial) == sorted([("ADDED", "one")] + [("ADDED", f"live-{i}") for i in range(index)])
            await core.create_namespaced_config_map("default", configmap(f"live-{index}"))
            assert await _collect(stream, 1) == [("ADDED", f"live-{index}")]
            w.stop()


async def test_watch_expired_bookmarks_and_timeout(k8s: ApiClient, apiserver: EmbeddedAPIServer) -> None:
    core: Any = client.CoreV1Api(k8s)
    old = await core.create_namespaced_config_map("default", configmap("x"))
    await core.patch_namespaced_config_map("x", "default", {"data": {"a": "1"}})
    apiserver.plane.expire_history()
    w = watch.Watch()
    with pytest.raises(ApiException) as info:
        async with w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=old.metadata.resource_version,
            timeout_seconds=5,
        ) as stream:
            async for _ in stream:
                pass
    assert info.value.status == 410 and "Expired: too old resource version" in str(info.value.reason)

    # bookmarks carry the current revision; the stream ends at timeoutSeconds
    current = (await core.list_namespaced_config_map("default")).metadata.resource_version
    w = watch.Watch()
    seen: list[Any] = []
    async with w.stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=current,
        allow_watch_bookmarks=True,
        timeout_seconds=3,
    ) as stream:
        async for event in stream:
            seen.append(event)
    assert seen, "expected BOOKMARK events within a 3s watch (bookmark interval is 1s)"
    assert {e["type"] for e in seen} == {"BOOKMARK"}
    assert {e["raw_object"]["metadata"]["resourceVersion"] for e in seen} == {current}
    bookmarked_at: Any = w.resource_version
    assert bookmarked_at == current

    # without allowWatchBookmarks there are none, and an idle watch just ends at its timeout
    w = watch.Watch()
    async with w.stream(core.list_namespaced_config_map, "default", resource_version=current, timeout_seconds=1) as s:
        quiet = [e async for e in s]
    assert quiet == []


async def test_watch_selectors_apply_per_event(k8s: ApiClient, widgets: Obj) -> None:
    core: Any = client.CoreV1Api(k8s)
    await core.create_namespaced_config_map("default", configmap("in", labels={"sel": "yes"}))
    await core.create_namespaced_config_map("default", configmap("out"))
    w = watch.Watch()
    async with w.stream(core.list_namespaced_config_map, "default", label_selector="sel=yes", timeout_seconds=10) as s:
        assert await _collect(s, 1) == [("ADDED", "in")]
        await core.patch_namespaced_config_map("out", "default", {"data": {"ignored": "1"}})
        await core.patch_namespaced_config_map("in", "default", {"metadata": {"labels": {"sel": "no"}}})
        await core.patch_namespaced_config_map("out", "default", {"metadata": {"labels": {"sel": "yes"}}})
        await core.patch_namespaced_config_map("out", "default", {"data": {"k": "v"}})
        await core.delete_namespaced_config_map("out", "default")
        events = await _collect(s, 4)
        w.stop()
    assert events == [("DELETED", "in"), ("ADDED", "out"), ("MODIFIED", "out"), ("DELETED", "out")]

    # field selectors and custom resources, cluster-wide, resumed from a list's revision (the
    # client only opens the watch when it is first read, after the writes below)
    objs: Any = client.CustomObjectsApi(k8s)
    await core.create_namespace(namespace("second"))
    rv = (await objs.list_cluster_custom_object(GROUP, "v1", "widgets"))["metadata"]["resourceVersion"]
    w = watch.Watch()
    async with w.stream(
        objs.list_cluster_custom_object,
        GROUP,
        "v1",
        "widgets",
        field_selector="metadata.namespace=second",
        resource_version=rv,
        timeout_seconds=10,
    ) as s:
        await objs.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("skip"))
        await objs.create_namespaced_custom_object(GROUP, "v1", "second", "widgets", widget("take"))
        await objs.patch_namespaced_custom_object_status(
            GROUP,
            "v1",
            "second",
            "widgets",
            "take",
            {"status": {"phase": "Up"}},
            _content_type="application/merge-patch+json",
        )
        events = await _collect(s, 2)
        w.stop()
    assert events == [("ADDED", "take"), ("MODIFIED", "take")]
