"""Discovery documents (`/api`, `/apis`, group and group-version resource lists,
aggregated discovery v2), OpenAPI v3 per group-version and OpenAPI v2, cached per registry
generation so CRD changes show up immediately and steady-state requests are cheap."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .openapiv2 import json_document, protobuf_document
from .registry import Obj, Registry, ResourceType

KUBE_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kubeplane",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


class Discovery:
    def __init__(self, registry: Registry, address: str = "") -> None:
        self.registry = registry
        self.address = address
        self._cache: dict[str, bytes] = {}
        self._generation = -1

    def _cached(self, key: str, build: Any, *, encode: bool = True) -> bytes:
        if self._generation != self.registry.generation:
            self._cache.clear()
            self._generation = self.registry.generation
        body = self._cache.get(key)
        if body is None:
            built = build()
            body = self._cache[key] = orjson.dumps(built) if encode else built
        return body

    # ------------------------------------------------------------ legacy discovery
    def core_versions(self) -> bytes:
        return self._cached(
            "/api",
            lambda: {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}],
            },
        )

    def group_list(self) -> bytes:
        def build() -> Obj:
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [self._group(g) for g in self.registry.groups() if g],
            }

        return self._cached("/apis", build)

    def group(self, group: str) -> bytes | None:
        if group not in self.registry.groups() or not group:
            return None
        return self._cached(f"/apis/{group}", lambda: {"kind": "APIGroup", "apiVersion": "v1", **self._group(group)})

    def _group(self, group: str) -> Obj:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.registry.versions(group)]
        preferred = self.registry.preferred_version(group)
        return {
            "name": group,
            "versions": versions,
            "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred},
        }

    def resource_list(self, group: str, version: str) -> bytes | None:
        if not self.registry.has_group_version(group, version):
            return None
        gv = f"{group}/{version}" if group else version

        def build() -> Obj:
            resources: list[Obj] = []
            for rt in sorted(self.registry.in_group_version(group, version), key=lambda r: r.plural):
                resources.extend(_api_resources(rt))
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

        return self._cached(f"/rl/{gv}", build)

    # ------------------------------------------------------------ aggregated discovery
    def aggregated(self, legacy: bool) -> bytes:
        def build() -> Obj:
            groups = [""] if legacy else [g for g in self.registry.groups() if g]
            items = []
            for group in groups:
                versions = []
                for version in self.registry.versions(group):
                    resources = [
                        _aggregated_resource(rt)
                        for rt in sorted(self.registry.in_group_version(group, version), key=lambda r: r.plural)
                    ]
                    versions.append({"version": version, "resources": resources, "freshness": "Current"})
                item: Obj = {"metadata": {"name": group} if group else {}, "versions": versions}
                items.append(item)
            return {
                "kind": "APIGroupDiscoveryList",
                "apiVersion": "apidiscovery.k8s.io/v2",
                "metadata": {},
                "items": items,
            }

        return self._cached("agg-core" if legacy else "agg-apis", build)

    # ------------------------------------------------------------ OpenAPI v3
    def openapi_root(self) -> bytes:
        def build() -> Obj:
            paths = {}
            for group in self.registry.groups():
                for version in self.registry.versions(group):
                    rel = f"api/{version}" if not group else f"apis/{group}/{version}"
                    digest = self._openapi_hash(group, version)
                    paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
            return {"paths": paths}

        return self._cached("openapi-root", build)

    def _openapi_hash(self, group: str, version: str) -> str:
        return hashlib.sha512(self.openapi_gv(group, version) or b"").hexdigest().upper()[:128]

    def openapi_v2(self, *, protobuf: bool) -> bytes:
        if protobuf:
            return self._cached("openapi-v2-pb", protobuf_document, encode=False)
        return self._cached("openapi-v2", lambda: json_document(self.registry, schema_name))

    def openapi_gv(self, group: str, version: str) -> bytes | None:
        if not self.registry.has_group_version(group, version):
            return None
        return self._cached(f"openapi/{group}/{version}", lambda: _openapi_document(self.registry, group, version))


def _api_resources(rt: ResourceType) -> list[Obj]:
    main: Obj = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    if not rt.virtual:
        main["storageVersionHash"] = hashlib.sha256(f"{rt.group}/{rt.storage_version}/{rt.kind}".encode()).hexdigest()[
            :11
        ]
    out = [main]
    for sub in rt.subresources:
        entry: Obj = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced}
        if sub == "scale":
            entry.update(group="autoscaling", version="v1", kind="Scale", verbs=["get", "patch", "update"])
        elif sub == "token":
            entry.update(group="authentication.k8s.io", version="v1", kind="TokenRequest", verbs=["create"])
        elif sub == "finalize":
            entry.update(kind=rt.kind, verbs=["update"])
        else:
            entry.update(kind=rt.kind, verbs=["get", "patch", "update"])
        out.append(entry)
    return out


def _aggregated_resource(rt: ResourceType) -> Obj:
    out: Obj = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        if sub == "scale":
            subs.append(
                {
                    "subresource": "scale",
                    "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                    "verbs": ["get", "patch", "update"],
                }
            )
        elif sub == "token":
            subs.append(
                {
                    "subresource": "token",
                    "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
                    "verbs": ["create"],
                }
            )
        elif sub == "finalize":
            subs.append(
                {
                    "subresource": "finalize",
                    "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                    "verbs": ["update"],
                }
            )
        else:
            subs.append(
                {
                    "subresource": sub,
                    "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                    "verbs": ["get", "patch", "update"],
                }
            )
    if subs:
        out["subresources"] = subs
    return out


def schema_name(rt: ResourceType) -> str:
    if rt.custom:
        return ".".join(reversed(rt.group.split("."))) + f".{rt.version}.{rt.kind}"
    group = rt.group.split(".")[0] if rt.group else "core"
    return f"io.k8s.api.{group}.{rt.version}.{rt.kind}"


_QUERY = {"in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _param(name: str, description: str) -> Obj:
    return {"name": name, "description": description, **_QUERY}


_WRITE_PARAMS = [
    _param("dryRun", "When present, indicates that modifications should not be persisted."),
    _param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
    _param(
        "fieldValidation",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields: Ignore, Warn or Strict.",
    ),
]


def _openapi_document(registry: Registry, group: str, version: str) -> Obj:
    prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    paths: Obj = {}
    schemas: Obj = {}
    for rt in registry.in_group_version(group, version):
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        name = schema_name(rt)
        ref = {"$ref": f"#/components/schemas/{name}"}
        schema = dict(rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
        schema["x-kubernetes-group-version-kind"] = [gvk]
        schemas[name] = schema
        base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
        body = {"content": {"application/json": {"schema": ref}}}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        patch_types = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        item_ops: Obj = {
            "get": {
                "operationId": f"read{rt.kind}",
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
                "responses": ok,
            },
            "put": {
                "operationId": f"replace{rt.kind}",
                "x-kubernetes-action": "put",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _WRITE_PARAMS,
                "requestBody": body,
                "responses": ok,
            },
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [*_WRITE_PARAMS, _param("force", 'Force is going to "force" Apply requests.')],
                "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in patch_types}},
                "responses": ok,
            },
            "delete": {
                "operationId": f"delete{rt.kind}",
                "x-kubernetes-action": "delete",
                "x-kubernetes-group-version-kind": gvk,
                "responses": ok,
            },
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        }
        collection_ops: Obj = {
            "get": {
                "operationId": f"list{rt.kind}",
                "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}},
            },
            "post": {
                "operationId": f"create{rt.kind}",
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _WRITE_PARAMS,
                "requestBody": body,
                "responses": ok,
            },
        }
        paths[base] = collection_ops
        paths[f"{base}/{{name}}"] = item_ops
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
