"""`OwnWrites`: a write's answer stands for the object until the cache shows another state."""

from __future__ import annotations

from typing import Any

import pytest

from mcruntime.ownwrites import OwnWrites, version_of


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
