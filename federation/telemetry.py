"""Tracing, configured the OpenTelemetry way (imported only when tracing is on: a `run`
without `--tracing` loads none of the SDK's tracing or exporters).

`exporters_from_environment` and `provider` read the standard variables: `OTEL_TRACES_EXPORTER` (`otlp`, the
default, `console`, `none`; comma-separated for several), `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `grpc`), `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` / `_ARG` and `OTEL_BSP_*` (the SDK itself
reads the last ones). The OTLP exporters are optional installs (docs/operations.md):
asking for one that is absent is a `TelemetryError` naming the package.

`JsonLinesSpanExporter` writes the SDK's span data (`ReadableSpan.to_json`) one span per line,
bounded: past `max_bytes` the file is rotated to `<file>.1` (one generation kept), so the
two files never hold much more than twice the bound. `federation-manager trace` reads them."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

EXPORTERS = ("otlp", "console", "none")
OTLP_PACKAGES = {
    "http/protobuf": "opentelemetry-exporter-otlp-proto-http",
    "grpc": "opentelemetry-exporter-otlp-proto-grpc",
}
SPANS_FILE = "spans.jsonl"
DEFAULT_MAX_BYTES = 8 * 1024 * 1024


class TelemetryError(ValueError):
    """Tracing cannot be set up as the environment asks; the message names the variable."""


class JsonLinesSpanExporter(SpanExporter):
    """Spans as JSON lines in `path`, rotated to `path.1` past `max_bytes`."""

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()  # several managers' processors share one file in `up`
        path.parent.mkdir(parents=True, exist_ok=True)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(json.loads(span.to_json(indent=None)), separators=(",", ":")) + "\n"
                        for span in spans)  # fmt: skip
        with self._lock:
            try:
                if self.path.exists() and self.path.stat().st_size + len(lines) > self.max_bytes:
                    self.path.replace(self.path.with_name(self.path.name + ".1"))
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(lines)
            except OSError:
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _otlp_exporter() -> SpanExporter:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol not in OTLP_PACKAGES:
        raise TelemetryError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: expected one of {', '.join(OTLP_PACKAGES)}")
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
    except ImportError as exc:
        raise TelemetryError(
            f"OTEL_TRACES_EXPORTER=otlp with protocol {protocol} needs the package {OTLP_PACKAGES[protocol]} "
            f"(pip install {OTLP_PACKAGES[protocol]}), or set OTEL_TRACES_EXPORTER=console|none"
        ) from exc
    exporter: SpanExporter = OTLPSpanExporter()  # endpoint, headers, timeout: OTEL_EXPORTER_OTLP_* (its own reading)
    return exporter


def exporters_from_environment() -> list[SpanExporter]:
    """The exporters `OTEL_TRACES_EXPORTER` names (default `otlp`, as the specification says)."""
    names = [n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise TelemetryError(f"OTEL_TRACES_EXPORTER={','.join(names)}: unknown {', '.join(unknown)} "
                             f"(expected {', '.join(EXPORTERS)})")  # fmt: skip
    found: list[SpanExporter] = []
    for name in names:
        if name == "otlp":
            found.append(_otlp_exporter())
        elif name == "console":
            found.append(ConsoleSpanExporter())
    return found


def provider(
    service_name: str, exporters: Sequence[SpanExporter], *, schedule_delay_millis: float | None = None
) -> TracerProvider:
    """A tracer provider (sampler from `OTEL_TRACES_SAMPLER`) batching to `exporters`;
    `OTEL_SERVICE_NAME` wins over `service_name`."""
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or service_name})
    tracer_provider = TracerProvider(resource=resource)
    for exporter in exporters:
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=schedule_delay_millis))
    return tracer_provider


def spans_file(state_dir: Path) -> Path:
    """Where `up` records spans."""
    return state_dir / "traces" / SPANS_FILE
