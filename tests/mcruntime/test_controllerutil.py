"""The controller author's kit against an embedded server: finalizers, owner references,
apply-only-if-differs (zero requests when equal), one key order, the removal-aware label
predicate, the per-cluster event recorder and waiting until a controller is idle."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import (
    APIError,
    Cluster,
    Informer,
    Manager,
    ObjectEvent,
    Request,
    Result,
    View,
    controllerutil,
    is_conflict,
    predicates,
)
from mcruntime.informer import EventType
from mcruntime.recorder import ControllerEvents
from mcruntime.resources import CONFIGMAPS, Resource
from mcruntime.source import LOCAL
from tests.support import Plane, config_for, configmap, eventually
from tests.support.crds import WIDGET_CRD, install_crd

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)


def writes(server: EmbeddedAPIServer) -> int:
    return server.plane.counters.writes()


async def cached(cluster: Cluster, name: str) -> dict[str, Any]:
    async def fresh() -> dict[str, Any] | None:
        return await cluster.client.get_or_none(CONFIGMAPS, name, namespace="default")

    return await eventually(fresh, f"{name} cached")  # type: ignore[no-any-return]


async def test_adding_a_finalizer_never_brings_a_deleted_object_back(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    """The apply carries the uid read: an object deleted since (or deleted and made again
    under its name) is a 409 Conflict, never created anew with just the finalizer."""
    plane = Plane(apiserver)
    plane.create("configmaps", configmap("gone"))
    cluster.cache.declare(View(CONFIGMAPS))
    obj = await cached(cluster, "gone")
    plane.delete("configmaps", "default", "gone")
    with pytest.raises(APIError) as caught:
        await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, obj, "example.com/guard")
    assert is_conflict(caught.value), caught.value
    assert "gone" not in [o["metadata"]["name"] for o in plane.list("configmaps", "default")]
    again = plane.create("configmaps", configmap("gone"))
    with pytest.raises(APIError) as caught:
        await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, obj, "example.com/guard")
    assert is_conflict(caught.value), caught.value
    assert plane.get("configmaps", "default", "gone")["metadata"].get("finalizers") is None
    added = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, again, "example.com/guard")
    assert added["metadata"]["finalizers"] == ["example.com/guard"]


async def test_finalizers_are_added_and_removed_once_and_without_clobbering(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    plane = Plane(apiserver)
    plane.create("configmaps", configmap("f"))
    cluster.cache.declare(View(CONFIGMAPS))
    obj = await cached(cluster, "f")
    before = writes(apiserver)
    added = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, obj, "example.com/guard")
    assert added["metadata"]["finalizers"] == ["example.com/guard"]
    again = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, added, "example.com/guard")
    assert again["metadata"]["finalizers"] == ["example.com/guard"]
    assert writes(apiserver) == before + 1, "adding a present finalizer sends nothing"
    # another writer changed the object meanwhile: adding from a stale read neither conflicts
    # nor drops what the other one did
    current = plane.get("configmaps", "default", "f")
    current["data"] = {"touched": "yes"}
    plane.update("configmaps", current)
    both = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, obj, "example.com/other")
    assert both["metadata"]["finalizers"] == ["example.com/guard", "example.com/other"]
    assert both["data"] == {"touched": "yes"}
    # removal from a read whose list order is stale is a conflict, never the wrong entry
    stale = {**obj, "metadata": {**obj["metadata"], "finalizers": ["example.com/other", "example.com/guard"]}}
    with pytest.raises(APIError) as err:
        await controllerutil.remove_finalizer(cluster.client, CONFIGMAPS, stale, "example.com/other")
    assert is_conflict(err.value)
    await cluster.client.delete(CONFIGMAPS, "f", namespace="default")
    live = await cluster.client.get_live(CONFIGMAPS, "f", namespace="default")
    assert live["metadata"].get("deletionTimestamp")
    after = await controllerutil.remove_finalizer(cluster.client, CONFIGMAPS, live, "example.com/other")
    assert after is not None and after["metadata"]["finalizers"] == ["example.com/guard"]
    assert await controllerutil.remove_finalizer(cluster.client, CONFIGMAPS, after, "example.com/guard") is not None
    with pytest.raises(APIError) as gone:
        await cluster.client.get_live(CONFIGMAPS, "f", namespace="default")
    assert gone.value.status == 404
    assert await controllerutil.remove_finalizer(cluster.client, CONFIGMAPS, after, "example.com/guard") is None
    unchanged = await controllerutil.remove_finalizer(cluster.client, CONFIGMAPS, configmap("x"), "example.com/guard")
    assert unchanged == configmap("x")


async def test_a_finalizer_and_its_annotations_go_in_one_write_and_none_after(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    plane = Plane(apiserver)
    plane.create("configmaps", configmap("g"))
    cluster.cache.declare(View(CONFIGMAPS))
    obj = await cached(cluster, "g")
    before = writes(apiserver)
    note = {"example.com/where": "ns-1"}
    added = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, obj, "example.com/guard", annotations=note)
    assert added["metadata"]["finalizers"] == ["example.com/guard"]
    assert added["metadata"]["annotations"] == note
    assert writes(apiserver) == before + 1, "one write for both"
    await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, added, "example.com/guard", annotations=note)
    assert writes(apiserver) == before + 1, "both present: nothing sent"
    # the finalizer there but an annotation missing (an object claimed before it was recorded): one write
    bare = copy.deepcopy(added)
    bare["metadata"]["annotations"] = {}
    fixed = await controllerutil.add_finalizer(cluster.client, CONFIGMAPS, bare, "example.com/guard", annotations=note)
    assert fixed["metadata"]["annotations"] == note and fixed["metadata"]["finalizers"] == ["example.com/guard"]
    assert writes(apiserver) == before + 2


@pytest.mark.parametrize(
    ("finalizers", "annotations", "wanted"),
    [
        ([], {}, True),
        (["example.com/guard"], {"example.com/where": "ns-1"}, False),
        (["example.com/guard"], {}, True),  # claimed before the annotation was recorded
        (["example.com/guard"], {"example.com/where": "ns-2"}, True),
        (["example.com/other"], {"example.com/where": "ns-1"}, True),
    ],
)
def test_finalizer_wanted_says_whether_add_finalizer_would_write(
    finalizers: list[str], annotations: dict[str, str], wanted: bool
) -> None:
    obj = {"metadata": {"name": "g", "finalizers": finalizers, "annotations": annotations}}
    note = {"example.com/where": "ns-1"}
    assert controllerutil.finalizer_wanted(obj, "example.com/guard", annotations=note) is wanted


async def test_apply_decided_writes_what_apply_if_differs_would_without_comparing(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    """The same body as `apply_if_differs` (so a later `apply_if_differs` of the same intent
    finds nothing to do), one request, even when the cache already agrees (the caller decided)."""
    cluster.cache.declare(View(CONFIGMAPS))
    await cluster.cache.wait_for_sync(5)
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "default"},
               "data": {"k": "v"}}  # fmt: skip
    created = await controllerutil.apply_decided(cluster.client, CONFIGMAPS, desired, cached=None, field_manager="kit")
    assert created.operation is controllerutil.Operation.CREATED and created.obj["data"] == {"k": "v"}
    assert not controllerutil.would_apply(desired, created.obj, "kit"), "the intent's digest went with it"
    before = writes(apiserver)
    again = await controllerutil.apply_decided(cluster.client, CONFIGMAPS, desired, cached=created.obj,
                                               field_manager="kit")  # fmt: skip
    assert again.operation is controllerutil.Operation.UPDATED and writes(apiserver) == before + 1
    await cached(cluster, "d")
    unchanged = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, desired, field_manager="kit")
    assert unchanged.operation is controllerutil.Operation.UNCHANGED and writes(apiserver) == before + 1


async def test_concurrently_runs_every_call_at_once_and_a_single_one_in_the_calling_task() -> None:
    started = {name: anyio.Event() for name in "abc"}
    tasks: dict[str, int] = {}

    def waiting_for_all(name: str) -> controllerutil.Call:
        async def call() -> None:
            tasks[name] = anyio.get_current_task().id
            started[name].set()
            for event in started.values():  # each waits for the others: run one after another, none ends
                await event.wait()

        return call

    with anyio.fail_after(5):
        await controllerutil.concurrently([waiting_for_all(name) for name in "abc"])
    assert len(set(tasks.values())) == 3
    here = anyio.get_current_task().id
    assert tasks["c"] == here, "the last call runs in the calling task"
    alone: list[int] = []

    async def single() -> None:
        alone.append(anyio.get_current_task().id)

    await controllerutil.concurrently([single])
    await controllerutil.concurrently([])
    assert alone == [here], "one call: no task of its own"


async def test_concurrently_raises_a_single_failure_as_itself_and_cancels_the_rest() -> None:
    cancelled: list[str] = []

    async def fails() -> None:
        raise APIError.not_found("configmaps", "x")

    async def waits() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append("waits")
            raise

    with anyio.fail_after(5), pytest.raises(APIError) as err:
        await controllerutil.concurrently([waits, fails])
    assert err.value.status == 404 and cancelled == ["waits"]
    with anyio.fail_after(5), pytest.raises(ExceptionGroup) as group:
        await controllerutil.concurrently([fails, fails])
    assert len(group.value.exceptions) == 2


def test_owner_references_come_from_live_objects() -> None:
    owner = {"apiVersion": "compute.datumapis.com/v1alpha", "kind": "WorkloadDeployment",
             "metadata": {"name": "web", "namespace": "ns", "uid": "u-1"}}  # fmt: skip
    ref = controllerutil.controller_reference(owner)
    assert ref == {"apiVersion": "compute.datumapis.com/v1alpha", "kind": "WorkloadDeployment", "name": "web",
                   "uid": "u-1", "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    with pytest.raises(ValueError, match=r"metadata\.uid"):
        controllerutil.controller_reference({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    child: dict[str, Any] = {"metadata": {"name": "web-0"}}
    controllerutil.set_controller_reference(owner, child)
    controllerutil.set_controller_reference(owner, child)  # idempotent
    assert child["metadata"]["ownerReferences"] == [ref]
    assert controllerutil.is_controlled_by(child, owner)
    other = {**owner, "metadata": {"name": "web", "namespace": "ns", "uid": "u-2"}}
    with pytest.raises(controllerutil.AlreadyOwnedError, match="already controlled by WorkloadDeployment 'web'"):
        controllerutil.set_controller_reference(other, child)


@pytest.mark.parametrize(
    ("desired", "actual", "subset"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
        ({"a": {"b": 1}}, {"a": {"b": 2}}, False),
        ({"a": 1}, {}, False),
        ({"l": [{"n": "x"}]}, {"l": [{"n": "x", "protocol": "TCP"}]}, True),  # defaults inside list items
        ({"l": [{"n": "x"}]}, {"l": [{"n": "x"}, {"n": "y"}]}, False),
        ({"l": [1, 2]}, {"l": [2, 1]}, False),
        ({"b": True}, {"b": 1}, False),
        ({"n": 1}, {"n": 1.0}, True),
        ({"s": "1"}, {"s": 1}, False),
    ],
)
def test_is_subset_reads_desired_state_as_an_apply_intent(desired: Any, actual: Any, subset: bool) -> None:
    assert controllerutil.is_subset(desired, actual) is subset


async def test_apply_if_differs_sends_nothing_when_the_cache_already_agrees(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    cluster.cache.declare(View(CONFIGMAPS))
    await cluster.cache.wait_for_sync(5)
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default",
               "labels": {"app": "web"}}, "data": {"k": "v"}}  # fmt: skip
    first = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, desired, field_manager="kit")
    assert first.operation is controllerutil.Operation.CREATED and first.obj["data"] == {"k": "v"}
    await cached(cluster, "a")
    before = apiserver.plane.counters.snapshot()
    for _ in range(5):
        again = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, desired, field_manager="kit")
        assert again.operation is controllerutil.Operation.UNCHANGED and not again.changed
    assert apiserver.plane.counters.snapshot() == before, "no request at all when the cache agrees"
    desired["data"] = {"k": "w"}
    changed = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, desired, field_manager="kit")
    assert changed.operation is controllerutil.Operation.UPDATED and changed.changed
    assert changed.obj["data"] == {"k": "w"}


async def test_an_intent_that_shrinks_is_applied_and_the_field_goes(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    """A label or data key the manager no longer wants is still on the cached object, so a
    value comparison alone sees no difference; the intent digest does, and the apply
    removes the field. Another manager's field stays."""
    informer = cluster.cache.declare(View(CONFIGMAPS))
    await cluster.cache.wait_for_sync(5)
    desired: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v", "old": "x"},
                               "metadata": {"name": "s", "namespace": "default",
                                            "labels": {"app": "web", "tier": "front"}}}  # fmt: skip
    await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, desired, field_manager="kit")
    await cluster.client.apply(
        CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": "default",
                     "labels": {"theirs": "1"}}}, field_manager="someone-else",
    )  # fmt: skip
    await eventually(lambda: (informer.get("s", namespace="default") or {}).get("metadata", {}).get("labels", {})
                     .get("theirs"), "the other manager's label cached")  # fmt: skip
    smaller = {**desired, "metadata": {**desired["metadata"], "labels": {"app": "web"}}, "data": {"k": "v"}}
    result = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, smaller, field_manager="kit")
    assert result.changed
    assert result.obj["metadata"]["labels"] == {"app": "web", "theirs": "1"}
    assert result.obj["data"] == {"k": "v"}
    key = controllerutil.intent_annotation("kit")
    assert result.obj["metadata"]["annotations"][key] == controllerutil.intent_digest(
        {k: v for k, v in smaller.items() if k not in ("apiVersion", "kind")}
    )
    await eventually(lambda: (informer.get("s", namespace="default") or {}).get("data") == {"k": "v"}, "cached")
    before = apiserver.plane.counters.snapshot()
    again = await controllerutil.apply_if_differs(cluster.client, CONFIGMAPS, smaller, field_manager="kit")
    assert not again.changed
    assert apiserver.plane.counters.snapshot() == before, "steady again: no request"


