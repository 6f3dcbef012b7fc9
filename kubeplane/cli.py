"""`federation-manager apiserver`: run one embedded API server until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sqlite3
from pathlib import Path

import anyio

from .auth import TokenFileError
from .persist import DB_FILE, DataDirInUse
from .server import ALWAYS_ALLOW, AUTHORIZATION_MODES, RBAC, EmbeddedAPIServer, positive_seconds

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="TCP port to listen on (0 picks a free one)")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write a kubeconfig for clients")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--name", default="embedded", help="cluster/context name in the kubeconfig")
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a generated CA and a bearer token")
    parser.add_argument(
        "--bookmark-interval",
        type=_positive_seconds,
        default=60.0,
        help="seconds between watch BOOKMARK events (default 60; must be above 0)",
    )
    parser.add_argument(
        "--authorization-mode",
        choices=AUTHORIZATION_MODES,
        default=ALWAYS_ALLOW,
        help="AlwaysAllow (default) or RBAC: enforce Roles and bindings for every request (needs --tls); "
        "the kubeconfig carries an admin token (system:masters)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the objects in SQLite under DIR (DIR/kubeplane.db, WAL mode): a restart brings them back "
        "(default: in memory, gone with the process)",
    )
    parser.add_argument(
        "--token-auth-file",
        type=Path,
        help='kube-apiserver\'s static token file: CSV lines token,user,uid[,"group1,group2"]',
    )


def _positive_seconds(text: str) -> float:
    try:
        return positive_seconds("value", float(text))
    except ValueError:
        # argparse names the flag: "argument --bookmark-interval: must be ..."
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}") from None


# The cyclic collector's thresholds while serving: (generation 0 allocations, collections of 0 per
# collection of 1, of 1 per 2). A request allocates thousands of dicts and lists, nearly all of them
# freed by reference counting when it ends (decoded JSON has no cycles); with Python's 700 a
# collection runs several times per request, walks what the request holds at that moment and
# promotes it, so the older generations fill with dead request data and a stored object is walked
# again and again. 10,000 lets most requests finish between two collections, and the rarer
# collections of the older generations still free what cycles there are (a caught exception's
# traceback). bench_fanout --shape kopf --cells echo: the collector's CPU in the 6 servers 0.69 s
# -> 0.22 s (gc.callbacks), ~6% of their serving CPU.
COLLECTOR_THRESHOLDS = (10_000, 20, 20)


def tune_collector() -> None:
    """For a serving process: what start-up built (modules, the built-in kinds' schemas, objects
    restored from --data-dir) lives as long as the process, so it goes out of the cyclic
    collector's sight (a full collection walks only what serving allocates, as the manager does;
    bench_apiserver --crd-writes: ~10% less CPU per write); then COLLECTOR_THRESHOLDS."""
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


async def serve(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"--port: {args.port} is not a valid TCP port")
    if args.authorization_mode == RBAC and not args.tls:
        raise SystemExit(
            "--authorization-mode=RBAC needs --tls: kubectl and client-go send bearer tokens only over HTTPS, "
            "so every request would be anonymous"
        )
    try:
        server = EmbeddedAPIServer(
            name=args.name,
            host=args.host,
            port=args.port,
            kubeconfig=args.kubeconfig,
            tls=args.tls,
            bookmark_interval=args.bookmark_interval,
            authorization=args.authorization_mode,
            token_auth_file=args.token_auth_file,
            data_dir=args.data_dir,
        )
    except TokenFileError as exc:
        raise SystemExit(f"--token-auth-file: {exc}") from None
    except DataDirInUse as exc:
        raise SystemExit(f"--data-dir: {exc}") from None
    except (OSError, sqlite3.Error) as exc:
        raise SystemExit(f"--data-dir: cannot use {args.data_dir}: {exc}") from None
    try:
        await server.start()
    except OSError as exc:
        if exc.filename is not None:  # the kubeconfig could not be written
            raise SystemExit(f"--kubeconfig: cannot write {exc.filename}: {exc.strerror or exc}") from None
        raise SystemExit(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    where = "in memory (--data-dir keeps it)" if args.data_dir is None else f"persisted in {args.data_dir / DB_FILE}"
    tune_collector()
    try:
        # the handlers first, then the banner: a signal sent as soon as it is read stops cleanly
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            print(
                f"embedded API server {args.name!r} serving at {server.url}; kubeconfig: {args.kubeconfig}; "
                f"state: {where}",
                flush=True,
            )
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                break
    finally:
        await server.stop()
