"""The README's promises a user can check without reading code: its Python snippet runs
as written, every command it names exists, and the kind path explains itself when it
cannot run here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_the_python_snippet_runs_as_written(tmp_path: Path) -> None:
    (snippet,) = re.findall(r"```python\n(.*?)```", README, re.S)
    result = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("http://127.0.0.1:")
    assert (tmp_path / "cell.kubeconfig").exists()


def test_every_subcommand_the_readme_names_exists() -> None:
    named = set(re.findall(r"federation-manager ([a-z]+)", README))
    assert {"run", "status", "plan", "check", "apiserver"} <= named
    help_text = subprocess.run([sys.executable, "-m", "federation.cli", "--help"], capture_output=True, text=True,
                               timeout=60, check=True).stdout  # fmt: skip
    for command in named:
        assert command in help_text, f"README names `federation-manager {command}`, --help does not list it"


def test_the_kind_path_says_what_it_needs_when_it_cannot_run(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}  # no kind here, whatever the machine has
    result = subprocess.run(["bash", str(REPO / "e2e" / "kind.sh")], capture_output=True, text=True, env=env,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 2
    assert "e2e:kind:" in result.stderr and ("is not installed" in result.stderr or "Docker" in result.stderr)


def test_the_benchmark_table_names_every_benchmark() -> None:
    """Every bench/bench_*.py is named in the table by its command (`--only NAME`), so a user
    finds what each one measures and how to run it."""
    table = README.split("## Benchmarks", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"--only ([a-z_]+)`", table))
    benchmarks = {p.stem.removeprefix("bench_") for p in (REPO / "bench").glob("bench_*.py")}
    assert benchmarks - named == set(), f"benchmarks the README's table does not name: {sorted(benchmarks - named)}"
