"""Garbage collection through two levels of ownership (Deployment -> Instance -> Pod with
CRDs), driven by kubectl's --cascade flags as a user would, checked over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .plane_support import GROUP, Client, eventually, install_chain_crds, make_chain, owner_ref

INST = f"/apis/{GROUP}/v1/namespaces/default/instances"
DEPL = f"/apis/{GROUP}/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def client(apiserver: EmbeddedAPIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        c = Client(apiserver, session)
        await install_chain_crds(c)
        yield c


async def _gone(client: Client, path: str) -> bool:
    return await client.get_or_none(path) is None


async def test_background_cascade_removes_both_levels(client: Client, kubectl: Kubectl) -> None:
    await make_chain(client, "default", "web")
    out = await kubectl("delete", f"deployments.{GROUP}", "web", "--cascade=background")
    assert f'deployment.{GROUP} "web" deleted' in out
    assert await _gone(client, f"{DEPL}/web"), "a background delete removes the owner at once"
    await eventually(lambda: _gone(client, f"{INST}/web-0"), "the Instance to be collected")
    await eventually(lambda: _gone(client, f"{PODS}/web-0"), "the Pod to be collected")


async def test_foreground_cascade_waits_for_dependent_finalizer(client: Client, kubectl: Kubectl) -> None:
    await make_chain(client, "default", "api", instance_finalizers=["chain.example.com/hold"])
    await kubectl("delete", f"deployments.{GROUP}", "api", "--cascade=foreground", "--wait=false")

    owner = await client.get_or_none(f"{DEPL}/api")
    assert owner is not None, "a foreground delete keeps the owner until blocking dependents are gone"
    assert owner["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in owner["metadata"]["finalizers"]

    # the Instance is deleted in foreground too (it has a dependent), its Pod goes first,
    # and the Instance itself then waits for its own finalizer
    await eventually(lambda: _gone(client, f"{PODS}/api-0"), "the Pod (second level) to be deleted")

    async def instance_held() -> bool:
        inst = await client.get_or_none(f"{INST}/api-0")
        return bool(
            inst
            and inst["metadata"].get("deletionTimestamp")
            and inst["metadata"].get("finalizers") == ["chain.example.com/hold"]
        )

    await eventually(instance_held, "the Instance marked, held only by its own finalizer")
    assert await client.get_or_none(f"{DEPL}/api") is not None, "owner must wait for the blocking dependent"

    await kubectl("patch", f"instances.{GROUP}", "api-0", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    await eventually(lambda: _gone(client, f"{INST}/api-0"), "the Instance to go once its finalizer is removed")
    await eventually(lambda: _gone(client, f"{DEPL}/api"), "the owner to go after its blocking dependent")


async def test_foreground_kubectl_waits_until_everything_is_gone(client: Client, kubectl: Kubectl) -> None:
    await make_chain(client, "default", "fg")
    await kubectl("delete", f"deployments.{GROUP}", "fg", "--cascade=foreground", "--timeout=20s")
    # kubectl's default --wait=true returned: by then the owner is gone, which foreground
    # deletion only allows after the blocking Instance (and so its Pod) are gone
    for path in (f"{DEPL}/fg", f"{INST}/fg-0", f"{PODS}/fg-0"):
        assert await client.get_or_none(path) is None, path


async def test_orphan_cascade_keeps_dependents_and_strips_owner(client: Client, kubectl: Kubectl) -> None:
    dep, inst, _ = await make_chain(client, "default", "orph")
    await kubectl("delete", f"deployments.{GROUP}", "orph", "--cascade=orphan")
    assert await _gone(client, f"{DEPL}/orph")

    async def orphaned() -> bool:
        obj = await client.get_or_none(f"{INST}/orph-0")
        return obj is not None and not obj["metadata"].get("ownerReferences")

    await eventually(orphaned, "the Instance to lose its reference to the deleted owner")
    pod = await client.get_or_none(f"{PODS}/orph-0")
    assert pod is not None, "the second level is untouched"
    assert [r["uid"] for r in pod["metadata"]["ownerReferences"]] == [inst["metadata"]["uid"]]
    assert dep["metadata"]["uid"] not in str(await client.get_or_none(f"{INST}/orph-0"))


async def test_wrong_kind_or_dead_uid_points_at_nothing(client: Client) -> None:
    dep = await client.request(
        "POST", DEPL, {"apiVersion": f"{GROUP}/v1", "kind": "Deployment", "metadata": {"name": "real"}}
    )
    good = owner_ref(dep)
    wrong_kind = dict(good, apiVersion="v1", kind="ConfigMap")  # served kind, but no such ConfigMap
    dead_uid = dict(good, uid="00000000-0000-0000-0000-000000000000")
    for name, ref in (("ok", good), ("wrongkind", wrong_kind), ("deaduid", dead_uid)):
        await client.request(
            "POST",
            INST,
            {"apiVersion": f"{GROUP}/v1", "kind": "Instance", "metadata": {"name": name, "ownerReferences": [ref]}},
        )
    await eventually(lambda: _gone(client, f"{INST}/wrongkind"), "a wrong-kind reference to be treated as absent")
    await eventually(lambda: _gone(client, f"{INST}/deaduid"), "a dead-uid reference to be treated as absent")
    assert await client.get_or_none(f"{INST}/ok") is not None, "a correct reference keeps the dependent"


async def test_reference_to_unserved_kind_waits_until_it_resolves(client: Client) -> None:
    ghost = {"apiVersion": "later.example.com/v1", "kind": "Widget", "name": "w", "uid": "1234", "controller": True}
    await client.request(
        "POST",
        INST,
        {"apiVersion": f"{GROUP}/v1", "kind": "Instance", "metadata": {"name": "waits", "ownerReferences": [ghost]}},
    )
    # a second, resolvable dependent proves the collector has run past this object
    await client.request(
        "POST",
        INST,
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Instance",
            "metadata": {
                "name": "marker",
                "ownerReferences": [dict(ghost, apiVersion="v1", kind="ConfigMap", name="nope")],
            },
        },
    )
    await eventually(lambda: _gone(client, f"{INST}/marker"), "the resolvable dangling dependent to go")
    assert await client.get_or_none(f"{INST}/waits") is not None, "an unresolvable owner kind is not 'absent'"

    await client.request(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.later.example.com"},
            "spec": {
                "group": "later.example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
                ],
            },
        },
    )
    await eventually(lambda: _gone(client, f"{INST}/waits"), "the dependent to go once the kind resolves")


async def test_one_solid_owner_keeps_dependent_and_drops_dangling_reference(client: Client) -> None:
    a = await client.request(
        "POST", DEPL, {"apiVersion": f"{GROUP}/v1", "kind": "Deployment", "metadata": {"name": "a"}}
    )
    b = await client.request(
        "POST", DEPL, {"apiVersion": f"{GROUP}/v1", "kind": "Deployment", "metadata": {"name": "b"}}
    )
    refs = [dict(owner_ref(a), controller=False), dict(owner_ref(b), controller=False)]
    await client.request(
        "POST",
        INST,
        {"apiVersion": f"{GROUP}/v1", "kind": "Instance", "metadata": {"name": "shared", "ownerReferences": refs}},
    )
    await client.request("DELETE", f"{DEPL}/a")

    async def only_b() -> bool:
        obj = await client.get_or_none(f"{INST}/shared")
        assert obj is not None, "a dependent with a live owner must never be collected"
        return [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["b"]

    await eventually(only_b, "the reference to the deleted owner to be removed")
