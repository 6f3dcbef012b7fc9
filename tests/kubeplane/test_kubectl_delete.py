"""Deletion through kubectl: finalizers and deletionTimestamp, preconditions, deletecollection
with selectors, NotFound, and the namespaces that may not be deleted."""

from __future__ import annotations

import json

from kubeplane.testing import Kubectl

from .conftest import Obj, configmap, manifests, namespace, widget


async def test_finalizers_hold_deletion_until_the_last_one_is_removed(kubectl: Kubectl, widgets: Obj) -> None:
    held = configmap("held", {"k": "v"}, finalizers=["example.com/a", "example.com/b"])
    await kubectl("create", "-f", "-", stdin=manifests(held))
    out = await kubectl("delete", "cm", "held", "--wait=false")
    assert out.strip() == 'configmap "held" deleted'
    live = json.loads(await kubectl("get", "cm", "held", "-o", "json"))
    meta = live["metadata"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    assert meta["finalizers"] == ["example.com/a", "example.com/b"]
    # deleting again changes nothing; the object stays readable and its content updatable
    await kubectl("delete", "cm", "held", "--wait=false")
    again = json.loads(await kubectl("get", "cm", "held", "-o", "json"))
    assert again["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    await kubectl("patch", "cm", "held", "--type=merge", "-p", '{"data":{"k":"w"}}')
    # no new finalizers once deletion started
    res = await kubectl.run(
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/c"}]',
    )
    assert res.returncode == 1
    assert "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted" in res.stderr
    # the deletionTimestamp itself cannot be cleared by a write
    await kubectl("patch", "cm", "held", "--type=merge", "-p", '{"metadata":{"deletionTimestamp":null}}')
    assert (
        await kubectl("get", "cm", "held", "-o", "jsonpath={.metadata.deletionTimestamp}") == meta["deletionTimestamp"]
    )
    # removing one finalizer keeps it; removing the last one deletes it
    await kubectl("patch", "cm", "held", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers/0"}]')
    assert await kubectl("get", "cm", "held", "-o", "jsonpath={.metadata.finalizers}") == '["example.com/b"]'
    await kubectl("patch", "cm", "held", "--type=merge", "-p", '{"metadata":{"finalizers":[]}}')
    res = await kubectl.run("get", "cm", "held")
    assert res.returncode == 1 and 'configmaps "held" not found' in res.stderr

    # the same for a custom resource, with kubectl delete waiting for the object to go
    w = widget("w")
    w["metadata"]["finalizers"] = ["example.com/cleanup"]
    await kubectl("create", "-f", "-", stdin=manifests(w))
    await kubectl("delete", "widget", "w", "--wait=false")
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.metadata.finalizers}") == '["example.com/cleanup"]'
    await kubectl("patch", "widget", "w", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert (await kubectl.run("get", "widget", "w")).returncode == 1


async def test_delete_preconditions(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(configmap("target")))
    live = json.loads(await kubectl("get", "cm", "target", "-o", "json"))
    path = "/api/v1/namespaces/default/configmaps/target"

    async def delete_with(preconditions: Obj) -> tuple[int, str, str]:
        body = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": preconditions})
        res = await kubectl.run("delete", "--raw", path, "-f", "-", stdin=body)
        return res.returncode, res.stdout, res.stderr

    code, _, err = await delete_with({"uid": "00000000-0000-0000-0000-000000000000"})
    assert code == 1 and "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000" in err
    code, _, err = await delete_with({"resourceVersion": "1"})
    assert code == 1 and "Precondition failed: ResourceVersion in precondition: 1" in err
    assert (await kubectl.run("get", "cm", "target")).returncode == 0
    code, out, err = await delete_with(
        {"uid": live["metadata"]["uid"], "resourceVersion": live["metadata"]["resourceVersion"]}
    )
    assert code == 0, err
    status = json.loads(out)
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"] == {"name": "target", "kind": "configmaps", "uid": live["metadata"]["uid"]}
    assert (await kubectl.run("get", "cm", "target")).returncode == 1
    res = await kubectl.run("delete", "cm", "target")
    assert res.returncode == 1 and 'Error from server (NotFound): configmaps "target" not found' in res.stderr
    assert (await kubectl("delete", "cm", "target", "--ignore-not-found")).strip() == ""


async def test_delete_collection_with_selectors(kubectl: Kubectl) -> None:
    objs = [
        configmap("a1", labels={"batch": "a"}),
        configmap("a2", labels={"batch": "a"}),
        configmap("b1", labels={"batch": "b"}),
        configmap("keep"),
        configmap("hold", labels={"batch": "a"}, finalizers=["example.com/h"]),
    ]
    await kubectl("create", "-f", "-", stdin=manifests(*objs))
    base = "/api/v1/namespaces/default/configmaps"
    out = json.loads(await kubectl("delete", "--raw", f"{base}?labelSelector=batch%3Da"))
    assert out["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in out["items"]) == ["a1", "a2", "hold"]
    remaining = (await kubectl("get", "cm", "-o", "name")).split()
    assert remaining == ["configmap/b1", "configmap/hold", "configmap/keep"]
    assert await kubectl("get", "cm", "hold", "-o", "jsonpath={.metadata.deletionTimestamp}") != ""
    await kubectl("delete", "--raw", f"{base}?fieldSelector=metadata.name%3Db1")
    assert (await kubectl("get", "cm", "-o", "name")).split() == ["configmap/hold", "configmap/keep"]
    # kubectl delete -l / --all
    out = await kubectl("delete", "cm", "-l", "!batch")
    assert out.strip() == 'configmap "keep" deleted'
    await kubectl("patch", "cm", "hold", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert (await kubectl("get", "cm", "-o", "name")).strip() == ""


async def test_namespaces_that_cannot_be_deleted_and_namespace_teardown(kubectl: Kubectl) -> None:
    for name in ("default", "kube-system", "kube-public"):
        res = await kubectl.run("delete", "ns", name)
        assert res.returncode == 1, name
        assert (
            f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace may not be deleted'
            in (res.stderr)
        )
    await kubectl("create", "-f", "-", stdin=manifests(namespace("scratch")))
    await kubectl("create", "-n", "scratch", "-f", "-", stdin=manifests(configmap("one"), configmap("two")))
    out = await kubectl("delete", "ns", "scratch", "--timeout=20s")
    assert out.strip() == 'namespace "scratch" deleted'
    assert (await kubectl.run("get", "ns", "scratch")).returncode == 1
    assert (await kubectl("get", "cm", "-n", "scratch", "-o", "name")).strip() == ""
