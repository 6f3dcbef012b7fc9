"""Installable as a package: the wheel built from this tree, installed into a fresh venv
(no access to the source tree or the dev venv), runs `crds`, `run` and `up`, and `up`
applies the samples it ships as package data.

Slow and needs PyPI (build backend and dependencies; pip's cache makes reruns quick)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.package, pytest.mark.slow, pytest.mark.kubectl, pytest.mark.timeout(600)]
BUILD_LEFTOVERS = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".demo", "bench")


def _clean_env() -> dict[str, str]:
    """The environment without anything that points Python at this tree or its venv."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "FEDERATION_VENV"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv holding the wheel and its dependencies from PyPI."""
    root = tmp_path_factory.mktemp("wheel")
    # Build from a clean copy: an in-tree build reuses build/lib, where files since removed
    # from the tree would linger and ship. Links are kept (federation/samples is one).
    source = root / "src"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(*BUILD_LEFTOVERS))
    wheels = root / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(source)], cwd=root)
    (wheel,) = wheels.glob("federation_manager-*.whl")
    venv.create(root / "venv", with_pip=True, system_site_packages=False)
    bin_dir = root / "venv" / "bin"
    install = ["install", "--disable-pip-version-check", "--quiet", "--no-compile", str(wheel)]
    _run([str(bin_dir / "python"), "-m", "pip", *install], cwd=root)
    return bin_dir


def test_the_installed_package_is_not_the_source_tree(installed: Path, tmp_path: Path) -> None:
    code = "import federation.demo as d; print(d.__file__); print(d.SAMPLES)"
    module, samples = _run([str(installed / "python"), "-c", code], cwd=tmp_path).stdout.split()
    venv_root = str(installed.parent)
    assert module.startswith(venv_root) and samples.startswith(venv_root), (module, samples)
    assert not Path(samples).is_symlink(), "the wheel carries the sample files, not a link into the tree"


def test_crds_and_run_help(installed: Path, tmp_path: Path) -> None:
    crds = _run([str(installed / "federation-manager"), "crds"], cwd=tmp_path).stdout
    for name in ("workloaddeployments.compute.datumapis.com", "locations.networking.datumapis.com"):
        assert f"name: {name}" in crds
    usage = _run([str(installed / "federation-manager"), "run", "--help"], cwd=tmp_path).stdout
    assert "--enable-management-controllers" in usage and "--enable-cell-controllers" in usage


async def test_up_applies_the_shipped_samples(installed: Path, tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "state"
    proc = await asyncio.create_subprocess_exec(
        str(installed / "federation-manager"), "up", "--state-dir", str(state), "--duration", "300",
        cwd=tmp_path, env=_clean_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:

        async def ready() -> bool:
            if proc.returncode is not None:
                out, err = await proc.communicate()
                raise AssertionError(f"up exited early ({proc.returncode}):\n{out.decode()}\n{err.decode()}")
            return (state / "ready").exists()

        await eventually(ready, "the ready file", within=120)
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c1")
        workloads = json.loads(await project("get", "workloads", "-o", "json"))["items"]
        assert [w["metadata"]["name"] for w in workloads] == ["web"]  # config/samples/compute_v1alpha_workload.yaml
        mgmt = Kubectl(state / "management.kubeconfig", tmp_path / "c2")
        assert "locations.networking.datumapis.com" in await mgmt("get", "crd", "-o", "name")
        # config/samples/networking_v1alpha_location.yaml, a multi-document sample
        assert (await mgmt("get", "locations", "-o", "name")).split() == [
            "location.networking.datumapis.com/dfw",
            "location.networking.datumapis.com/lhr",
        ]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "applied Workload 'web'" in out.decode()
