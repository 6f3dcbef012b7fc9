"""`/openapi/v2`: the Swagger 2.0 document kube-apiserver still serves next to OpenAPI v3.

kubectl falls back to it when OpenAPI v3 does not describe a kind, e.g. to decide whether
to validate a manifest client-side; without it, applying a custom resource whose CRD is not
installed failed with "the server could not find the requested resource" instead of
kubectl's "no matches for kind ... ensure CRDs are installed first".

client-go only reads the protobuf form (gnostic's openapi_v2.Document). That form carries the
document header and no paths or definitions: kubectl then finds no schema for any kind and
leaves validation to the server, which validates every write itself. The JSON form lists
every served path and schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import Obj, Registry, ResourceType

# what clients ask for; kube-openapi answers with the second spelling, since Go's mime parser
# (and so client-go) rejects the "@" in the first
PROTOBUF_V2_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
TITLE = "Kubernetes"
VERSION = "v1.32.0"


def wants_protobuf(accept: str) -> bool:
    return "protobuf" in accept


# ------------------------------------------------------------------ protobuf


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2: strings and embedded messages)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def protobuf_document() -> bytes:
    """gnostic openapi_v2.Document: swagger = 1, info = 2 (title = 1, version = 2), paths = 8."""
    info = _field(1, TITLE.encode()) + _field(2, VERSION.encode())
    return _field(1, b"2.0") + _field(2, info) + _field(8, b"")


# ------------------------------------------------------------------ JSON


_QUERY: Obj = {"in": "query", "type": "string", "uniqueItems": True}
_WRITE_PARAMS = [{"name": name, **_QUERY} for name in ("dryRun", "fieldManager", "fieldValidation")]


def json_document(registry: Registry, definition_name: Callable[[ResourceType], str]) -> Obj:
    paths: Obj = {}
    definitions: Obj = {}
    for rt in sorted(registry.all(), key=lambda r: (r.group, r.version, r.plural)):
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        name = definition_name(rt)
        schema: dict[str, Any] = dict(rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
        schema["x-kubernetes-group-version-kind"] = [gvk]
        definitions[name] = schema
        ref = {"$ref": f"#/definitions/{name}"}
        ok = {"200": {"description": "OK", "schema": ref}}
        prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
        common = {"x-kubernetes-group-version-kind": gvk, "consumes": ["*/*"], "produces": ["application/json"]}
        body = {"name": "body", "in": "body", "required": True, "schema": ref}
        paths[base] = {
            "get": {"operationId": f"list{rt.kind}", "x-kubernetes-action": "list", "responses": ok, **common},
            "post": {
                "operationId": f"create{rt.kind}",
                "x-kubernetes-action": "post",
                "parameters": [body, *_WRITE_PARAMS],
                "responses": ok,
                **common,
            },
        }
        paths[f"{base}/{{name}}"] = {
            "get": {"operationId": f"read{rt.kind}", "x-kubernetes-action": "get", "responses": ok, **common},
            "put": {
                "operationId": f"replace{rt.kind}",
                "x-kubernetes-action": "put",
                "parameters": [body, *_WRITE_PARAMS],
                "responses": ok,
                **common,
            },
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-action": "patch",
                "parameters": [
                    {"name": "body", "in": "body", "required": True, "schema": {"type": "object"}},
                    *_WRITE_PARAMS,
                    {"name": "force", **_QUERY},
                ],
                "responses": ok,
                **common,
            },
            "delete": {"operationId": f"delete{rt.kind}", "x-kubernetes-action": "delete", "responses": ok, **common},
        }
    return {
        "swagger": "2.0",
        "info": {"title": TITLE, "version": VERSION},
        "paths": paths,
        "definitions": definitions,
    }
