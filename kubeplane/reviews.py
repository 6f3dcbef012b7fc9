"""The API objects that are answers rather than stored state: the TokenRequest subresource
of ServiceAccounts (`kubectl create token`), SelfSubjectAccessReview (`kubectl auth can-i`),
SelfSubjectRulesReview (`kubectl auth can-i --list`) and SelfSubjectReview (`kubectl auth
whoami`). Each is created (POST) and answered at once, never stored, as in kube-apiserver."""

from __future__ import annotations

import time
from typing import Any, Protocol

from . import errors
from .auth import DEFAULT_AUDIENCES, Authenticator, BoundObject
from .errors import APIError, FieldError, invalid
from .rbac import Decision, UserInfo
from .registry import Obj, Registry, ResourceType
from .requestinfo import RequestAttributes

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
# pkg/apis/authentication/validation: tokens live at least 10 minutes, at most 2^32 seconds
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32
DEFAULT_EXPIRATION = 3600  # SetDefaults_TokenRequestSpec


class Authorizer(Protocol):
    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> Decision: ...

    def rules_review(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], str]: ...


class AlwaysAllow:
    """The authorizer of a server without --authorization-mode=RBAC: everything is allowed."""

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> Decision:
        return Decision(True)

    def rules_review(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], str]:
        return (
            [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "",
        )


def review_types() -> list[ResourceType]:
    def virtual(group: str, plural: str, kind: str) -> ResourceType:
        return ResourceType(group, "v1", plural, plural[:-1], kind, namespaced=False, verbs=("create",), virtual=True)

    return [
        virtual(AUTHORIZATION, "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
        virtual(AUTHORIZATION, "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        virtual(AUTHENTICATION, "selfsubjectreviews", "SelfSubjectReview"),
    ]


def register_review_types(registry: Registry) -> None:
    for rt in review_types():
        registry.add(rt)


def _typed_body(body: Any, api_version: str, kind: str) -> Obj:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    if body.get("kind") not in (None, kind) or body.get("apiVersion") not in (None, api_version):
        raise errors.bad_request(
            f"the body of the request must be a {kind} ({api_version}), got kind {body.get('kind')!r} "
            f"and apiVersion {body.get('apiVersion')!r}"
        )
    return body


def _answer(kind: str, api_version: str, spec: Any, status: Obj, metadata: Obj | None = None) -> Obj:
    out: Obj = {"kind": kind, "apiVersion": api_version, "metadata": metadata or {"creationTimestamp": None}}
    if spec is not None:
        out["spec"] = spec
    out["status"] = status
    return out


# ------------------------------------------------------------------ access reviews


def access_review(authorizer: Authorizer, user: UserInfo, body: Any) -> Obj:
    review = _typed_body(body, f"{AUTHORIZATION}/v1", "SelfSubjectAccessReview")
    spec = review.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.bad_request("spec must be an object")
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    problems: list[FieldError] = []
    if resource is not None and non_resource is not None:
        problems.append(
            invalid(
                "spec.nonResourceAttributes", non_resource, "cannot be specified in combination with resourceAttributes"
            )
        )
    if resource is None and non_resource is None:
        problems.append(
            invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    for path, attrs in (("spec.resourceAttributes", resource), ("spec.nonResourceAttributes", non_resource)):
        if attrs is not None and not isinstance(attrs, dict):
            problems.append(invalid(path, attrs, "must be an object"))
    if problems:
        raise errors.invalid_object("SelfSubjectAccessReview", AUTHORIZATION, "", problems)
    if isinstance(resource, dict):
        asked = RequestAttributes(
            verb=str(resource.get("verb") or ""),
            path="",
            resource_request=True,
            api_group=str(resource.get("group") or ""),
            api_version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    else:
        assert isinstance(non_resource, dict)
        asked = RequestAttributes(verb=str(non_resource.get("verb") or ""), path=str(non_resource.get("path") or ""))
    decision = authorizer.authorize(user, asked)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return _answer("SelfSubjectAccessReview", f"{AUTHORIZATION}/v1", spec, status)


def rules_review(authorizer: Authorizer, user: UserInfo, body: Any) -> Obj:
    review = _typed_body(body, f"{AUTHORIZATION}/v1", "SelfSubjectRulesReview")
    spec = review.get("spec") or {}
    namespace = spec.get("namespace") if isinstance(spec, dict) else None
    if not isinstance(namespace, str):
        namespace = ""
    resource, non_resource, error = authorizer.rules_review(user, namespace)
    status: Obj = {"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": bool(error)}
    if error:
        status["evaluationError"] = error
    return _answer("SelfSubjectRulesReview", f"{AUTHORIZATION}/v1", spec, status)


def self_subject_review(user: UserInfo) -> Obj:
    info: Obj = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra}
    return _answer("SelfSubjectReview", f"{AUTHENTICATION}/v1", None, {"userInfo": info})


# ------------------------------------------------------------------ TokenRequest

_BINDABLE = {"Pod": True, "Secret": True, "Node": False}  # kind -> namespaced


def token_request(auth: Authenticator, namespace: str, name: str, body: Any, bound_uid: Any) -> Obj:
    """Mint a token for ServiceAccount `namespace/name`. `bound_uid(kind, namespace, name)`
    finds the uid of the object a token is bound to (None when it does not exist)."""
    request = _typed_body(body, f"{AUTHENTICATION}/v1", "TokenRequest")
    spec = request.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.bad_request("spec must be an object")
    expiration = spec.get("expirationSeconds")
    if expiration in (None, 0):
        expiration = DEFAULT_EXPIRATION
    problems: list[FieldError] = []
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        problems.append(invalid("spec.expirationSeconds", expiration, "must be an integer"))
    elif expiration < MIN_EXPIRATION:
        problems.append(
            invalid("spec.expirationSeconds", expiration, "may not specify a duration less than 10 minutes")
        )
    elif expiration > MAX_EXPIRATION:
        problems.append(
            invalid("spec.expirationSeconds", expiration, "may not specify a duration larger than 2^32 seconds")
        )
    audiences = spec.get("audiences") or list(DEFAULT_AUDIENCES)
    if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
        problems.append(invalid("spec.audiences", audiences, "must be a list of non-empty strings"))
    if problems:
        raise errors.invalid_object("TokenRequest", AUTHENTICATION, name, problems)
    bound = _bound_object(spec.get("boundObjectRef"), namespace, bound_uid)
    try:
        issued = auth.issue_service_account_token(
            namespace, name, expiration_seconds=int(expiration), audiences=tuple(audiences), bound=bound
        )
    except LookupError:
        raise errors.not_found("serviceaccounts", "", name) from None
    answer_spec: Obj = {"audiences": list(issued.audiences), "expirationSeconds": int(expiration)}
    answer_spec["boundObjectRef"] = (
        {"kind": bound.kind, "apiVersion": bound.api_version, "name": bound.name, "uid": bound.uid} if bound else None
    )
    return _answer(
        "TokenRequest",
        f"{AUTHENTICATION}/v1",
        answer_spec,
        {
            "token": issued.token,
            "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(issued.expires)),
        },
        {"name": name, "namespace": namespace, "creationTimestamp": None},
    )


def _bound_object(ref: Any, namespace: str, bound_uid: Any) -> BoundObject | None:
    if ref is None:
        return None
    if not isinstance(ref, dict):
        raise errors.bad_request("spec.boundObjectRef must be an object")
    kind, api_version, obj_name = ref.get("kind") or "", ref.get("apiVersion") or "", ref.get("name") or ""
    if kind not in _BINDABLE or api_version != "v1":
        group, _, version = str(api_version).rpartition("/")
        raise errors.bad_request(f"cannot bind token for object of type {group}/{version}, Kind={kind}")
    uid = bound_uid(kind, namespace if _BINDABLE[kind] else "", obj_name)
    if uid is None:
        raise errors.not_found(kind.lower() + "s", "", obj_name)
    if ref.get("uid") and ref["uid"] != uid:
        raise APIError(
            409,
            "Conflict",
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
            "The object might have been deleted and then recreated",
        )
    return BoundObject(kind, "v1", obj_name, uid)
