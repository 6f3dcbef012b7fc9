"""The pure parts of RBAC enforcement, table-driven: request attributes as kube-apiserver's
RequestInfoFactory derives them, rule matching on every dimension (verbs, API groups,
resources and subresources, resource names, non-resource URLs), binding subjects, the 403
message shapes, and the static token file format with its errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.auth import TokenFileError, parse_token_file
from kubeplane.rbac import Rule, UserInfo, applies_to, forbidden, rule_allows
from kubeplane.requestinfo import RequestAttributes, request_attributes


def res(verb: str, resource: str, *, group: str = "", sub: str = "", ns: str = "", name: str = "") -> RequestAttributes:
    return RequestAttributes(
        verb=verb,
        path="",
        resource_request=True,
        api_group=group,
        api_version="v1",
        resource=resource,
        subresource=sub,
        namespace=ns,
        name=name,
    )


def rule(
    verbs: Sequence[str],
    resources: Sequence[str] = (),
    groups: Sequence[str] = ("",),
    names: Sequence[str] = (),
    urls: Sequence[str] = (),
) -> Rule:
    return Rule(frozenset(verbs), frozenset(groups), frozenset(resources), frozenset(names), tuple(urls))


# ------------------------------------------------------------------ request attributes


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/default/configmaps/x", {}, ("get", "", "configmaps", "", "default", "x")),
        ("GET", "/api/v1/namespaces/default/configmaps", {}, ("list", "", "configmaps", "", "default", "")),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps",
            {"watch": "true"},
            ("watch", "", "configmaps", "", "default", ""),
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps",
            {"watch": "false"},
            ("list", "", "configmaps", "", "default", ""),
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps",
            {"watch": "1", "fieldSelector": "metadata.name=one"},
            ("watch", "", "configmaps", "", "default", "one"),
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps",
            {"fieldSelector": "metadata.name!=one"},
            ("list", "", "configmaps", "", "default", ""),
        ),
        ("GET", "/api/v1/watch/namespaces/default/pods/p", {}, ("watch", "", "pods", "", "default", "p")),
        ("GET", "/api/v1/configmaps", {}, ("list", "", "configmaps", "", "", "")),
        ("POST", "/api/v1/namespaces/default/configmaps", {}, ("create", "", "configmaps", "", "default", "")),
        (
            "PUT",
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            {},
            ("update", "apps", "deployments", "scale", "ns", "d"),
        ),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/ns/deployments/d/status",
            {},
            ("patch", "apps", "deployments", "status", "ns", "d"),
        ),
        ("DELETE", "/api/v1/namespaces/default/pods/p", {}, ("delete", "", "pods", "", "default", "p")),
        ("DELETE", "/api/v1/namespaces/default/pods", {}, ("deletecollection", "", "pods", "", "default", "")),
        # a namespace is its own namespace; its status and finalize are subresources
        ("GET", "/api/v1/namespaces/team-a", {}, ("get", "", "namespaces", "", "team-a", "team-a")),
        ("PUT", "/api/v1/namespaces/team-a/finalize", {}, ("update", "", "namespaces", "finalize", "team-a", "team-a")),
        (
            "POST",
            "/api/v1/namespaces/ns/serviceaccounts/sa/token",
            {},
            ("create", "", "serviceaccounts", "token", "ns", "sa"),
        ),
        (
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {},
            ("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""),
        ),
    ],
)
def test_resource_requests(method: str, path: str, query: dict[str, str], expected: tuple[str, ...]) -> None:
    attrs = request_attributes(method, path, query)
    assert attrs.resource_request
    assert (attrs.verb, attrs.api_group, attrs.resource, attrs.subresource, attrs.namespace, attrs.name) == expected


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/api", "get"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis", "get"),
        ("GET", "/apis/apps", "get"),
        ("GET", "/apis/apps/v1", "get"),
        ("GET", "/version", "get"),
        ("GET", "/openapi/v3/apis/apps/v1", "get"),
        ("POST", "/_embedded/pause", "post"),
        ("PUT", "/_embedded/faults", "put"),
        ("GET", "/api/v1/watch", "get"),
    ],
)
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    attrs = request_attributes(method, path, {})
    assert not attrs.resource_request
    assert (attrs.verb, attrs.path) == (verb, path)


# ------------------------------------------------------------------ rules


@pytest.mark.parametrize(
    ("the_rule", "attrs", "allowed"),
    [
        # verbs
        (rule(["get"], ["configmaps"]), res("get", "configmaps"), True),
        (rule(["get"], ["configmaps"]), res("list", "configmaps"), False),
        (rule(["*"], ["configmaps"]), res("deletecollection", "configmaps"), True),
        # API groups
        (rule(["get"], ["deployments"], groups=["apps"]), res("get", "deployments", group="apps"), True),
        (rule(["get"], ["deployments"]), res("get", "deployments", group="apps"), False),
        (rule(["get"], ["deployments"], groups=["*"]), res("get", "deployments", group="apps"), True),
        # resources and subresources
        (rule(["get"], ["*"]), res("get", "secrets"), True),
        (rule(["get"], ["pods"]), res("get", "pods", sub="status"), False),
        (rule(["get"], ["pods/status"]), res("get", "pods", sub="status"), True),
        (rule(["get"], ["pods/status"]), res("get", "pods"), False),
        (rule(["update"], ["*/scale"], groups=["*"]), res("update", "deployments", group="apps", sub="scale"), True),
        (rule(["update"], ["*/scale"], groups=["*"]), res("update", "deployments", group="apps"), False),
        (rule(["get"], ["*"]), res("get", "pods", sub="log"), True),
        # resource names
        (rule(["get"], ["configmaps"], names=["one"]), res("get", "configmaps", name="one"), True),
        (rule(["get"], ["configmaps"], names=["one"]), res("get", "configmaps", name="two"), False),
        (rule(["list"], ["configmaps"], names=["one"]), res("list", "configmaps"), False),
        (rule(["create"], ["configmaps"], names=["one"]), res("create", "configmaps"), False),
        # non-resource URLs
        (rule(["get"], urls=["/healthz"]), RequestAttributes("get", "/healthz"), True),
        (rule(["get"], urls=["/healthz"]), RequestAttributes("get", "/healthz/etcd"), False),
        (rule(["get"], urls=["/apis/*"]), RequestAttributes("get", "/apis/apps/v1"), True),
        (rule(["get"], urls=["/apis/*"]), RequestAttributes("get", "/apis"), False),
        (rule(["get"], urls=["*"]), RequestAttributes("get", "/anything"), True),
        (rule(["get"], urls=["/version"]), RequestAttributes("post", "/version"), False),
        # a resource rule never covers a path, a URL rule never a resource
        (rule(["get"], ["*"], groups=["*"]), RequestAttributes("get", "/version"), False),
        (rule(["*"], urls=["*"]), res("get", "pods"), False),
    ],
)
def test_rule_allows(the_rule: Rule, attrs: RequestAttributes, allowed: bool) -> None:
    assert rule_allows(attrs, the_rule) is allowed


names = st.text(alphabet="abcdefghij-/", min_size=1, max_size=12)


@given(verb=names, group=names, resource=names, sub=st.one_of(st.just(""), names), name=st.one_of(st.just(""), names))
def test_a_wildcard_rule_allows_every_resource_request(
    verb: str, group: str, resource: str, sub: str, name: str
) -> None:
    attrs = res(verb, resource, group=group, sub=sub, name=name)
    assert rule_allows(attrs, rule(["*"], ["*"], groups=["*"]))


@given(verb=names, other=names, resource=names)
def test_a_rule_never_allows_a_verb_it_does_not_name(verb: str, other: str, resource: str) -> None:
    if verb != other:
        assert not rule_allows(res(other, resource), rule([verb], ["*"], groups=["*"]))


@pytest.mark.parametrize(
    ("subject", "namespace", "applies"),
    [
        ({"kind": "User", "name": "alice"}, "", True),
        ({"kind": "User", "name": "bob"}, "", False),
        ({"kind": "Group", "name": "devs"}, "", True),
        ({"kind": "Group", "name": "ops"}, "", False),
        ({"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}, "", False),
    ],
)
def test_user_and_group_subjects(subject: dict[str, str], namespace: str, applies: bool) -> None:
    assert applies_to(UserInfo("alice", groups=("devs",)), subject, namespace) is applies


@pytest.mark.parametrize(
    ("subject", "namespace", "applies"),
    [
        ({"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}, "", True),
        ({"kind": "ServiceAccount", "name": "bot"}, "ns", True),  # a RoleBinding's own namespace
        ({"kind": "ServiceAccount", "name": "bot"}, "", False),
        ({"kind": "ServiceAccount", "name": "bot", "namespace": "other"}, "ns", False),
        ({"kind": "User", "name": "system:serviceaccount:ns:bot"}, "", True),
    ],
)
def test_service_account_subjects(subject: dict[str, str], namespace: str, applies: bool) -> None:
    assert applies_to(UserInfo("system:serviceaccount:ns:bot"), subject, namespace) is applies


# ------------------------------------------------------------------ 403 messages


@pytest.mark.parametrize(
    ("attrs", "reason", "message"),
    [
        (
            res("get", "configmaps", ns="default", name="x"),
            "",
            'configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" '
            'in the namespace "default"',
        ),
        (
            res("list", "deployments", group="apps"),
            "",
            'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" '
            "at the cluster scope",
        ),
        (
            res("update", "deployments", group="apps", sub="scale", ns="ns", name="d"),
            'RBAC: role.rbac.authorization.k8s.io "gone" not found',
            'deployments.apps "d" is forbidden: User "alice" cannot update resource "deployments/scale" in API '
            'group "apps" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "gone" not found',
        ),
        (RequestAttributes("get", "/api"), "", 'forbidden: User "alice" cannot get path "/api"'),
    ],
)
def test_forbidden_messages(attrs: RequestAttributes, reason: str, message: str) -> None:
    err = forbidden(UserInfo("alice"), attrs, reason)
    status = err.status()
    assert (status["code"], status["reason"], status["message"]) == (403, "Forbidden", message)


# ------------------------------------------------------------------ token files


def test_token_files_are_read_as_kube_apiserver_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text(
        't1,alice,uid-1,"devs,ops"\n'
        "t2,bob,uid-2\n"
        "\n"
        ",nobody,uid-3\n"  # an empty token is skipped
        "t2,bob-again,uid-4,\n"  # a repeated token: the last record wins
    )
    tokens = parse_token_file(path)
    assert tokens == {
        "t1": UserInfo("alice", uid="uid-1", groups=("devs", "ops")),
        "t2": UserInfo("bob-again", uid="uid-4", groups=()),
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("t1,alice\n", "must have at least 3 columns (token, user name, user uid), found 2 on line 1"),
        ("t1,alice,uid\nt2\n", "must have at least 3 columns (token, user name, user uid), found 1 on line 2"),
        ('t1,alice,uid,"devs\n', "line 1: unexpected end of data"),
        ('t1,"ali"ce,uid\n', "line 1: ',' expected after '\"'"),
        ("t1,,uid\n", "line 1: the user name is empty"),
    ],
)
def test_bad_token_files_are_named_clearly(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text(content)
    with pytest.raises(TokenFileError) as refused:
        parse_token_file(path)
    assert str(refused.value).startswith(f"token file '{path}'")
    assert message in str(refused.value)


def test_a_missing_token_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match="cannot read it: No such file or directory"):
        parse_token_file(tmp_path / "absent.csv")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TokenFileError, match="not UTF-8 text"):
        parse_token_file(binary)
