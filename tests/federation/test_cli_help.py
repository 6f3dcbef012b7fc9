"""Every subcommand explains itself as kubectl's do (the real CLI in a subprocess): a
description, each flag's `FEDERATION_*` variable (which works), defaults, one example;
and `completion bash|zsh|fish` scripts that complete what the command accepts (bash's
driven in a real bash)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from federation.cli import build_parser
from federation.clihelp import env_var
from federation.completion import _subcommands

SUBCOMMANDS = sorted(_subcommands(build_parser()))


def fm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "federation.cli", *args], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, **(env or {})})  # fmt: skip


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_help_has_a_description_env_vars_and_an_example(command: str) -> None:
    ran = fm(command, "--help")
    assert ran.returncode == 0, ran.stderr
    text = " ".join(ran.stdout.split())  # argparse wraps lines
    sub = _subcommands(build_parser())[command]
    assert sub.description and " ".join(sub.description.split()) in text, f"{command}: no description"
    assert f"example: federation-manager {command}" in text, ran.stdout
    flags = [a for a in sub._actions if a.option_strings and a.dest != "help"]
    assert flags, command
    for action in flags:
        assert f"env {env_var(action.dest)})" in text, f"{command} {action.option_strings}: no variable named"


def test_an_environment_variable_stands_for_its_flag(tmp_path: Path) -> None:
    ran = fm("status", env={"FEDERATION_STATE_DIR": str(tmp_path / "nothing-here")})
    assert ran.returncode == 2
    assert f"--state-dir {tmp_path / 'nothing-here'}" in ran.stderr, ran.stderr  # used: no usage error
    bad = fm("status", "--state-dir", str(tmp_path), env={"FEDERATION_OUTPUT": "xml"})
    assert bad.returncode != 0 and "FEDERATION_OUTPUT='xml': choose from table, wide, json, yaml" in bad.stderr


def test_bash_completion_completes_subcommands_flags_and_values() -> None:
    script = fm("completion", "bash").stdout
    probe = script + "\n".join(
        f'COMP_WORDS=({words}); COMP_CWORD={n}; _federation_manager; echo "${{COMPREPLY[*]}}"'
        for words, n in [
            ("federation-manager st", 1),
            ("federation-manager status --o", 2),
            ("federation-manager status -o w", 3),
            ("federation-manager --log-level DEBUG check --wa", 4),
            ("federation-manager completion ''", 2),
        ]
    )
    ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30, check=True)
    assert ran.stdout.splitlines()[:4] == ["status", "--output", "wide", "--wait"], ran.stdout + ran.stderr


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_subcommand(shell: str) -> None:
    ran = fm("completion", shell)
    assert ran.returncode == 0
    for command in SUBCOMMANDS:
        assert command in ran.stdout
    binary = shutil.which(shell)
    if binary is not None:  # syntax-check where the shell is installed
        check = [binary, "-n"] if shell == "zsh" else [binary, "--no-execute"]
        syntax = subprocess.run([*check], input=ran.stdout, capture_output=True, text=True, timeout=30, check=False)
        assert syntax.returncode == 0, syntax.stderr
