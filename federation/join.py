"""`federation-manager join cell|project` and `leave`: register a real cell or project
in the management cluster in one command, the way docs/api.md describes it ("Cluster
registration"): a kubeconfig Secret and a ClusterProfile in the registration namespace,
written by server-side apply (field manager `federation-manager-join`), so running it
again changes nothing. Before writing, the cluster must answer with the kubeconfig given
and serve the compute CRDs (`--install-crds` installs them, and the ClusterProfile CRD in
management). `leave` deletes both objects. `up` registers its clusters with `register`.

Exit codes: 0 done; 2 could not (a cluster that does not answer, missing CRDs, a bad
name, city code or kubeconfig), with one line on stderr naming the problem."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import yaml

from mcruntime.client import Client
from mcruntime.connection import ConnectionConfig, from_kubeconfig_file, load_default
from mcruntime.errors import APIError, ConfigError, TransportError
from mcruntime.fields import get_list, get_str
from mcruntime.resources import CLUSTER_PROFILES, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, SECRETS
from mcruntime.transport import Transport

from .api.constants import KUBECONFIG_SECRET_SUFFIX, REGISTRATION_NAMESPACE
from .api.crds import MANAGEMENT_CRDS, all_crd_manifests
from .registration import cell_profile, kubeconfig_secret, project_cluster_name, project_profile

FIELD_MANAGER = "federation-manager-join"
TIMEOUT = 15.0  # seconds per cluster for every request of one command
ESTABLISH_TIMEOUT = 30.0
_FAILURES = (APIError, TransportError, ConfigError, TimeoutError, OSError)


class JoinError(Exception):
    """One line for stderr; exit 2."""


def compute_crds() -> list[dict[str, Any]]:
    """What cells and projects serve: everything but the management cluster's kinds."""
    management = {c.name for c in MANAGEMENT_CRDS}
    return [c for c in all_crd_manifests() if get_str(c, "metadata.name") not in management]


def inventory_crds() -> list[dict[str, Any]]:
    """What the management cluster serves: ClusterProfile and the Location registry."""
    management = {c.name for c in MANAGEMENT_CRDS}
    return [c for c in all_crd_manifests() if get_str(c, "metadata.name") in management]


def registration(
    role: str, name: str, kubeconfig: Mapping[str, Any], *, city: str | None = None, namespace: str
) -> tuple[str, list[dict[str, Any]]]:
    """(cluster name, [Secret, ClusterProfile]) for a cell NAME in `city` or a project
    ORG/PROJECT (`name`); ValueError naming what is wrong."""
    if role == "cell":
        if not city:
            raise ValueError("--city: a cell needs its city code (e.g. DFW)")
        return name, [kubeconfig_secret(name, kubeconfig, namespace=namespace),
                      cell_profile(name, city.upper(), namespace=namespace)]  # fmt: skip
    cluster = project_cluster_name(name)
    return cluster, [kubeconfig_secret(cluster, kubeconfig, namespace=namespace),
                     project_profile(name, namespace=namespace)]  # fmt: skip


@asynccontextmanager
async def connect(config: ConnectionConfig, name: str) -> AsyncIterator[Client]:
    transport = Transport(config, cluster=name, request_timeout=TIMEOUT, connect_timeout=TIMEOUT,
                          max_throttle_retries=0, user_agent=FIELD_MANAGER)  # fmt: skip
    async with transport:
        yield Client(transport, None, field_manager=FIELD_MANAGER)


async def install_crds(client: Client, crds: Sequence[Mapping[str, Any]]) -> None:
    """Server-side apply the CRDs and wait until each is Established."""
    for crd in crds:
        await client.apply(CUSTOM_RESOURCE_DEFINITIONS, crd, force=True)
    with anyio.fail_after(ESTABLISH_TIMEOUT):
        for crd in crds:
            while True:
                live = await client.get_live(CUSTOM_RESOURCE_DEFINITIONS, get_str(crd, "metadata.name"))
                conditions = get_list(live, "status.conditions")
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    break
                await anyio.sleep(0.02)


