"""RBAC enforcement as kubectl users meet it, over TLS (kubectl sends bearer tokens only over
HTTPS): a ServiceAccount's token from `kubectl create token` in a kubeconfig, kube-apiserver's
refusals as kubectl prints them, `kubectl auth can-i` and `kubectl auth whoami`; and the
project's shipped roles (config/rbac) applied with `kubectl apply -k` and server-side apply,
granting exactly what they list and nothing else."""

from __future__ import annotations

import base64
import itertools
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path

from .conftest import Obj

CONFIG = Path(__file__).resolve().parents[2] / "config" / "rbac"
MANAGER_NS = "federation-system"
MANAGER_SA = "federation-manager"
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@pytest.fixture
async def tls_rbac(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with EmbeddedAPIServer(tls=True, authorization="RBAC", kubeconfig=tmp_path / "admin.kubeconfig") as server:
        yield server


@pytest.fixture
def admin_kubectl(tls_rbac: EmbeddedAPIServer, tmp_path: Path) -> Kubectl:
    assert tls_rbac.kubeconfig_path is not None
    return Kubectl(tls_rbac.kubeconfig_path, tmp_path / "cache-admin")


def kubectl_as(server: EmbeddedAPIServer, tmp_path: Path, token: str, who: str) -> Kubectl:
    path = server.write_kubeconfig(tmp_path / f"{who}.kubeconfig", token=token)
    return Kubectl(path, tmp_path / f"cache-{who}")


async def service_account_token(admin: Kubectl, namespace: str, name: str) -> str:
    if namespace != "default":
        await admin("create", "namespace", namespace)
    await admin("create", "serviceaccount", name, "-n", namespace)
    return (await admin("create", "token", name, "-n", namespace, "--duration=1h")).strip()


async def test_a_service_account_token_in_a_kubeconfig(
    tls_rbac: EmbeddedAPIServer, admin_kubectl: Kubectl, tmp_path: Path
) -> None:
    token = await service_account_token(admin_kubectl, "default", "reader")
    assert token.count(".") == 2  # a JWT, as kube-apiserver issues
    reader = kubectl_as(tls_rbac, tmp_path, token, "reader")
    who = await reader("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert who == "system:serviceaccount:default:reader"
    denied = await reader.run("get", "configmaps")
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:default:reader" '
        'cannot list resource "configmaps" in API group "" in the namespace "default"'
    )
    can = await reader.run("auth", "can-i", "list", "configmaps")
    assert (can.returncode, can.stdout.strip()) == (1, "no")
    await admin_kubectl("create", "role", "cm-reader", "--verb=get,list,watch", "--resource=configmaps")
    await admin_kubectl("create", "rolebinding", "reader", "--role=cm-reader", "--serviceaccount=default:reader")
    await admin_kubectl("create", "configmap", "visible", "--from-literal=k=v")
    assert (await reader("get", "configmaps", "-o", "name")).split() == ["configmap/visible"]
    assert (await reader("auth", "can-i", "list", "configmaps")).strip() == "yes"
    no = await reader.run("auth", "can-i", "list", "configmaps", "-n", "kube-system")
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    forbidden = await reader.run("delete", "configmap", "visible")
    assert 'cannot delete resource "configmaps"' in forbidden.stderr
    listed = await reader("auth", "can-i", "--list")
    assert "configmaps" in listed and "[get list watch]" in listed
    # an unknown token is 401, as kubectl reports it
    stranger = kubectl_as(tls_rbac, tmp_path, "not-a-token", "stranger")
    refused = await stranger.run("get", "configmaps")
    assert refused.returncode == 1
    assert "error: You must be logged in to the server" in refused.stderr


async def test_a_users_token_from_the_in_process_helper(
    tls_rbac: EmbeddedAPIServer, admin_kubectl: Kubectl, tmp_path: Path
) -> None:
    token = tls_rbac.plane.auth.issue_token("alice", ["team-a"])
    alice = kubectl_as(tls_rbac, tmp_path, token, "alice")
    whoami = await alice("auth", "whoami", "-o", "yaml")
    info = yaml.safe_load(whoami)["status"]["userInfo"]
    assert info == {"username": "alice", "groups": ["team-a", "system:authenticated"]}
    await admin_kubectl("create", "clusterrole", "ns-viewer", "--verb=get,list", "--resource=namespaces")
    await admin_kubectl("create", "clusterrolebinding", "team-a-ns", "--clusterrole=ns-viewer", "--group=team-a")
    assert "namespace/default" in (await alice("get", "namespaces", "-o", "name")).split()


# ------------------------------------------------------------------ the shipped roles


def rules_of(kustomization: str) -> tuple[list[Obj], list[Obj]]:
    """The ClusterRoles' and Roles' rules a config/rbac kustomization declares."""
    cluster: list[Obj] = []
    namespaced: list[Obj] = []
    for path in sorted((CONFIG / kustomization).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "ClusterRole":
                cluster.extend(doc.get("rules") or [])
            elif doc.get("kind") == "Role":
                namespaced.extend(doc.get("rules") or [])
    return cluster, namespaced


def ssl_context(server: EmbeddedAPIServer) -> ssl.SSLContext:
    ca = base64.b64decode(server.kubeconfig()["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    return ssl.create_default_context(cadata=ca)


async def can(session: aiohttp.ClientSession, server: EmbeddedAPIServer, token: str, attrs: Obj) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }
    async with session.post(
        f"{server.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json=review,
        headers={"Authorization": f"Bearer {token}"},
    ) as resp:
        assert resp.status == 201, await resp.text()
        return bool((await resp.json())["status"]["allowed"])


def covered(rules: list[Obj], group: str, resource: str, verb: str) -> bool:
    return any(
        group in (r.get("apiGroups") or [])
        and resource in (r.get("resources") or [])
        and verb in (r.get("verbs") or [])
        for r in rules
    )


# every (group, resource) the shipped roles mention, and ones no mode should ever need
PROBED: list[tuple[str, str]] = [
    ("", "secrets"),
    ("", "configmaps"),
    ("", "serviceaccounts"),
    ("", "namespaces"),
    ("", "nodes"),
    ("", "pods"),
    ("apps", "deployments"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("rbac.authorization.k8s.io", "roles"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("coordination.k8s.io", "leases"),
]


@pytest.mark.parametrize(
    ("kustomization", "server_side"),
    [("cell", False), ("management", True), ("leader-election", False), ("federation-access", True)],
)
async def test_the_shipped_roles_grant_exactly_what_they_list(
    tls_rbac: EmbeddedAPIServer, admin_kubectl: Kubectl, kustomization: str, server_side: bool
) -> None:
    await admin_kubectl("create", "namespace", MANAGER_NS)
    await admin_kubectl("create", "serviceaccount", MANAGER_SA, "-n", MANAGER_NS)
    apply = ["apply", "-k", str(CONFIG / kustomization)]
    if server_side:
        apply += ["--server-side", "--field-manager=rbac-test"]
    out = await admin_kubectl(*apply)
    assert out.strip(), out
    cluster_rules, namespaced_rules = rules_of(kustomization)
    if kustomization == "federation-access":
        # installed unbound: bound here to the manager's identity, as an overlay would
        for role in ("federation-manager-cell-access", "federation-manager-project-access"):
            await admin_kubectl(
                "create",
                "clusterrolebinding",
                role,
                f"--clusterrole={role}",
                f"--serviceaccount={MANAGER_NS}:{MANAGER_SA}",
            )
    token = tls_rbac.plane.auth.issue_service_account_token(MANAGER_NS, MANAGER_SA).token
    resources: set[tuple[str, str]] = set(PROBED)
    for rule in cluster_rules + namespaced_rules:
        resources.update(itertools.product(rule.get("apiGroups") or [""], rule.get("resources") or []))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_context(tls_rbac))) as session:
        mismatches: list[str] = []
        for (group, resource), verb in itertools.product(sorted(resources), VERBS):
            plural, _, sub = resource.partition("/")
            for namespace in ("", MANAGER_NS, "elsewhere"):
                expected = covered(cluster_rules, group, resource, verb) or (
                    namespace == MANAGER_NS and covered(namespaced_rules, group, resource, verb)
                )
                attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": plural, "namespace": namespace}
                if sub:
                    attrs["subresource"] = sub
                if await can(session, tls_rbac, token, attrs) != expected:
                    mismatches.append(
                        f"{verb} {resource}.{group or 'core'} in {namespace or 'the cluster'}: expected {expected}"
                    )
        assert not mismatches, "\n".join(mismatches)
    # a needless permission is absent: no mode writes cluster-scoped RBAC or gets Secrets cluster-wide,
    # but the identity management mode uses in projects and cells (referenced data: companions)
    manager = Kubectl(
        tls_rbac.write_kubeconfig(admin_kubectl.cache_dir.parent / f"{kustomization}.kubeconfig", token=token),
        admin_kubectl.cache_dir.parent / f"cache-{kustomization}",
    )
    needless = [("create", "clusterrolebindings"), ("delete", "namespaces")]
    if kustomization != "federation-access":
        needless.append(("get", "secrets", "-A"))
    for args in needless:
        answer = await manager.run("auth", "can-i", *args)
        assert (answer.returncode, answer.stdout.strip()) == (1, "no"), args
