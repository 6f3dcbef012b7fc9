"""`OwnWrites`: a write's answer stands for the object until the cache shows another state."""

from __future__ import annotations

from typing import Any

import pytest

from mcruntime.handlers import EnqueueRequestForObject
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.ownwrites import EnqueueUnlessOwnWrite, OwnWrites, UnlessOwnWrite, precedes, request_key, version_of
from mcruntime.request import Request


def obj(uid: str, rv: str, label: str = "") -> dict[str, Any]:
    return {"metadata": {"uid": uid, "resourceVersion": rv, "labels": {"l": label}}}


@pytest.mark.parametrize(
    ("before", "cached", "latest"),
    [
        # the cache still shows the state the write was made over: the answer stands in
        (obj("a", "3"), obj("a", "3"), "answer"),
        (None, None, "answer"),  # created: not cached yet
        # the cache moved on: the write's own event, a newer one, a deletion, a re-creation
        (obj("a", "3"), obj("a", "5", "mine"), "cached"),
        (obj("a", "3"), obj("a", "9", "theirs"), "cached"),
        (obj("a", "3"), None, "cached"),
        (obj("a", "3"), obj("b", "3"), "cached"),
    ],
)
def test_an_answer_lasts_until_the_cache_moves_on(before: Any, cached: Any, latest: str) -> None:
    writes: OwnWrites[str] = OwnWrites()
    answer = obj("a", "5", "mine")
    writes.remember("k", before, answer)
    assert writes.latest("k", cached) == (answer if latest == "answer" else cached)
    assert len(writes) == (1 if latest == "answer" else 0)  # an answer the cache caught up with goes
    writes.forget("k")
    assert writes.latest("k", cached) == cached and len(writes) == 0


def test_versions_tell_states_apart_by_uid_and_resource_version() -> None:
    assert version_of(None) is None
    assert version_of(obj("a", "3")) == ("a", "3") != version_of(obj("b", "3"))


@pytest.mark.parametrize(
    ("cached", "echo", "kept"),
    [
        (obj("a", "3"), False, True),  # the cache still shows the state before the write
        (obj("a", "5", "mine"), True, False),  # the write's own event: an echo, and the answer goes
        (obj("a", "9", "theirs"), False, False),  # a newer state: not an echo, the cache is the truth
        (obj("b", "5"), False, False),  # another object of the name (same resourceVersion, other uid)
    ],
)
def test_the_writes_own_event_is_told_apart(cached: Any, echo: bool, kept: bool) -> None:
    writes: OwnWrites[str] = OwnWrites()
    writes.remember("k", obj("a", "3"), obj("a", "5", "mine"))
    assert writes.observed("k", cached) is echo
    assert len(writes) == int(kept)
    assert writes.observed("other", cached) is False


async def test_only_other_states_are_enqueued() -> None:
    writes: OwnWrites[Request] = OwnWrites()
    mine = {"metadata": {"name": "api", "namespace": "default", "uid": "a", "resourceVersion": "5"}}
    before = {**mine, "metadata": {**mine["metadata"], "resourceVersion": "3"}}
    theirs = {**mine, "metadata": {**mine["metadata"], "resourceVersion": "9"}}
    writes.remember(Request("web", "default", "api"), before, mine)
    sink = Sink()
    handler = EnqueueUnlessOwnWrite(writes)
    await handler.handle("web", ObjectEvent(EventType.MODIFIED, "default/api", obj=mine), sink)
    assert sink.requests == [], "the write's own event"
    await handler.handle("web", ObjectEvent(EventType.MODIFIED, "default/api", obj=theirs), sink)
    await handler.handle("web", ObjectEvent(EventType.ADDED, "default/api", obj=mine), sink)
    assert sink.requests == [Request("web", "default", "api")] * 2


async def test_an_add_or_delete_is_enqueued_from_its_key_without_decoding() -> None:
    """A cold start hands the handler one ADDED event per cached object: only an update's
    object is read (to tell the write's own event apart), so the JSON here is never decoded."""
    writes: OwnWrites[Request] = OwnWrites()
    sink = Sink()
    handler = EnqueueUnlessOwnWrite(writes)
    for type_ in (EventType.ADDED, EventType.DELETED):
        await handler.handle("web", ObjectEvent(type_, "default/api", raw=b"not JSON"), sink)
    assert sink.requests == [Request("web", "default", "api")] * 2


class Sink:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)

    def drop(self, reason: str, detail: str) -> None:
        raise AssertionError(f"dropped: {reason} {detail}")


