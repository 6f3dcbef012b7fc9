"""Placement by location on `federation-manager up`, as a user migrating from upstream
does it: kubectl applies a WorkloadDeployment of the current era (`spec.locationRef` to the
sample Location `dfw`) and two of the older era (`spec.cityCode` `dfw` and `DFW`) to the
demo's project; each places on the DFW cell and converges (status, Instances)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane.testing import Kubectl, kubectl_path
from tests.federation.test_demo import start_up, wait_ready
from tests.support import eventually

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]


def wd(name: str, placement: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "workloadRef": {"name": name, "uid": "00000000-0000-0000-0000-000000000042"},
            "placementName": "edge",
            **placement,
            "replicas": 1,
            "scaleSettings": {"minReplicas": 1},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "runtime": {
                        "resources": {"instanceType": "datumcloud/d1-standard-2"},
                        "sandbox": {"containers": [{"name": "app", "image": "docker.io/library/nginx:1.27"}]},
                    },
                    "networkInterfaces": [{"network": {"name": "default"}}],
                },
            },
        },
    }


WDS = {
    "by-location": {"locationRef": {"name": "dfw"}},
    "lower-city": {"cityCode": "dfw"},
    "upper-city": {"cityCode": "DFW"},
}


async def test_a_location_wd_and_both_city_cases_place_on_the_dfw_cell(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await start_up(state)
    try:
        await wait_ready(proc, state)
        manifest = tmp_path / "wds.yaml"
        manifest.write_text(yaml.safe_dump_all([wd(name, placement) for name, placement in WDS.items()]))
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c1")
        await project("apply", "--validate=strict", "-f", str(manifest))
        dfw = Kubectl(state / "cell-dfw.kubeconfig", tmp_path / "c2")
        lhr = Kubectl(state / "cell-lhr.kubeconfig", tmp_path / "c3")

        async def converged() -> bool:
            for name in WDS:
                status = json.loads(await project("get", "wd", name, "-o", "json")).get("status") or {}
                available = [c for c in status.get("conditions") or [] if c["type"] == "Available"]
                if status.get("readyReplicas") != 1 or not available or available[0]["status"] != "True":
                    return False
            instances = (await project("get", "instances", "-o", "name")).split()
            return all(f"instance.compute.datumapis.com/{name}-0" in instances for name in WDS)

        await eventually(converged, "every WD ready with its Instance projected", within=60)
        copies = json.loads(await dfw("get", "wd", "-A", "-o", "json"))["items"]
        by_name = {c["metadata"]["name"]: c for c in copies}
        assert set(WDS) <= set(by_name), sorted(by_name)
        labels = by_name["by-location"]["metadata"]["labels"]
        assert labels["topology.datum.net/location"] == "dfw"
        assert labels["topology.datum.net/city-code"] == "DFW"  # the sample Location's city
        assert by_name["lower-city"]["metadata"]["labels"]["topology.datum.net/city-code"] == "dfw"  # as written
        assert not set(WDS) & {c["metadata"]["name"] for c in json.loads(await lhr("get", "wd", "-A", "-o", "json"))[
            "items"]}, "nothing in LHR"  # fmt: skip
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
