"""`run --tracing` configures the SDK from the standard OTEL_* variables (federation/app.py,
federation/telemetry.py): off by default, an absent OTLP exporter or an unknown exporter
name is a one-line start-up error naming what to do, `--traces-file` adds the JSON-lines file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from federation import app
from federation.settings import ManagerSettings


def settings(**values: object) -> ManagerSettings:
    return ManagerSettings(**values)


def test_tracing_is_off_unless_asked_for() -> None:
    assert settings().tracing is False
    assert app.tracing_provider(settings()) is None


def test_console_none_and_the_span_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "mgmt-eu")
    spans = tmp_path / "traces" / "spans.jsonl"
    provider = app.tracing_provider(settings(tracing=True, traces_file=spans))
    assert isinstance(provider, TracerProvider)
    assert provider.resource.attributes["service.name"] == "mgmt-eu"
    with provider.get_tracer("t").start_as_current_span("federate"):
        pass
    provider.shutdown()
    assert '"name":"federate"' in spans.read_text()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    console = app.tracing_provider(settings(tracing=True))
    assert isinstance(console, TracerProvider)
    console.shutdown()


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.exporter.otlp") is not None, reason="an OTLP exporter is installed here"
)
@pytest.mark.parametrize(("protocol", "package"), [("http/protobuf", "opentelemetry-exporter-otlp-proto-http"),
                                                   ("grpc", "opentelemetry-exporter-otlp-proto-grpc")])  # fmt: skip
def test_otlp_without_its_package_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch, protocol: str, package: str
) -> None:
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)  # otlp is the specification's default
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    with pytest.raises(app.StartupError, match=f"pip install {package}"):
        app.tracing_provider(settings(tracing=True))


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [("OTEL_TRACES_EXPORTER", "zipkin", "OTEL_TRACES_EXPORTER=zipkin: unknown zipkin"),
     ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json: expected one of")],
)  # fmt: skip
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv(variable, value)
    with pytest.raises(app.StartupError, match=message):
        app.tracing_provider(settings(tracing=True))
