"""End to end, as a user: the README's walk-through with the real CLI in a subprocess and
the real kubectl, against `federation-manager up` (two DFW cells, one LHR cell, two
projects) and against the deployed shape (separate `apiserver` processes, a
management-mode `run`, one cell-mode `run` per cell, registered with `kubectl apply`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support import eventually
from tests.support.processes import REPO, deployed_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

WD = (REPO / "docs" / "examples" / "api-workloaddeployment.yaml").read_text()


def need_kubectl() -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")


async def items(kubectl: Kubectl, *args: str) -> list[dict[str, Any]]:
    out = await kubectl("get", *args, "-o", "json")
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def ready(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", []))


async def cell_instances(cells: dict[str, Kubectl]) -> dict[str, dict[str, Any]]:
    """Instance name → the Instance, across the given cells (with its cell in `_cell`)."""
    out: dict[str, dict[str, Any]] = {}
    for name, kubectl in cells.items():
        for inst in await items(kubectl, "instances", "-A"):
            if not inst["metadata"].get("deletionTimestamp"):
                out[inst["metadata"]["name"]] = {**inst, "_cell": name}
    return out


async def walk_through(project: Kubectl, cells: dict[str, Kubectl], cli: list[str]) -> None:
    """Apply, watch it land, roll it, scale it, break it, delete it. `cells`: the DFW cells
    (one or two), by name. Also run against kind clusters by e2e/kind.sh (e2e/walkthrough.py)."""
    await project("apply", "-f", "-", stdin=WD)

    async def landed(n: int) -> bool:
        insts = await cell_instances(cells)
        projections = {p["metadata"]["name"]: p for p in await items(project, "instances")}
        return (
            sorted(insts) == [f"api-{i}" for i in range(n)]
            and all(ready(i) for i in insts.values())
            and sorted(projections) == sorted(insts)
            and all(ready(p) for p in projections.values())
        )

    await eventually(lambda: landed(3), "3 Ready Instances in the DFW cells, projected in the project", within=90)
    placed = {name: inst["_cell"] for name, inst in (await cell_instances(cells)).items()}
    first, *rest = sorted(cells)  # the city's cells in name order: the first takes the remainder
    if rest:
        assert placed == {"api-0": first, "api-1": first, "api-2": rest[0]}
    else:
        assert set(placed.values()) == {first}
    header, row = (await project("get", "wd", "api")).splitlines()
    assert row.split()[2:] == ["True", "StableInstanceFound", "3", "3", "3", "3"], (header, row)

    # `status` and `check` agree with what kubectl shows (`cli`: where they find management;
    # empty where the registrations hold addresses only the managers can reach, as on kind)
    if cli:
        status = json.loads(await run_cli("status", *cli, "-o", "json"))
        assert status, "status lists the WD"
        check = await run_cli("check", *cli)
        assert "no violations" in check

    # roll with restartedAt: every Instance is recreated, the WD comes back fully updated
    before = {name: inst["metadata"]["uid"] for name, inst in (await cell_instances(cells)).items()}
    patch = {"spec": {"template": {"metadata": {"annotations": {
        "compute.datumapis.com/restartedAt": "2026-11-22T12:00:00Z"}}}}}  # fmt: skip
    # what a user watching the project WD sees during the roll (`kubectl get wd -w`)
    watcher = await asyncio.create_subprocess_exec(
        project.binary, "get", "wd", "api", "-w", "-o", "jsonpath={.status.updatedReplicas}{'\\n'}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "KUBECONFIG": str(project.kubeconfig), "KUBECACHEDIR": str(project.cache_dir)},
    )  # fmt: skip
    await project("patch", "wd", "api", "--type", "merge", "-p", json.dumps(patch))

    async def rolled() -> bool:
        now = await cell_instances(cells)
        fresh = all(now.get(n, {}).get("metadata", {}).get("uid") not in (None, uid) for n, uid in before.items())
        wd = json.loads(await project("get", "wd", "api", "-o", "json"))
        s = wd.get("status") or {}
        return fresh and s.get("observedGeneration") == wd["metadata"]["generation"] and s.get("updatedReplicas") == 3 \
            and s.get("readyReplicas") == 3  # fmt: skip

    await eventually(rolled, "every Instance recreated and the WD fully updated again", within=120)
    watcher.terminate()
    seen = [int(v) for v in (await watcher.communicate())[0].decode().split() if v.isdigit()]
    assert min(seen) < 3 and seen[-1] == 3, f"updatedReplicas dips during the roll and recovers: {seen}"

    # scale to 4: 2 + 2 over the DFW cells
    await project("scale", "wd", "api", "--replicas=4")
    await eventually(lambda: landed(4), "4 Ready Instances and projections", within=90)
    placed = {name: inst["_cell"] for name, inst in (await cell_instances(cells)).items()}
    assert sorted(placed.values()) == (sorted([first, first, rest[0], rest[0]]) if rest else [first] * 4)

    # delete an Instance in its cell: it comes back
    victim = await cell_instances(cells)
    inst = victim["api-3"]
    await cells[inst["_cell"]]("delete", "instance", "api-3", "-n", inst["metadata"]["namespace"])

    async def back() -> bool:
        now = (await cell_instances(cells)).get("api-3")
        return now is not None and now["metadata"]["uid"] != inst["metadata"]["uid"] and ready(now)

    await eventually(back, "api-3 recreated", within=90)

    # delete the WD: copies, Instances, Pods and projections all go
    await project("delete", "wd", "api", "--wait=true", "--timeout=120s")

    async def gone() -> bool:
        left = [await items(k, kind, "-A") for k in cells.values() for kind in ("wd", "instances", "pods")]
        return not any(left) and not await items(project, "instances")

    await eventually(gone, "nothing left in cells or project", within=60)


async def run_cli(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"{args}: {err.decode()}"
    return out.decode()


async def test_the_walk_through_against_up(tmp_path: Path) -> None:
    need_kubectl()
    state = tmp_path / "demo"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", "up", "--state-dir", str(state),
        "--cell", "dfw-1:DFW", "--cell", "dfw-2:DFW", "--cell", "lhr-1:LHR",
        "--project", "acme/web", "--project", "acme/shop",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    try:
        await eventually(lambda: (state / "ready").exists() or proc.returncode is not None, "up ready", within=120)
        assert proc.returncode is None, "up exited early"
        kc = {name: Kubectl(state / f"{name}.kubeconfig", tmp_path / f"kc-{name}") for name in
              ("web", "shop", "dfw-1", "dfw-2", "lhr-1")}  # fmt: skip
        # the sample Workload up applied converges too: Ready Instances in DFW and LHR, projected in web
        projections = lambda: items(kc["web"], "instances")  # noqa: E731

        async def sample_converged() -> bool:
            names = {p["metadata"]["name"] for p in await projections() if ready(p)}
            return {"web-edge-dfw-0", "web-edge-dfw-1", "web-edge-lhr-0", "web-edge-lhr-1"} <= names

        await eventually(sample_converged, "the sample Workload's Instances Ready and projected", within=90)
        await kc["web"]("delete", "workload", "web", "--wait=true", "--timeout=120s")
        # the walk-through as e2e/kind.sh runs it on real clusters: its script, in a subprocess
        script = await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "e2e" / "walkthrough.py"), "--project", str(state / "shop.kubeconfig"),
            "--cell", f"dfw-1={state / 'dfw-1.kubeconfig'}", "--cell", f"dfw-2={state / 'dfw-2.kubeconfig'}",
            "--management", str(state / "management.kubeconfig"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=REPO,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(script.communicate(), 600)
        assert script.returncode == 0 and "walk-through: passed" in out.decode(), out.decode()
        # nothing of shop's ever reached LHR, and web's namespaces in the cells stay web's
        assert await items(kc["lhr-1"], "wd", "-A") == []
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()


async def test_the_walk_through_against_the_deployed_shape_under_rbac(tmp_path: Path) -> None:
    """Every manager runs as the ServiceAccount the overlays deploy, bound only to the
    roles in config/rbac/ for its mode: a permission the code needs and the roles lack
    fails this test with a 403."""
    need_kubectl()
    cells = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
    async with deployed_fleet(tmp_path, projects=("acme/web",), cells=cells, rbac=True) as f:
        await f.run_manager(
            "management", "--enable-management-controllers", f"--kubeconfig={f.manager_kubeconfig('management')}",
            "--health-probe-bind-address=0", "--metrics-bind-address=0",
        )  # fmt: skip
        for cell, city in cells:
            await f.run_manager(
                f"cell-{cell}", "--enable-cell-controllers", f"--kubeconfig={f.manager_kubeconfig(cell)}",
                f"--site-name={cell}", f"--city-code={city}", "--feature-gates=PodRuntime=true",
                "--health-probe-bind-address=0", "--metrics-bind-address=0",
            )  # fmt: skip
        await walk_through(
            f.kubectl("web"), {c: f.kubectl(c) for c in ("dfw-1", "dfw-2")},
            ["--kubeconfig", str(f.kubeconfig("management"))],
        )  # fmt: skip
        for name, process in f.managers.items():
            assert await process.stop() == 0, f"{name}:\n{process.output()}"
            # a refusal logs as "403 Forbidden: ... is forbidden: User ..." (a bare "403" also
            # matches the milliseconds of a log timestamp)
            assert "Forbidden" not in process.output() and "forbidden:" not in process.output(), (
                f"{name} was refused something by the shipped roles:\n{process.output()}"
            )