@pytest.mark.parametrize(
    ("manager", "key"),
    [
        ("federator", "intent.mcruntime.io/federator"),
        ("finalizer/compute.datumapis.com/x", "intent.mcruntime.io/finalizer-compute.datumapis.com-x"),
        ("m" * 80, "intent.mcruntime.io/" + "m" * 63),
        ("///", "intent.mcruntime.io/manager"),
    ],
)
def test_the_intent_annotation_is_a_valid_key_for_any_manager(manager: str, key: str) -> None:
    assert controllerutil.intent_annotation(manager) == key


def test_the_intent_digest_ignores_key_order() -> None:
    a = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1}}
    b = {"spec": {"x": 1}, "metadata": {"labels": {"b": "2", "a": "1"}}}
    assert controllerutil.intent_digest(a) == controllerutil.intent_digest(b)
    assert controllerutil.intent_digest(a) != controllerutil.intent_digest({**a, "spec": {}})


async def test_one_key_order_everywhere(cluster: Cluster, apiserver: EmbeddedAPIServer) -> None:
    """Name positional, namespace by keyword: a swapped pair cannot read as NotFound."""
    informer = cluster.cache.declare(View(CONFIGMAPS))
    Plane(apiserver).create("configmaps", configmap("k"))
    await eventually(lambda: informer.get("k", namespace="default"), "cached")
    with pytest.raises(TypeError):
        informer.get("default", "k")  # type: ignore[misc]
    with pytest.raises(TypeError):
        await cluster.client.get(CONFIGMAPS, "k", "default")  # type: ignore[misc]
    with pytest.raises(TypeError):
        await cluster.client.get_live(CONFIGMAPS, "k", "default")  # type: ignore[misc]
    assert isinstance(informer, Informer)


