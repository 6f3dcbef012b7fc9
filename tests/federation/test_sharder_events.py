"""The sharding controllers' event handlers. The sharder's (`federation/controllers/sharder.py`
`AssignmentEvents`): its own label write's echo wakes nothing, in whichever order its two
views report it; a removal from a view decides nothing; another writer's state and a new
object are decided when the decision on them is a write, and an object labelled as the
ring says wakes nothing. The drain acknowledger's (`shardacks.py` `Drained`): only objects
the cache holds drained, told from its drain index, no event decoded."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast

import pytest

from federation.api.constants import Label
from federation.api.resources import WORKLOAD_DEPLOYMENTS
from federation.controllers.shardacks import Drained
from federation.controllers.sharder import AssignmentEvents, newest
from federation.fleet.sharding import SHARD_INDEXERS
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.manager import Manager
from mcruntime.ownwrites import OwnWrites
from mcruntime.request import Request
from mcruntime.store import Store
from tests.mcruntime.test_ownwrites import Sink

KEY = Request("web", "default", "api")


def wd(rv: str, shard: str = "", uid: str = "u1") -> dict[str, Any]:
    labels = {str(Label.SHARD): shard} if shard else {}
    return {"metadata": {"name": "api", "namespace": "default", "uid": uid, "resourceVersion": rv, "labels": labels}}


def event(kind: EventType, obj: dict[str, Any]) -> ObjectEvent:
    return ObjectEvent(kind, "default/api", obj=obj)


UNASSIGNED, MINE, THEIRS = wd("5"), wd("6", "shard-a"), wd("6", "shard-b")
RING = ("shard-a", "shard-b")  # shard-c is dead: its objects need a write


def needs_write(cluster: str, obj: Mapping[str, Any]) -> bool:
    """A stand-in for the decision: unlabelled, or labelled for a shard out of the ring."""
    assert cluster == "web"
    return (obj["metadata"].get("labels") or {}).get(str(Label.SHARD)) not in RING


ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED


@pytest.mark.parametrize(
    ("answer", "events", "enqueued", "kept"),
    [
        # assigned to this sharder's own shard: gone from the others' view, arrived in its own
        (MINE, [(DELETED, UNASSIGNED), (ADDED, MINE)], 0, False),
        (MINE, [(ADDED, MINE), (DELETED, UNASSIGNED)], 0, False),
        (MINE, [(DELETED, UNASSIGNED)], 0, True),  # its arrival still to come: the answer waits for it
        # assigned to another shard: relabelled within the others' view
        (THEIRS, [(MODIFIED, THEIRS)], 0, False),
        # another writer's state after the write: decided (a write), or as the ring says (none)
        (THEIRS, [(MODIFIED, wd("7", "shard-c"))], 1, False),
        (THEIRS, [(MODIFIED, wd("7", "shard-a"))], 0, False),
        # deleted after the write: nothing to decide, nothing kept
        (THEIRS, [(DELETED, wd("7", "shard-b"))], 0, False),
        (MINE, [(ADDED, MINE), (DELETED, wd("8", "shard-a"))], 0, False),
        # the same name made again (another uid): decided
        (MINE, [(DELETED, UNASSIGNED), (ADDED, wd("9", uid="u2"))], 1, False),
        # an object written by no one here: decided; its removal is not
        (None, [(ADDED, UNASSIGNED), (DELETED, UNASSIGNED)], 1, False),
        # a cold start: objects labelled as the ring says wake nothing, a dead shard's do
        (None, [(ADDED, MINE), (ADDED, THEIRS)], 0, False),
        (None, [(ADDED, wd("6", "shard-c"))], 1, False),
    ],
)
async def test_the_sharders_own_label_write_wakes_nothing(
    answer: dict[str, Any] | None, events: list[tuple[EventType, dict[str, Any]]], enqueued: int, kept: bool
) -> None:
    writes: OwnWrites[Request] = OwnWrites()
    if answer is not None:
        writes.remember(KEY, UNASSIGNED, answer)  # the label patch, made over the unassigned WD
    handler, sink = AssignmentEvents(writes, needs_write), Sink()
    for kind, obj in events:
        await handler.handle("web", event(kind, obj), sink)
    assert sink.requests == [KEY] * enqueued
    assert (KEY in writes) is kept


async def test_the_drain_acknowledger_hears_of_drained_objects_only_and_decodes_no_event() -> None:
    store = Store(SHARD_INDEXERS)
    drained = wd("7", "shard-a")
    drained["metadata"]["labels"][str(Label.DRAIN)] = "true"
    store.put("default/api", drained)
    store.put("default/web", {"metadata": {**wd("8", "shard-a")["metadata"], "name": "web"}})
    cluster = SimpleNamespace(cache=SimpleNamespace(informer_of=lambda _resource: SimpleNamespace(store=store)))
    mgr = cast(Manager, SimpleNamespace(get_cluster=lambda name: cluster))
    handler, sink = Drained(mgr, WORKLOAD_DEPLOYMENTS), Sink()
    # raw that is not JSON: decoding it here would fail
    for kind in (ADDED, MODIFIED):
        await handler.handle("web", ObjectEvent(kind, "default/api", raw=b"not JSON"), sink)
        await handler.handle("web", ObjectEvent(kind, "default/web", raw=b"not JSON"), sink)
    await handler.handle("web", ObjectEvent(DELETED, "default/api", raw=b"not JSON"), sink)
    await handler.handle("web", ObjectEvent(ADDED, "default/gone", raw=b"not JSON"), sink)
    assert sink.requests == [KEY, KEY]


@pytest.mark.parametrize(
    ("mine", "others", "read"),
    [
        (None, None, None),
        (MINE, None, MINE),
        (None, THEIRS, THEIRS),
        # handed back by this shard (its drain acknowledged): arrived unlabelled in the others'
        # view before its removal from this shard's view came; the later state is decided on
        (wd("6", "shard-a"), wd("8"), wd("8")),
        # assigned here: arrived in this shard's view, its removal from the others' to come
        (wd("9", "shard-a"), wd("5"), wd("9", "shard-a")),
        # not to be told apart (another uid: deleted and made again): this shard's view's
        (wd("6", "shard-a"), wd("8", uid="u2"), wd("6", "shard-a")),
    ],
)
def test_the_sharder_reads_the_later_of_an_objects_two_cached_states(
    mine: dict[str, Any] | None, others: dict[str, Any] | None, read: dict[str, Any] | None
) -> None:
    assert newest(mine, others) == read
