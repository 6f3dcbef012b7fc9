"""Managers under enforced RBAC, with exactly the roles the project ships.

In a deployed fleet whose API servers run `--tls --authorization-mode=RBAC`, every
identity is a ServiceAccount in `federation-system` bound only to the shipped roles for
what it does there:

- management cluster: `federation-manager` (the one the overlays deploy) with
  `config/rbac/management` and `config/rbac/leader-election`, for the management-mode manager;
- each project and cell: `federation-access`, the identity in the cluster's registration
  Secret, with `federation-manager-project-access` or `federation-manager-cell-access`
  (`config/rbac/federation-access`) — what management mode may do there;
- each cell: `federation-manager` with `config/rbac/cell`, for the cell-mode manager.

A permission the code needs and the roles lack fails a test (403); `kubectl auth can-i`
with these identities shows a needless one is absent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .processes import REPO, DeployedFleet

NAMESPACE = "federation-system"
ACCOUNT = "federation-manager"  # the managers' own ServiceAccount
ACCESS = "federation-access"  # the identity management mode uses in projects and cells


async def _apply(fleet: DeployedFleet, cluster: str, docs: list[dict[str, Any]]) -> None:
    await fleet.kubectl(cluster)("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(docs, sort_keys=False))


async def _render(fleet: DeployedFleet, cluster: str, kustomization: str) -> list[dict[str, Any]]:
    out = await fleet.kubectl(cluster)("kustomize", str(REPO / kustomization))
    return [d for d in yaml.safe_load_all(out) if d]


def _binding(role: str, account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{role}-{account}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
    }


def _accounts(cluster: str, *names: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": NAMESPACE}} for n in names
    ]
    if cluster != "management":  # management's namespace was made for the registrations
        docs.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    return docs


async def token_kubeconfig(fleet: DeployedFleet, cluster: str, account: str) -> Path:
    """A kubeconfig for the cluster as a ServiceAccount (a token the server minted)."""
    token = (await fleet.kubectl(cluster)("create", "token", account, "-n", NAMESPACE, "--duration=24h")).strip()
    admin = yaml.safe_load(fleet.kubeconfig(cluster).read_text())
    admin["users"][0]["user"] = {"token": token}
    path = fleet.workdir / f"{cluster}.{account}.kubeconfig"
    path.write_text(yaml.safe_dump(admin, sort_keys=False))
    path.chmod(0o600)
    return path


async def grant_shipped_roles(fleet: DeployedFleet) -> tuple[dict[str, Path], dict[str, Path]]:
    """Install the shipped roles where they belong and bind them; returns (the managers'
    kubeconfigs: management and each cell; the registration identities' kubeconfigs:
    each project and cell)."""
    managers: dict[str, Path] = {}
    access: dict[str, Path] = {}
    for cluster in ["management", *fleet.project_paths, *fleet.cities]:
        if cluster == "management":
            docs = _accounts(cluster, ACCOUNT)
            docs += await _render(fleet, cluster, "config/rbac/management")
            docs += await _render(fleet, cluster, "config/rbac/leader-election")
            docs += await _render(fleet, cluster, "config/rbac/sharding")  # the management-sharded overlay's
        else:
            cell = cluster in fleet.cities
            docs = _accounts(cluster, ACCESS, *([ACCOUNT] if cell else []))
            role = "federation-manager-cell-access" if cell else "federation-manager-project-access"
            roles = await _render(fleet, cluster, "config/rbac/federation-access")
            docs += [d for d in roles if d["metadata"]["name"] == role] + [_binding(role, ACCESS)]
            if cell:
                docs += await _render(fleet, cluster, "config/rbac/cell")
        await _apply(fleet, cluster, docs)
        if cluster == "management" or cluster in fleet.cities:
            managers[cluster] = await token_kubeconfig(fleet, cluster, ACCOUNT)
        if cluster != "management":
            access[cluster] = await token_kubeconfig(fleet, cluster, ACCESS)
    return managers, access