def test_the_label_predicate_sees_an_object_leave_the_selector() -> None:
    match = predicates.label_selector("app=web")
    old = {"metadata": {"name": "x", "labels": {"app": "web"}}}
    new = {"metadata": {"name": "x", "labels": {"app": "db"}}}
    was_web = b'{"metadata":{"labels":{"app":"web"}}}'
    assert match(ObjectEvent(EventType.MODIFIED, "x", obj=new, old_raw=was_web))
    assert match(ObjectEvent(EventType.ADDED, "x", obj=old))
    assert not match(ObjectEvent(EventType.ADDED, "x", obj=new))
    unrelated = b'{"metadata":{"labels":{"app":"db"}}}'
    assert not match(ObjectEvent(EventType.MODIFIED, "x", obj=new, old_raw=unrelated))


def test_result_has_no_requeue_flag() -> None:
    with pytest.raises(TypeError):
        Result(requeue=True)  # type: ignore[call-arg]


async def test_the_event_recorder_of_a_cluster_keeps_its_dedup_cache_across_reconciles(
    apiserver: EmbeddedAPIServer,
) -> None:
    Plane(apiserver).create("configmaps", configmap("watched"))
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    recorders: list[object] = []

    async def reconcile(req: Request) -> Result:
        obj = await mgr.local.client.get(CONFIGMAPS, req.name, namespace=req.namespace)
        recorder = mgr.event_recorder(req.cluster)
        recorders.append(recorder)
        await recorder.event({**obj, "kind": "ConfigMap", "apiVersion": "v1"}, "Normal", "Seen", "seen it")
        return Result()

    ctrl = mgr.new_controller("recorder", reconcile).for_(CONFIGMAPS, clusters=LOCAL, namespace="default")
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        assert await ctrl.wait_idle(within=5)
        ctrl.enqueue(Request("mgmt", "default", "watched"))
        ctrl.enqueue(Request("mgmt", "default", "watched"))
        await eventually(lambda: len(recorders) >= 2, "a second reconcile")
        assert await ctrl.wait_idle(within=5)
        mgr.stop()
    assert len({id(r) for r in recorders}) == 1, "one recorder per cluster, kept across reconciles"
    events = Plane(apiserver).list("events", "default")
    assert len(events) == 1 and events[0]["count"] == len(recorders)


