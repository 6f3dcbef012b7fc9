"""The sharder's events (`federation/controllers/sharder.py` `AssignmentEvents`): its own
label write's echo wakes nothing, in whichever order its two views report it; a removal
from a view decides nothing; another writer's state and a new object are decided when the
decision on them is a write, and an object labelled as the ring says wakes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from federation.api.constants import Label
from federation.controllers.sharder import AssignmentEvents
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.ownwrites import OwnWrites
from mcruntime.request import Request

KEY = Request("web", "default", "api")


class Sink:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)

    def drop(self, reason: str, detail: str) -> None:
        raise AssertionError(f"dropped: {reason} {detail}")


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
