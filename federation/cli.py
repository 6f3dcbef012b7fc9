"""The `federation-manager` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import anyio


def build_parser() -> argparse.ArgumentParser:
    from kubeplane import cli as apiserver_cli

    parser = argparse.ArgumentParser(prog="federation-manager", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    apiserver = sub.add_parser("apiserver", help="run one embedded Kubernetes API server")
    apiserver_cli.add_arguments(apiserver)
    apiserver.set_defaults(run=apiserver_cli.serve)
    up = sub.add_parser("up", help="all-in-one demo on embedded API servers")
    up.set_defaults(run=_up)
    return parser


async def _up(_args: argparse.Namespace) -> None:
    print(
        "federation-manager up: the all-in-one demo (management, projects and cells on embedded API servers) "
        "arrives with the federator issue. Until then `federation-manager apiserver --port 6443 "
        "--kubeconfig ./kubeconfig` runs one embedded API server you can drive with kubectl.",
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        parser.error(f"--log-level: unknown level {args.log_level!r}")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        anyio.run(args.run, args)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
