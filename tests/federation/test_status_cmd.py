"""`federation-manager status`: the view over a snapshot (pure, on in-memory federations)
and the real command against a fleet, its output checked against what the clusters hold:
the project WDs' status and the copies' shares and status in the cells."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console
from rich.text import Text

from federation.api.constants import Annotation, Label
from federation.ops.inspection import watch
from federation.ops.snapshot import Health
from federation.ops.statusview import CopyState, render, status_view, to_json, worst_condition
from tests.federation.test_federator import WDs, workload_deployment
from tests.support import Fleet, eventually

from .inspecting import cli, converged, federation
from .worlds import standard


def text_of(renderable: Any, width: int = 200) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return [line.rstrip() for line in out.getvalue().splitlines()]


# ---------------------------------------------------------------------- the view (pure)


def test_the_view_lists_every_wd_by_cell() -> None:
    view = to_json(status_view(standard().snapshot()))
    rows = {(r["project"], r["name"]): r for r in view["workloadDeployments"]}
    assert list(rows) == [("shop", "api"), ("web", "api"), ("web", "edge")]
    api = rows[("web", "api")]
    assert (api["cityCode"], api["desired"], api["ready"], api["updated"]) == ("DFW", 3, 3, 3)
    assert api["condition"] == {
        "type": "Available",
        "status": "True",
        "reason": "StableInstanceFound",
        "message": "3/3 instances available in dfw-1, dfw-2",
    }
    assert api["cells"] == [
        {
            "cell": "dfw-1",
            "share": 2,
            "ordinalStart": 0,
            "reachable": True,
            "copy": "observed",
            "desired": 2,
            "ready": 2,
            "updated": 2,
        },
        {
            "cell": "dfw-2",
            "share": 1,
            "ordinalStart": 2,
            "reachable": True,
            "copy": "observed",
            "desired": 1,
            "ready": 1,
            "updated": 1,
        },
    ]
    assert [c["name"] for c in view["clusters"]] == ["management", "shop", "web", "dfw-1", "dfw-2", "lhr-1"]


def test_filters_by_namespace_and_project() -> None:
    w = standard()
    w.add_wd("web", "api", "DFW", 1, namespace="staging")
    w.converge()
    snap = w.snapshot()
    assert [(r.project, r.namespace, r.name) for r in status_view(snap, namespace="staging").workload_deployments] == [
        ("web", "staging", "api")
    ]
    assert [r.name for r in status_view(snap, project="shop").workload_deployments] == ["api"]
    assert status_view(snap, project="nope").workload_deployments == ()


def test_an_unreachable_cell_shows_unknown_not_stale_numbers() -> None:
    w = standard()
    w.cells["dfw-2"].health = Health(False, "connection refused")
    api = next(r for r in status_view(w.snapshot()).workload_deployments if (r.project, r.name) == ("web", "api"))
    dfw2 = api.cells[1]
    assert (dfw2.cell, dfw2.reachable, dfw2.copy, dfw2.desired, dfw2.ready, dfw2.updated) == (
        "dfw-2",
        False,
        CopyState.UNKNOWN,
        None,
        None,
        None,
    )
    assert (dfw2.share, dfw2.ordinal_start) == (1, 2), "the plan keeps an unreachable cell's share"
    lines = text_of(render(status_view(w.snapshot(), project="web")))
    assert "cell dfw-2: unreachable (connection refused)" in lines
    assert any(line.split() == ["dfw-2", "2", "?", "?", "?", "cell", "unreachable"] for line in lines), lines


def test_a_missing_copy_and_one_not_yet_observed() -> None:
    w = standard()
    api = w.projects["web"].wd("default", "api")
    w.cells["dfw-2"].copies.remove(w.copies_of("web", api)["dfw-2"])
    w.copies_of("web", api)["dfw-1"]["metadata"]["generation"] = 2
    row = next(r for r in status_view(w.snapshot(), project="web").workload_deployments if r.name == "api")
    assert [(c.cell, c.copy, c.ready) for c in row.cells] == [
        ("dfw-1", CopyState.PENDING, 2),
        ("dfw-2", CopyState.MISSING, None),
    ]


def test_a_wd_that_cannot_be_placed_says_why() -> None:
    w = standard()
    w.add_wd("web", "bad", "DFW 1", 1)
    row = next(r for r in status_view(w.snapshot()).workload_deployments if r.name == "bad")
    assert row.cells == ()
    assert row.problem == "spec.cityCode: 'DFW 1' must not contain spaces (e.g. 'DFW')"
    assert any("cannot be placed: spec.cityCode" in line for line in text_of(render(status_view(w.snapshot()))))


def cond(type_: str, status: str, reason: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": ""}


def test_the_worst_condition_wins() -> None:
    ok_a, ok_r = cond("Available", "True", "StableInstanceFound"), cond("ReplicasReady", "True", "ReplicasAvailable")
    waiting = cond("ReplicasReady", "False", "AwaitingPropagation")
    crashing = cond("Available", "False", "InstanceCrashing")
    unknown = cond("Available", "Unknown", "CellUnreachable")
    assert worst_condition({}) is None
    assert worst_condition({"conditions": [ok_r, ok_a]}).reason == "StableInstanceFound"
    assert worst_condition({"conditions": [ok_a, waiting]}).reason == "AwaitingPropagation"
    assert worst_condition({"conditions": [waiting, crashing]}).reason == "InstanceCrashing"
    assert worst_condition({"conditions": [unknown, ok_r]}).status == "Unknown"


def test_the_table() -> None:
    lines = text_of(render(status_view(standard().snapshot(), project="web")))
    assert [line.split() for line in lines] == [
        ["WORKLOADDEPLOYMENT", "CITY", "CELL", "ORDINALS", "DESIRED", "READY", "UP-TO-DATE", "FRESHNESS", "REASON"],
        ["web/default/api", "DFW", "(all)", "3", "3", "3", "StableInstanceFound"],
        ["dfw-1", "0-1", "2", "2", "2", "observed"],
        ["dfw-2", "2", "1", "1", "1", "observed"],
        ["web/default/edge", "LHR", "(all)", "1", "1", "1", "StableInstanceFound"],
        ["lhr-1", "0", "1", "1", "1", "observed"],
    ]


def test_wide_shows_the_owning_shard() -> None:
    w = standard()
    w.projects["web"].wd("default", "api")["metadata"]["labels"] = {str(Label.SHARD): "shard-b"}
    view = status_view(w.snapshot(), project="web")
    assert [(r.name, r.shard) for r in view.workload_deployments] == [("api", "shard-b"), ("edge", "")]
    assert [r["shard"] for r in to_json(view)["workloadDeployments"]] == ["shard-b", ""]
    lines = text_of(render(view, wide=True), width=300)
    assert lines[0].split()[-2:] == ["SHARD", "MESSAGE"]
    assert lines[1].split()[:1] == ["web/default/api"] and "shard-b" in lines[1].split()
    assert "-" in lines[4].split()  # edge: not assigned (an unsharded manager)
    assert "SHARD" not in text_of(render(view))[0]


# ---------------------------------------------------------------------- --watch (in process)


async def test_watch_refreshes_in_place_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, color_system=None)
    calls = 0
    with anyio.CancelScope() as scope:

        async def frame() -> Text:
            nonlocal calls
            calls += 1
            if calls == 3:
                scope.cancel()
            return Text(f"frame {calls}")

        await watch(frame, console, 0.001)
    shown = out.getvalue()
    assert "frame 1" in shown and "frame 3" in shown
    assert "\x1b[" in shown, "a terminal is redrawn in place (cursor control), not appended to"


async def test_watch_prints_successive_frames_without_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    calls = 0
    with anyio.CancelScope() as scope:

        async def frame() -> Text:
            nonlocal calls
            calls += 1
            if calls == 3:
                scope.cancel()
            return Text(f"frame {calls}")

        await watch(frame, console, 0.001)
    assert out.getvalue() == "frame 1\n\nframe 2\n\nframe 3\n\n"


# ---------------------------------------------------------------------- the command against a fleet


def expected_rows(f: Fleet) -> list[dict[str, Any]]:
    """What `status -o json` must say, read straight from the clusters: each project WD's
    own status, and per cell its copy's share (annotation, spec) and status."""
    rows = []
    for project in sorted(f.projects):
        for wd in sorted(WDs(f, project).list(), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            status = wd.get("status") or {}
            cells = []
            for cell in sorted(f.cells):
                for copy in WDs(f, cell).list():
                    annotations = copy["metadata"].get("annotations") or {}
                    if annotations.get(Annotation.UPSTREAM_UID) != wd["metadata"]["uid"]:
                        continue
                    got = copy["status"]
                    cells.append(
                        {
                            "cell": cell,
                            "share": copy["spec"]["replicas"],
                            "ordinalStart": int(annotations[Annotation.ORDINAL_START]),
                            "reachable": True,
                            "copy": "observed"
                            if got["observedGeneration"] == copy["metadata"]["generation"]
                            else "pending",
                            "desired": got["desiredReplicas"],
                            "ready": got["readyReplicas"],
                            "updated": got["updatedReplicas"],
                        }
                    )
            # both conditions have one status in these cases; Available's reason ranks first
            available = next(c for c in status["conditions"] if c["type"] == "Available")
            rows.append(
                {
                    "project": project,
                    "namespace": wd["metadata"]["namespace"],
                    "name": wd["metadata"]["name"],
                    "cityCode": wd["spec"]["cityCode"],
                    "deleting": False,
                    "shard": "",  # one unsharded manager
                    "desired": status["desiredReplicas"],
                    "ready": status["readyReplicas"],
                    "updated": status["updatedReplicas"],
                    "condition": {k: available[k] for k in ("type", "status", "reason", "message")},
                    "problem": "",
                    "cells": cells,
                }
            )
    return rows


async def test_status_json_matches_the_clusters(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        await converged(f)
        WDs(f, "web").create(workload_deployment("nowhere", "NRT", 1))

        def nowhere_reported() -> bool:
            wd = WDs(f, "web").get("default", "nowhere") or {}
            return any(c["reason"] == "NoMatchingLocation" for c in (wd.get("status") or {}).get("conditions") or [])

        await eventually(nowhere_reported, "NoMatchingLocation for NRT")
        ran = await cli("status", "--kubeconfig", str(tmp_path / "management.kubeconfig"), "--output", "json")
        assert ran.code == 0 and ran.err == "", ran.err
        shown = json.loads(ran.out)
        rows = expected_rows(f)
        assert shown["workloadDeployments"] == rows
        assert [(c["name"], c["role"], c["city"], c["reachable"]) for c in shown["clusters"]] == [
            ("management", "management", "", True),
            ("shop", "project", "", True),
            ("web", "project", "", True),
            ("dfw-1", "cell", "DFW", True),
            ("dfw-2", "cell", "DFW", True),
            ("lhr-1", "cell", "LHR", True),
        ]
        # what the fleet holds, spelled out once so the comparison above cannot be vacuous
        web_api = next(r for r in rows if (r["project"], r["name"]) == ("web", "api"))
        assert [(c["cell"], c["share"], c["ordinalStart"], c["ready"]) for c in web_api["cells"]] == [
            ("dfw-1", 2, 0, 2),
            ("dfw-2", 1, 2, 1),
        ]
        assert next(r for r in rows if r["name"] == "nowhere")["cells"] == []


@pytest.mark.slow
async def test_status_table_and_an_unreachable_cell(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        await converged(f)
        ran = await cli("status", "--state-dir", str(tmp_path), "--project", "web")
        assert ran.code == 0, ran.err
        assert all(line == line.rstrip() for line in ran.out.splitlines()), "no padding after the text in a pipe"
        assert [line.split() for line in ran.out.splitlines()] == [
            ["WORKLOADDEPLOYMENT", "CITY", "CELL", "ORDINALS", "DESIRED", "READY", "UP-TO-DATE", "FRESHNESS", "REASON"],
            ["web/default/api", "DFW", "(all)", "3", "3", "3", "StableInstanceFound"],
            ["dfw-1", "0-1", "2", "2", "2", "observed"],
            ["dfw-2", "2", "1", "1", "1", "observed"],
            ["web/default/edge", "LHR", "(all)", "1", "1", "1", "StableInstanceFound"],
            ["lhr-1", "0", "1", "1", "1", "observed"],
        ]
        await f.cells["dfw-2"].pause()
        try:
            ran = await cli(
                "status",
                "--kubeconfig",
                str(tmp_path / "management.kubeconfig"),
                "-n",
                "default",
                "-o",
                "json",
                "--timeout",
                "3",
            )
        finally:
            await f.cells["dfw-2"].resume()
    assert ran.code == 0, ran.err
    shown = json.loads(ran.out)
    dfw2 = next(c for c in shown["clusters"] if c["name"] == "dfw-2")
    assert dfw2["reachable"] is False and "dfw-2" in dfw2["error"]
    web_api = next(r for r in shown["workloadDeployments"] if (r["project"], r["name"]) == ("web", "api"))
    assert web_api["cells"][1] == {
        "cell": "dfw-2",
        "share": 1,
        "ordinalStart": 2,
        "reachable": False,
        "copy": "unknown",
        "desired": None,
        "ready": None,
        "updated": None,
    }


async def test_status_watch_refreshes_until_interrupted(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        await converged(f)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "federation.cli",
            "status",
            "--state-dir",
            str(tmp_path),
            "--watch",
            "--interval",
            "0.2",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        seen = ""
        try:
            with anyio.fail_after(60):
                while seen.count("federation-manager status · every 0.2s") < 2:
                    chunk = await proc.stdout.read(4096)
                    assert chunk, "the watch ended by itself"
                    seen += chunk.decode()
        finally:
            proc.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0
    assert seen.count("web/default/api") >= 2, seen
