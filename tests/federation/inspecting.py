"""Shared by the tests of `status`, `plan` and `check` against a fleet: the federation
they inspect (projects web and shop, cells dfw-1 and dfw-2 in DFW and lhr-1 in LHR, the
management-mode manager running as `run` runs it; the cells' own controllers stood in for
by `cellsim.settle`), and the real CLI in a subprocess."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federation.api.constants import Annotation
from mcruntime import Manager
from tests.federation.test_federator import WDs, shares, workload_deployment
from tests.projector.cellsim import settle
from tests.support import Fleet, eventually, fleet, management_settings, running

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
PROJECTS = ("acme/web", "acme/shop")
# project → (name, city, replicas) of the WDs `converged` creates
DEPLOYED = {"web": [("api", "DFW", 3), ("edge", "LHR", 1)], "shop": [("api", "DFW", 2)]}


@asynccontextmanager
async def federation(tmp: Path) -> AsyncIterator[tuple[Fleet, Manager]]:
    async with (
        fleet(tmp, projects=PROJECTS, cells=CELLS) as f,
        running(management_settings(tmp / "management.kubeconfig")) as mgr,
    ):
        yield f, mgr


def project_status(f: Fleet, project: str, name: str) -> dict[str, Any]:
    wd = WDs(f, project).get("default", name)
    return (wd or {}).get("status") or {}


async def converged(f: Fleet) -> None:
    """Create `DEPLOYED`, let the federator place it, settle every cell and wait until the
    projector has aggregated every WD as fully ready."""
    for project, wds in DEPLOYED.items():
        for name, city, replicas in wds:
            WDs(f, project).create(workload_deployment(name, city, replicas))

    def placed() -> bool:
        copies = sum(len(WDs(f, cell).list()) for cell in f.cells)
        return copies == 5 and shares(f, "edge") == {"lhr-1": (1, 0)}

    await eventually(placed, "every copy placed", within=30)
    for cell in f.cells:
        settle(f, cell)

    def aggregated() -> bool:
        for project, wds in DEPLOYED.items():
            for name, _city, replicas in wds:
                status = project_status(f, project, name)
                available = [c for c in status.get("conditions") or [] if c["type"] == "Available"]
                if status.get("readyReplicas") != replicas or not available or available[0]["status"] != "True":
                    return False
        return True

    await eventually(aggregated, "every WD aggregated as ready", within=30)


def copy_in(f: Fleet, cell: str, project_uid: str, name: str) -> dict[str, Any] | None:
    """The copy of the project WD with UID `project_uid` named `name` in `cell`."""
    for obj in WDs(f, cell).list():
        annotations = obj["metadata"].get("annotations") or {}
        if obj["metadata"]["name"] == name and annotations.get(Annotation.UPSTREAM_UID) == project_uid:
            return obj
    return None


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


async def cli(*args: str, stdin: str | None = None) -> Ran:
    """`python -m federation.cli ARGS` in a subprocess, as an operator runs it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "federation.cli",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), 120)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())
