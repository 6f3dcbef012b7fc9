"""The shape an operator deploys: `federation-manager apiserver` processes, clusters
registered with `kubectl apply` (ClusterProfile + Secret), and `federation-manager run
--enable-management-controllers` as its own process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeplane.testing import kubectl_path
from tests.support import eventually
from tests.support.processes import REPO, deployed_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]


async def test_run_in_management_mode_fans_a_wd_out_to_registered_cells(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with deployed_fleet(tmp_path, cells=(("dfw-1", "DFW"), ("lhr-1", "LHR"))) as f:
        manager = await f.run_manager(
            "management", "--enable-management-controllers", f"--kubeconfig={f.kubeconfig('management')}",
            "--health-probe-bind-address=0", "--metrics-bind-address=0",
        )  # fmt: skip
        sample = (REPO / "config" / "samples" / "compute_v1alpha_workloaddeployment.yaml").read_text()
        await f.kubectl("web")("apply", "-f", "-", stdin=sample)

        async def copies(cell: str) -> list[str]:
            out = await f.kubectl(cell)("get", "wd", "-A", "-o", "json")
            return [i["metadata"]["name"] for i in json.loads(out)["items"]]

        async def in_dfw() -> bool:
            return await copies("dfw-1") == ["api-edge-dfw"]

        await eventually(in_dfw, "the copy in dfw-1", within=30)
        assert await copies("lhr-1") == []
        finalizers = await f.kubectl("web")("get", "wd", "api-edge-dfw", "-o", "jsonpath={.metadata.finalizers}")
        assert "compute.datumapis.com/federator" in finalizers
        assert await manager.stop() == 0, manager.output()
        log = manager.output()
        assert "modes management; controllers federator, companions, workload-controller" in log
