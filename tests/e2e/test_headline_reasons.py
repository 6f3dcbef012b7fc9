"""The reason a user sees at a glance is the real one (issue 18 item 1): against
`federation-manager up`, `kubectl get wd` in the project and `federation-manager status`
show ImageUnavailable / InstanceCrashing with the cell named, and a WD scaled to zero is
Available/ScaledToZero, not "provisioning"."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually
from tests.support.processes import REPO

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

WD = (REPO / "docs" / "examples" / "api-workloaddeployment.yaml").read_text()


def wd_yaml(name: str, replicas: int, image: str) -> str:
    return (
        WD.replace("name: api\n  namespace", f"name: {name}\n  namespace")
        .replace("replicas: 3", f"replicas: {replicas}")
        .replace("minReplicas: 1", "minReplicas: 0")
        .replace("docker.io/library/nginx:1.27", image)
    )


async def run_cli(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"{args}: {err.decode()}"
    return out.decode()


async def test_kubectl_get_wd_and_status_show_the_real_reason(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", "up", "--state-dir", str(state),
        "--cell", "dfw-1:DFW", "--project", "acme/web",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    try:
        await eventually(lambda: (state / "ready").exists() or proc.returncode is not None, "up ready", within=120)
        assert proc.returncode is None, "up exited early"
        project = Kubectl(state / "web.kubeconfig", tmp_path / "kc-web")
        manifests = [
            wd_yaml("pull", 1, "registry.example/team/unpullable:1"),
            wd_yaml("crash", 1, "registry.example/team/crasher:1"),
            wd_yaml("idle", 0, "docker.io/library/nginx:1.27"),
        ]
        await project("apply", "-f", "-", stdin="\n---\n".join(manifests))
        want = {
            "pull": ("False", "ImageUnavailable"),
            "crash": ("False", "InstanceCrashing"),
            "idle": ("True", "ScaledToZero"),
        }

        async def columns() -> dict[str, tuple[str, str]]:
            rows = (await project("get", "wd", "--no-headers")).splitlines()
            return {r.split()[0]: (r.split()[2], r.split()[3]) for r in rows if len(r.split()) > 3}

        async def shown() -> bool:
            seen = await columns()
            return all(seen.get(name) == w for name, w in want.items())

        await eventually(shown, f"kubectl get wd shows {want}", within=120)
        for name in ("pull", "crash"):
            wd: dict[str, Any] = json.loads(await project("get", "wd", name, "-o", "json"))
            (available,) = [c for c in wd["status"]["conditions"] if c["type"] == "Available"]
            assert "cell dfw-1" in available["message"], available
            assert f"{name}-0: {want[name][1]}" in available["message"], available

        status = json.loads(await run_cli("status", "--kubeconfig", str(state / "management.kubeconfig"), "-o", "json"))
        by_name = {r["name"]: r for r in status["workloadDeployments"]}
        for name in ("pull", "crash"):
            cond = by_name[name]["condition"]
            assert (cond["status"], cond["reason"]) == want[name], cond
            assert "cell dfw-1" in cond["message"], cond
        assert by_name["idle"]["condition"]["status"] == "True", by_name["idle"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
