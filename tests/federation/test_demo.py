"""`federation-manager up` (the README's demo command) brings up management, project and
cell API servers, registers cells and projects, applies the sample Workload, and stops
cleanly."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from kubeplane.testing import Kubectl, kubectl_path


async def test_up_registers_cells_and_projects_and_stops_cleanly(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "federation.cli",
        "up",
        "--state-dir",
        str(state),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        seen = ""
        while "Stop with Ctrl-C" not in seen:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, f"demo exited early: {(await proc.stderr.read()).decode() if proc.stderr else ''}"
            seen += line.decode()
        mgmt = Kubectl(state / "management.kubeconfig", tmp_path / "c1")
        profiles = json.loads(await mgmt("get", "clusterprofiles", "-A", "-o", "json"))["items"]
        roles = {p["metadata"]["name"]: p["metadata"]["labels"]["compute.datumapis.com/cluster-role"] for p in profiles}
        assert roles == {"cell-dfw": "cell", "cell-lhr": "cell", "web": "project"}
        cities = {p["metadata"]["name"]: p["metadata"]["labels"].get("topology.datum.net/city-code") for p in profiles}
        assert cities["cell-dfw"] == "DFW" and cities["cell-lhr"] == "LHR"
        # the kubeconfig Secret of a cell really reaches that cell
        secret = json.loads(await mgmt("get", "secret", "cell-lhr-kubeconfig", "-n", "federation-system", "-o", "json"))
        import base64

        (tmp_path / "lhr.kubeconfig").write_bytes(base64.b64decode(secret["data"]["kubeconfig"]))
        lhr = Kubectl(tmp_path / "lhr.kubeconfig", tmp_path / "c2")
        assert "workloaddeployments.compute.datumapis.com" in await lhr("get", "crd", "-o", "name")
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c3")
        assert (await project("get", "workloads", "-o", "name")).strip() == "workload.compute.datumapis.com/web"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0


async def test_up_rejects_bad_flags(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for args, text in (
        (["--cell", "dfw"], "expected NAME:CITY"),
        (["--duration", "-1"], "--duration"),
        (["--state-dir", str(blocker / "demo"), "--duration", "1"], f"cannot use {blocker / 'demo'}"),
    ):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "federation.cli",
            "up",
            "--state-dir",
            str(tmp_path),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode != 0 and text in err.decode(), err.decode()
        assert "Traceback" not in err.decode()
