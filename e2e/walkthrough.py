"""The README's walk-through (tests/e2e/test_walkthrough.py `walk_through`) against any
federation, for e2e/kind.sh: the project's kubeconfig, the DFW cells' kubeconfigs, and the
management kubeconfig for `status`/`check` (left out where the registrations hold
addresses only the managers can reach, as kind's in-cluster ones).

    python e2e/walkthrough.py --project web.kubeconfig --cell fm-dfw=dfw.kubeconfig
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubeplane.testing import Kubectl
from tests.e2e.test_walkthrough import walk_through


async def main(args: argparse.Namespace) -> None:
    cache = Path(tempfile.mkdtemp(prefix="walkthrough-"))
    project = Kubectl(Path(args.project), cache / "project")
    cells = {}
    for spec in args.cell:
        name, _, path = spec.partition("=")
        cells[name] = Kubectl(Path(path), cache / name)
    await walk_through(project, cells, ["--kubeconfig", args.management] if args.management else [])
    print("walk-through: passed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", required=True)
    parser.add_argument("--cell", action="append", required=True, metavar="NAME=KUBECONFIG")
    parser.add_argument("--management", help="management kubeconfig, for status and check")
    anyio.run(main, parser.parse_args())
