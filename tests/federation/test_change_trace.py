"""One trace per WorkloadDeployment change (issue 25), in process: the federator's `federate`
span starts it, the copies carry its `traceparent` in the same write as the spec, both
cells' controllers continue it, the projector's status write that claims the generation
ends it; and tracing on costs no request at steady state (the embedded servers' counters)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import generate_latest

from federation.api.constants import Annotation
from federation.fleet.changetrace import change_of
from mcruntime.tracing import traceparent
from tests.support import all_idle, eventually, fleet, management_settings, running
from tests.support.manager import cell_settings

from .test_federator import WDs, workload_deployment

pytestmark = pytest.mark.slow

IDLE_WINDOW = 20.0
CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"))


def traced(exporter: InMemorySpanExporter, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def stages(spans: Sequence[ReadableSpan], trace_id: int) -> list[ReadableSpan]:
    stage_names = ("federate", "cell.reconcile", "instance.create", "pod.ready", "project")
    chosen = [s for s in spans if s.name in stage_names and s.context is not None and s.context.trace_id == trace_id]
    return sorted(chosen, key=lambda s: s.start_time or 0)


def cluster(span: ReadableSpan) -> str:
    return str((span.attributes or {}).get("k8s.cluster.name"))


async def test_one_trace_connects_federator_cells_and_projector_and_costs_no_request_at_rest(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with fleet(tmp_path, cells=CELLS) as f, AsyncExitStack() as stack:
        mgr = await stack.enter_async_context(
            running(management_settings(tmp_path / "management.kubeconfig"), tracer_provider=traced(exporter, "m"))
        )
        for name, city in CELLS:
            settings = cell_settings(tmp_path / f"{name}.kubeconfig", local_cluster_name=name, city_code=city)
            await stack.enter_async_context(running(settings, tracer_provider=traced(exporter, name)))
        wds = WDs(f, "web")
        wds.create(workload_deployment("api", "DFW", 2))

        def claimed(generation: int) -> bool:
            wd = wds.get("default", "api")
            return wd is not None and (wd.get("status") or {}).get("observedGeneration") == generation

        await eventually(lambda: claimed(1), "generation 1 claimed by the project status", within=60)
        # the change: a new template (a new generation), traced end to end
        wd = wds.get("default", "api")
        assert wd is not None
        changed: dict[str, Any] = copy.deepcopy(wd)
        changed["spec"]["template"]["metadata"] = {"labels": {"tier": "edge"}}
        generation = int(wds.update(changed)["metadata"]["generation"])
        assert generation == 2
        await eventually(lambda: claimed(2), "generation 2 claimed by the project status", within=60)

        root = change_of(wds.get("default", "api") or {})
        # the `project` span ends as the status write returns: just after the claim is visible
        await eventually(lambda: any(s.name == "project" for s in stages(exporter.get_finished_spans(), root.trace_id)),
                         "the project span", within=10)  # fmt: skip
        path = stages(exporter.get_finished_spans(), root.trace_id)
        names = [(s.name, cluster(s)) for s in path]
        assert names[0] == ("federate", "web"), names
        assert {c for n, c in names if n == "cell.reconcile"} == {"dfw-1", "dfw-2"}, names
        assert any(n == "instance.create" for n, _ in names), names
        projected = [i for i, (n, _) in enumerate(names) if n == "project"]
        assert len(projected) == 1, names
        first_cell = min(i for i, (n, _) in enumerate(names) if n == "cell.reconcile")
        assert 0 < first_cell < projected[0], names
        assert all((s.attributes or {}).get("generation") == 2 for s in path if s.name in ("federate", "project"))
        # the copies carry the change's traceparent (derived from the project WD's uid and generation)
        for name, _ in CELLS:
            copies = WDs(f, name).list()
            assert [c["metadata"]["annotations"][str(Annotation.TRACEPARENT)] for c in copies] == [traceparent(root)]
        # the propagation histograms on /metrics: both generations (creation and the change) measured once each
        scraped = generate_latest(mgr.registry).decode()

        def count(metric: str) -> float:
            found = re.search(rf"^{metric}_count(?:{{[^}}]*}})? (\S+)$", scraped, re.M)
            assert found is not None, f"{metric} missing from /metrics"
            return float(found.group(1))

        for name in ("copies_written", "cells_observed", "status_claimed"):
            assert count(f"federation_propagation_{name}_seconds") == 2.0, scraped
        assert count("federation_cell_write_to_projection_seconds") >= 1.0
        # at rest, with tracing on: not one write anywhere
        assert await all_idle(mgr)
        servers = [f.management, *f.projects.values(), *f.cells.values()]
        before = [s.plane.counters.writes() for s in servers]
        await anyio.sleep(IDLE_WINDOW)
        after = [s.plane.counters.writes() for s in servers]
        assert after == before, {s.name: s.plane.counters.snapshot() for s in servers}
