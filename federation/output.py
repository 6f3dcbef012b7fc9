"""How the operator commands (`status`, `plan`, `check`) print and exit, with kubectl's
manners: `-o table|wide|json|yaml`; tables never truncated (printed at their natural
width: a terminal wraps a long line, as with kubectl, instead of cutting a name); and
`--wait[=TIMEOUT]` that re-reads until the answer is the one a script waits for.

Exit codes (the same for every command):
  0  done (`status --wait`: converged; `check`: no violation)
  1  the answer is "no": `check` found violations; `status --wait`/`check --wait` timed out
  2  could not do it: a bad flag or input, the management cluster unreadable, a WD that
     cannot be placed, and for `check` a project or cell that could not be read"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import yaml
from rich.console import Console, RenderableType

FORMATS = ("table", "wide", "json", "yaml")
EXIT_OK, EXIT_NO, EXIT_FAILED = 0, 1, 2
DEFAULT_WAIT = 300.0  # --wait without a value (kubectl wait's default is 30s; convergence takes longer)
WAIT_INTERVAL = 2.0
# wide enough for any row: nothing is cut, lines end where their text does
NATURAL_WIDTH = 10_000

T = TypeVar("T")


def add_output_flag(
    parser: argparse.ArgumentParser, *, wide: str = "the table", aliases: Mapping[str, str] | None = None
) -> None:
    """`-o/--output`; `wide`: what -o wide shows; `aliases` maps former names (check's `text`) to a format."""
    choices = [*FORMATS, *(aliases or {})]
    parser.add_argument(
        "-o",
        "--output",
        choices=choices,
        default="table",
        type=lambda text: (aliases or {}).get(text, text),
        help=f"table (default), wide ({wide}), json or yaml",
    )


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def duration(text: str) -> float:
    """kubectl's durations: 90, 90s, 5m, 1h (a bare number is seconds)."""
    found = _DURATION.match(text.strip())
    if not found or float(found[1]) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration (e.g. 90s, 5m)")
    return float(found[1]) * _UNIT[found[2]]


def add_wait_flag(parser: argparse.ArgumentParser, until: str) -> None:
    parser.add_argument(
        "--wait",
        nargs="?",
        type=duration,
        const=DEFAULT_WAIT,
        default=None,
        metavar="TIMEOUT",
        help=f"re-read until {until}, at most TIMEOUT (90s, 5m; --wait alone: {DEFAULT_WAIT:g}s); "
        f"exit 1 if it does not happen in time",
    )


async def wait_for(
    read: Callable[[], Awaitable[T]], done: Callable[[T], bool], within: float | None, interval: float = WAIT_INTERVAL
) -> tuple[T, bool]:
    """`read()` once (within None), or until `done` holds or `within` seconds pass: the last
    answer and whether it is done. The polling interval is the CLI's own, as `kubectl wait`."""
    answer = await read()
    if within is None or done(answer):
        return answer, done(answer)
    with anyio.move_on_after(within):
        while True:
            await anyio.sleep(interval)
            answer = await read()
            if done(answer):
                return answer, True
    return answer, False


def print_data(fmt: str, data: Any) -> None:
    """json or yaml, whole (never truncated), to stdout."""
    if fmt == "yaml":
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    else:
        text = json.dumps(data, indent=2) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()


def console() -> Console:
    """A console as wide as the widest row: tables keep every column and every character
    (a terminal wraps what is wider than it; kubectl prints the same way)."""
    found = Console(highlight=False)
    return Console(highlight=False, width=NATURAL_WIDTH, force_terminal=found.is_terminal)


def show(out: Console, renderable: RenderableType) -> None:
    """Print without the padding rich gives table cells up to the console's width, so each
    line ends where its text does."""
    with out.capture() as captured:
        out.print(renderable)
    out.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    out.file.flush()


# ---------------------------------------------------------------------- when is it done


def _cell_converged(cell: Mapping[str, Any]) -> bool:
    return (
        cell.get("reachable") is True
        and cell.get("copy") == "observed"
        and cell.get("desired") is not None
        and cell.get("desired") == cell.get("ready") == cell.get("updated")
    )


def converged(status: Mapping[str, Any]) -> bool:
    """`status --wait`'s goal, on `status -o json`: every cluster reachable; every WD
    placed, not deleting, with status, desired == ready == up-to-date, overall and in every
    cell, each cell's copy observed."""
    if any(not c.get("reachable") for c in status.get("clusters") or []):
        return False
    for wd in status.get("workloadDeployments") or []:
        if wd.get("problem") or wd.get("deleting") or wd.get("condition") is None:
            return False
        if wd.get("desired") is None or not wd.get("desired") == wd.get("ready") == wd.get("updated"):
            return False
        if not all(_cell_converged(c) for c in wd.get("cells") or []):
            return False
    return True
