"""A normal `up` start logs no ERROR and no traceback (issue 18 item 4). When a cell became
Ready, the cluster-event map functions looped over every project; a project engaged but
whose views were not declared yet raised NoCacheViewError, which dropped the event's work
for every other project (the orphan sweep included). That interleaving depends on timing,
so the shape is started 10 times, each until the sample Workload is projected."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually

from .test_demo import start_up, wait_ready

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

SHAPE = ("--cell", "dfw-1:DFW", "--cell", "dfw-2:DFW", "--cell", "lhr-1:LHR",
         "--project", "acme/web", "--project", "beta/shop")  # fmt: skip
STARTS = 10


async def test_ten_starts_of_three_cells_and_two_projects_log_cleanly(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    for run in range(STARTS):
        state = tmp_path / f"run-{run}"
        proc = await start_up(state, *SHAPE)
        try:
            await wait_ready(proc, state)
            project = Kubectl(state / "web.kubeconfig", tmp_path / f"kc-{run}")

            async def projected(project: Kubectl = project) -> bool:
                items = json.loads(await project("get", "instances", "-o", "json"))["items"]
                return len(items) >= 4  # the sample Workload: 2 in DFW, 2 in LHR

            await eventually(projected, f"run {run}: the sample Workload's Instances projected", within=90)
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            _, err = await proc.communicate()
        log = err.decode()
        assert proc.returncode == 0, f"run {run}: exit {proc.returncode}\n{log}"
        bad = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
        assert not bad, f"run {run} of {STARTS}: the start-up log is not clean:\n{log}"
