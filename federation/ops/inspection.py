"""The operator's read-only commands, `status`, `plan` and `check`: their flags, reading
the federation once (`snapshot.load_snapshot`) and printing what `statusview`,
`planview` and `invariants` make of it. Nothing here writes to any cluster.

Where the federation is: `--state-dir DIR` (what `federation-manager up --state-dir DIR`
writes; DIR/management.kubeconfig is read) or `--kubeconfig MGMT` (the management
cluster); either way cells and projects are found through the ClusterProfiles and
kubeconfig Secrets in `--registration-namespace`, as the manager finds them.

Output formats, `--wait` and exit codes: federation/output.py (0 done; 1 `check` found
violations or a `--wait` ran out; 2 the command could not do its job: bad flag or input,
no usable kubeconfig, management cluster unreadable, a WD that cannot be placed, and for
`check` a project or cell it could not read), with one line on stderr naming the problem.
For `status` and `plan` an unreachable project or cell is reported in the output."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn

import anyio
import anyio.abc
from rich.console import Console, Group, RenderableType
from rich.text import Text

from federation import output
from federation.api.constants import REGISTRATION_NAMESPACE
from federation.fleet.locations import InvalidPlacementSpec, resolve_city
from federation.fleet.placement import PlacementError, city_code, desired_replicas
from federation.ops import invariants, planview, statusview
from federation.ops.snapshot import (
    DEFAULT_TIMEOUT,
    Snapshot,
    SnapshotSourceError,
    load_snapshot,
    management_config,
    server_verdict,
)
from mcruntime.connection import ConnectionConfig
from mcruntime.errors import ConfigError
from mcruntime.fields import get_mapping, get_str

DEFAULT_INTERVAL = 2.0


class CommandError(Exception):
    """The command cannot do its job; the message is one line (exit code 2)."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number of seconds")
    return value


# ---------------------------------------------------------------------- flags


def _add_source(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="the directory `federation-manager up --state-dir DIR` writes (reads DIR/management.kubeconfig)",
    )
    where.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="MGMT",
        help="kubeconfig of the management cluster; cells and projects are found through its ClusterProfiles",
    )
    parser.add_argument(
        "--registration-namespace",
        default=REGISTRATION_NAMESPACE,
        metavar="NS",
        help=f"namespace of the ClusterProfiles and kubeconfig Secrets (default {REGISTRATION_NAMESPACE})",
    )
    parser.add_argument(
        "--timeout",
        type=_positive,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long each cluster may take to answer; a slower one is reported unreachable "
        f"(default {DEFAULT_TIMEOUT:g})",
    )


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    _add_source(parser)
    parser.add_argument("-n", "--namespace", metavar="NS", help="only WorkloadDeployments of this project namespace")
    parser.add_argument("--project", metavar="NAME", help="only this project (its cluster name)")
    output.add_output_flag(parser, wide="adds each WD's owning SHARD and its condition MESSAGE")
    output.add_wait_flag(parser, "every WD is converged (ready and up to date in every cell, all observed)")
    parser.add_argument("-w", "--watch", action="store_true", help="refresh the table until Ctrl-C")
    parser.add_argument(
        "--interval",
        type=_positive,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help=f"seconds between refreshes with --watch (default {DEFAULT_INTERVAL:g})",
    )


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        required=True,
        metavar="WD.yaml",
        help="the WorkloadDeployment to place (YAML or JSON; - reads stdin)",
    )
    _add_source(parser)
    parser.add_argument(
        "--project", metavar="NAME", help="the project it would be applied to (default: the only registered project)"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="the project namespace (default: the file's metadata.namespace, else default)",
    )
    output.add_output_flag(parser)


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    _add_source(parser)
    output.add_output_flag(parser, aliases={"text": "table"})  # text: its former name
    output.add_wait_flag(parser, "no invariant is broken and every cluster could be read")


# ---------------------------------------------------------------------- shared


