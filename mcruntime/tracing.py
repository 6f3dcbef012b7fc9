"""A span per reconcile, with the request's cluster, namespace and name as attributes
(OpenTelemetry's `k8s.*` semantic-convention names where they exist), and the stage spans
of one change's trace.

A change's trace is identified by its object and generation alone: `change_context` derives
the trace id and a root span id from (uid, generation), so every writer that sees that
generation (a federator restarted meanwhile, another process) joins the same trace, and the
W3C `traceparent` that carries it never changes while the generation does not: an object
carrying it is never rewritten for it."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN,
    NonRecordingSpan,
    NoOpTracer,
    ProxyTracerProvider,
    Span,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TracerProvider,
)
from opentelemetry.util.types import AttributeValue

from .errors import APIError, is_conflict
from .request import Request

TRACEPARENT_VERSION = "00"


def tracer_for(provider: TracerProvider | None = None) -> Tracer:
    """`provider`'s tracer, else the process-wide one's; with tracing off (none given, none
    set process-wide before the controllers are built) the no-op tracer, which the spans
    below recognise so that tracing off costs one `isinstance` per span: no context
    switch, no attribute dict (about 1% of a busy manager's CPU otherwise, by profile)."""
    chosen = provider or trace.get_tracer_provider()
    if isinstance(chosen, ProxyTracerProvider):
        return NoOpTracer()
    return chosen.get_tracer("mcruntime")


# tracing off: one shared scope that yields the invalid span (a nullcontext is reusable)
_NO_SPAN: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)


def reconcile_span(tracer: Tracer, controller: str, request: Request) -> AbstractContextManager[Span]:
    """The span of one reconcile; with tracing off a shared no-op scope, so a reconcile
    makes no generator context manager for a span nobody records."""
    if isinstance(tracer, NoOpTracer):
        return _NO_SPAN
    return _reconcile_span(tracer, controller, request)


@contextmanager
def _reconcile_span(tracer: Tracer, controller: str, request: Request) -> Iterator[Span]:
    attributes = {
        "controller": controller,
        "k8s.cluster.name": request.cluster,
        "k8s.namespace.name": request.namespace,
        "k8s.object.name": request.name,
    }
    with tracer.start_as_current_span(
        f"reconcile {controller}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        yield span


def mark_error(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def note_conflict(span: Span, exc: APIError, **attributes: AttributeValue) -> None:
    """A write that lost an optimistic-concurrency race, as a `conflict` event of its own
    (not a generic exception): the change that was slowed by a concurrent writer shows where."""
    span.add_event(
        "conflict",
        {
            "http.response.status_code": exc.status,
            "http.request.method": exc.verb,
            "url.path": exc.path,
            "exception.message": exc.message,
            **attributes,
        },
    )


def note_retry(span: Span, reason: str, retries: int) -> None:
    """A reconcile that will run again with backoff: why, and how many times it has already."""
    span.add_event("retry", {"retry.reason": reason, "retry.count": retries})


# ---------------------------------------------------------------------- one trace per change
@functools.lru_cache(maxsize=4096)
def change_context(uid: str, generation: int) -> SpanContext:
    """The (remote) root of the trace of an object's generation: ids derived from both, so
    the same generation always names the same trace (never all-zero: invalid in W3C).
    Remembered for the objects changing now (a SpanContext is immutable): every reconcile
    and status write of a change asks for it, and the hash and context cost more than a
    lookup."""
    digest = hashlib.sha256(f"{uid}/{generation}".encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    span_id = int.from_bytes(digest[16:24], "big") or 1
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def traceparent(context: SpanContext) -> str:
    """The W3C `traceparent` header value of a span context."""
    return f"{TRACEPARENT_VERSION}-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def parse_traceparent(value: str | None) -> SpanContext | None:
    """The span context a W3C `traceparent` names; None for a missing or malformed one
    (a hand-edited annotation is ignored, never an error)."""
    parts = (value or "").strip().split("-")
    if len(parts) != 4 or parts[0] != TRACEPARENT_VERSION:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if len(parts[1]) != 32 or len(parts[2]) != 16 or not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags & 0xFF))


@contextmanager
def stage_span(
    tracer: Tracer, stage: str, parent: SpanContext | None, attributes: Mapping[str, AttributeValue]
) -> Iterator[Span]:
    """A stage of a change's trace, under `parent` (the change's root or a remote stage's
    context; None: under the current span). Its `outcome` attribute is `ok`, or the name of
    the exception that ended it (recorded as an event, the span's status set to error)."""
    if isinstance(tracer, NoOpTracer):
        yield INVALID_SPAN
        return
    context: Context | None = trace.set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
    with tracer.start_as_current_span(
        stage, context=context, attributes=dict(attributes), record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except Exception as exc:
            if isinstance(exc, APIError) and is_conflict(exc):
                note_conflict(span, exc)
                span.set_attribute("outcome", "Conflict")
            else:
                span.set_attribute("outcome", type(exc).__name__)
            mark_error(span, exc)
            raise
        if span.is_recording() and "outcome" not in getattr(span, "attributes", {}):
            span.set_attribute("outcome", "ok")
