"""A span per reconcile, with the request's cluster, namespace and name as attributes
(OpenTelemetry's `k8s.*` semantic-convention names where they exist)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer, TracerProvider

from .request import Request


def tracer_for(provider: TracerProvider | None = None) -> Tracer:
    return (provider or trace.get_tracer_provider()).get_tracer("mcruntime")


@contextmanager
def reconcile_span(tracer: Tracer, controller: str, request: Request) -> Iterator[Span]:
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
