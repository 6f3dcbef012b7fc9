"""The RBAC objects kube-apiserver creates at start (its rbac/bootstrap-roles post-start
hook), the subset this server needs: `cluster-admin` for `system:masters`, discovery and
version/health paths for every authenticated user (`system:discovery`,
`system:public-info-viewer`, the latter for anonymous requests too) and the self-reviews
behind `kubectl auth can-i` and `kubectl auth whoami` (`system:basic-user`). Created only
when the server runs with RBAC authorization."""

from __future__ import annotations

from .registry import Obj

_META_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_META_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

CLUSTER_ROLES: dict[str, list[Obj]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "system:discovery": [
        {
            "nonResourceURLs": [
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
            "verbs": ["get"],
        }
    ],
    "system:public-info-viewer": [
        {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}
    ],
    "system:basic-user": [
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
    ],
}

# ClusterRoleBinding name -> (ClusterRole, groups)
CLUSTER_ROLE_BINDINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cluster-admin": ("cluster-admin", ("system:masters",)),
    "system:discovery": ("system:discovery", ("system:authenticated",)),
    "system:basic-user": ("system:basic-user", ("system:authenticated",)),
    "system:public-info-viewer": ("system:public-info-viewer", ("system:authenticated", "system:unauthenticated")),
}


def _metadata(name: str) -> Obj:
    return {"name": name, "labels": dict(_META_LABELS), "annotations": dict(_META_ANNOTATIONS)}


def bootstrap_objects() -> list[tuple[str, Obj]]:
    """(plural, object) pairs to create, roles before their bindings."""
    out: list[tuple[str, Obj]] = []
    for name, rules in CLUSTER_ROLES.items():
        out.append(
            (
                "clusterroles",
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": _metadata(name),
                    "rules": rules,
                },
            )
        )
    for name, (role, groups) in CLUSTER_ROLE_BINDINGS.items():
        out.append(
            (
                "clusterrolebindings",
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": _metadata(name),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [
                        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group} for group in groups
                    ],
                },
            )
        )
    return out