def fail(command: str, message: str) -> NoReturn:
    sys.stderr.write(f"federation-manager {command}: {' '.join(message.split())}\n")
    raise SystemExit(2)


def console() -> Console:
    return output.console()


def show(out: Console, renderable: RenderableType) -> None:
    output.show(out, renderable)


def print_json(data: Any) -> None:
    output.print_data("json", data)


async def _config(args: argparse.Namespace) -> ConnectionConfig:
    try:
        return await management_config(state_dir=args.state_dir, kubeconfig=args.kubeconfig)
    except (SnapshotSourceError, ConfigError) as exc:
        raise CommandError(str(exc)) from None


async def _read(args: argparse.Namespace, config: ConnectionConfig) -> Snapshot:
    snapshot = await load_snapshot(
        config, registration_namespace=args.registration_namespace, read_timeout=args.timeout
    )
    if not snapshot.management.reachable:
        raise CommandError(f"cannot read the management cluster at {snapshot.source}: {snapshot.management.error}")
    return snapshot


async def load(args: argparse.Namespace) -> Snapshot:
    """The snapshot the flags point at; CommandError when there is none to be had."""
    return await _read(args, await _config(args))


# ---------------------------------------------------------------------- status


def status_frame(args: argparse.Namespace, snapshot: Snapshot) -> RenderableType:
    view = statusview.status_view(snapshot, namespace=args.namespace, project=args.project)
    return statusview.render(view, wide=args.output == "wide")


