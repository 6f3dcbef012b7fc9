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
pytestmark = [pytest.mark.kubectl, pytest.mark.slow]


async def start_up(
    state: Path | str, *args: str, command: tuple[str, ...] | None = None, cwd: Path = REPO
) -> asyncio.subprocess.Process:
    argv = command or (sys.executable, "-m", "federation.cli", "up")
    return await asyncio.create_subprocess_exec(
        *argv, "--state-dir", str(state), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=cwd,
        env={**os.environ, "FEDERATION_VENV": sys.prefix},
    )  # fmt: skip


async def wait_ready(proc: asyncio.subprocess.Process, state: Path, within: float = 90) -> None:
    async def ready() -> bool:
        if proc.returncode is not None:
            out, err = await proc.communicate()
            raise AssertionError(f"up exited early ({proc.returncode}):\n{out.decode()}\n{err.decode()}")
        return (state / "ready").exists()

    await eventually(ready, "the ready file", within=within)


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
        banner = await try_this_works_in_a_new_terminal(proc, state, tmp_path)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()
    left = sorted(p.name for p in state.iterdir() if p.suffix == ".kubeconfig" or p.name == "ready")
    assert left == [], "kubeconfigs and ready are removed on exit"
    assert "Try this:" in banner


def new_terminal() -> dict[str, str]:
    """A fresh shell's environment: no virtualenv on PATH (kubectl where the system has it)."""
    kubectl = kubectl_path()
    system = ["/usr/local/bin", "/usr/bin", "/bin"] + ([str(Path(kubectl).parent)] if kubectl else [])
    return {"PATH": ":".join(system), "HOME": os.environ.get("HOME", "/tmp")}


async def bash(script: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-euc", script, cwd=cwd, env=new_terminal(), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def try_this_works_in_a_new_terminal(proc: asyncio.subprocess.Process, state: Path, tmp_path: Path) -> str:
    """The banner's "Try this" commands, pasted in a new terminal somewhere else, and the
    README walk-through's first block (which puts .venv/bin on PATH) run from the repo."""
    assert proc.stdout is not None
    banner = ""
    while "Stop with Ctrl-C." not in banner:
        banner += (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    commands = [line.strip() for line in banner.split("Try this:")[1].splitlines()[1:] if line.startswith("  ")]
    assert len(commands) == 4 and any("status --state-dir" in c for c in commands), banner
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in commands:
        code, out = await bash(command, elsewhere)
        assert code == 0, f"pasted in a new terminal, {command!r} failed:\n{out}"
    readme = (REPO / "README.md").read_text()
    first = readme.split("## A walk through the demo")[1].split("```sh\n")[1].split("```")[0]
    assert first.startswith('export PATH="$PWD/.venv/bin:$PATH"'), first
    first = first.replace("$PWD/.demo/", f"{state}/").replace(".demo", str(state))
    if not (REPO / ".venv" / "bin" / "federation-manager").exists():  # a venv elsewhere (FEDERATION_VENV)
        first = first.replace("$PWD/.venv/bin", f"{Path(sys.executable).parent}")
    code, out = await bash(first, REPO)
    assert code == 0, f"the README walk-through's first block failed:\n{out}"
    assert "web-edge-dfw" in out, out
    return banner


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
