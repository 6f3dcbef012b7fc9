"""federation-manager: places WorkloadDeployments from project control planes on cells by
city code and brings their status back. `up` runs a whole federation on embedded API
servers; `run` runs the manager against real clusters (management or cell mode);
`status`, `plan` and `check` look at a running federation."""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio


def _version() -> str:
    try:
        return importlib.metadata.version("federation-manager")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """`--version`, as argparse's own action prints it, but the installed version is read
    (its metadata parsed) only when asked, not by every process that builds the parser."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0,
                         help="show program's version number and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


# the commands that start a long-running process: the CLI parsed for one of them lists the
# other subcommands without their arguments (`build_parser`)
PROCESS_COMMANDS = ("run", "apiserver")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with `command` "run" or "apiserver" only that subcommand gets its
    arguments (the others are listed without them), so a manager process imports neither
    kubeplane (the embedded API server, ~20 MiB) nor the inspection views, and an API server
    process neither the views nor `run`'s settings (pydantic): ~1 CPU-s of the ~1.5 a server
    took to start, and the tests and the benchmarks start hundreds of them."""
    lean = command in PROCESS_COMMANDS

    def wanted(name: str) -> bool:
        return not lean or name == command

    parser = argparse.ArgumentParser(prog="federation-manager", description=__doc__)
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument(
        "--log-level", default=None, help="DEBUG, INFO, WARNING or ERROR (default INFO; WARNING for up)"
    )
    # the same flag after the subcommand (`federation-manager run --log-level=DEBUG`)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level", default=argparse.SUPPRESS, help="DEBUG, INFO, WARNING or ERROR (default INFO; WARNING for up)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    apiserver = sub.add_parser("apiserver", parents=[common], help="run one embedded Kubernetes API server")
    if wanted("apiserver"):
        from kubeplane import cli as apiserver_cli

        apiserver_cli.add_arguments(apiserver)
        apiserver.set_defaults(run=apiserver_cli.serve)
    run = sub.add_parser(
        "run", parents=[common], help="run the manager (settings: flags, FEDERATION_* environment, --config file)"
    )
    if wanted("run"):
        from federation import settings as settings_module  # pydantic

        settings_module.add_arguments(run)
    run.set_defaults(run=_run)
    # read-only operator commands over one read of the federation (federation/ops/inspection.py)
    if not lean:
        from federation.ops import inspection
    status = sub.add_parser(
        "status", parents=[common], help="project WorkloadDeployments by cell: replicas, freshness and the worst reason"
    )
    if not lean:
        inspection.add_status_arguments(status)
    status.set_defaults(run=_status)
    plan = sub.add_parser("plan", parents=[common], help="where a WorkloadDeployment would land and what would change")
    if not lean:
        inspection.add_plan_arguments(plan)
    plan.set_defaults(run=_plan)
    check = sub.add_parser(
        "check", parents=[common], help="check the federation's invariants (exit 1 on any violation)"
    )
    if not lean:
        inspection.add_check_arguments(check)
    check.set_defaults(run=_check)
    tracer = sub.add_parser(
        "trace", parents=[common], help="the path of a WorkloadDeployment's last change as a waterfall (spans of up)"
    )
    tracer.add_argument("kind", choices=("wd",), help="what to trace: wd (a project WorkloadDeployment)")
    tracer.add_argument("name", help="the WorkloadDeployment's name")
    tracer.add_argument("-n", "--namespace", default="default", help="its project namespace (default default)")
    tracer.add_argument("--state-dir", default=".demo", help="the up whose STATE_DIR/traces/ to read (default .demo)")
    tracer.add_argument("--file", type=Path, help="read this JSON-lines span file instead (default: of --state-dir)")
    tracer.set_defaults(run=_trace)
    up = sub.add_parser("up", parents=[common], help="all-in-one demo on embedded API servers")
    up.add_argument("--state-dir", default=".demo", help="where kubeconfigs go; one up per directory (default .demo)")
    up.add_argument(
        "--cell",
        action="append",
        metavar="NAME:CITY",
        help="a cell (repeatable; default cell-dfw:DFW and cell-lhr:LHR)",
    )
    up.add_argument(
        "--project",
        action="append",
        metavar="ORG/PROJECT",
        help="a project control plane (repeatable; default acme/web)",
    )
    up.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep the objects in memory only (default: in SQLite under STATE_DIR/data, back after a restart)",
    )
    up.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long (default: until Ctrl-C)")
    up.set_defaults(run=_up)
    crds = sub.add_parser(
        "crds", parents=[common], help="print the CustomResourceDefinitions generated from federation/api"
    )
    crds.add_argument("--out", type=Path, metavar="DIR", help="write one file per CRD (and a kustomization) into DIR")
    crds.set_defaults(run=_crds)
    joiner = sub.add_parser(
        "join", parents=[common], help="register a cell or project in the management cluster (Secret + ClusterProfile)"
    )
    leaver = sub.add_parser("leave", parents=[common], help="remove a cell's or project's registration")
    if not lean:
        from federation import join

        join.add_arguments(joiner)
        joiner.set_defaults(run=join.join)
        join.add_arguments(leaver, leaving=True)
        leaver.set_defaults(run=join.leave)
    completion = sub.add_parser("completion", parents=[common], help="print a shell completion script")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete in")
    completion.set_defaults(run=_completion)
    from federation import clihelp

    # a process's CLI finishes its own command alone: the others are never parsed there
    used = {name: p for name, p in sub.choices.items() if wanted(name)}
    clihelp.finish(used, {a.dest: a.help or "" for a in sub._choices_actions})
    return parser


