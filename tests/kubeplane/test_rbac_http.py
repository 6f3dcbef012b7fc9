"""RBAC enforcement over raw HTTP: 401 for unknown tokens, kube-apiserver's 403 message
shapes, each dimension of a rule (verbs, API groups, resources, subresources, resource
names, non-resource URLs), RoleBindings versus ClusterRoleBindings, user, group and
ServiceAccount subjects, aggregated ClusterRoles, the bootstrap roles (discovery for every
authenticated user, health and version for anonymous ones), rules re-read as soon as RBAC
objects change, and the TokenRequest and self-subject review endpoints."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer

from .conftest import Obj, configmap, expect_status

RBAC = "/apis/rbac.authorization.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"


class Caller:
    """Raw HTTP as one identity (a bearer token, or none)."""

    def __init__(self, session: aiohttp.ClientSession, base: str, token: str | None) -> None:
        self.session = session
        self.base = base
        self.headers = {"Authorization": f"Bearer {token}"} if token is not None else {}

    async def __call__(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type
        async with self.session.request(method, self.base + path, data=data, headers=headers) as resp:
            raw = await resp.read()
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, raw.decode()


@pytest.fixture
async def rbac_server(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('file-token,carol,uid-carol,"auditors,devs"\n')
    async with EmbeddedAPIServer(authorization="RBAC", token_auth_file=tokens) as server:
        yield server


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def admin(rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession) -> Caller:
    return Caller(session, rbac_server.url, rbac_server.token)


def caller(server: EmbeddedAPIServer, session: aiohttp.ClientSession, user: str, *groups: str) -> Caller:
    return Caller(session, server.url, server.plane.auth.issue_token(user, groups))


def role(
    name: str, rules: list[Obj], *, namespace: str | None = "default", labels: dict[str, str] | None = None
) -> Obj:
    kind = "Role" if namespace else "ClusterRole"
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def binding(
    name: str, role_kind: str, role_name: str, subjects: list[Obj], *, namespace: str | None = "default"
) -> Obj:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


def user(name: str) -> Obj:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def group(name: str) -> Obj:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


async def grant(admin: Caller, *objects: Obj) -> None:
    for obj in objects:
        plural = obj["kind"].lower() + "s"
        ns = obj["metadata"].get("namespace")
        path = f"{RBAC}/namespaces/{ns}/{plural}" if ns else f"{RBAC}/{plural}"
        status, body = await admin("POST", path, obj)
        assert status == 201, body


# ------------------------------------------------------------------ authentication


async def test_unknown_tokens_are_401_and_no_token_is_anonymous(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession
) -> None:
    status, body = await Caller(session, rbac_server.url, "not-a-token")("GET", CMS)
    assert expect_status(status, body, 401, "Unauthorized")["message"] == "Unauthorized"
    anonymous = Caller(session, rbac_server.url, None)
    status, body = await anonymous("GET", CMS)
    assert expect_status(status, body, 403, "Forbidden")["message"] == (
        'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" '
        'in the namespace "default"'
    )
    # system:public-info-viewer: health and version for everyone, discovery only when authenticated
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        status, _ = await anonymous("GET", path)
        assert status == 200, path
    status, body = await anonymous("GET", "/api")
    assert (
        expect_status(status, body, 403, "Forbidden")["message"]
        == 'forbidden: User "system:anonymous" cannot get path "/api"'
    )


async def test_the_admin_token_is_a_superuser(admin: Caller) -> None:
    for method, path, body in (
        ("GET", CMS, None),
        ("POST", CMS, configmap("mine")),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", None),
        ("GET", "/_embedded/counters", None),
    ):
        status, answer = await admin(method, path, body)
        assert status in (200, 201), (path, answer)
    status, whoami = await admin("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert status == 201
    assert whoami["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["system:masters", "system:authenticated"],
    }


async def test_the_admin_endpoints_are_authorized_too(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession
) -> None:
    alice = caller(rbac_server, session, "alice")
    status, body = await alice("PUT", "/_embedded/faults", {"error_rate": 1.0})
    assert (
        expect_status(status, body, 403, "Forbidden")["message"]
        == 'forbidden: User "alice" cannot put path "/_embedded/faults"'
    )
    assert rbac_server.plane.faults.settings.error_rate == 0.0


async def test_counters_by_user_tell_who_wrote(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    await grant(admin, role("cm-writer", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]))
    await grant(admin, binding("dave-writes", "Role", "cm-writer", [user("dave")]))
    dave = caller(rbac_server, session, "dave")
    assert (await dave("POST", CMS, configmap("from-dave")))[0] == 201
    assert (await dave("GET", CMS))[0] == 403  # refused before it reached a verb: not counted
    assert (await admin("POST", CMS, configmap("from-admin")))[0] == 201
    status, by_user = await admin("GET", "/_embedded/counters?by=user")
    assert status == 200
    assert by_user["dave"] == {"configmaps": {"create": 1}}
    assert by_user["kubernetes-admin"]["configmaps"] == {"create": 1}
    status, total = await admin("GET", "/_embedded/counters")
    assert total["configmaps"] == {"create": 2}
    status, body = await admin("GET", "/_embedded/counters?by=verb")
    assert expect_status(status, body, 400, "BadRequest")["message"] == "by must be 'user' or absent, not 'verb'"


async def test_static_token_file_users(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    carol = Caller(session, rbac_server.url, "file-token")
    status, whoami = await carol("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert status == 201
    assert whoami["status"]["userInfo"] == {
        "username": "carol",
        "uid": "uid-carol",
        "groups": ["auditors", "devs", "system:authenticated"],
    }
    status, _ = await carol("GET", CMS)
    assert status == 403
    await grant(admin, role("reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]))
    await grant(admin, binding("auditors-read", "Role", "reader", [group("auditors")]))
    status, _ = await carol("GET", CMS)
    assert status == 200


# ------------------------------------------------------------------ rule dimensions


async def test_verbs_groups_and_resources(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    alice = caller(rbac_server, session, "alice")
    await grant(
        admin,
        role(
            "mixed",
            [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]},
            ],
        ),
        binding("alice-mixed", "Role", "mixed", [user("alice")]),
    )
    status, _ = await alice("POST", CMS, configmap("by-alice"))
    assert status == 201
    status, _ = await alice("GET", f"{CMS}/by-alice")
    assert status == 200
    for method, path, message in (
        ("GET", CMS, 'configmaps is forbidden: User "alice" cannot list resource "configmaps"'),
        (
            "DELETE",
            f"{CMS}/by-alice",
            'configmaps "by-alice" is forbidden: User "alice" cannot delete resource "configmaps"',
        ),
        (
            "GET",
            "/api/v1/namespaces/default/secrets",
            'secrets is forbidden: User "alice" cannot list resource "secrets"',
        ),
        # the core-group rule does not reach apps, nor the apps rule the core group
        (
            "GET",
            "/apis/apps/v1/namespaces/default/deployments/web",
            'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps"',
        ),
    ):
        status, body = await alice(method, path)
        assert expect_status(status, body, 403, "Forbidden")["message"].startswith(message), body
    status, _ = await alice("GET", "/apis/apps/v1/namespaces/default/deployments")
    assert status == 200


async def test_subresources(rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    status, _ = await admin("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert status == 201
    scaler = caller(rbac_server, session, "scaler")
    await grant(
        admin,
        role("scale-only", [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch"]}]),
        binding("scaler", "Role", "scale-only", [user("scaler")]),
    )
    scale = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    status, body = await scaler("GET", scale)
    assert status == 200 and body["kind"] == "Scale"
    status, _ = await scaler("PATCH", scale, {"spec": {"replicas": 3}}, content_type="application/merge-patch+json")
    assert status == 200
    status, body = await scaler("GET", "/apis/apps/v1/namespaces/default/deployments/web")
    assert expect_status(status, body, 403, "Forbidden")["message"].startswith(
        'deployments.apps "web" is forbidden: User "scaler" cannot get resource "deployments" in API group "apps"'
    )
    status, body = await scaler("GET", "/apis/apps/v1/namespaces/default/deployments/web/status")
    assert 'cannot get resource "deployments/status"' in expect_status(status, body, 403, "Forbidden")["message"]
    # "*/status" covers the status of every resource
    await grant(
        admin,
        role("any-status", [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
        binding("scaler-status", "Role", "any-status", [user("scaler")]),
    )
    status, _ = await scaler("GET", "/apis/apps/v1/namespaces/default/deployments/web/status")
    assert status == 200


async def test_resource_names(rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller) -> None:
    for name in ("one", "two"):
        status, _ = await admin("POST", CMS, configmap(name))
        assert status == 201
    dave = caller(rbac_server, session, "dave")
    await grant(
        admin,
        role(
            "just-one",
            [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": ["one"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        ),
        binding("dave", "Role", "just-one", [user("dave")]),
    )
    status, _ = await dave("GET", f"{CMS}/one")
    assert status == 200
    status, body = await dave("GET", f"{CMS}/two")
    assert expect_status(status, body, 403, "Forbidden")["message"].startswith('configmaps "two" is forbidden')
    # a list is not limited to a name, unless its field selector names exactly that one
    status, _ = await dave("GET", CMS)
    assert status == 403
    status, listed = await dave("GET", f"{CMS}?fieldSelector=metadata.name%3Done")
    assert status == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["one"]


async def test_non_resource_urls(rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller) -> None:
    erin = caller(rbac_server, session, "erin")
    # every authenticated user may discover and read the OpenAPI documents (system:discovery)
    for path in ("/api", "/api/v1", "/apis", "/apis/apps/v1", "/openapi/v3", "/openapi/v2", "/version"):
        status, _ = await erin("GET", path)
        assert status == 200, path
    status, body = await erin("GET", "/_embedded/counters")
    assert status == 403, body
    await grant(
        admin,
        role("counters", [{"nonResourceURLs": ["/_embedded/*"], "verbs": ["get"]}], namespace=None),
        binding("erin-counters", "ClusterRole", "counters", [user("erin")], namespace=None),
    )
    status, _ = await erin("GET", "/_embedded/counters")
    assert status == 200
    status, _ = await erin("DELETE", "/_embedded/counters")
    assert status == 403


# ------------------------------------------------------------------ bindings and subjects


async def test_role_bindings_grant_in_their_namespace_only(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    frank = caller(rbac_server, session, "frank")
    await grant(
        admin,
        role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}], namespace=None),
        # a ClusterRole through a RoleBinding: only in the binding's namespace
        binding("frank-here", "ClusterRole", "cm-reader", [user("frank")], namespace="kube-public"),
    )
    status, _ = await frank("GET", "/api/v1/namespaces/kube-public/configmaps")
    assert status == 200
    for path in (CMS, "/api/v1/configmaps"):
        status, body = await frank("GET", path)
        assert status == 403, (path, body)
    await grant(admin, binding("frank-everywhere", "ClusterRole", "cm-reader", [user("frank")], namespace=None))
    for path in (CMS, "/api/v1/configmaps"):
        status, _ = await frank("GET", path)
        assert status == 200, path


async def test_service_account_and_group_subjects(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bot"}})
    assert status == 201
    status, issued = await admin(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/bot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 201, issued
    bot = Caller(session, rbac_server.url, issued["status"]["token"])
    status, whoami = await bot("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert whoami["status"]["userInfo"]["username"] == "system:serviceaccount:default:bot"
    assert whoami["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    await grant(
        admin,
        role("cm-create", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]),
        # a ServiceAccount subject without a namespace means the RoleBinding's
        binding("bot-create", "Role", "cm-create", [{"kind": "ServiceAccount", "name": "bot"}]),
    )
    status, _ = await bot("POST", CMS, configmap("from-bot"))
    assert status == 201
    # groups: every ServiceAccount in the namespace
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "other"}})
    other_token = rbac_server.plane.auth.issue_service_account_token("default", "other").token
    other = Caller(session, rbac_server.url, other_token)
    status, _ = await other("GET", f"{CMS}/from-bot")
    assert status == 403
    await grant(
        admin,
        role("cm-get", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
        binding("sas-get", "Role", "cm-get", [group("system:serviceaccounts:default")]),
    )
    status, _ = await other("GET", f"{CMS}/from-bot")
    assert status == 200


async def test_a_missing_role_is_named_in_the_refusal(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    gina = caller(rbac_server, session, "gina")
    await grant(admin, binding("dangling", "Role", "never-created", [user("gina")]))
    status, body = await gina("GET", CMS)
    assert expect_status(status, body, 403, "Forbidden")["message"] == (
        'configmaps is forbidden: User "gina" cannot list resource "configmaps" in API group "" in the namespace '
        '"default": RBAC: role.rbac.authorization.k8s.io "never-created" not found'
    )


async def test_aggregated_cluster_roles(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    hank = caller(rbac_server, session, "hank")
    aggregate = role("aggregate", [], namespace=None)
    aggregate["aggregationRule"] = {
        "clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-hank": "true"}}]
    }
    await grant(admin, aggregate, binding("hank", "ClusterRole", "aggregate", [user("hank")], namespace=None))
    status, _ = await hank("GET", CMS)
    assert status == 403
    await grant(
        admin,
        role(
            "part",
            [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
            namespace=None,
            labels={"example.com/aggregate-to-hank": "true"},
        ),
    )
    status, _ = await hank("GET", CMS)
    assert status == 200


async def test_rules_are_reread_when_rbac_objects_change(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    ivan = caller(rbac_server, session, "ivan")
    await grant(
        admin,
        role("lister", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
        binding("ivan", "Role", "lister", [user("ivan")]),
    )
    status, _ = await ivan("GET", CMS)
    assert status == 200
    # narrowing the role takes effect on the next request
    status, _ = await admin(
        "PATCH",
        f"{RBAC}/namespaces/default/roles/lister",
        {"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    status, _ = await ivan("GET", CMS)
    assert status == 403
    status, _ = await ivan("GET", "/api/v1/namespaces/default/secrets")
    assert status == 200
    status, _ = await admin("DELETE", f"{RBAC}/namespaces/default/rolebindings/ivan")
    assert status == 200
    status, _ = await ivan("GET", "/api/v1/namespaces/default/secrets")
    assert status == 403


# ------------------------------------------------------------------ TokenRequest and reviews


async def test_service_account_tokens_end_with_their_service_account(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "short-lived"}})
    token = rbac_server.plane.auth.issue_service_account_token("default", "short-lived").token
    holder = Caller(session, rbac_server.url, token)
    status, _ = await holder("GET", "/version")
    assert status == 200
    status, _ = await admin("DELETE", "/api/v1/namespaces/default/serviceaccounts/short-lived")
    assert status == 200
    status, body = await holder("GET", "/version")
    expect_status(status, body, 401, "Unauthorized")
    # a new ServiceAccount of the same name does not revive the old token
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "short-lived"}})
    status, _ = await holder("GET", "/version")
    assert status == 401


@pytest.mark.parametrize(
    ("spec", "code", "reason", "message"),
    [
        (
            {"expirationSeconds": 60},
            422,
            "Invalid",
            'TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid value: 60: '
            "may not specify a duration less than 10 minutes",
        ),
        (
            {"expirationSeconds": 2**33},
            422,
            "Invalid",
            'TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid value: 8589934592: '
            "may not specify a duration larger than 2^32 seconds",
        ),
        (
            {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}},
            400,
            "BadRequest",
            "cannot bind token for object of type /v1, Kind=ConfigMap",
        ),
        (
            {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "ghost"}},
            404,
            "NotFound",
            'pods "ghost" not found',
        ),
    ],
)
async def test_token_requests_are_validated(admin: Caller, spec: Obj, code: int, reason: str, message: str) -> None:
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bot"}})
    status, body = await admin(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/bot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    assert expect_status(status, body, code, reason)["message"] == message


async def test_token_requests_need_an_existing_service_account(admin: Caller) -> None:
    status, body = await admin(
        "POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", {"kind": "TokenRequest", "spec": {}}
    )
    assert expect_status(status, body, 404, "NotFound")["message"] == 'serviceaccounts "nobody" not found'
    status, body = await admin("GET", "/api/v1/namespaces/default/serviceaccounts/nobody/token")
    expect_status(status, body, 405, "MethodNotAllowed")


async def test_a_token_bound_to_a_pod_ends_with_the_pod(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    status, _ = await admin("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bot"}})
    pod = {
        "metadata": {"name": "holder"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "terminationGracePeriodSeconds": 0},
    }
    status, created = await admin("POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201, created
    status, issued = await admin(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/bot/token",
        {"kind": "TokenRequest", "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "holder"}}},
    )
    assert status == 201, issued
    assert issued["spec"]["boundObjectRef"]["uid"] == created["metadata"]["uid"]
    holder = Caller(session, rbac_server.url, issued["status"]["token"])
    status, _ = await holder("GET", "/version")
    assert status == 200
    status, _ = await admin("DELETE", "/api/v1/namespaces/default/pods/holder?gracePeriodSeconds=0")
    assert status == 200
    status, _ = await holder("GET", "/version")
    assert status == 401


async def test_self_subject_access_reviews(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    judy = caller(rbac_server, session, "judy")
    await grant(
        admin,
        role("lister", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
        binding("judy", "Role", "lister", [user("judy")]),
    )
    review = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

    async def ask(attributes: Obj) -> Obj:
        status, body = await judy(
            "POST",
            review,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attributes},
        )
        assert status == 201, body
        return dict(body["status"])

    allowed = await ask({"resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "default"}})
    assert allowed == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "judy/default" of Role "lister" to User "judy"',
    }
    assert await ask(
        {"resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "kube-system"}}
    ) == {"allowed": False}
    assert (await ask({"nonResourceAttributes": {"verb": "get", "path": "/version"}}))["allowed"] is True
    status, body = await judy("POST", review, {"kind": "SelfSubjectAccessReview", "spec": {}})
    assert expect_status(status, body, 422, "Invalid")["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified"
    )
    # (authorization comes first: judy may not even ask to list them)
    status, body = await judy("GET", review)
    expect_status(status, body, 403, "Forbidden")
    status, body = await admin("GET", review)
    expect_status(status, body, 405, "MethodNotAllowed")
    # rules review: what judy holds in a namespace
    status, rules = await judy(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}},
    )
    assert status == 201
    assert {"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]} in rules["status"]["resourceRules"]
    assert rules["status"]["incomplete"] is False


async def test_reviews_answer_allowed_without_rbac(
    apiserver: EmbeddedAPIServer, session: aiohttp.ClientSession
) -> None:
    anyone = Caller(session, apiserver.url, None)
    status, body = await anyone(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}},
    )
    assert status == 201 and body["status"] == {"allowed": True}
    # and nothing of RBAC is bootstrapped or enforced
    status, listed = await anyone("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")
    assert status == 200 and listed["items"] == []


# ------------------------------------------------------------------ owner references


def owned_configmap(name: str, owner: Obj, *, block: bool) -> Obj:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }
    return configmap(name, ownerReferences=[ref])


async def test_blocking_an_owners_deletion_needs_its_finalizers(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    status, owner = await admin("POST", CMS, configmap("owner"))
    assert status == 201
    kim = caller(rbac_server, session, "kim")
    await grant(
        admin,
        role(
            "cm-writer",
            [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update", "patch", "get"]}],
        ),
        binding("kim", "Role", "cm-writer", [user("kim")]),
    )
    # an owner reference that does not block is fine on create (the creator could have not created it)
    status, body = await kim("POST", CMS, owned_configmap("loose", owner, block=False))
    assert status == 201, body
    status, body = await kim("POST", CMS, owned_configmap("tight", owner, block=True))
    assert expect_status(status, body, 403, "Forbidden")["message"] == (
        'configmaps "tight" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource '
        "you can't set finalizers on: , <nil>"
    )
    # changing the owner references of an existing object needs delete on it
    status, body = await kim(
        "PATCH", f"{CMS}/loose", {"metadata": {"ownerReferences": None}}, content_type="application/merge-patch+json"
    )
    assert expect_status(status, body, 403, "Forbidden")["message"] == (
        'configmaps "loose" is forbidden: cannot set an ownerRef on a resource you can\'t delete: , <nil>'
    )
    await grant(
        admin,
        role(
            "cm-finalizers",
            [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps/finalizers"],
                    "resourceNames": ["owner"],
                    "verbs": ["update"],
                }
            ],
        ),
        binding("kim-finalizers", "Role", "cm-finalizers", [user("kim")]),
    )
    status, body = await kim("POST", CMS, owned_configmap("tight", owner, block=True))
    assert status == 201, body
    # references to kinds the server does not serve cannot block
    ghost = {"apiVersion": "example.com/v1", "kind": "Ghost", "metadata": {"name": "g", "uid": "u-1"}}
    status, body = await kim("POST", CMS, owned_configmap("haunted", ghost, block=True))
    assert expect_status(status, body, 403, "Forbidden")["message"] == (
        'configmaps "haunted" is forbidden: cannot set blockOwnerDeletion in this case because cannot find '
        'RESTMapping for APIVersion example.com/v1 Kind Ghost: no matches for kind "Ghost" in version "example.com/v1"'
    )
    # the superuser may do all of it
    status, body = await admin("POST", CMS, owned_configmap("by-admin", owner, block=True))
    assert status == 201, body


async def test_server_side_apply_that_creates_needs_create_too(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession, admin: Caller
) -> None:
    lee = caller(rbac_server, session, "lee")
    await grant(
        admin,
        role("patcher", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]),
        binding("lee", "Role", "patcher", [user("lee")]),
    )
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}}
    status, body = await lee(
        "PATCH", f"{CMS}/applied?fieldManager=lee", applied, content_type="application/apply-patch+yaml"
    )
    assert expect_status(status, body, 403, "Forbidden")["message"] == 'configmaps "applied" is forbidden: '
    status, _ = await admin("POST", CMS, configmap("applied"))
    status, body = await lee(
        "PATCH", f"{CMS}/applied?fieldManager=lee", applied, content_type="application/apply-patch+yaml"
    )
    assert status == 200 and body["data"] == {"k": "v"}, body


async def test_the_bearer_scheme_is_case_insensitive(
    rbac_server: EmbeddedAPIServer, session: aiohttp.ClientSession
) -> None:
    token = rbac_server.plane.auth.issue_token("mia")
    async with session.post(
        rbac_server.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json={"kind": "SelfSubjectReview"},
        headers={"Authorization": f"bearer {token}"},
    ) as resp:
        assert resp.status == 201
        assert (await resp.json())["status"]["userInfo"]["username"] == "mia"
