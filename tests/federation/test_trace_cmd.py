"""`federation-manager trace wd NAME -n NS`: the waterfall of a WD's last change, read from
spans recorded as JSON lines (the file exporter `up` uses); and `up` itself recording one
trace per change across the federator, both cells' controllers and the projector."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from federation import cli
from federation.ops import traceview
from federation.telemetry import JsonLinesSpanExporter
from kubeplane.testing import Kubectl, kubectl_path
from mcruntime.tracing import change_context, stage_span
from tests.support import eventually

from .test_demo import REPO, start_up, wait_ready

WD = {"k8s.namespace.name": "default", "k8s.object.name": "api"}


def record(path: Path, generation: int, *, cells: tuple[str, ...], projected: bool, failing: str = "") -> None:
    """Stage spans of one change, as the controllers make them, exported by the file exporter."""
    exporter = JsonLinesSpanExporter(path)
    root = change_context("uid-1", generation)

    def tracer(service: str) -> Any:
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return provider.get_tracer("test")

    with stage_span(tracer("management"), "federate", root, {**WD, "k8s.cluster.name": "web",
                                                               "generation": generation}) as span:  # fmt: skip
        span.set_attribute("cells", ["dfw-1", "dfw-2"])
        if failing:
            span.add_event("retry", {"k8s.cluster.name": failing, "reason": "TransportError: timed out"})
    for cell in cells:
        with (
            stage_span(tracer(cell), "cell.reconcile", root, {"k8s.cluster.name": cell, "generation": 1}),
            stage_span(tracer(cell), "instance.create", None, {"k8s.cluster.name": cell}),
        ):
            pass
    if projected:
        with stage_span(tracer("management"), "project", root, {**WD, "k8s.cluster.name": "web",
                                                                  "generation": generation}):  # fmt: skip
            pass


def test_the_last_change_is_shown_as_a_waterfall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spans = tmp_path / "spans.jsonl"
    record(spans, 1, cells=("dfw-1", "dfw-2"), projected=True)
    record(spans, 2, cells=("dfw-1", "dfw-2"), projected=True)
    with spans.open("a") as out:
        out.write("not json\n")
    assert cli.main(["trace", "wd", "api", "-n", "default", "--file", str(spans)]) == 0
    shown = capsys.readouterr().out
    assert "default/api generation 2" in shown
    assert f"{change_context('uid-1', 2).trace_id:032x}" in shown
    for stage in ("federate", "cell.reconcile", "instance.create", "project"):
        assert stage in shown
    assert "dfw-1" in shown and "dfw-2" in shown
    assert "converged" in shown and "stuck" not in shown
    assert "1 lines were not spans" in shown


def test_a_change_that_never_converged_shows_how_far_it_got(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    record(spans, 3, cells=("dfw-1",), projected=False, failing="dfw-2")
    found, bad = traceview.read_spans(spans.read_text().splitlines())
    path = traceview.change_path(found, "default", "api")
    assert path is not None and bad == 0
    assert [(s.name, s.cluster) for s in path.stages] == [
        ("federate", "web"), ("cell.reconcile", "dfw-1"), ("instance.create", "dfw-1")
    ]  # fmt: skip
    assert path.stages[0].events == ("retry: k8s.cluster.name=dfw-2, reason=TransportError: timed out",)
    assert path.stuck == ["cell dfw-2: has not reconciled the copy", "project status has not claimed this generation"]
    assert all(s.offset >= 0 and s.duration >= 0 for s in path.stages)


def test_no_spans_or_no_such_wd_is_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no spans in"):
        cli.main(["trace", "wd", "api", "--state-dir", str(tmp_path)])
    spans = tmp_path / "spans.jsonl"
    record(spans, 1, cells=(), projected=False)
    with pytest.raises(SystemExit, match="no change of WorkloadDeployment default/other"):
        cli.main(["trace", "wd", "other", "--file", str(spans)])


def test_the_file_stays_bounded(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    exporter = JsonLinesSpanExporter(spans, max_bytes=4096)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(200):
        with provider.get_tracer("t").start_as_current_span("federate"):
            pass
    rotated = spans.with_name("spans.jsonl.1")
    assert rotated.exists() and spans.stat().st_size <= 4096 and rotated.stat().st_size <= 4096


@pytest.mark.slow
@pytest.mark.kubectl
async def test_up_records_one_trace_per_change_across_both_cells(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await start_up(state, "--ephemeral", "--cell", "dfw-1:DFW", "--cell", "dfw-2:DFW")
    try:
        await wait_ready(proc, state)
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c1")
        await project("apply", "-f", str(REPO / "config/samples/compute_v1alpha_workloaddeployment.yaml"))

        async def claimed(generation: int) -> bool:
            wd = json.loads(await project("get", "wd", "api-edge-dfw", "-o", "json"))
            return (wd.get("status") or {}).get("observedGeneration") == generation

        await eventually(lambda: claimed(1), "generation 1 claimed", within=60)
        await project("patch", "wd", "api-edge-dfw", "--type=merge", "-p",
                      '{"spec":{"template":{"metadata":{"labels":{"app":"api","tier":"edge"}}}}}')  # fmt: skip
        await eventually(lambda: claimed(2), "generation 2 claimed", within=60)
        spans_file = state / "traces" / "spans.jsonl"

        def path() -> traceview.ChangePath | None:
            spans, _ = traceview.read_spans(spans_file.read_text().splitlines() if spans_file.exists() else [])
            found = traceview.change_path(spans, "default", "api-edge-dfw")
            return found if found is not None and found.generation == 2 and not found.stuck else None

        def both_cells() -> bool:  # each manager exports its spans in batches of its own, in its own time
            found = path()
            return found is not None and {s.cluster for s in found.stages if s.name == "cell.reconcile"} == {
                "dfw-1",
                "dfw-2",
            }

        await eventually(both_cells, "the change's spans in <state-dir>/traces/", within=30)
        change = path()
        assert change is not None
        stages = [(s.name, s.cluster) for s in change.stages]
        assert stages[0][0] == "federate", stages
        assert {c for n, c in stages if n == "cell.reconcile"} == {"dfw-1", "dfw-2"}, stages
        last_cell = max(i for i, (n, _) in enumerate(stages) if n == "cell.reconcile")
        first_cell = min(i for i, (n, _) in enumerate(stages) if n == "cell.reconcile")
        project_at = [i for i, (n, _) in enumerate(stages) if n == "project"]
        assert project_at and 0 < first_cell < project_at[0], stages
        assert last_cell >= first_cell
        # the roll the change causes goes on in the same trace: new Instances, their Pods Ready

        def rolled() -> bool:
            found = path()
            return found is not None and {s.cluster for s in found.stages if s.name == "pod.ready"} == {
                "dfw-1",
                "dfw-2",
            }

        await eventually(rolled, "pod.ready in both cells, in the change's trace", within=90)
        shown = await asyncio.create_subprocess_exec(
            str(REPO / ".venv/bin/federation-manager"), "trace", "wd", "api-edge-dfw", "-n", "default",
            "--state-dir", str(state), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(shown.communicate(), 60)
        assert shown.returncode == 0, err.decode()
        assert "generation 2" in out.decode() and "converged" in out.decode()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
