"""What `federation-manager trace wd NAME -n NS` shows: the path of a WorkloadDeployment's
last change, from spans recorded as JSON lines (`federation.telemetry.JsonLinesSpanExporter`,
the SDK's `ReadableSpan.to_json`). Pure: `read_spans` parses lines, `change_path` picks the
trace of the WD's newest generation and lays its stages out, `render` draws the waterfall.

A change's stages (issue 25): `federate` (management), `cell.reconcile`, `instance.create`,
`pod.ready` (each cell), `project` (the project status write that claims the generation).
Where it is stuck: the cells the federator placed it on that show no `cell.reconcile`, or no
`project` span yet, or a stage whose outcome is not `ok` (its retries are span events)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

STAGES = ("federate", "cell.reconcile", "instance.create", "pod.ready", "project")
WD_STAGES = ("federate", "project")  # the stages whose object is the project WD itself


@dataclass(frozen=True)
class Stage:
    name: str
    cluster: str
    offset: float  # seconds from the change's first span
    duration: float
    outcome: str
    events: tuple[str, ...]


@dataclass
class ChangePath:
    namespace: str
    name: str
    generation: int
    trace_id: str
    stages: list[Stage] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)  # empty: the change reached the project status


def read_spans(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """The spans of JSON lines, and how many lines were not a span (skipped, counted)."""
    spans: list[dict[str, Any]] = []
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            span = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(span, dict) and isinstance(span.get("context"), dict) and span.get("name"):
            spans.append(span)
        else:
            bad += 1
    return spans, bad


def _attrs(span: Mapping[str, Any]) -> Mapping[str, Any]:
    found = span.get("attributes")
    return found if isinstance(found, Mapping) else {}


def _time(value: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _cluster(span: Mapping[str, Any]) -> str:
    resource = span.get("resource") or {}
    service = (resource.get("attributes") or {}).get("service.name") if isinstance(resource, Mapping) else None
    return str(_attrs(span).get("k8s.cluster.name") or service or "?")


def change_path(spans: Sequence[Mapping[str, Any]], namespace: str, name: str) -> ChangePath | None:
    """The path of the WD's newest traced generation; None when no span names the WD."""
    own = [s for s in spans if s.get("name") in WD_STAGES and _attrs(s).get("k8s.namespace.name") == namespace
           and _attrs(s).get("k8s.object.name") == name]  # fmt: skip
    if not own:
        return None
    latest = max(own, key=lambda s: (int(_attrs(s).get("generation") or 0), str(s.get("start_time") or "")))
    trace_id = str(latest["context"].get("trace_id"))
    path = ChangePath(namespace, name, int(_attrs(latest).get("generation") or 0), trace_id)
    members = [s for s in spans if s.get("name") in STAGES and s["context"].get("trace_id") == trace_id]
    timed = [(t0, t1, s) for s in members if (t0 := _time(s.get("start_time"))) is not None
             and (t1 := _time(s.get("end_time"))) is not None]  # fmt: skip
    timed.sort(key=lambda x: x[0])
    origin = timed[0][0] if timed else None
    for t0, t1, s in timed:
        assert origin is not None
        events = tuple(
            f"{e.get('name')}: {', '.join(f'{k}={v}' for k, v in (e.get('attributes') or {}).items())}"
            for e in s.get("events") or [] if isinstance(e, Mapping)
        )  # fmt: skip
        path.stages.append(Stage(str(s["name"]), _cluster(s), (t0 - origin).total_seconds(),
                                 (t1 - t0).total_seconds(), str(_attrs(s).get("outcome") or "?"), events))  # fmt: skip
    path.stuck = _stuck(path, [s for _, _, s in timed])
    return path


def _stuck(path: ChangePath, spans: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where the change waits: nothing when the project status claimed it."""
    if any(stage.name == "project" for stage in path.stages):
        return []
    federates = [s for s in spans if s.get("name") == "federate"]
    if not federates:
        return ["not federated yet: no federate span for this generation"]
    placed = {str(c) for s in federates for c in (_attrs(s).get("cells") or [])}
    reached = {stage.cluster for stage in path.stages if stage.name == "cell.reconcile"}
    why = [f"cell {cell}: has not reconciled the copy" for cell in sorted(placed - reached)]
    last = federates[-1]
    if _attrs(last).get("outcome") not in (None, "ok"):
        why.append(f"federate: last attempt ended {_attrs(last).get('outcome')}; retrying")
    why += [f"{stage.name} in {stage.cluster}: {stage.outcome}" for stage in path.stages
            if stage.name != "federate" and stage.outcome not in ("ok", "?")]  # fmt: skip
    return [*why, "project status has not claimed this generation"]


def render(path: ChangePath, *, width: int = 30) -> RenderableType:
    """The waterfall: one row per stage, a bar from its start offset over its duration."""
    total = max((s.offset + s.duration for s in path.stages), default=0.0) or 1.0
    table = Table(title=f"{path.namespace}/{path.name} generation {path.generation} (trace {path.trace_id})")
    for column in ("stage", "cluster", "start", "duration", "outcome", ""):
        table.add_column(column, justify="right" if column in ("start", "duration") else "left")
    for stage in path.stages:
        lead = int(stage.offset / total * width)
        bar = " " * lead + "█" * max(1, int(stage.duration / total * width))
        style = "green" if stage.outcome == "ok" else "red"
        table.add_row(stage.name, stage.cluster, f"+{stage.offset * 1000:.0f}ms", f"{stage.duration * 1000:.1f}ms",
                      Text(stage.outcome, style=style), Text(bar, style=style))  # fmt: skip
        for event in stage.events:
            table.add_row("", "", "", "", Text(f"event {event}", style="yellow"), "")
    verdict = (Text("converged: the project status claimed this generation", style="green") if not path.stuck
               else Text("stuck: " + "; ".join(path.stuck), style="red"))  # fmt: skip
    return Group(table, verdict)
