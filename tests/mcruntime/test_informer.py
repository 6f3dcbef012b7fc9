from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import EventType, Informer, ObjectEvent, Transport
from mcruntime.informer import _SYNC, _Listener
from mcruntime.objects import LAST_APPLIED
from mcruntime.resources import CONFIGMAPS
from tests.support import Plane, config_for, configmap, eventually


class Recorder:
    def __init__(self) -> None:
        self.events: list[ObjectEvent] = []

    def __call__(self, event: ObjectEvent) -> None:
        self.events.append(event)

    def of(self, type_: EventType) -> list[str]:
        return [e.key for e in self.events if e.type is type_]

    def has(self, type_: EventType, key: str) -> bool:
        return key in self.of(type_)


async def run_informer(server: EmbeddedAPIServer, informer_kwargs: dict[str, object], body):  # type: ignore[no-untyped-def]
    async with Transport(config_for(server), cluster="t") as transport:
        informer = Informer(transport, CONFIGMAPS, cluster="t", **informer_kwargs)  # type: ignore[arg-type]
        recorder = Recorder()
        informer.add_listener(recorder)
        async with anyio.create_task_group() as tg:
            await tg.start(informer.run)
            assert await informer.wait_for_sync(10), "informer did not sync"
            await body(informer, recorder)
            tg.cancel_scope.cancel()


