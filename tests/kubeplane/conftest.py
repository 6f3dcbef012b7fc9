"""Shared fixtures and helpers for the kubeplane fidelity suite.

- `widgets`: a namespaced `Widget` CRD (example.com/v1) with a status and a scale
  subresource, printer columns, short name and a schema that exercises types, required,
  enum, minimum/maximum, pattern, maxLength and defaults; installed through the HTTP API and
  waited on until it is Established.
- `k8s`: a kubernetes-asyncio ApiClient for the `apiserver` fixture, closed after the test.
- `http`: a raw aiohttp session plus the server's base URL, for wire-level checks.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import new_client_from_config

from kubeplane import EmbeddedAPIServer
from tests.support.waiting import eventually  # the one bounded wait every test uses

Obj = dict[str, Any]

GROUP = "example.com"
CRD_NAME = "widgets.example.com"

WIDGET_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "string", "enum": ["small", "medium", "large"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "code": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                "color": {"type": "string", "default": "blue"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
                "phase": {"type": "string"},
                "conditions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
                    },
                },
            },
        },
    },
}

WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
            "categories": ["all"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
            }
        ],
    },
}

# A cluster-scoped kind without subresources: status is part of the main resource there.
GADGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": GROUP,
        "scope": "Cluster",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, *, size: Any = "small", labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": meta, "spec": {"size": size, **spec}}


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None, **meta: Any) -> Obj:
    metadata: Obj = {"name": name, **meta}
    if labels:
        metadata["labels"] = labels
    body: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    if data is not None:
        body["data"] = data
    return body


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def manifests(*objs: Obj) -> str:
    """A multi-document stream for `kubectl -f -`: JSON documents one after another (kubectl reads a
    stream that starts with `{` as a JSON stream), so scalars like `y` or `on` stay strings rather
    than becoming YAML 1.1 booleans."""
    return "\n".join(json.dumps(o) for o in objs) + "\n"


def to_json(obj: Obj) -> str:
    return json.dumps(obj)


@dataclass
class HTTP:
    """A raw HTTP client for the embedded server."""

    session: aiohttp.ClientSession
    base: str

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        data: bytes | str | None = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, aiohttp.ClientResponse]:
        hdrs = dict(headers or {})
        payload: bytes | str | None = data
        if body is not None:
            payload = json.dumps(body)
        if payload is not None:
            hdrs.setdefault("Content-Type", content_type)
        async with self.session.request(method, self.base + path, data=payload, headers=hdrs) as resp:
            raw = await resp.read()
            try:
                parsed: Any = json.loads(raw) if raw else None
            except ValueError:
                parsed = raw.decode(errors="replace")
            return resp.status, parsed, resp

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        return await self.request("POST", path, body=body, **kw)

    async def put(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        return await self.request("PUT", path, body=body, **kw)

    async def patch(
        self, path: str, body: Any = None, content_type: str = "application/merge-patch+json", **kw: Any
    ) -> tuple[int, Any, aiohttp.ClientResponse]:
        return await self.request("PATCH", path, body=body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        return await self.request("DELETE", path, body=body, **kw)

    async def watch_lines(self, path: str, *, until: Callable[[list[Obj]], bool], within: float = 10.0) -> list[Obj]:
        """Read watch events from `path` until `until(events)` holds or the stream ends."""
        events: list[Obj] = []

        async def read() -> None:
            async with self.session.get(self.base + path) as resp:
                assert resp.status == 200, await resp.text()
                while True:
                    line = await resp.content.readline()
                    if not line:
                        return
                    events.append(json.loads(line))
                    if until(events):
                        return

        try:
            await asyncio.wait_for(read(), within)
        except TimeoutError:
            raise AssertionError(
                f"watch {path} did not deliver the expected events within {within}s: {events}"
            ) from None
        return events


def expect_status(status: int, body: Any, code: int, reason: str) -> Obj:
    """Assert a Kubernetes Status failure body with `code` and `reason`; return it."""
    assert status == code, f"expected {code} {reason}, got {status}: {body}"
    assert isinstance(body, dict), body
    assert body.get("kind") == "Status" and body.get("apiVersion") == "v1", body
    assert body.get("status") == "Failure", body
    assert body.get("code") == code and body.get("reason") == reason, body
    return body


async def install_crd(http: HTTP, crd: Obj) -> None:
    """Create a CRD through the API and wait until it is Established and its resources are served."""
    status, body, _ = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    group = crd["spec"]["group"]
    plural = crd["spec"]["names"]["plural"]
    version = crd["spec"]["versions"][0]["name"]

    async def established() -> bool:
        st, got, _ = await http.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        )
        conds = {c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []}
        if conds.get("Established") != "True":
            return False
        st, doc, _ = await http.get(f"/apis/{group}/{version}")
        return st == 200 and any(r["name"] == plural for r in doc["resources"])

    await eventually(established, f"CRD {crd['metadata']['name']} to be established")


@pytest.fixture
async def http(apiserver: EmbeddedAPIServer) -> AsyncIterator[HTTP]:
    async with aiohttp.ClientSession() as session:
        yield HTTP(session, apiserver.url)


@pytest.fixture
async def widgets(http: HTTP) -> Obj:
    """The Widget CRD installed and established; returns (a copy of) its manifest."""
    await install_crd(http, WIDGET_CRD)
    return copy.deepcopy(WIDGET_CRD)


@pytest.fixture
async def gadgets(http: HTTP) -> Obj:
    await install_crd(http, GADGET_CRD)
    return copy.deepcopy(GADGET_CRD)


@pytest.fixture
async def k8s(apiserver: EmbeddedAPIServer) -> AsyncIterator[ApiClient]:
    """A kubernetes-asyncio client configured from the server's kubeconfig."""
    assert apiserver.kubeconfig_path is not None
    client = await new_client_from_config(config_file=str(apiserver.kubeconfig_path))
    try:
        yield client
    finally:
        await client.close()