async def watch(frame: Callable[[], Awaitable[RenderableType]], out: Console, interval: float) -> None:
    """Show `frame()` and refresh it every `interval` seconds until cancelled: in place on
    a terminal (rich Live), as successive frames otherwise (a pipe or a log)."""
    from rich.live import Live

    if out.is_terminal:
        with Live(await frame(), console=out, auto_refresh=False) as live:
            while True:
                await anyio.sleep(interval)
                live.update(await frame(), refresh=True)
    else:
        while True:
            show(out, await frame())
            show(out, "")
            await anyio.sleep(interval)


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def status(args: argparse.Namespace) -> None:
    if args.watch and args.output in ("json", "yaml"):
        fail("status", f"--watch refreshes the table; use --output {args.output} without --watch")
    if args.watch and args.wait is not None:
        fail("status", "--watch refreshes until Ctrl-C, --wait until converged: choose one")
    try:
        config = await _config(args)
        if not args.watch:

            async def read() -> Snapshot:
                return await _read(args, config)

            def done(snapshot: Snapshot) -> bool:
                view = statusview.status_view(snapshot, namespace=args.namespace, project=args.project)
                return output.converged(statusview.to_json(view))

            snapshot, converged = await output.wait_for(read, done, args.wait)
            if args.output in ("json", "yaml"):
                view = statusview.status_view(snapshot, namespace=args.namespace, project=args.project)
                output.print_data(args.output, statusview.to_json(view))
            else:
                show(console(), status_frame(args, snapshot))
            if args.wait is not None and not converged:
                sys.stderr.write(f"federation-manager status: not converged after {args.wait:g}s\n")
                raise SystemExit(output.EXIT_NO)
            return
    except CommandError as exc:
        fail("status", str(exc))

    async def frame() -> RenderableType:
        head = Text(
            f"federation-manager status · every {args.interval:g}s · {time.strftime('%H:%M:%S')} · Ctrl-C to stop",
            style="dim",
        )
        try:
            return Group(head, status_frame(args, await _read(args, config)))
        except CommandError as exc:  # keep watching: the management cluster may come back
            return Group(head, Text(str(exc), style="red"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        await watch(frame, console(), args.interval)


# ---------------------------------------------------------------------- plan


async def _read_input(filename: str) -> tuple[str, str]:
    if filename == "-":
        return await anyio.to_thread.run_sync(sys.stdin.read), "stdin"
    try:
        return await anyio.Path(filename).read_text(), filename
    except FileNotFoundError:
        raise CommandError(f"-f {filename}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"-f {filename}: cannot read: {exc}") from None


def _project(snapshot: Snapshot, wanted: str | None) -> str:
    names = sorted(snapshot.projects)
    where = f"{snapshot.source} namespace {snapshot.registration_namespace}"
    if wanted is not None:
        if wanted not in snapshot.projects:
            raise CommandError(
                f"--project {wanted}: not registered in {where} (registered: {', '.join(names) or 'none'})"
            )
        return wanted
    if not names:
        raise CommandError(f"no project is registered in {where}")
    if len(names) > 1:
        raise CommandError(f"{len(names)} projects are registered ({', '.join(names)}): choose one with --project")
    return names[0]


async def plan(args: argparse.Namespace) -> None:
    try:
        text, source = await _read_input(args.filename)
        wd = planview.parse_workload_deployment(text, source)
        try:  # placement's own checks, before any cluster is asked (a Location is resolved after)
            if isinstance(spec_error := resolve_city(wd.get("spec"), ()), InvalidPlacementSpec):
                raise PlacementError(spec_error.message)
            if get_mapping(wd, "spec").get("cityCode") is not None:
                city_code(wd)
            desired_replicas(wd)
        except PlacementError as exc:
            raise CommandError(f"{source}: {exc}") from None
        own = get_str(wd, "metadata.namespace", required=False)
        if args.namespace and own and own != args.namespace:
            raise CommandError(f"{source}: metadata.namespace {own!r} does not match --namespace {args.namespace!r}")
        namespace = args.namespace or own or "default"
        snapshot = await load(args)
        project = _project(snapshot, args.project)
        found = snapshot.projects[project]
        if not found.reachable:
            raise CommandError(f"project {project} cannot be read ({found.health.error}); what is deployed is unknown")
        refused = await server_verdict(snapshot, project, wd, namespace, read_timeout=args.timeout)
        if refused is not None:  # the server's own words: what it refuses, plan refuses
            raise CommandError(f"{source}: refused by project {project}'s API server (dry run): {refused}")
        try:
            view = planview.plan_view(snapshot, project, wd, namespace)
        except PlacementError as exc:
            raise CommandError(f"{source}: {exc}") from None
    except (CommandError, planview.InputError) as exc:
        fail("plan", str(exc))
    if args.output in ("json", "yaml"):
        output.print_data(args.output, planview.to_json(view))
    else:
        show(console(), planview.render(view))


# ---------------------------------------------------------------------- check


async def check(args: argparse.Namespace) -> None:
    def done(found: tuple[Snapshot, invariants.Report]) -> bool:
        return not found[1].violations and not found[1].unchecked

    async def read() -> tuple[Snapshot, invariants.Report]:
        snapshot = await load(args)
        return snapshot, invariants.check(snapshot)

    try:
        (snapshot, report), _ = await output.wait_for(read, done, args.wait)
    except CommandError as exc:
        fail("check", str(exc))
    if args.output in ("json", "yaml"):
        output.print_data(
            args.output,
            {
                "violations": [{"kind": str(v.kind), "message": v.message} for v in report.violations],
                "unchecked": list(report.unchecked),
            },
        )
    else:
        lines = [str(v) for v in report.violations] + [f"not checked: {u}" for u in report.unchecked]
        n = len(report.violations)
        read_ = f"{_plural(len(snapshot.projects), 'project')}, {_plural(len(snapshot.cells), 'cell')}"
        lines.append(f"{n} violation{'s' if n != 1 else ''} ({read_})" if n else f"no violations ({read_})")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    if report.violations:
        raise SystemExit(output.EXIT_NO)
    if report.unchecked:
        sys.stderr.write(f"federation-manager check: could not check {_plural(len(report.unchecked), 'part')} of "
                         f"the federation (see 'not checked')\n")  # fmt: skip
        raise SystemExit(output.EXIT_FAILED)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
