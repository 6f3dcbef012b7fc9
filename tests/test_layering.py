"""The import layering contracts (pyproject.toml [tool.importlinter], run by `./taskw lint`)
hold on the tree, and each kind of forbidden import breaks them: in a copy of the packages,
a module reaching up a layer (the runtime into the API, a fleet rule into a controller), one
reaching sideways between planes (a cell module into the projector, an operator tool into
the federator), and a product module importing the test bed each fail `lint-imports`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mcruntime", "kubeplane", "federation", "cells", "projector")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
LAYERS = (
    "the product in layers: shell > composition root > configuration > operator tools | controllers | cells | "
    "projector > fleet rules > API > runtime"
)


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


def one_line(output: str) -> str:
    """lint-imports wraps long lines; the report read as one line."""
    return " ".join(output.split())


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        pytest.param(
            "mcruntime/shortcut.py", "import federation.api", "mcruntime.shortcut -> federation.api", id="runtime-up"
        ),
        pytest.param(
            "federation/fleet/shortcut.py",
            "import federation.controllers.federator",
            "federation.fleet.shortcut -> federation.controllers.federator",
            id="fleet-rule-up",
        ),
        pytest.param("cells/peek.py", "import projector.status", "cells.peek -> projector.status", id="cells-sideways"),
        pytest.param(
            "projector/peek.py",
            "import federation.settings",
            "projector.peek -> federation.settings",
            id="cli-settings",
        ),
        pytest.param(
            "federation/ops/peek.py",
            "import federation.controllers.federator",
            "federation.ops.peek -> federation.controllers.federator",
            id="ops-sideways",
        ),
        pytest.param(
            "federation/api/peek.py",
            "import federation.fleet.placement",
            "federation.api.peek -> federation.fleet.placement",
            id="api-up",
        ),
    ],
)
def test_an_import_against_the_layers_fails_the_lint(tmp_path: Path, module: str, source: str, broken: str) -> None:
    copy_tree(tmp_path)
    (tmp_path / module).write_text(f'"""A module reaching where it must not."""\n\n{source}\n')
    result = lint(tmp_path)
    assert result.returncode != 0
    report = one_line(result.stdout)
    assert f"{LAYERS} BROKEN" in report
    assert broken in report


def test_the_test_bed_stays_out_of_the_product(tmp_path: Path) -> None:
    copy_tree(tmp_path)
    (tmp_path / "projector" / "bed.py").write_text('"""The product reaching for the test bed."""\n\nimport kubeplane\n')
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "only the composition shell (CLI, up) imports the embedded control plane BROKEN" in one_line(result.stdout)
    assert "projector.bed -> kubeplane" in one_line(result.stdout)


def test_the_architecture_page_names_every_layer() -> None:
    """docs/architecture.md's layer table names each module of the `layers` contract, in
    the contract's order."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    page = (REPO / "docs" / "architecture.md").read_text()
    table = page[page.index("## Packages and layering") : page.index("## The runtime, layer by layer")]
    positions = []
    for layer in layers:
        for module in (m.strip() for m in layer.split("|")):
            path = module.replace(".", "/")
            named = f"`{path}/`" if (REPO / path).is_dir() else f"`{path}.py`"
            assert named in table, f"{module} ({named}) is missing from docs/architecture.md"
            positions.append(table.index(named))
    assert positions == sorted(positions), "docs/architecture.md lists the layers in another order"