async def test_lists_then_watches_and_keeps_the_store_current(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    plane.create("configmaps", configmap("before", a="1"))

    async def body(informer: Informer, rec: Recorder) -> None:
        await eventually(lambda: rec.has(EventType.ADDED, "default/before"), what="initial ADDED")
        plane.create("configmaps", configmap("after", a="1"))
        updated = plane.get("configmaps", "default", "before")
        updated["data"] = {"a": "2"}
        plane.update("configmaps", updated)
        plane.delete("configmaps", "default", "after")
        await eventually(lambda: rec.has(EventType.DELETED, "default/after"), what="DELETED after")
        assert rec.has(EventType.ADDED, "default/after")
        modified = [e for e in rec.events if e.type is EventType.MODIFIED]
        assert modified[-1].obj["data"] == {"a": "2"} and modified[-1].old is not None
        assert modified[-1].old["data"] == {"a": "1"}
        assert informer.get("before", namespace="default")["data"] == {"a": "2"}  # type: ignore[index]
        assert informer.get("after", namespace="default") is None

    await run_informer(apiserver, {}, body)


async def test_a_cut_watch_resumes_without_listing_again(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    counters = apiserver.plane.counters

    async def body(informer: Informer, rec: Recorder) -> None:
        assert counters.get("list", "configmaps") == 1
        plane.create("configmaps", configmap("one"))
        await eventually(lambda: rec.has(EventType.ADDED, "default/one"), what="ADDED one")
        watches = counters.get("watch", "configmaps")
        assert apiserver.plane.drop_watches() >= 1
        plane.create("configmaps", configmap("two"))  # happens while no watch is open
        await eventually(lambda: rec.has(EventType.ADDED, "default/two"), what="ADDED two after resume")
        assert counters.get("watch", "configmaps") == watches + 1
        assert counters.get("list", "configmaps") == 1, "resuming a watch must not LIST"
        assert informer.stats.relists == 0
        assert rec.of(EventType.ADDED).count("default/two") == 1, "an event must not be delivered twice"

    await run_informer(apiserver, {}, body)


async def test_expired_history_forces_exactly_one_relist_and_delivers_the_differences(
    apiserver: EmbeddedAPIServer, plane: Plane
) -> None:
    counters = apiserver.plane.counters
    for name in ("keep", "change", "gone"):
        plane.create("configmaps", configmap(name, v="1"))

    async def body(informer: Informer, rec: Recorder) -> None:
        await eventually(lambda: len(rec.of(EventType.ADDED)) == 3, what="three initial ADDs")
        rec.events.clear()
        # all synchronous: the informer cannot resume between these steps
        apiserver.plane.drop_watches()
        plane.delete("configmaps", "default", "gone")
        changed = plane.get("configmaps", "default", "change")
        changed["data"] = {"v": "2"}
        plane.update("configmaps", changed)
        plane.create("configmaps", configmap("new", v="1"))
        apiserver.plane.expire_history()
        await eventually(lambda: informer.stats.relists == 1, what="a re-list after 410")
        await eventually(lambda: rec.has(EventType.DELETED, "default/gone"), what="the delete to reach the handler")
        assert counters.get("list", "configmaps") == 2, "410 must cause exactly one re-list"
        assert rec.of(EventType.DELETED) == ["default/gone"]
        assert next(e for e in rec.events if e.type is EventType.DELETED).final_state_unknown
        assert rec.of(EventType.MODIFIED) == ["default/change"]
        assert rec.of(EventType.ADDED) == ["default/new"]
        assert sorted(informer.store.keys()) == ["default/change", "default/keep", "default/new"]
        # and the informer watches on from the re-list
        plane.create("configmaps", configmap("later"))
        await eventually(lambda: rec.has(EventType.ADDED, "default/later"), what="events after the re-list")
        assert counters.get("list", "configmaps") == 2

    await run_informer(apiserver, {}, body)


async def test_a_paused_server_is_retried_with_backoff_and_resumed_without_relist(
    apiserver: EmbeddedAPIServer, plane: Plane
) -> None:
    counters = apiserver.plane.counters

    async def body(informer: Informer, rec: Recorder) -> None:
        await apiserver.pause()
        plane.create("configmaps", configmap("while-paused"))
        await eventually(lambda: informer.stats.errors >= 1, what="the informer to notice the outage")
        await apiserver.resume()
        await eventually(lambda: rec.has(EventType.ADDED, "default/while-paused"), what="catching up after resume")
        assert counters.get("list", "configmaps") == 1

    from mcruntime import Backoff

    await run_informer(apiserver, {"backoff": Backoff(0.05, 0.2)}, body)


async def test_a_silent_stream_is_restarted_after_the_read_timeout(apiserver: EmbeddedAPIServer) -> None:
    counters = apiserver.plane.counters
    apiserver.plane.bookmark_interval = 60.0  # nothing at all on the stream

    async def body(informer: Informer, rec: Recorder) -> None:
        await eventually(lambda: informer.stats.watch_restarts >= 2, what="read-timeout restarts")
        assert counters.get("list", "configmaps") == 1

    from mcruntime import Backoff

    await run_informer(apiserver, {"read_timeout": 0.2, "backoff": Backoff(0.01, 0.05)}, body)


async def test_bookmarks_advance_the_resume_point(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    async def body(informer: Informer, rec: Recorder) -> None:
        start = informer.resource_version
        plane.create("secrets", {"metadata": {"name": "s", "namespace": "default"}})  # another resource's write
        await eventually(
            lambda: int(informer.resource_version or 0) > int(start or 0), what="a bookmark with a newer version"
        )

    await run_informer(apiserver, {}, body)


async def test_label_selector_narrows_and_relabelled_objects_leave_as_deletes(
    apiserver: EmbeddedAPIServer, plane: Plane
) -> None:
    cm = configmap("sel")
    cm["metadata"]["labels"] = {"app": "web"}
    plane.create("configmaps", cm)
    plane.create("configmaps", configmap("other"))

    async def body(informer: Informer, rec: Recorder) -> None:
        assert informer.store.keys() == ["default/sel"]
        current = plane.get("configmaps", "default", "sel")
        current["metadata"]["labels"] = {"app": "db"}
        plane.update("configmaps", current)
        await eventually(lambda: rec.has(EventType.DELETED, "default/sel"), what="DELETED for the relabelled object")
        assert len(informer.store) == 0

    await run_informer(apiserver, {"label_selector": "app=web"}, body)


async def test_transform_strips_managed_fields_and_last_applied(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    cm = configmap("big", x="y")
    cm["metadata"]["annotations"] = {LAST_APPLIED: '{"big": "copy"}', "keep": "me"}
    plane.create("configmaps", cm)

    async def body(informer: Informer, rec: Recorder) -> None:
        cached = informer.get("big", namespace="default")
        assert cached is not None
        assert "managedFields" not in cached["metadata"]
        assert cached["metadata"]["annotations"] == {"keep": "me"}
        raw = plane.get("configmaps", "default", "big")
        assert raw["metadata"].get("managedFields"), "the server does keep managedFields"

    await run_informer(apiserver, {}, body)


async def test_pages_through_large_lists(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    for i in range(25):
        plane.create("configmaps", configmap(f"cm-{i:02d}"))

    async def body(informer: Informer, rec: Recorder) -> None:
        assert len(informer.store) == 25
        assert apiserver.plane.counters.get("list", "configmaps") == 3

    await run_informer(apiserver, {"page_size": 10}, body)


async def test_a_listed_object_is_decoded_for_one_handler_at_a_time(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    """A LIST's events reach each listener in turn: what a handler decoded is released when
    it returns, not kept for the next listener (a cold start would hold a whole cluster's
    objects decoded at once, for the collector to walk). Within one handler it is shared."""
    for i in range(3):
        plane.create("configmaps", configmap(f"cm-{i}"))
    seen: dict[str, list[dict[str, object]]] = {"first": [], "second": []}

    def reader(name: str) -> Callable[[ObjectEvent], None]:
        def read(event: ObjectEvent) -> None:
            assert event.obj is event.obj, "one decode per handler"
            seen[name].append(event.obj)

        return read

    async with Transport(config_for(apiserver), cluster="t") as transport:
        informer = Informer(transport, CONFIGMAPS, cluster="t")
        informer.add_listener(reader("first"))
        informer.add_listener(reader("second"))
        async with anyio.create_task_group() as tg:
            await tg.start(informer.run)
            await eventually(lambda: len(seen["second"]) == 3, what="both listeners handed the LIST")
            tg.cancel_scope.cancel()
    for first, second in zip(seen["first"], seen["second"], strict=True):
        assert first == second and first is not second, "each handler decodes its own"


async def test_a_watched_updates_old_state_is_decoded_once_for_every_listener(
    apiserver: EmbeddedAPIServer, plane: Plane
) -> None:
    """A watch event comes one at a time with its object decoded: its previous state, read
    by one listener (a predicate, a map function), is the same dict for the next, not
    decoded again per listener. A LIST's previous states are still released per handler."""
    plane.create("configmaps", configmap("cm"))
    olds: dict[str, list[object]] = {"first": [], "second": []}

    def reader(name: str) -> Callable[[ObjectEvent], None]:
        def read(event: ObjectEvent) -> None:
            if event.type is EventType.MODIFIED:
                olds[name].append(event.old)

        return read

    async with Transport(config_for(apiserver), cluster="t") as transport:
        informer = Informer(transport, CONFIGMAPS, cluster="t")
        informer.add_listener(reader("first"))
        informer.add_listener(reader("second"))
        async with anyio.create_task_group() as tg:
            await tg.start(informer.run)
            await informer.wait_for_sync(5)
            changed = plane.get("configmaps", "default", "cm")
            changed["data"] = {"k": "2"}
            plane.update("configmaps", changed)
            await eventually(lambda: len(olds["second"]) == 1, what="both listeners handed the update")
            tg.cancel_scope.cancel()
    assert olds["first"][0] is olds["second"][0], "decoded once"
    assert olds["first"][0] is not None

    listed = ObjectEvent(EventType.MODIFIED, "default/cm", raw=b'{"a": 2}', old_raw=b'{"a": 1}')
    first = listed.old
    listed.release()
    assert listed.old == first and listed.old is not first, "a LIST's old state: released per handler"


async def test_a_failing_listener_does_not_stop_the_informer_or_other_listeners(
    apiserver: EmbeddedAPIServer, plane: Plane
) -> None:
    def broken(_event: ObjectEvent) -> None:
        raise RuntimeError("handler bug")

    async def body(informer: Informer, rec: Recorder) -> None:
        informer.add_listener(broken, name="broken")
        plane.create("configmaps", configmap("x"))
        plane.create("configmaps", configmap("y"))
        await eventually(lambda: rec.has(EventType.ADDED, "default/y"), what="events past the broken listener")

    await run_informer(apiserver, {}, body)


async def test_a_late_listener_first_receives_the_current_state(apiserver: EmbeddedAPIServer, plane: Plane) -> None:
    plane.create("configmaps", configmap("existing"))

    async def body(informer: Informer, rec: Recorder) -> None:
        late = Recorder()
        handle = informer.add_listener(late)
        assert await handle.wait_synced(5)
        assert late.of(EventType.ADDED) == ["default/existing"]
        handle.remove()
        plane.create("configmaps", configmap("after-removal"))
        await eventually(lambda: rec.has(EventType.ADDED, "default/after-removal"), what="event for others")
        assert not late.has(EventType.ADDED, "default/after-removal")

    await run_informer(apiserver, {}, body)


async def test_list_errors_back_off_and_recover(apiserver: EmbeddedAPIServer) -> None:
    from mcruntime import Backoff

    apiserver.plane.faults.configure(error_rate=1.0, error_code=500, methods=["GET"], path_contains="configmaps")
    async with Transport(config_for(apiserver), cluster="t") as transport:
        informer = Informer(transport, CONFIGMAPS, backoff=Backoff(0.02, 0.05))
        async with anyio.create_task_group() as tg:
            await tg.start(informer.run)
            await eventually(lambda: informer.stats.errors >= 2, what="failed LISTs")
            assert not informer.has_synced
            apiserver.plane.faults.clear()
            assert await informer.wait_for_sync(5)
            tg.cancel_scope.cancel()


def test_bad_options_are_rejected_clearly() -> None:
    from mcruntime.connection import ConnectionConfig
    from mcruntime.resources import NAMESPACES

    transport = Transport(ConnectionConfig.insecure("http://127.0.0.1:1"))
    with pytest.raises(ValueError, match="cluster-scoped"):
        Informer(transport, NAMESPACES, namespace="x")
    with pytest.raises(ValueError, match="read_timeout"):
        Informer(transport, CONFIGMAPS, read_timeout=0)


def listened(key: str) -> ObjectEvent:
    return ObjectEvent(EventType.ADDED, key, obj={"metadata": {"name": key}})


async def test_a_listener_wakes_for_each_push_while_idle_in_order_and_ends_when_removed() -> None:
    """A listener idles when nothing is pending and wakes for the next push: every event in
    order, in bursts or one at a time, the sync mark in its place; removed (its scope
    cancelled) while idle, it ends, and a late push goes nowhere."""
    seen: list[str] = []
    listener = _Listener(lambda e: seen.append(e.key), "recorder")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.run)
            await anyio.wait_all_tasks_blocked()
            for key in ("a", "b"):
                listener.push(listened(key))
                await anyio.wait_all_tasks_blocked()
            assert seen == ["a", "b"] and not listener.synced.is_set()
            for key in ("c", "d", "e"):
                listener.push(listened(key))
            listener.push(_SYNC)
            await listener.synced.wait()
            await anyio.wait_all_tasks_blocked()
            assert seen == ["a", "b", "c", "d", "e"]
            assert listener.scope is not None
            listener.scope.cancel()
        listener.push(listened("late"))
    assert seen == ["a", "b", "c", "d", "e"]


async def test_a_listener_wake_up_makes_no_anyio_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """One bare future per wake-up: an anyio Event per wake-up looked up the async library
    each time (~1% of the management manager's CPU)."""
    seen: list[str] = []
    listener = _Listener(lambda e: seen.append(e.key), "recorder")
    made: list[str] = []
    real_event = anyio.Event

    def event() -> anyio.Event:
        made.append("Event")
        return real_event()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.run)
            await anyio.wait_all_tasks_blocked()
            monkeypatch.setattr(anyio, "Event", event)
            for key in ("a", "b", "c"):
                listener.push(listened(key))
                await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    assert seen == ["a", "b", "c"] and made == []
