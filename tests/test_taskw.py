"""`./taskw` on a first run, as a new user sees it: one line before it creates the
virtualenv, a few lines of progress instead of pip's output, and pip's log named when
the install fails."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_a_first_run_says_what_it_does_and_keeps_pips_output_in_a_log(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # no package index and no wheel directory: the install fails after the virtualenv is made
    env = {**os.environ, "FEDERATION_VENV": str(venv), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}
    result = subprocess.run(["sh", str(REPO / "taskw"), "--list"], capture_output=True, text=True, env=env,
                            timeout=300, check=False)  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"taskw: first run: creating {venv} with the project and its dev tools (1-2 minutes)"
    log = venv / "install.log"
    failure = f"taskw: installing the project failed; pip's output is in {log} (last lines below)"
    assert failure in lines
    # pip's own output went to the log; the terminal saw the progress lines and the log's tail
    assert "setuptools" in log.read_text()
    progress = lines[: lines.index(failure)]
    assert len(progress) <= 4 and all(line.startswith("taskw:") for line in progress), progress
    assert len(lines) - len(progress) <= 16
    assert result.stdout == ""


def test_the_walk_through_puts_the_virtualenv_on_path_and_heals_only_its_own_wd() -> None:
    walk = README.split("## A walk through the demo")[1].split("\n## ")[0]
    blocks = re.findall(r"```sh\n(.*?)```", walk, re.S)
    assert blocks[0].startswith('export PATH="$PWD/.venv/bin:$PATH"')
    heal = next(b for b in blocks if "delete instance" in b).splitlines()
    watch = next(i for i, line in enumerate(heal) if "get instances" in line and " -w" in line)
    delete = next(i for i, line in enumerate(heal) if "delete instance" in line)
    assert watch < delete, "the watch starts before the deletion, so the deletion and the comeback both show"
    assert "-l $API" in heal[watch] and "-l $API," in heal[delete]
    assert "export API=compute.datumapis.com/workload-deployment-name=api" in "\n".join(heal)
