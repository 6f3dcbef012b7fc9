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


def _wd(**meta: Any) -> dict[str, Any]:
    """A WD-like object: generation 1, a spec, a status, and `meta` over its metadata."""
    base: dict[str, Any] = {"name": "w", "namespace": "ns", "uid": "u1", "generation": 1, "resourceVersion": "5"}
    return {"metadata": {**base, **meta}, "spec": {"replicas": 2}, "status": {"readyReplicas": 1}}


CLAIMED = {"finalizers": ["example.com/f"], "annotations": {"example.com/where": "ns-1"}}
CLAIMED_AND_MORE = {"finalizers": ["example.com/f"], "annotations": {"example.com/where": "ns-1", "example.com/o": "1"}}
DELETED_AT = "2026-01-01T00:00:00Z"


def _with(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**obj, **fields}


@pytest.mark.parametrize(
    ("name", "old", "new", "passes"),
    [
        # what another controller's claim changes (a finalizer and its own annotation): dropped
        ("finalizer and its annotation", _wd(), _wd(resourceVersion="6", **CLAIMED), False),
        ("finalizer alone", _wd(), _wd(resourceVersion="6", finalizers=["example.com/f"]), False),
        ("finalizer released", _wd(**CLAIMED), _wd(resourceVersion="6", annotations=CLAIMED["annotations"]), False),
        ("the server's fields only", _wd(), _wd(resourceVersion="6", managedFields=[{"manager": "x"}]), False),
        ("annotation emptied (absent and empty alike)", _wd(annotations={}), _wd(resourceVersion="6"), False),
        # anything else: handed on
        ("spec (generation)", _wd(), _with(_wd(generation=2, resourceVersion="6"), spec={"replicas": 3}), True),
        ("spec without a generation", _wd(), _with(_wd(resourceVersion="6"), spec={"replicas": 3}), True),
        ("status", _wd(), _with(_wd(resourceVersion="6"), status={"readyReplicas": 2}), True),
        ("status removed", _wd(), {"metadata": _wd(resourceVersion="6")["metadata"], "spec": {"replicas": 2}}, True),
        ("a label", _wd(), _wd(resourceVersion="6", labels={"a": "1"}), True),
        ("another annotation", _wd(), _wd(resourceVersion="6", annotations={"example.com/other": "1"}), True),
        ("the claim and another annotation", _wd(), _wd(resourceVersion="6", **CLAIMED_AND_MORE), True),
        ("deletion", _wd(**CLAIMED), _wd(resourceVersion="6", deletionTimestamp=DELETED_AT, **CLAIMED), True),
        ("recreated (another uid)", _wd(), _wd(uid="u2", resourceVersion="6"), True),
    ],
)
def test_changed_beyond_drops_only_the_named_metadata(
    name: str, old: dict[str, Any], new: dict[str, Any], passes: bool
) -> None:
    claim = predicates.changed_beyond(finalizers=True, annotations=["example.com/where"])
    assert claim(event(new, EventType.MODIFIED, old)) is passes, name


def test_changed_beyond_hands_on_adds_deletes_and_counts_finalizers_unless_told() -> None:
    claim = predicates.changed_beyond(finalizers=True, annotations=["example.com/where"])
    assert claim(event(_wd(**CLAIMED)))  # ADDED
    assert claim(event(_wd(**CLAIMED), EventType.DELETED))
    finalizer_only = event(_wd(resourceVersion="6", finalizers=["example.com/f"]), EventType.MODIFIED, _wd())
    assert predicates.changed_beyond()(finalizer_only), "finalizers count unless named"
    annotation_only = event(_wd(resourceVersion="6", annotations={"example.com/where": "x"}), EventType.MODIFIED, _wd())
    assert predicates.changed_beyond(finalizers=True)(annotation_only), "annotations count unless named"


@pytest.mark.parametrize("style", ["plain", "coroutine", "generator"])
async def test_map_handler_maps_the_old_and_the_new_object_whatever_the_map_function_returns(style: str) -> None:
    """Plain map functions are called in the handler itself (no coroutine of their own per
    call); coroutine functions are awaited; any iterable result counts; an update maps the
    old and the new object, each request once, in order."""
    sink = Sink()

    def names(obj: dict[str, Any]) -> list[Request]:
        return [Request("", "ns", obj["metadata"]["name"]), Request("", "ns", "shared")]

    def plain(cluster: str, obj: dict[str, Any]) -> list[Request]:
        return names(obj)

    async def coroutine(cluster: str, obj: dict[str, Any]) -> list[Request]:
        return names(obj)

    def generator(cluster: str, obj: dict[str, Any]) -> Any:
        yield from names(obj)

    map_func = {"plain": plain, "coroutine": coroutine, "generator": generator}[style]
    handler = EnqueueRequestsFromMapFunc(map_func, cluster_name=ClusterName.INJECT_SOURCE)
    await handler.handle("web", event(pod("new"), EventType.MODIFIED, pod("old")), sink)
    assert sink.requests == [Request("web", "ns", "new"), Request("web", "ns", "shared"), Request("web", "ns", "old")]
    await handler.handle("web", event(pod("added")), sink)
    assert sink.requests[3:] == [Request("web", "ns", "added"), Request("web", "ns", "shared")]