async def _completion(args: argparse.Namespace) -> None:
    from federation import completion

    sys.stdout.write(completion.script(args.shell, build_parser()))


async def _crds(args: argparse.Namespace) -> None:
    from federation.api.render import render_all, write_all

    if args.out is None:
        sys.stdout.write(render_all())
        return
    for path in write_all(args.out):
        print(path, flush=True)


async def _status(args: argparse.Namespace) -> None:
    from federation.ops import inspection

    await inspection.status(args)


async def _plan(args: argparse.Namespace) -> None:
    from federation.ops import inspection

    await inspection.plan(args)


async def _check(args: argparse.Namespace) -> None:
    from federation.ops import inspection

    await inspection.check(args)


async def _trace(args: argparse.Namespace) -> None:
    from rich.console import Console

    from federation.ops import traceview

    if args.file is not None:
        files = [args.file]
    else:  # the rotated generation first: it holds the older spans
        current = Path(args.state_dir) / "traces" / "spans.jsonl"
        files = [current.with_name(current.name + ".1"), current]
    lines: list[str] = []
    for path in files:
        try:
            lines += path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SystemExit(f"federation-manager trace: cannot read {path}: {exc.strerror or exc}") from None
    if not lines:
        raise SystemExit(f"federation-manager trace: no spans in {' or '.join(str(f) for f in files)} "
                         "(`up` records them there; `run --tracing` exports them as OTEL_* says)")  # fmt: skip
    spans, bad = traceview.read_spans(lines)
    path = traceview.change_path(spans, args.namespace, args.name)
    if path is None:
        raise SystemExit(f"federation-manager trace: no change of WorkloadDeployment {args.namespace}/{args.name} "
                         f"in {len(spans)} spans")  # fmt: skip
    console = Console(highlight=False)
    console.print(traceview.render(path))
    if bad:
        console.print(f"({bad} lines were not spans and were skipped)")


async def _run(args: argparse.Namespace) -> None:
    """Load the settings and run the manager (federation/app.py composes it)."""
    from federation import app
    from federation import settings as settings_module
    from mcruntime import logs
    from mcruntime.errors import ConfigError
    from mcruntime.leaderelection import LeaderElectionLost

    overrides = {"log_level": args.log_level} if args.log_level.upper() != "INFO" else {}
    try:
        settings = settings_module.load_settings(args, **overrides)
    except settings_module.SettingsError as exc:
        sys.stderr.write(f"federation-manager run: invalid settings:\n{exc}\n")
        raise SystemExit(2) from None
    logs.configure(settings.log_level, json=settings.log_format == "json")
    try:
        await app.run_manager(settings)
    except (ConfigError, app.StartupError) as exc:
        sys.stderr.write(f"federation-manager run: {exc}\n")
        raise SystemExit(1) from None
    except LeaderElectionLost as exc:
        logging.getLogger("federation").error("%s; exiting so a fresh process can campaign again", exc)
        raise SystemExit(1) from None


async def _up(args: argparse.Namespace) -> None:
    from federation import demo

    try:
        cells = [demo.parse_cell(c) for c in args.cell or ["cell-dfw:DFW", "cell-lhr:LHR"]]
        projects = [demo.parse_project(p) for p in args.project or ["acme/web"]]
        demo.check_names(cells, projects)
    except ValueError as exc:
        raise SystemExit(f"federation-manager up: {exc}") from None
    if args.duration is not None and args.duration <= 0:
        raise SystemExit("federation-manager up: --duration must be a positive number of seconds")
    import sqlite3  # only `up` keeps state in SQLite (kubeplane/persist.py); `run` never loads it

    from federation.statelock import StateDirInUse

    try:
        await demo.up(
            Path(args.state_dir), cells, projects, args.duration, shown=args.state_dir, ephemeral=args.ephemeral
        )
    except StateDirInUse as exc:
        raise SystemExit(str(exc)) from None
    except sqlite3.Error as exc:
        raise SystemExit(f"federation-manager up: cannot use the state in {args.state_dir}/data: {exc}") from None
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise SystemExit(f"federation-manager up: cannot use{where}: {exc.strerror or exc}") from None


def subcommand(arguments: Sequence[str]) -> str | None:
    """The subcommand named on a command line, before the whole CLI is built for it: the first
    word that is neither an option nor the value of the one top-level option that takes one
    (`federation-manager --log-level WARNING apiserver ...`)."""
    words = iter(arguments)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(subcommand(arguments))
    args = parser.parse_args(arguments)
    if args.log_level is None:
        # `up` prints its own progress; the controllers' INFO lines would drown it
        args.log_level = "WARNING" if args.command == "up" else "INFO"
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        parser.error(f"--log-level: unknown level {args.log_level!r}")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        # uvloop: a faster event loop for the many small requests servers and controllers make
        anyio.run(args.run, args, backend_options={"use_uvloop": True})
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
