"""A WD change's trace root and traceparent (`changetrace`): a pure function of (uid,
generation), the traceparent formatted once per change however many copies carry it."""

from __future__ import annotations

from typing import Any

import pytest

from federation.fleet import changetrace
from mcruntime.tracing import change_context, traceparent
from tests.support import calls_to


def wd(uid: str, generation: int) -> dict[str, Any]:
    return {"metadata": {"name": "api", "namespace": "default", "uid": uid, "generation": generation}}


def test_a_changes_traceparent_is_formatted_once_and_is_the_same_as_made_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the root itself is remembered by mcruntime's `change_context`
    # (tests/mcruntime/test_tracing_off.py::test_a_change_context_is_hashed_once_per_object_generation)
    formatted = calls_to(monkeypatch, changetrace, "traceparent")
    changetrace._traceparent_of.cache_clear()
    desired: dict[str, Any] = {"metadata": {"name": "api", "annotations": {}}}
    for _ in range(4):  # the federator's span, two copies' writes, the projector's span
        assert changetrace.change_of(wd("u1", 3)) == change_context("u1", 3)
        written = changetrace.copy_with_trace(desired, wd("u1", 3), None, writes=True)
        assert written["metadata"]["annotations"][changetrace.TRACEPARENT_ANNOTATION] == traceparent(
            change_context("u1", 3)
        )
    assert formatted == [(change_context("u1", 3),)]
    assert changetrace.change_of(wd("u1", 4)) == change_context("u1", 4)  # a new generation: a new trace
    changetrace.copy_with_trace(desired, wd("u1", 4), None, writes=True)
    changetrace.copy_with_trace(desired, wd("u2", 3), None, writes=True)
    assert formatted == [(change_context("u1", 3),), (change_context("u1", 4),), (change_context("u2", 3),)]
