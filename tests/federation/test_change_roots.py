"""A WD change's trace root and traceparent (`changetrace`): a pure function of (uid,
generation), made once per change however many readers ask (the federator's span and
each copy's write, the projector's span)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.fleet import changetrace
from mcruntime.tracing import change_context, traceparent


def wd(uid: str, generation: int) -> dict[str, Any]:
    return {"metadata": {"name": "api", "namespace": "default", "uid": uid, "generation": generation}}


def test_a_changes_root_is_made_once_and_is_the_same_as_made_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, int]] = []

    def counted(uid: str, generation: int) -> Any:
        made.append((uid, generation))
        return change_context(uid, generation)

    monkeypatch.setattr(changetrace, "change_context", counted)
    changetrace._change.cache_clear()
    changetrace._traceparent_of.cache_clear()
    desired: dict[str, Any] = {"metadata": {"name": "api", "annotations": {}}}
    for _ in range(4):  # the federator's span, two copies' writes, the projector's span
        assert changetrace.change_of(wd("u1", 3)) == change_context("u1", 3)
        written = changetrace.copy_with_trace(desired, wd("u1", 3), None, writes=True)
        assert written["metadata"]["annotations"][changetrace.TRACEPARENT_ANNOTATION] == traceparent(
            change_context("u1", 3)
        )
    assert made == [("u1", 3)]
    assert changetrace.change_of(wd("u1", 4)) == change_context("u1", 4)  # a new generation: a new trace
    assert changetrace.change_of(wd("u2", 3)) == change_context("u2", 3)
    assert made == [("u1", 3), ("u1", 4), ("u2", 3)]
