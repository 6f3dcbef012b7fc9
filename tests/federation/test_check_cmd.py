"""`federation-manager check` and the invariant checker against a real fleet: a converged
federation has no violation; one broken by hand (with the manager stopped, so nothing
repairs it) reports exactly what was broken, one line each, and exits 1. The checker's
rules, kind by kind, are in test_invariants.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from federation.invariants import check
from federation.snapshot import load_snapshot
from tests.federation.test_federator import WDs
from tests.projector.cellsim import GROUP, VERSION
from tests.support import Fleet, Plane, eventually, fleet, management_settings, running

from .inspecting import CELLS, PROJECTS, cli, converged, copy_in, federation


def write_extra_copy(f: Fleet, source_cell: str, target_cell: str, project_wd_uid: str) -> str:
    """The web/api copy of `source_cell`, written by hand (with its namespace) into
    `target_cell`; returns the namespace."""
    original = copy_in(f, source_cell, project_wd_uid, "api")
    assert original is not None
    namespace = original["metadata"]["namespace"]
    source_ns = Plane(f.server(source_cell)).get("namespaces", "", namespace)
    target = Plane(f.server(target_cell))
    if namespace not in target.names("namespaces"):
        target.create("namespaces", {"metadata": {"name": namespace, "labels": source_ns["metadata"]["labels"]}})
    stray = {
        "apiVersion": original["apiVersion"],
        "kind": original["kind"],
        "metadata": {
            "name": "api",
            "namespace": namespace,
            "labels": original["metadata"]["labels"],
            "annotations": original["metadata"]["annotations"],
        },
        "spec": copy.deepcopy(original["spec"]),
    }
    target.create("workloaddeployments", stray, group=GROUP, version=VERSION)
    return namespace


@pytest.mark.slow
async def test_a_converged_fleet_passes_and_a_broken_one_reports_exactly_what_broke(tmp_path: Path) -> None:
    mgmt = str(tmp_path / "management.kubeconfig")
    async with fleet(tmp_path, projects=PROJECTS, cells=CELLS) as f:
        async with running(management_settings(tmp_path / "management.kubeconfig")):
            await converged(f)

            async def clean() -> bool:
                report = check(await load_snapshot(f.config()))
                return report.ok and not report.unchecked

            await eventually(clean, "no violation once converged", within=30, every=0.2)
        # the manager has stopped: what is broken now stays broken
        ran = await cli("check", "--kubeconfig", mgmt)
        assert (ran.code, ran.out, ran.err) == (0, "no violations (2 projects, 3 cells)\n", "")

        web_api = WDs(f, "web").get("default", "api")
        assert web_api is not None
        namespace = write_extra_copy(f, "dfw-1", "lhr-1", web_api["metadata"]["uid"])
        Plane(f.server("web")).delete("instances", "default", "api-1", group=GROUP, version=VERSION)

        report = check(await load_snapshot(f.config()))
        expected = [
            f"unplanned-copy: project web: WorkloadDeployment default/api: cell lhr-1 holds a copy ({namespace}/api) "
            "but the plan places nothing there",
            "missing-projection: project web: WorkloadDeployment default/api: Instance api-1 in cell dfw-1 has no "
            "projection in project web",
        ]
        assert [str(v) for v in report.violations] == expected
        assert report.unchecked == ()

        ran = await cli("check", "--state-dir", str(tmp_path))  # the fleet's directory has management.kubeconfig
        assert ran.code == 1, ran.err
        assert ran.out.splitlines() == [*expected, "2 violations (2 projects, 3 cells)"]
        assert ran.err == ""


@pytest.mark.slow
async def test_check_reports_an_unreachable_cell_as_unchecked(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        await converged(f)
        await f.cells["lhr-1"].pause()
        ran = await cli("check", "--kubeconfig", str(tmp_path / "management.kubeconfig"), "--output", "json")
        await f.cells["lhr-1"].resume()
    assert ran.code == 2, ran.out + ran.err  # could not check part of it: not a pass
    result = json.loads(ran.out)
    assert result["violations"] == []
    assert len(result["unchecked"]) == 2
    assert result["unchecked"][0].startswith("cell lhr-1 not read (")
    assert result["unchecked"][0].endswith(
        "): its copies count as pending sweep; shares and status that depend on it are not checked"
    )
    assert result["unchecked"][1] == (
        "project web: WorkloadDeployment default/edge: status not checked (cells lhr-1 not read)"
    )
