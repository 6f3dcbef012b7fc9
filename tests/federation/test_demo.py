"""`federation-manager up` (the README's first command line) as a user runs it: a working
federation on embedded servers, `ready` once synced, a clean exit on SIGINT/SIGTERM that
removes what it wrote, and clear refusals of bad flags."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kubectl


async def start_up(state: Path, *args: str, command: tuple[str, ...] | None = None) -> asyncio.subprocess.Process:
    argv = command or (sys.executable, "-m", "federation.cli", "up")
    return await asyncio.create_subprocess_exec(
        *argv, "--state-dir", str(state), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
        env={**os.environ, "FEDERATION_VENV": sys.prefix},
    )  # fmt: skip


async def wait_ready(proc: asyncio.subprocess.Process, state: Path) -> None:
    async def ready() -> bool:
        if proc.returncode is not None:
            out, err = await proc.communicate()
            raise AssertionError(f"up exited early ({proc.returncode}):\n{out.decode()}\n{err.decode()}")
        return (state / "ready").exists()

    await eventually(ready, "the ready file", within=90)


async def test_up_runs_the_federation_and_stops_cleanly(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await start_up(state)
    try:
        await wait_ready(proc, state)
        mgmt = Kubectl(state / "management.kubeconfig", tmp_path / "c1")
        profiles = json.loads(await mgmt("get", "clusterprofiles", "-A", "-o", "json"))["items"]
        roles = {p["metadata"]["name"]: p["metadata"]["labels"]["compute.datumapis.com/cluster-role"] for p in profiles}
        assert roles == {"cell-dfw": "cell", "cell-lhr": "cell", "web": "project"}
        locations = json.loads(await mgmt("get", "locations", "-o", "json"))["items"]
        assert {
            loc["metadata"]["name"]: loc["spec"]["topology"]["topology.datum.net/city-code"] for loc in locations
        } == {
            "dfw": "DFW",
            "lhr": "LHR",
        }, "the sample Locations for the demo's cities"
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c2")
        assert (await project("get", "workloads", "-o", "name")).strip() == "workload.compute.datumapis.com/web"

        async def deployments() -> bool:
            names = (await project("get", "wd", "-o", "name")).split()
            return sorted(names) == ["workloaddeployment.compute.datumapis.com/web-edge-dfw",
                                     "workloaddeployment.compute.datumapis.com/web-edge-lhr"]  # fmt: skip

        await eventually(deployments, "the workload controller's WDs", within=30)
        lhr = Kubectl(state / "cell-lhr.kubeconfig", tmp_path / "c3")

        async def federated() -> bool:
            return "web-edge-lhr" in await lhr("get", "wd", "-A", "-o", "name")

        await eventually(federated, "the LHR copy in cell-lhr", within=30)
        # the samples, applied to the demo as config/samples/kustomization.yaml says, add and never overwrite
        before = json.loads(await project("get", "wd", "web-edge-dfw", "-o", "json"))
        await project("apply", "-f", str(REPO / "config/samples/compute_v1alpha_workloaddeployment.yaml"))
        await mgmt("apply", "-f", str(REPO / "config/samples/multicluster_v1alpha1_clusterprofile_cell.yaml"))
        dfw = Kubectl(state / "cell-dfw.kubeconfig", tmp_path / "c4")

        async def sample_landed() -> bool:
            return "api-edge-dfw" in await dfw("get", "wd", "-A", "-o", "name")

        await eventually(sample_landed, "the sample WD's copy in cell-dfw", within=30)
        after = json.loads(await project("get", "wd", "web-edge-dfw", "-o", "json"))
        assert after["spec"] == before["spec"], "the Workload's own WD is untouched by the sample"
        profiles = json.loads(await mgmt("get", "clusterprofiles", "-A", "-o", "json"))["items"]
        cities = {p["metadata"]["name"]: p["metadata"]["labels"].get("topology.datum.net/city-code") for p in profiles}
        assert cities["cell-dfw"] == "DFW" and cities["cell-lhr"] == "LHR", "the demo's registrations kept"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()
    assert sorted(p.name for p in state.iterdir()) == [], "kubeconfigs and ready are removed on exit"
    assert "Try this:" in out.decode()


async def test_a_signal_to_taskw_demo_reaches_the_demo(tmp_path: Path) -> None:
    state = tmp_path / "demo"
    proc = await start_up(state, command=("sh", str(REPO / "taskw"), "demo", "--"))
    try:
        await wait_ready(proc, state)
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
    assert not (state / "ready").exists()


async def test_up_rejects_bad_flags(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for args, text in (
        (["--cell", "dfw"], "expected NAME:CITY"),
        (["--duration", "-1"], "--duration"),
        (["--cell", "a:DFW", "--cell", "a:LHR"], "cluster name 'a' is already used by --cell a"),
        (["--cell", "management:DFW"], "'management' is already used by the management cluster"),
        (
            ["--project", "acme/web", "--cell", "web:DFW"],
            "--project acme/web: cluster name 'web' is already used by --cell web",
        ),
        (["--project", "not a path"], "--project"),
        (["--state-dir", str(blocker / "demo"), "--duration", "1"], f"cannot use {blocker / 'demo'}"),
    ):
        proc = await start_up(tmp_path, *args)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode != 0 and text in err.decode(), (args, err.decode())
        assert "Traceback" not in err.decode()
