"""What a request asks to do, in the terms an authorizer decides on: kube-apiserver's
RequestInfoFactory (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) as a pure
function of the method, path and query.

A resource request (`/api/v1/...`, `/apis/<group>/<version>/...` with a resource) has a
verb (get, list, watch, create, update, patch, delete, deletecollection), an API group,
resource, subresource, namespace and name; anything else (discovery, `/version`,
`/healthz`, `/openapi/...`) is a non-resource request whose verb is the lowercased HTTP
method and whose object is the path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# namespace subresources: /api/v1/namespaces/<ns>/status is the namespace's, not a resource named "status"
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class RequestAttributes:
    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def _query_bool(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def _name_from_field_selector(selector: str) -> str:
    """The name a list or watch is limited to by `metadata.name=<n>` (RequiresExactMatch)."""
    for term in selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.strip().endswith("!"):
            name = value.strip()
            # path.IsValidPathSegmentName: a name usable as one path segment
            if name and name not in (".", "..") and "/" not in name and "%" not in name:
                return name
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> RequestAttributes:
    parts = [p for p in path.strip("/").split("/") if p]
    non_resource = RequestAttributes(verb=method.lower(), path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    rest = parts[1:]
    group = ""
    if parts[0] == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] == "watch":
        if len(rest) < 2:
            return non_resource  # kube-apiserver: unable to determine kind and namespace from the URL
        verb, rest = "watch", rest[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if _query_bool(query, "watch") else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(
        verb=verb,
        path=path,
        resource_request=True,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )
