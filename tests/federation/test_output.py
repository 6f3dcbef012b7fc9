"""The pure parts of the operator commands' manners (federation/output.py): when `status
--wait` is done, kubectl's durations, and tables printed whole."""

from __future__ import annotations

import argparse
import io
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from federation import output

CELL = {"cell": "dfw-1", "reachable": True, "copy": "observed", "desired": 2, "ready": 2, "updated": 2}
WD = {"problem": None, "deleting": False, "condition": {"type": "Available"}, "desired": 2, "ready": 2, "updated": 2,
      "cells": [CELL]}  # fmt: skip
UP = {"name": "dfw-1", "reachable": True}


def status(wd: dict[str, Any] | None = None, **cluster: Any) -> dict[str, Any]:
    return {"clusters": [{**UP, **cluster}], "workloadDeployments": [] if wd is None else [wd]}


@pytest.mark.parametrize(
    ("view", "done"),
    [
        (status(), True),
        (status(WD), True),
        (status(WD, reachable=False), False),
        (status({**WD, "ready": 1}), False),
        (status({**WD, "updated": 1}), False),
        (status({**WD, "desired": None, "ready": None, "updated": None}), False),
        (status({**WD, "condition": None}), False),
        (status({**WD, "deleting": True}), False),
        (status({**WD, "problem": "no cell in XYZ"}), False),
        (status({**WD, "cells": [{**CELL, "copy": "pending"}]}), False),
        (status({**WD, "cells": [{**CELL, "reachable": False}]}), False),
        (status({**WD, "cells": [{**CELL, "ready": 1}]}), False),
    ],
)
def test_converged_means_every_wd_ready_and_up_to_date_everywhere(view: dict[str, Any], done: bool) -> None:
    assert output.converged(view) is done


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0),
                                               ("1.5s", 1.5), ("500ms", 0.5)])  # fmt: skip
def test_durations_read_as_kubectl_writes_them(text: str, seconds: float) -> None:
    assert output.duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-1s", "5 minutes", "1d"])
def test_a_bad_duration_is_refused_naming_it(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not a positive duration"):
        output.duration(text)


def test_a_table_wider_than_the_terminal_is_printed_whole() -> None:
    table = Table(box=None)
    for column in ("WORKLOADDEPLOYMENT", "REASON"):
        table.add_column(column, no_wrap=True)
    name = "a-very-long-project/a-namespace/" + "x" * 120
    table.add_row(name, "StableInstanceFound")
    out = io.StringIO()
    console = output.console()
    console.file = out
    output.show(console, table)
    header, row = out.getvalue().splitlines()
    assert "REASON" in header and name in row and row.endswith("StableInstanceFound")
    narrow = Console(file=io.StringIO(), width=80)  # what rich does on its own at 80 columns
    narrow.print(table)
    assert name not in narrow.file.getvalue()  # type: ignore[attr-defined]
