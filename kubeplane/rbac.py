"""RBAC authorization as kube-apiserver's RBAC authorizer decides it
(plugin/pkg/auth/authorizer/rbac): ClusterRoleBindings and the request namespace's
RoleBindings whose subjects include the user grant the rules of the role they reference;
a request is allowed when one rule covers its verb, API group, resource (or
`resource/subresource`, `*/subresource`) and name, or its non-resource URL. Members of
`system:masters` are always allowed, as kube-apiserver's privileged-group authorizer
allows them ahead of RBAC. A ClusterRole with an `aggregationRule` holds the rules of the
ClusterRoles its selectors match, as the aggregation controller would write them.

Rules are resolved per user once and kept until any Role, ClusterRole or binding changes,
so a request costs a dictionary lookup and a walk over that user's rules."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import APIError
from .requestinfo import RequestAttributes
from .selectors import label_selector_to_string, parse_label_selector
from .store import Database, ResourceStore

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
STORES = {
    "clusterroles": ((GROUP, "clusterroles"), False),
    "roles": ((GROUP, "roles"), True),
    "clusterrolebindings": ((GROUP, "clusterrolebindings"), False),
    "rolebindings": ((GROUP, "rolebindings"), True),
}
MASTERS = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, with its lists as sets for matching."""

    verbs: frozenset[str]
    api_groups: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    resource_names: frozenset[str] = frozenset()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_policy(cls, rule: Any) -> Rule | None:
        if not isinstance(rule, dict):
            return None

        def strings(key: str) -> list[str]:
            values = rule.get(key) or []
            return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []

        return cls(
            verbs=frozenset(strings("verbs")),
            api_groups=frozenset(strings("apiGroups")),
            resources=frozenset(strings("resources")),
            resource_names=frozenset(strings("resourceNames")),
            non_resource_urls=tuple(strings("nonResourceURLs")),
        )

    def policy(self) -> Obj:
        """The PolicyRule form (lists sorted for a stable answer)."""
        out: Obj = {"verbs": sorted(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = sorted(self.api_groups)
        if self.resources:
            out["resources"] = sorted(self.resources)
        if self.resource_names:
            out["resourceNames"] = sorted(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out


def rule_allows(attrs: RequestAttributes, rule: Rule) -> bool:
    """rbac's RuleAllows."""
    if not ("*" in rule.verbs or attrs.verb in rule.verbs):
        return False
    if not attrs.resource_request:
        return any(
            url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            for url in rule.non_resource_urls
        )
    if not ("*" in rule.api_groups or attrs.api_group in rule.api_groups):
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not (
        "*" in rule.resources
        or combined in rule.resources
        or (attrs.subresource and f"*/{attrs.subresource}" in rule.resources)
    ):
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


@dataclass(frozen=True)
class Grant:
    rule: Rule
    source: str  # which binding of which role to which subject: the "allowed by" reason


@dataclass
class UserRules:
    cluster: list[Grant] = field(default_factory=list)
    cluster_errors: list[str] = field(default_factory=list)
    namespaced: dict[str, list[Grant]] = field(default_factory=dict)
    namespaced_errors: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def describe_subject(subject: Obj, binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def applies_to(user: UserInfo, subject: Any, namespace: str) -> bool:
    """rbac's appliesToUser: a ServiceAccount subject without a namespace means the binding's."""
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def _message_list(errors: list[str]) -> str:
    # apimachinery's utilerrors aggregate: one error alone, several in brackets
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class RBACAuthorizer:
    def __init__(self, db: Database) -> None:
        self.stores: dict[str, ResourceStore] = {
            kind: db.store(key, namespaced) for kind, (key, namespaced) in STORES.items()
        }
        self._version: tuple[int, ...] = ()
        self._users: dict[tuple[str, tuple[str, ...]], UserRules] = {}

    # ------------------------------------------------------------ the rules a user holds
    def _current(self) -> None:
        version = tuple(store.last_rev for store in self.stores.values())
        if version != self._version:
            self._version = version
            self._users.clear()

    def rules_of(self, user: UserInfo) -> UserRules:
        self._current()
        key = (user.name, user.groups)
        found = self._users.get(key)
        if found is None:
            found = self._users[key] = self._resolve(user)
        return found

    def _role_rules(self, kind: str, namespace: str, name: str) -> list[Rule] | None:
        if kind == "ClusterRole":
            entry = self.stores["clusterroles"].get("", name)
            if entry is None:
                return None
            return self._cluster_role_rules(entry.obj)
        entry = self.stores["roles"].get(namespace, name)
        return None if entry is None else _rules(entry.obj)

    def _cluster_role_rules(self, role: Obj) -> list[Rule]:
        aggregation = role.get("aggregationRule")
        selectors = aggregation.get("clusterRoleSelectors") if isinstance(aggregation, dict) else None
        if not selectors:
            return _rules(role)
        parsed = [parse_label_selector(label_selector_to_string(s)) for s in selectors if isinstance(s, dict)]
        rules: list[Rule] = []
        for entry in self.stores["clusterroles"].iter_entries(""):
            other = entry.obj
            if other["metadata"]["name"] == role["metadata"]["name"] or other.get("aggregationRule"):
                continue
            labels = other["metadata"].get("labels") or {}
            if any(selector.matches(labels) for selector in parsed if not selector.empty()):
                rules.extend(r for r in _rules(other) if r not in rules)
        return rules

    def _resolve(self, user: UserInfo) -> UserRules:
        out = UserRules()
        for entry in self.stores["clusterrolebindings"].iter_entries(""):
            binding = entry.obj
            for subject in binding.get("subjects") or []:
                if not applies_to(user, subject, ""):
                    continue
                ref = binding.get("roleRef") or {}
                rules = self._role_rules("ClusterRole", "", str(ref.get("name", "")))
                if rules is None:
                    out.cluster_errors.append(
                        f'clusterrole.rbac.authorization.k8s.io "{ref.get("name", "")}" not found'
                    )
                    break
                source = (
                    f'ClusterRoleBinding "{binding["metadata"]["name"]}" of {ref.get("kind")} '
                    f'"{ref.get("name")}" to {describe_subject(subject, "")}'
                )
                out.cluster.extend(Grant(rule, source) for rule in rules)
                break
        for entry in self.stores["rolebindings"].iter_entries(None):
            binding = entry.obj
            namespace = binding["metadata"].get("namespace") or ""
            for subject in binding.get("subjects") or []:
                if not applies_to(user, subject, namespace):
                    continue
                ref = binding.get("roleRef") or {}
                kind = "ClusterRole" if ref.get("kind") == "ClusterRole" else "Role"
                rules = self._role_rules(kind, namespace, str(ref.get("name", "")))
                if rules is None:
                    what = "clusterrole" if kind == "ClusterRole" else "role"
                    out.namespaced_errors.setdefault(namespace, []).append(
                        f'{what}.rbac.authorization.k8s.io "{ref.get("name", "")}" not found'
                    )
                    break
                source = (
                    f'RoleBinding "{binding["metadata"]["name"]}/{namespace}" of {ref.get("kind")} '
                    f'"{ref.get("name")}" to {describe_subject(subject, namespace)}'
                )
                out.namespaced.setdefault(namespace, []).extend(Grant(rule, source) for rule in rules)
                break
        return out

    def grants(self, user: UserInfo, namespace: str) -> Iterator[Grant]:
        rules = self.rules_of(user)
        yield from rules.cluster
        if namespace:
            yield from rules.namespaced.get(namespace, ())

    def errors(self, user: UserInfo, namespace: str) -> list[str]:
        rules = self.rules_of(user)
        return rules.cluster_errors + (rules.namespaced_errors.get(namespace, []) if namespace else [])

    # ------------------------------------------------------------ decisions
    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> Decision:
        if MASTERS in user.groups:
            return Decision(True)
        for grant in self.grants(user, attrs.namespace):
            if rule_allows(attrs, grant.rule):
                return Decision(True, f"RBAC: allowed by {grant.source}")
        errors = self.errors(user, attrs.namespace)
        return Decision(False, f"RBAC: {_message_list(errors)}" if errors else "")

    def rules_review(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], str]:
        """SelfSubjectRulesReview: the resource and non-resource rules that apply in `namespace`."""
        if MASTERS in user.groups:
            return (
                [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "",
            )
        resource: list[Obj] = []
        non_resource: list[Obj] = []
        for grant in self.grants(user, namespace):
            rule = grant.rule
            if rule.resources:
                entry: Obj = {"verbs": sorted(rule.verbs), "apiGroups": sorted(rule.api_groups)}
                entry["resources"] = sorted(rule.resources)
                if rule.resource_names:
                    entry["resourceNames"] = sorted(rule.resource_names)
                resource.append(entry)
            if rule.non_resource_urls:
                non_resource.append({"verbs": sorted(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)})
        errors = self.errors(user, namespace)
        return resource, non_resource, _message_list(errors) if errors else ""


def _rules(role: Obj) -> list[Rule]:
    out = []
    for raw in role.get("rules") or []:
        rule = Rule.from_policy(raw)
        if rule is not None:
            out.append(rule)
    return out


def forbidden(user: UserInfo, attrs: RequestAttributes, reason: str) -> APIError:
    """kube-apiserver's 403 for a request the authorizer did not allow (responsewriters.Forbidden)."""
    if not attrs.resource_request:
        message = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        message = (
            f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'
        )
    if reason:
        message = f"{message}: {reason}"
    # NewForbidden: "<resource>.<group> "<name>" is forbidden: <message>"
    if not attrs.resource_request or not attrs.resource:
        return APIError(403, "Forbidden", f"forbidden: {message}", {})
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    details: Obj = {"kind": attrs.resource}
    if attrs.api_group:
        details["group"] = attrs.api_group
    if attrs.name:
        details["name"] = attrs.name
        return APIError(403, "Forbidden", f'{qualified} "{attrs.name}" is forbidden: {message}', details)
    return APIError(403, "Forbidden", f"{qualified} is forbidden: {message}", details)


def forbidden_create_on_apply(attrs: RequestAttributes, reason: str) -> APIError:
    """A server-side apply that would create an object needs `create` too; kube-apiserver's
    patch handler refuses it with the bare authorizer reason (handlers/patch.go withAuthorization)."""
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    details: Obj = {"name": attrs.name, "kind": attrs.resource}
    if attrs.api_group:
        details["group"] = attrs.api_group
    return APIError(403, "Forbidden", f'{qualified} "{attrs.name}" is forbidden: {reason}', details)


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")
