"""CustomResourceDefinitions through kubectl: registration serves the kind with its scope,
names, printer columns and subresources; openAPIV3Schema validation, defaulting and
pruning; generation rules; strategic merge refused; deletion unserves the kind."""

from __future__ import annotations

import copy
import json

from kubeplane.testing import Kubectl

from .conftest import WIDGET_CRD, Obj, eventually, manifests, widget


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


async def test_crd_registration_serves_the_kind_and_deletion_removes_it(kubectl: Kubectl) -> None:
    out = await kubectl("apply", "-f", "-", stdin=manifests(WIDGET_CRD))
    assert out.strip() == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    out = await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    assert "condition met" in out
    crd = json.loads(await kubectl("get", "crd", "widgets.example.com", "-o", "json"))
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds["NamesAccepted"] == "True" and conds["Established"] == "True"

    rows = _rows(await kubectl("api-resources", "--api-group=example.com", "-o", "wide", "--no-headers"))
    assert rows == [
        [
            "widgets",
            "wd",
            "example.com/v1",
            "true",
            "Widget",
            "create,delete,deletecollection,get,list,patch,update,watch",
            "all",
        ]
    ]
    doc = json.loads(await kubectl("get", "--raw", "/apis/example.com/v1"))
    res = {r["name"]: r for r in doc["resources"]}
    assert res["widgets"]["kind"] == "Widget" and res["widgets"]["singularName"] == "widget"
    assert res["widgets"]["shortNames"] == ["wd"] and res["widgets"]["categories"] == ["all"]
    assert res["widgets/status"]["verbs"] == ["get", "patch", "update"]
    assert res["widgets/scale"]["kind"] == "Scale" and res["widgets/scale"]["group"] == "autoscaling"

    await kubectl(
        "create",
        "-f",
        "-",
        stdin=manifests(widget("small-one"), widget("big-one", size="large", replicas=3)),
    )
    table = _rows(await kubectl("get", "wd"))
    assert table[0] == ["NAME", "SIZE", "REPLICAS", "PHASE", "AGE"]
    assert [r[:3] for r in table[1:]] == [["big-one", "large", "3"], ["small-one", "small", "1"]]
    assert "widget.example.com/big-one" in (await kubectl("get", "all", "-o", "name")).split()
    described = await kubectl("describe", "widget", "big-one")
    assert "Kind:         Widget" in described and "Size:      large" in described

    out = await kubectl("delete", "crd", "widgets.example.com", "--timeout=20s")
    assert out.strip() == 'customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted'
    assert (await kubectl.run("get", "crd", "widgets.example.com")).returncode == 1
    # (this kubectl's discovery cache still lists widgets, so it asks and is told they are gone)
    gone = await kubectl.run("get", "widgets")
    assert gone.returncode == 1 and "the server could not find the requested resource" in gone.stderr
    assert "widgets.example.com" not in (await kubectl("api-resources", "--cached=false", "-o", "name")).split()
    raw = await kubectl.run("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets")
    assert raw.returncode == 1 and "NotFound" in raw.stderr
    # re-creating the CRD serves an empty collection: the instances went with it
    await kubectl("apply", "-f", "-", stdin=manifests(WIDGET_CRD))
    await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    assert (await kubectl("get", "widgets", "-o", "name")).strip() == ""


async def test_schema_validation_defaults_and_pruning(kubectl: Kubectl, widgets: Obj) -> None:
    bad = widget("bad", size="huge", replicas=11, code="ABCDEFG", color=5)
    res = await kubectl.run("create", "-f", "-", stdin=manifests(bad))
    assert res.returncode == 1
    err = res.stderr
    assert 'The Widget "bad" is invalid:' in err
    assert 'spec.size: Unsupported value: "huge": supported values: "small", "medium", "large"' in err
    assert "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10" in err
    assert "spec.code: Too long: may not be more than 5 bytes" in err
    assert "spec.code: Invalid value: \"ABCDEFG\": spec.code in body should match '^[a-z]+$'" in err
    assert 'spec.color: Invalid value: 5: spec.color in body must be of type string: "integer"' in err

    missing = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "m"}, "spec": {"replicas": -1}}
    res = await kubectl.run("create", "-f", "-", stdin=manifests(missing))
    assert res.returncode == 1
    assert "spec.size: Required value" in res.stderr
    assert "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0" in res.stderr
    assert (await kubectl("get", "widgets", "-o", "name")).strip() == ""

    # defaults from the schema are applied on create
    await kubectl("create", "-f", "-", stdin=manifests(widget("d")))
    got = json.loads(await kubectl("get", "widget", "d", "-o", "json"))
    assert got["spec"] == {"size": "small", "replicas": 1, "color": "blue"}

    # unknown fields: kubectl validates strictly on the server, so they are an error...
    extra = widget("x")
    extra["spec"]["bogus"] = True
    res = await kubectl.run("create", "-f", "-", stdin=manifests(extra))
    assert res.returncode == 1 and 'unknown field "spec.bogus"' in res.stderr
    # ...and without validation they are pruned
    out = await kubectl("create", "--validate=false", "-f", "-", stdin=manifests(extra))
    assert out.strip() == "widget.example.com/x created"
    assert "bogus" not in json.loads(await kubectl("get", "widget", "x", "-o", "json"))["spec"]

    # custom resources have no unconditional update: a PUT must carry the resourceVersion...
    path = "/apis/example.com/v1/namespaces/default/widgets/d"
    unversioned = json.dumps(widget("d", size="large") | {"metadata": {"name": "d", "namespace": "default"}})
    res = await kubectl.run("replace", "--raw", path, "-f", "-", stdin=unversioned)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'The widgets "d" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update'
    )
    # ...which is why kubectl replace reads the live resourceVersion into a manifest that has none
    out = await kubectl("replace", "-f", "-", stdin=manifests(widget("d", size="large")))
    assert out.strip() == "widget.example.com/d replaced"
    assert await kubectl("get", "widget", "d", "-o", "jsonpath={.spec.size}") == "large"

    # updates are validated as well
    res = await kubectl.run("patch", "widget", "d", "--type=merge", "-p", '{"spec":{"size":"tiny"}}')
    assert res.returncode == 1 and 'spec.size: Unsupported value: "tiny"' in res.stderr
    res = await kubectl.run("patch", "widget", "d", "--type=json", "-p", '[{"op":"remove","path":"/spec/size"}]')
    assert res.returncode == 1 and "spec.size: Required value" in res.stderr


