from __future__ import annotations

from typing import Any

import pytest

from mcruntime import (
    ClusterName,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventType,
    ObjectEvent,
    Request,
    Resource,
    predicates,
)
from mcruntime.objects import key_of

OWNERS = Resource("example.com", "v1", "owners", "Owner")


class Sink:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.drops: list[tuple[str, str]] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)

    def drop(self, reason: str, detail: str) -> None:
        self.drops.append((reason, detail))


def pod(name: str, *, owners: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
        generation: int = 1) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {}, "generation": generation}
    if owners:
        meta["ownerReferences"] = owners
    return {"metadata": meta}


def ref(name: str, *, controller: bool = True, kind: str = "Owner", api: str = "example.com/v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}


def event(obj: dict[str, Any], type_: EventType = EventType.ADDED, old: dict[str, Any] | None = None) -> ObjectEvent:
    import orjson

    # as an informer makes it: the key is the object's own (`EnqueueRequestForObject` reads only the key)
    return ObjectEvent(type_, key_of(obj), obj=obj, old_raw=orjson.dumps(old) if old is not None else None)


async def test_enqueue_for_object_injects_the_source_cluster() -> None:
    sink = Sink()
    await EnqueueRequestForObject().handle("cell-a", event(pod("p")), sink)
    assert sink.requests == [Request("cell-a", "ns", "p")]


async def test_enqueue_for_object_reads_only_the_event_key() -> None:
    """A cold start hands every `for_` listener one event per cached object: the object's
    own request is its key, so the object is never decoded for it (the JSON here is not)."""
    sink = Sink()
    for key in ("ns/p", "cluster-scoped"):
        await EnqueueRequestForObject().handle("c", ObjectEvent(EventType.ADDED, key, raw=b"not JSON"), sink)
    assert sink.requests == [Request("c", "ns", "p"), Request("c", "", "cluster-scoped")]


async def test_enqueue_for_owner_takes_the_controller_owner_of_the_right_kind() -> None:
    sink = Sink()
    obj = pod("p", owners=[ref("o1"), ref("o2", controller=False), ref("x", kind="Other"), ref("y", api="other/v1")])
    await EnqueueRequestForOwner(OWNERS).handle("c", event(obj), sink)
    assert sink.requests == [Request("c", "ns", "o1")]
    sink = Sink()
    await EnqueueRequestForOwner(OWNERS, only_controller=False).handle("c", event(obj), sink)
    assert sink.requests == [Request("c", "ns", "o1"), Request("c", "ns", "o2")]


async def test_enqueue_for_owner_tells_the_previous_owner_on_updates() -> None:
    sink = Sink()
    old = pod("p", owners=[ref("before")])
    new = pod("p", owners=[ref("after")])
    await EnqueueRequestForOwner(OWNERS).handle("c", event(new, EventType.MODIFIED, old), sink)
    assert sink.requests == [Request("c", "ns", "after"), Request("c", "ns", "before")]


async def test_map_handler_preserving_mapped_clusters_keeps_the_computed_cluster() -> None:
    sink = Sink()

    def to_project(cluster: str, obj: dict[str, Any]) -> list[Request]:
        project = obj["metadata"]["labels"].get("project", "")
        return [Request(project, "upstream-ns", obj["metadata"]["name"])]

    handler = EnqueueRequestsFromMapFunc(to_project, cluster_name=ClusterName.PRESERVE_MAPPED)
    await handler.handle("cell-a", event(pod("wd", labels={"project": "web"})), sink)
    assert sink.requests == [Request("web", "upstream-ns", "wd")], "the source cluster must not overwrite it"
    await handler.handle("cell-a", event(pod("orphan")), sink)
    assert sink.requests == [Request("web", "upstream-ns", "wd")], "an empty cluster name is never enqueued"
    assert [reason for reason, _ in sink.drops] == ["empty-cluster"]


async def test_map_handler_injecting_the_source_refuses_requests_for_other_clusters() -> None:
    sink = Sink()

    async def mapper(cluster: str, obj: dict[str, Any]) -> list[Request]:
        return [Request("", "ns", "a"), Request(cluster, "ns", "b"), Request("elsewhere", "ns", "c")]

    handler = EnqueueRequestsFromMapFunc(mapper, cluster_name=ClusterName.INJECT_SOURCE)
    await handler.handle("src", event(pod("p")), sink)
    assert sink.requests == [Request("src", "ns", "a"), Request("src", "ns", "b")]
    assert [reason for reason, _ in sink.drops] == ["cluster-contradiction"]


async def test_map_handler_reports_junk_from_the_map_function() -> None:
    sink = Sink()
    handler = EnqueueRequestsFromMapFunc(lambda c, o: [("ns", "name")], cluster_name=ClusterName.INJECT_SOURCE)  # type: ignore[list-item]
    await handler.handle("src", event(pod("p")), sink)
    assert sink.requests == [] and sink.drops[0][0] == "invalid-request"


def test_the_cluster_name_policy_is_required_and_typed() -> None:
    with pytest.raises(TypeError):
        EnqueueRequestsFromMapFunc(lambda c, o: [])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"INJECT_SOURCE or ClusterName\.PRESERVE_MAPPED"):
        EnqueueRequestsFromMapFunc(lambda c, o: [], cluster_name="preserve")  # type: ignore[arg-type]


def test_predicates() -> None:
    same_gen = event(pod("p", generation=1), EventType.MODIFIED, pod("p", generation=1))
    new_gen = event(pod("p", generation=2), EventType.MODIFIED, pod("p", generation=1))
    assert not predicates.generation_changed(same_gen)
    assert predicates.generation_changed(new_gen)
    assert predicates.generation_changed(event(pod("p")))
    relabel = event(pod("p", labels={"a": "2"}), EventType.MODIFIED, pod("p", labels={"a": "1"}))
    assert predicates.labels_changed(relabel) and not predicates.labels_changed(same_gen)
    web = predicates.label_selector("app in (web,api),!legacy")
    assert web(event(pod("p", labels={"app": "web"})))
    assert not web(event(pod("p", labels={"app": "web", "legacy": "1"})))
    assert predicates.all_of(web, predicates.negate(web))(event(pod("p", labels={"app": "web"}))) is False
    with pytest.raises(ValueError, match="cannot parse"):
        predicates.label_selector("app in web")
