"""Shared pieces for the hostile-input suite: objects stored before the attack whose bytes
must come back identical afterwards, a health check, and builders for adversarial bodies.

Every hostile test starts with `guard = await stored_sentinels(http)` and ends with
`await guard.assert_intact()`: the server still answers,
still accepts an ordinary write, and serves the objects stored before byte for byte."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .conftest import HTTP, WIDGET_CRD, Obj, configmap, install_crd, widget

CMS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

# A namespaced kind whose spec keeps whatever it is given: the shape hostile nesting targets.
BLOB_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "blobs.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
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
BLOBS = "/apis/example.com/v1/namespaces/default/blobs"


def blob(name: str, spec: Any) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name}, "spec": spec}


def nested(levels: int, leaf: Any = 1) -> Any:
    """`levels` objects inside one another around `leaf` ({"a": {"a": ... leaf}})."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def nested_json(levels: int) -> str:
    """The JSON text of `nested(levels)`, built as text (no recursion to make it)."""
    return '{"a":' * levels + "1" + "}" * levels


@dataclass
class Sentinels:
    http: HTTP
    stored: dict[str, bytes] = field(default_factory=dict)

    async def raw(self, path: str) -> tuple[int, bytes]:
        async with self.http.session.get(self.http.base + path) as resp:
            return resp.status, await resp.read()

    async def record(self, path: str, body: Obj) -> None:
        status, created, _ = await self.http.post(path, body)
        assert status == 201, created
        item = f"{path}/{body['metadata']['name']}"
        code, raw = await self.raw(item)
        assert code == 200, raw
        self.stored[item] = raw

    async def assert_intact(self) -> None:
        """The server is healthy, writable, and serves every object stored before unchanged."""
        code, raw = await self.raw("/healthz")
        assert (code, raw) == (200, b"ok")
        for path, before in self.stored.items():
            code, now = await self.raw(path)
            assert code == 200, now
            assert now == before, f"{path} changed:\nbefore {before[:300]!r}\nnow    {now[:300]!r}"
        status, body, _ = await self.http.post(CMS, configmap("after-the-storm", data={"ok": "yes"}))
        assert status == 201, body
        status, body, _ = await self.http.delete(f"{CMS}/after-the-storm")
        assert status == 200, body


async def stored_sentinels(http: HTTP) -> Sentinels:
    """A ConfigMap, a Widget and a Blob stored before any hostile request (CRDs installed)."""
    await install_crd(http, WIDGET_CRD)
    await install_crd(http, BLOB_CRD)
    guard = Sentinels(http)
    await guard.record(CMS, configmap("sentinel", data={"k": "v"}, labels={"keep": "me"}))
    await guard.record(WIDGETS, widget("sentinel", size="medium", tags=["a", "b"]))
    await guard.record(BLOBS, blob("sentinel", {"deep": nested(20), "list": [1, "two", {"three": 3}]}))
    return guard


def dumps(value: Any) -> str:
    return json.dumps(value)