async def test_strategic_merge_patch_is_refused_for_custom_resources(kubectl: Kubectl, widgets: Obj) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(widget("w")))
    for args in (("-p", '{"spec":{"size":"large"}}'), ("--type=strategic", "-p", '{"spec":{"size":"large"}}')):
        res = await kubectl.run("patch", "widget", "w", *args)
        assert res.returncode == 1
        assert "application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget" in res.stderr
        assert "the body of the request was in an unknown format - accepted media types include" in res.stderr
    out = await kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"size":"large"}}')
    assert out.strip() == "widget.example.com/w patched"
    # client-side apply falls back to a JSON merge patch for custom resources
    await kubectl("apply", "-f", "-", stdin=manifests(widget("w", size="medium")))
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.size}") == "medium"


async def test_generation_of_custom_resources(kubectl: Kubectl, widgets: Obj, gadgets: Obj) -> None:
    # with a status subresource: any change outside metadata and status bumps generation
    await kubectl("create", "-f", "-", stdin=manifests(widget("w")))
    gen = "jsonpath={.metadata.generation}"
    assert await kubectl("get", "widget", "w", "-o", gen) == "1"
    await kubectl("label", "widget", "w", "a=b")
    await kubectl("patch", "widget", "w", "--type=merge", "-p", '{"status":{"phase":"Ignored"}}')
    assert await kubectl("get", "widget", "w", "-o", gen) == "1"
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.status}") == ""
    await kubectl("patch", "widget", "w", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Up"}}')
    assert await kubectl("get", "widget", "w", "-o", gen) == "1"
    await kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"size":"large"}}')
    assert await kubectl("get", "widget", "w", "-o", gen) == "2"

    # without one (and cluster-scoped): status is ordinary content, and changing it bumps generation
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"a": 1}}
    out = await kubectl("create", "-f", "-", stdin=manifests(gadget))
    assert out.strip() == "gadget.example.com/g created"
    got = json.loads(await kubectl("get", "gadget", "g", "-o", "json"))
    assert "namespace" not in got["metadata"] and got["metadata"]["generation"] == 1
    await kubectl("patch", "gadget", "g", "--type=merge", "-p", '{"status":{"ok":true}}')
    got = json.loads(await kubectl("get", "gadget", "g", "-o", "json"))
    assert got["status"] == {"ok": True} and got["metadata"]["generation"] == 2
    await kubectl("annotate", "gadget", "g", "note=x")
    assert await kubectl("get", "gadget", "g", "-o", gen) == "2"
    res = await kubectl.run("patch", "gadget", "g", "--subresource=status", "--type=merge", "-p", "{}")
    assert res.returncode == 1 and "NotFound" in res.stderr


async def test_crd_update_adds_a_served_version_and_columns(kubectl: Kubectl, widgets: Obj) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(widget("old", size="medium")))
    updated = copy.deepcopy(widgets)
    v1 = updated["spec"]["versions"][0]
    v1["additionalPrinterColumns"].insert(0, {"name": "Color", "type": "string", "jsonPath": ".spec.color"})
    v2 = copy.deepcopy(v1)
    v2["name"] = "v2"
    v1["storage"] = False
    updated["spec"]["versions"].append(v2)
    live = json.loads(await kubectl("get", "crd", "widgets.example.com", "-o", "json"))
    updated["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    await kubectl("replace", "-f", "-", stdin=json.dumps(updated))
    crd = json.loads(await kubectl("get", "crd", "widgets.example.com", "-o", "json"))
    assert crd["metadata"]["generation"] == 2 and crd["status"]["storedVersions"] == ["v1", "v2"]

    async def served() -> bool:
        return "example.com/v2" in (await kubectl("api-versions")).split()

    await eventually(served, "example.com/v2 to be served")
    group = json.loads(await kubectl("get", "--raw", "/apis/example.com"))
    assert group["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    # the object stored as v1 reads as either version; the new column shows
    as_v2 = json.loads(await kubectl("get", "widgets.v2.example.com", "old", "-o", "json"))
    assert as_v2["apiVersion"] == "example.com/v2" and as_v2["spec"]["size"] == "medium"
    as_v1 = json.loads(await kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/old"))
    assert as_v1["apiVersion"] == "example.com/v1"
    assert _rows(await kubectl("get", "widgets.v1.example.com"))[0][:3] == ["NAME", "COLOR", "SIZE"]
    # writes through either version land in the one store
    await kubectl("create", "-f", "-", stdin=manifests(widget("new") | {"apiVersion": "example.com/v2"}))
    names = await kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets")
    listed = json.loads(names)
    assert [(i["metadata"]["name"], i["apiVersion"]) for i in listed["items"]] == [
        ("new", "example.com/v1"),
        ("old", "example.com/v1"),
    ]