async def test_wait_idle_waits_for_in_flight_work(apiserver: EmbeddedAPIServer) -> None:
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    release = anyio.Event()

    async def reconcile(_req: Request) -> Result:
        await release.wait()
        return Result()

    ctrl = mgr.new_controller("slow", reconcile).for_(CONFIGMAPS, clusters=LOCAL, namespace="default")
    Plane(apiserver).create("configmaps", configmap("one"))
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        assert not await ctrl.wait_idle(within=0.3)
        release.set()
        assert await ctrl.wait_idle(within=5)
        mgr.stop()


def test_the_status_only_predicate_lets_spec_and_metadata_changes_through() -> None:
    import orjson

    base = {"metadata": {"name": "x", "generation": 1, "labels": {"a": "1"}}, "status": {"n": 1}}

    def changed(new: dict[str, Any]) -> bool:
        return predicates.not_status_only(ObjectEvent(EventType.MODIFIED, "x", obj=new, old_raw=orjson.dumps(base)))

    assert not changed({**base, "status": {"n": 2}})
    assert changed({**base, "metadata": {**base["metadata"], "generation": 2}})
    assert changed({**base, "metadata": {**base["metadata"], "labels": {"a": "2"}}})
    assert changed({**base, "metadata": {**base["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    assert predicates.not_status_only(ObjectEvent(EventType.DELETED, "x", obj=base))


@pytest.mark.parametrize(
    ("change", "not_status", "nor_finalizers"),
    [
        ({"status": {"n": 2}}, False, False),
        ({"metadata": {"finalizers": ["cell"]}}, True, False),
        ({"metadata": {"finalizers": ["cell"], "labels": {"a": "2"}}}, True, True),
        ({"metadata": {"generation": 2}}, True, True),
        ({"metadata": {"annotations": {"b": "1"}}}, True, True),
        ({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}, True, True),
    ],
)
def test_the_finalizers_only_predicate_ignores_a_finalizer_added_by_another_controller(
    change: dict[str, Any], not_status: bool, nor_finalizers: bool
) -> None:
    """A copy's finalizer is the cell WD controller's: the federator's copy watch passes
    every change `not_status_only` passes but a change of finalizers alone."""
    import orjson

    base = {"metadata": {"name": "x", "generation": 1, "labels": {"a": "1"}}, "status": {"n": 1}}
    new = {**base, **change, "metadata": {**base["metadata"], **change.get("metadata", {})}}
    event = ObjectEvent(EventType.MODIFIED, "x", obj=new, old_raw=orjson.dumps(base))
    assert predicates.not_status_only(event) is not_status
    assert predicates.not_status_or_finalizers_only(event) is nor_finalizers
    assert predicates.not_status_or_finalizers_only(ObjectEvent(EventType.DELETED, "x", obj=base))


async def test_delete_exact_hits_only_the_object_it_read(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    """The UID is the precondition: an object that took the name meanwhile survives (409),
    and an object already gone is not an error."""
    plane = Plane(apiserver)
    old = plane.create("configmaps", configmap("d"))
    plane.delete("configmaps", "default", "d")
    plane.create("configmaps", configmap("d"))
    with pytest.raises(APIError) as refused:
        await controllerutil.delete_exact(cluster.client, CONFIGMAPS, old)
    assert is_conflict(refused.value)
    current = plane.get("configmaps", "default", "d")
    assert current["metadata"]["uid"] != old["metadata"]["uid"], "the newer object is still there"
    await controllerutil.delete_exact(cluster.client, CONFIGMAPS, current)
    await controllerutil.delete_exact(cluster.client, CONFIGMAPS, current)  # already gone: tolerated
    assert not [c for c in plane.list("configmaps", "default") if c["metadata"]["name"] == "d"]
    with pytest.raises(ValueError, match=r"metadata\.uid"):
        await controllerutil.delete_exact(cluster.client, CONFIGMAPS, configmap("never-read"))


async def test_write_status_applies_its_own_fields_or_patches_conditionally(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    """Unconditional: a server-side apply of this manager's status fields, another
    manager's left alone, whatever the object's resourceVersion. Conditional: a patch that
    a status computed from an older version of the object is refused by (409)."""
    # a fresh copy: an earlier create in this process may have filled in the shared dict's metadata
    crd = {**copy.deepcopy(WIDGET_CRD), "metadata": {"name": WIDGET_CRD["metadata"]["name"]}}
    await install_crd(apiserver, crd)
    plane = Plane(apiserver)
    widget = plane.create("widgets", {"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": "w", "namespace": "default"}, "spec": {"n": 1}},
                          group="example.com", version="v1")  # fmt: skip
    theirs = await controllerutil.write_status(cluster.client, WIDGETS, widget, {"theirs": "1"}, field_manager="b")
    ours = await controllerutil.write_status(cluster.client, WIDGETS, widget, {"ours": "1"}, field_manager="a")
    assert ours["status"] == {"theirs": "1", "ours": "1"}
    assert int(ours["metadata"]["resourceVersion"]) > int(theirs["metadata"]["resourceVersion"])
    with pytest.raises(APIError) as stale:
        await controllerutil.write_status(
            cluster.client, WIDGETS, theirs, {"ours": "2"}, field_manager="a", conditional=True
        )
    assert is_conflict(stale.value)
    fresh = await controllerutil.write_status(
        cluster.client, WIDGETS, ours, {"ours": "2"}, field_manager="a", conditional=True
    )
    assert fresh["status"] == {"theirs": "1", "ours": "2"}


async def test_controller_events_are_bound_once_and_use_the_managers_recorder(apiserver: EmbeddedAPIServer) -> None:
    mgr = Manager(config_for(apiserver), local_cluster_name="mgmt")
    events = ControllerEvents(mgr, "kit")
    obj = {**Plane(apiserver).create("configmaps", configmap("e")), "kind": "ConfigMap", "apiVersion": "v1"}
    async with anyio.create_task_group() as tg:
        await tg.start(mgr.run)
        await events.event("mgmt", obj, "Warning", "Seen", "seen it")
        await events.event("mgmt", obj, "Warning", "Seen", "seen it")
        assert mgr.event_recorder("mgmt", "kit").posted == 1
        mgr.stop()
    (event,) = Plane(apiserver).list("events", "default")
    assert event["source"]["component"] == "kit" and event["count"] == 2
    with pytest.raises(ValueError):
        ControllerEvents(mgr, "")
