"""`status` and `check` with kubectl's manners, run as an operator runs them (the real CLI
in a subprocess, against a fleet): nothing truncated on an 80-column terminal, `-o wide`
and `-o yaml`, `--wait` until converged, and exit codes a script can branch on (check: 2
when a cell could not be read, where it used to say 0)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import anyio
import pytest
import yaml

from tests.federation.inspecting import Ran, converged, federation

pytestmark = pytest.mark.slow


async def cli(*args: str, env: dict[str, str] | None = None) -> Ran:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, **(env or {})},
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def test_status_and_check_manners(tmp_path: Path) -> None:
    mgmt = ["--kubeconfig", str(tmp_path / "management.kubeconfig")]
    async with federation(tmp_path) as (f, _mgr):
        await converged(f)
        # an 80-column terminal: every name whole, the REASON column kept (rich alone drops it)
        term = await cli("status", *mgmt, env={"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
        assert term.code == 0, term.err
        header = term.out.splitlines()[0]
        assert "REASON" in header and "FRESHNESS" in header, term.out
        assert "web/default/api" in term.out and "shop/default/api" in term.out and "StableInstanceFound" in term.out
        wide = await cli("status", *mgmt, "-o", "wide")
        assert "MESSAGE" in wide.out.splitlines()[0]
        as_json = json.loads((await cli("status", *mgmt, "-o", "json")).out)
        as_yaml = await cli("status", *mgmt, "-o", "yaml")
        assert as_yaml.code == 0 and yaml.safe_load(as_yaml.out) == as_json
        assert (await cli("status", *mgmt, "--wait=30s")).code == 0
        ran = await cli("check", *mgmt, "-o", "yaml")
        assert (ran.code, yaml.safe_load(ran.out)) == (0, {"violations": [], "unchecked": []}), ran.err

        await f.cells["lhr-1"].pause()
        ran = await cli("check", *mgmt)
        assert ran.code == 2, ran.out + ran.err
        assert "not checked: cell lhr-1 not read" in ran.out and "could not check" in ran.err
        ran = await cli("status", *mgmt, "--wait=2s")
        assert ran.code == 1 and "not converged after 2s" in ran.err, ran.err
        assert "cell unreachable" in ran.out, "the last table read is printed"

        # check --wait: blocks while the cell is dark, passes once it answers again
        async def resume_later() -> None:
            await anyio.sleep(4)
            await f.cells["lhr-1"].resume()

        async with anyio.create_task_group() as tg:
            tg.start_soon(resume_later)
            ran = await cli("check", *mgmt, "--wait=60s")
        assert ran.code == 0, ran.out + ran.err
        assert ran.out.endswith("no violations (2 projects, 3 cells)\n")
