"""Shared pieces for the embedded control plane's controller tests: a WD -> Instance ->
Pod style chain built from two CRDs and a pod, plus bounded waits over HTTP."""

from __future__ import annotations

from typing import Any

import aiohttp

from kubeplane import EmbeddedAPIServer
from tests.support.waiting import eventually  # the one bounded wait every test uses

GROUP = "chain.example.com"

CHAIN_CRDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: deployments.chain.example.com
spec:
  group: chain.example.com
  names: {plural: deployments, singular: deployment, kind: Deployment}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: instances.chain.example.com
spec:
  group: chain.example.com
  names: {plural: instances, singular: instance, kind: Instance}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""


def owner_ref(obj: dict[str, Any], *, block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


class Client:
    """A thin JSON client for one embedded server (raw HTTP, like any external client)."""

    def __init__(self, server: EmbeddedAPIServer, session: aiohttp.ClientSession) -> None:
        self.base = server.url
        self.session = session

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        expect: int | tuple[int, ...] = (200, 201),
    ) -> Any:
        import orjson

        data = None if body is None else orjson.dumps(body)
        async with self.session.request(
            method, self.base + path, data=data, headers={"Content-Type": content_type}
        ) as resp:
            payload = await resp.json(content_type=None)
            wanted = (expect,) if isinstance(expect, int) else expect
            assert resp.status in wanted, f"{method} {path}: {resp.status} {payload}"
            return payload

    async def get_or_none(self, path: str) -> Any:
        async with self.session.get(self.base + path) as resp:
            if resp.status == 404:
                return None
            assert resp.status == 200, f"GET {path}: {resp.status} {await resp.text()}"
            return await resp.json()


async def install_chain_crds(client: Client) -> None:
    import yaml

    for doc in yaml.safe_load_all(CHAIN_CRDS):
        await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc)

    async def established() -> bool:
        for plural in ("deployments", "instances"):
            crd = await client.get_or_none(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{GROUP}")
            conds = {c["type"]: c["status"] for c in (crd or {}).get("status", {}).get("conditions", [])}
            if conds.get("Established") != "True":
                return False
        return True

    await eventually(established, "chain CRDs established")


async def make_chain(
    client: Client, ns: str, name: str, *, instance_finalizers: list[str] | None = None, pod_image: str = "nginx:1.25"
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Deployment -> Instance -> Pod, each owned by the previous (controller, blockOwnerDeletion)."""
    dep = await client.request(
        "POST",
        f"/apis/{GROUP}/v1/namespaces/{ns}/deployments",
        {"apiVersion": f"{GROUP}/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {"replicas": 1}},
    )
    inst_meta: dict[str, Any] = {"name": f"{name}-0", "ownerReferences": [owner_ref(dep)]}
    if instance_finalizers:
        inst_meta["finalizers"] = instance_finalizers
    inst = await client.request(
        "POST",
        f"/apis/{GROUP}/v1/namespaces/{ns}/instances",
        {"apiVersion": f"{GROUP}/v1", "kind": "Instance", "metadata": inst_meta, "spec": {}},
    )
    pod = await client.request(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-0", "ownerReferences": [owner_ref(inst)]},
            "spec": {"containers": [{"name": "app", "image": pod_image}], "terminationGracePeriodSeconds": 1},
        },
    )
    return dep, inst, pod
