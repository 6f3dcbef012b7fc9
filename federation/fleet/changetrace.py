"""The trace of one project WorkloadDeployment change (issue 25): its root from the WD's
(uid, generation), carried to the cells as the copy's `compute.datumapis.com/traceparent`
annotation. Pure: no I/O, no spans opened here."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import SpanContext
from opentelemetry.util.types import AttributeValue

from federation.api.constants import Annotation
from mcruntime.fields import get_int, get_str, get_str_map
from mcruntime.objects import Obj
from mcruntime.tracing import change_context, parse_traceparent, traceparent

TRACEPARENT_ANNOTATION = str(Annotation.TRACEPARENT)


def change_of(wd: Mapping[str, Any]) -> SpanContext:
    """The root of the trace of the WD's current generation."""
    return change_context(get_str(wd, "metadata.uid", required=False), get_int(wd, "metadata.generation") or 0)


# A change's traceparent is written on each of its copies: a pure function of (uid,
# generation), formatted once (the root itself is remembered by `change_context`),
# bounded (a change's copies are written within moments of each other).
@functools.lru_cache(maxsize=4096)
def _traceparent_of(uid: str, generation: int) -> str:
    return traceparent(change_context(uid, generation))


def stage_attributes(cluster: str, obj: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A stage span's attributes: the cluster it ran in, the WD (or Instance), its generation."""
    return {
        "k8s.cluster.name": cluster,
        "k8s.namespace.name": get_str(obj, "metadata.namespace", required=False),
        "k8s.object.name": get_str(obj, "metadata.name", required=False),
        "generation": get_int(obj, "metadata.generation") or 0,
    }


def carried(obj: Mapping[str, Any] | None) -> str | None:
    """The traceparent an object carries, if any."""
    if obj is None:
        return None
    value = get_str_map(obj, "metadata.annotations").get(TRACEPARENT_ANNOTATION)
    return str(value) if value else None


def carried_context(obj: Mapping[str, Any] | None) -> SpanContext | None:
    """The span context an object's traceparent names (None when absent or malformed)."""
    return parse_traceparent(carried(obj))


def with_traceparent(desired: Obj, value: str | None) -> Obj:
    """`desired` with the annotation set to `value` (unchanged when None)."""
    if value is None:
        return desired
    metadata = dict(desired.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), TRACEPARENT_ANNOTATION: value}
    return {**desired, "metadata": metadata}


def copy_with_trace(desired: Obj, wd: Mapping[str, Any], cached: Mapping[str, Any] | None, writes: bool) -> Obj:
    """The copy to apply: the change's traceparent when the copy is written anyway (`writes`:
    the copy with what it carries now differs), else what it carries now, so the annotation
    is never a write of its own."""
    if writes:
        uid, generation = get_str(wd, "metadata.uid", required=False), get_int(wd, "metadata.generation") or 0
        return with_traceparent(desired, _traceparent_of(uid, generation))
    return with_traceparent(desired, carried(cached))
