"""The fault matrix's report file (tests/conftest.py): the run that starts it empties it, a
pytest run inside a test (the fast lane's collections) leaves it to the run around it."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest


def _configure(rootpath: Path) -> None:
    config: Any = SimpleNamespace(rootpath=rootpath)  # the controlling process: no workerinput
    conftest.pytest_configure(config)


def test_the_outermost_run_starts_the_report_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(conftest._REPORT_ENV, raising=False)
    stale = tmp_path / ".pytest_cache" / "chaos-report.jsonl"
    stale.parent.mkdir()
    stale.write_text('{"scenario": "from the run before"}\n')
    _configure(tmp_path)
    assert os.environ[conftest._REPORT_ENV] == str(stale)
    assert stale.read_text() == ""


def test_a_run_inside_a_run_keeps_the_rows_already_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "outer" / "chaos-report.jsonl"
    report.parent.mkdir()
    report.write_text('{"scenario": "watches dropped"}\n')
    monkeypatch.setenv(conftest._REPORT_ENV, str(report))
    _configure(tmp_path / "inner")
    assert os.environ[conftest._REPORT_ENV] == str(report)
    assert report.read_text() == '{"scenario": "watches dropped"}\n'
    assert not (tmp_path / "inner").exists()