async def missing_crds(client: Client, crds: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of `crds` the cluster does not serve (a request that fails raises)."""
    return [get_str(c, "metadata.name") for c in crds
            if await client.get_or_none(CUSTOM_RESOURCE_DEFINITIONS, get_str(c, "metadata.name")) is None]  # fmt: skip


async def register(management: Client, objects: Sequence[Mapping[str, Any]], namespace: str) -> None:
    """The registration namespace, then each Secret and ClusterProfile, by server-side apply."""
    await management.apply(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                           force=True)  # fmt: skip
    for obj in objects:
        await management.apply(SECRETS if obj["kind"] == "Secret" else CLUSTER_PROFILES, obj, force=True)


# ---------------------------------------------------------------------- the commands


def add_arguments(parser: argparse.ArgumentParser, *, leaving: bool = False) -> None:
    parser.add_argument("role", choices=("cell", "project"), help="what to register: a cell or a project")
    parser.add_argument("name", metavar="NAME", help="the cell's name, or the project as ORG/PROJECT")
    if not leaving:
        parser.add_argument("--city", metavar="CODE", help="the city code a cell serves (cells only), e.g. DFW")
        parser.add_argument("--kubeconfig", type=Path, required=True, metavar="FILE",
                            help="the cell's or project's kubeconfig (stored in the Secret as given)")  # fmt: skip
        parser.add_argument("--install-crds", action="store_true",
                            help="install the compute CRDs in the cluster (and ClusterProfile in management) "
                            "when missing")  # fmt: skip
    parser.add_argument(
        "--management-kubeconfig",
        type=Path,
        metavar="FILE",
        help="the management cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)",
    )
    parser.add_argument("--registration-namespace", default=REGISTRATION_NAMESPACE, metavar="NS",
                        help=f"where ClusterProfiles and Secrets live (default {REGISTRATION_NAMESPACE})")  # fmt: skip


def fail(command: str, message: str) -> None:
    sys.stderr.write(f"federation-manager {command}: {' '.join(message.split())}\n")
    raise SystemExit(2)


async def _management(args: argparse.Namespace) -> ConnectionConfig:
    try:
        return await load_default(args.management_kubeconfig)
    except (ConfigError, OSError) as exc:
        raise JoinError(f"--management-kubeconfig: {exc}") from None


async def join(args: argparse.Namespace) -> None:
    try:
        await _join(args)
    except JoinError as exc:
        fail("join", str(exc))


async def _join(args: argparse.Namespace) -> None:
    if args.role == "project" and args.city:
        raise JoinError("--city is for cells; a project has no city")
    try:
        kubeconfig = yaml.safe_load(args.kubeconfig.read_text())
        config = await from_kubeconfig_file(args.kubeconfig)
    except (OSError, yaml.YAMLError, ConfigError) as exc:
        raise JoinError(f"--kubeconfig {args.kubeconfig}: {exc}") from None
    try:
        cluster, objects = registration(args.role, args.name, kubeconfig, city=args.city,
                                        namespace=args.registration_namespace)  # fmt: skip
    except ValueError as exc:
        raise JoinError(f"{args.role} {args.name}: {exc}") from None
    # 1. the cluster answers with this kubeconfig and serves the compute kinds
    try:
        async with connect(config, cluster) as client:
            missing = await missing_crds(client, compute_crds())
            if missing and args.install_crds:
                await install_crds(client, compute_crds())
                print(f"installed {len(missing)} CRDs in {args.role} {args.name}")
            elif missing:
                raise JoinError(f"{args.role} {args.name} does not serve {', '.join(missing)}: install them "
                                f"(config/crd) or rerun with --install-crds")  # fmt: skip
    except _FAILURES as exc:
        raise JoinError(f"{args.role} {args.name} does not answer with {args.kubeconfig}: {exc}") from None
    # 2. the registration, by server-side apply
    mgmt_config = await _management(args)
    try:
        async with connect(mgmt_config, "management") as management:
            if await missing_crds(management, inventory_crds()):
                if not args.install_crds:
                    raise JoinError("the management cluster does not serve ClusterProfiles "
                                    "(clusterprofiles.multicluster.x-k8s.io): rerun with --install-crds")  # fmt: skip
                await install_crds(management, inventory_crds())
            await register(management, objects, args.registration_namespace)
    except _FAILURES as exc:
        raise JoinError(f"cannot register in the management cluster: {exc}") from None
    ns = args.registration_namespace
    mgmt = f" --kubeconfig {args.management_kubeconfig}" if args.management_kubeconfig else ""
    lines = [f"{args.role} {args.name} registered: ClusterProfile {ns}/{cluster} and Secret "
             f"{ns}/{cluster}{KUBECONFIG_SECRET_SUFFIX} (server-side apply; running join again changes nothing)",
             "next:"]  # fmt: skip
    if args.role == "cell":
        lines.append(f"  run its controllers: federation-manager run --enable-cell-controllers --kubeconfig "
                     f"{args.kubeconfig} --site-name {cluster} --city-code {args.city.upper()}")  # fmt: skip
    else:
        lines.append(f"  apply WorkloadDeployments to it: kubectl --kubeconfig {args.kubeconfig} apply -f WD.yaml")
    lines.append(f"  see it: federation-manager status{mgmt or ' --kubeconfig MANAGEMENT.kubeconfig'}")
    print("\n".join(lines), flush=True)


async def leave(args: argparse.Namespace) -> None:
    try:
        cluster = args.name if args.role == "cell" else project_cluster_name(args.name)
    except ValueError as exc:
        fail("leave", f"project {args.name}: {exc}")
    ns = args.registration_namespace
    try:
        async with connect(await _management(args), "management") as management:
            profile = await management.delete(CLUSTER_PROFILES, cluster, namespace=ns, ignore_not_found=True)
            secret = await management.delete(SECRETS, f"{cluster}{KUBECONFIG_SECRET_SUFFIX}", namespace=ns,
                                             ignore_not_found=True)  # fmt: skip
    except JoinError as exc:
        fail("leave", str(exc))
    except _FAILURES as exc:
        fail("leave", f"cannot reach the management cluster: {exc}")
    if profile is None and secret is None:
        print(f"{args.role} {args.name} was not registered in {ns}: nothing to remove")
    else:
        print(f"{args.role} {args.name} left: ClusterProfile {ns}/{cluster} and its Secret deleted "
              f"(the manager disengages it; its copies stay until you delete them)")  # fmt: skip