def test_a_write_over_the_previous_answer_extends_the_chain() -> None:
    """Two writes before either event arrives: the second was made over the first's answer.
    The first write's event (outdated by the second) is an echo and keeps the second answer;
    the second's event ends the chain; the state before the writes still shows the answer."""
    writes: OwnWrites[str] = OwnWrites()
    before, first, second = obj("a", "3"), obj("a", "5", "first"), obj("a", "6", "second")
    writes.remember("k", before, first)
    writes.remember("k", writes.latest("k", before), second)  # made over the first answer
    assert writes.latest("k", before) == second
    assert writes.observed("k", first) is True, "the first write's own event"
    assert writes.latest("k", first) == second, "the cache shows the first answer: the second stands"
    assert writes.observed("k", second) is True and len(writes) == 0
    assert writes.latest("k", second) == second

    writes.remember("k", before, first)
    writes.remember("k", writes.latest("k", before), second)
    assert writes.observed("k", obj("a", "7", "theirs")) is False and len(writes) == 0, "another writer's state"
    writes.remember("k", obj("a", "7"), first)
    writes.remember("k", obj("a", "8"), second)  # over a state that is not the previous answer: a new chain
    assert writes.latest("k", obj("a", "7")) == obj("a", "7") and len(writes) == 0


async def test_unless_own_write_drops_only_the_writes_own_add_or_update() -> None:
    """`UnlessOwnWrite` in front of any handler: the add of an object the controller
    created, and the update its write made, are dropped (and the answer goes); another
    state, a deletion (which forgets the answer), or an object never written pass."""
    writes: OwnWrites[Request] = OwnWrites()
    sink = Sink()
    handler = UnlessOwnWrite(writes, EnqueueRequestForObject(), request_key)
    created = {"metadata": {"name": "api", "namespace": "ns", "uid": "a", "resourceVersion": "5"}}
    updated = {**created, "metadata": {**created["metadata"], "resourceVersion": "6"}}
    theirs = {**created, "metadata": {**created["metadata"], "resourceVersion": "9"}}
    key = Request("dfw-1", "ns", "api")
    writes.remember(key, None, created)
    writes.remember(key, created, updated)  # a second write over the first's answer
    await handler.handle("dfw-1", ObjectEvent(EventType.ADDED, "ns/api", obj=created), sink)
    await handler.handle("dfw-1", ObjectEvent(EventType.MODIFIED, "ns/api", obj=updated), sink)
    assert sink.requests == [] and len(writes) == 0, "the writes' own events"
    await handler.handle("dfw-2", ObjectEvent(EventType.ADDED, "ns/api", obj=created), sink)
    assert sink.requests == [Request("dfw-2", "ns", "api")], "the same object in another cluster is not the write"
    writes.remember(key, created, updated)
    await handler.handle("dfw-1", ObjectEvent(EventType.MODIFIED, "ns/api", obj=theirs), sink)
    assert sink.requests[-1] == key and len(writes) == 0, "another writer's state"
    writes.remember(key, None, created)
    await handler.handle("dfw-1", ObjectEvent(EventType.DELETED, "ns/api", obj=created), sink)
    assert sink.requests[-1] == key and len(writes) == 0, "a deletion passes and forgets"
    await handler.handle("dfw-1", ObjectEvent(EventType.ADDED, "ns/other", raw=b"not JSON"), sink)
    assert sink.requests[-1] == Request("dfw-1", "ns", "other"), "nothing remembered: not decoded"


def test_a_state_older_than_the_answer_keeps_it() -> None:
    """A status written over the WD as created (rv 65) lands after another writer's change
    (a finalizer, rv 297) and is answered at rv 315; the finalizer's event arrives after the
    answer. That state is older than the answer, which already holds it: the answer stands
    (a reconcile on it writes nothing new), the event is not called this controller's own
    (it is handed on), and the answer's own event then ends it."""
    writes: OwnWrites[str] = OwnWrites()
    created, claimed, answer = obj("a", "65"), obj("a", "297", "claimed"), obj("a", "315", "status")
    writes.remember("k", created, answer)
    assert writes.observed("k", claimed) is False, "another writer's state: handed on"
    assert writes.latest("k", claimed) == answer and len(writes) == 1, "older than the answer: it stands"
    assert writes.observed("k", answer) is True and len(writes) == 0
    writes.remember("k", created, answer)
    assert writes.latest("k", obj("a", "316")) == obj("a", "316") and len(writes) == 0, "a newer state is the truth"


@pytest.mark.parametrize(
    ("version", "later", "older"),
    [
        (("a", "297"), ("a", "315"), True),
        (("a", "99"), ("a", "100"), True),  # integers, not strings: "99" > "100" as text
        (("a", "315"), ("a", "315"), False),
        (("a", "316"), ("a", "315"), False),
        (("b", "297"), ("a", "315"), False),  # another object of the name
        (("a", "x7"), ("a", "315"), False),  # not a decimal integer: equality only
        (("a", "0297"), ("a", "315"), False),
        (("a", ""), ("a", "315"), False),
        (None, ("a", "315"), False),
    ],
)
def test_versions_are_ordered_only_when_comparable(version: Any, later: Any, older: bool) -> None:
    assert precedes(version, later) is older


def test_incomparable_versions_drop_the_answer_as_before() -> None:
    writes: OwnWrites[str] = OwnWrites()
    writes.remember("k", obj("a", "q1"), obj("a", "q3", "mine"))
    assert writes.latest("k", obj("a", "q2")) == obj("a", "q2") and len(writes) == 0
