from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path


@pytest.fixture
async def apiserver(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    """One embedded API server on a free port, with a kubeconfig at tmp_path/kubeconfig."""
    async with EmbeddedAPIServer(kubeconfig=tmp_path / "kubeconfig", bookmark_interval=1.0) as server:
        yield server


@pytest.fixture
def kubectl(apiserver: EmbeddedAPIServer, tmp_path: Path) -> Kubectl:
    """The real kubectl pointed at `apiserver` (skips only when kubectl is not installed)."""
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    assert apiserver.kubeconfig_path is not None
    return Kubectl(apiserver.kubeconfig_path, tmp_path / "kubectl-cache")


# ---------------------------------------------------------------------- the fault matrix's report
# Each chaos scenario appends one row (tests/chaos/harness.py `record`); the controlling
# process (not an xdist worker) starts the file empty and prints the table at the end.

_REPORT_ENV = "CHAOS_REPORT"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # a worker: the controller already chose the file, the environment carries it
    if os.environ.get(_REPORT_ENV):
        # a pytest run inside a test (the fast lane's collections): the run around it owns
        # the file, and emptying it lost the rows of every scenario that had already run
        return
    path = config.rootpath / ".pytest_cache" / "chaos-report.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    os.environ[_REPORT_ENV] = str(path)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    path = os.environ.get(_REPORT_ENV)
    if not path or not Path(path).exists():
        return
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    if not rows:
        return
    terminalreporter.section("fault matrix")
    header = ("scenario", "faults injected", "converge s", "manager writes", "idle writes", "violations")
    terminalreporter.write_line(" | ".join(header))
    for row in sorted(rows, key=lambda r: r["scenario"]):
        cells = (row["scenario"], row["faults"], f"{row['converge_seconds']:.1f}", str(row["manager_writes"]),
                 "-" if row["idle_writes"] is None else str(row["idle_writes"]), str(row["violations"]))  # fmt: skip
        terminalreporter.write_line(" | ".join(cells))
