"""The import layering contracts (pyproject.toml [tool.importlinter], run by `./taskw lint`)
hold on the tree, and a forbidden import breaks them: a copy of the packages with one
module of the runtime importing the compute API fails `lint-imports`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mcruntime", "kubeplane", "federation", "cells", "projector")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def copy_tree(dest: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    copy_tree(tmp_path)
    result = lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_forbidden_import_fails_the_lint(tmp_path: Path) -> None:
    copy_tree(tmp_path)
    (tmp_path / "mcruntime" / "shortcut.py").write_text(
        '"""A runtime module reaching up."""\n\nimport federation.api\n'
    )
    (tmp_path / "cells" / "peek.py").write_text('"""A cell module reaching sideways."""\n\nimport projector\n')
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "mcruntime knows nothing of the compute API, the controllers or the test bed BROKEN" in result.stdout
    assert "mcruntime.shortcut -> federation.api" in result.stdout
    assert "cell controllers never import the projector, the federator or the shell BROKEN" in result.stdout
