"""kubectl 1.32 behaviours the embedded server serves: `/openapi/v2` (so applying a custom
resource without its CRD gets kubectl's own "ensure CRDs are installed first"), CRD
`selectableFields` (custom resource field selectors, GA in 1.32), the Warning a deprecated
CRD version sends on every request, and apps/v1 Deployments counting annotation changes in
their generation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubeplane.testing import Kubectl

from .conftest import HTTP, Obj, expect_status, install_crd, manifests

SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "blue"]},
                "size": {"type": "integer"},
                "shiny": {"type": "boolean"},
                "zone": {"type": "string", "format": "hostname"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "meta": {"type": "object", "properties": {"owner": {"type": "string"}}},
            },
        }
    },
}


def gizmo_crd(**version_fields: Any) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}, **version_fields}
            ],
        },
    }


def gizmo(name: str, version: str = "v1", **spec: Any) -> Obj:
    return {"apiVersion": f"example.com/{version}", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}


SELECTABLE = [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.shiny"}]


# ------------------------------------------------------------------ /openapi/v2


async def test_openapi_v2_is_served_as_json_and_protobuf(http: HTTP) -> None:
    status, doc, _ = await http.get("/openapi/v2")
    assert status == 200 and doc["swagger"] == "2.0"
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "io.k8s.api.core.v1.ConfigMap" in doc["definitions"]
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    async with http.session.get(http.base + "/openapi/v2", headers={"Accept": accept}) as resp:
        assert resp.status == 200
        # the spelling Go's mime parser accepts (kube-openapi's answer to the "@" form)
        assert resp.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        body = await resp.read()
    # swagger = 1 ("2.0"), then info = 2 with its title
    assert body.startswith(b"\n\x032.0\x12") and b"Kubernetes" in body


async def test_kubectl_names_a_missing_crd(kubectl: Kubectl) -> None:
    for verb in ("apply", "create"):
        res = await kubectl.run(verb, "-f", "-", stdin=manifests(gizmo("orphan")))
        assert res.returncode == 1
        # it used to read "error validating data: the server could not find the requested resource"
        assert 'no matches for kind "Gizmo" in version "example.com/v1"' in res.stderr, res.stderr
        assert "ensure CRDs are installed first" in res.stderr
    res = await kubectl.run("get", "gizmos")
    assert res.returncode == 1
    assert res.stderr.strip().endswith('error: the server doesn\'t have a resource type "gizmos"'), res.stderr


# ------------------------------------------------------------------ selectableFields


async def test_selectable_fields_filter_custom_resources(kubectl: Kubectl, http: HTTP) -> None:
    await install_crd(http, gizmo_crd(selectableFields=SELECTABLE))
    await kubectl(
        "create",
        "-f",
        "-",
        stdin=manifests(
            gizmo("a", color="red", size=1, shiny=True),
            gizmo("b", color="blue", size=2, shiny=False),
            gizmo("c", color="red", size=2),
        ),
    )

    async def names(selector: str) -> list[str]:
        out = await kubectl("get", "gizmos", "--field-selector", selector, "-o", "name")
        return [line.split("/")[1] for line in out.split()]

    assert await names("spec.color=red") == ["a", "c"]
    assert await names("spec.color!=red") == ["b"]
    assert await names("spec.size=2,spec.color=red") == ["c"]
    assert await names("spec.shiny=true") == ["a"]
    assert await names("spec.shiny=false") == ["b"]
    assert await names("metadata.name=b") == ["b"]
    # an absent field selects as the empty string
    assert await names("spec.shiny=") == ["c"]
    res = await kubectl.run("get", "gizmos", "--field-selector", "spec.tags=x")
    assert res.returncode == 1 and "field label not supported: spec.tags" in res.stderr
    # watches filter the same way
    events = await http.watch_lines(
        "/apis/example.com/v1/namespaces/default/gizmos?watch=1&fieldSelector=spec.color%3Dblue",
        until=lambda evs: len(evs) >= 1,
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["b"]


@pytest.mark.parametrize(
    ("fields", "causes"),
    [
        (
            [{"jsonPath": ".spec.tags"}],
            [
                (
                    "spec.versions[0].selectableFields[0].jsonPath",
                    'Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. '
                    "Enum string fields and strings with formats are allowed.",
                )
            ],
        ),
        (
            [{"jsonPath": ".spec.nope"}],
            [
                (
                    "spec.versions[0].selectableFields[0].jsonPath",
                    'Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field',
                )
            ],
        ),
        (
            [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}],
            [("spec.versions[0].selectableFields[1].jsonPath", 'Duplicate value: ".spec.color"')],
        ),
        ([{"jsonPath": ""}], [("spec.versions[0].selectableFields[0].jsonPath", "Required value")]),
        (
            [{"jsonPath": ".spec.tags[0]"}],
            [
                (
                    "spec.versions[0].selectableFields[0].jsonPath",
                    'Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed',
                )
            ],
        ),
    ],
)
async def test_invalid_selectable_fields_are_refused(
    http: HTTP, fields: list[Obj], causes: list[tuple[str, str]]
) -> None:
    status, body, _ = await http.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gizmo_crd(selectableFields=fields)
    )
    err = expect_status(status, body, 422, "Invalid")
    assert [(c["field"], c["message"]) for c in err["details"]["causes"]] == causes


async def test_at_most_eight_selectable_fields(http: HTTP) -> None:
    schema = copy.deepcopy(SCHEMA)
    props = schema["properties"]["spec"]["properties"]
    for i in range(9):
        props[f"f{i}"] = {"type": "string"}
    crd = gizmo_crd(selectableFields=[{"jsonPath": f".spec.f{i}"} for i in range(9)])
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
    status, body, _ = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    err = expect_status(status, body, 422, "Invalid")
    assert [(c["field"], c["message"]) for c in err["details"]["causes"]] == [
        ("spec.versions[0].selectableFields", "Too many: 9: must have at most 8 items")
    ]


# ------------------------------------------------------------------ deprecated versions


def two_version_crd(**v1_fields: Any) -> Obj:
    crd = gizmo_crd(deprecated=True, **v1_fields)
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"].append(
        {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}
    )
    return crd


async def test_a_deprecated_version_warns_on_every_request(kubectl: Kubectl, http: HTTP) -> None:
    await install_crd(http, two_version_crd())
    warning = "example.com/v1 Gizmo is deprecated; use example.com/v2 Gizmo"
    res = await kubectl.run("create", "-f", "-", stdin=manifests(gizmo("old", color="red")))
    assert res.returncode == 0, res.stderr
    assert f"Warning: {warning}" in res.stderr
    res = await kubectl.run("get", "gizmos.v1.example.com", "old")
    assert res.returncode == 0 and f"Warning: {warning}" in res.stderr
    # the served, non-deprecated version is quiet
    res = await kubectl.run("get", "gizmos.v2.example.com", "old")
    assert res.returncode == 0 and "Warning" not in res.stderr
    v1 = "/apis/example.com/v1/namespaces/default/gizmos"
    expected = f'299 - "{warning}"'
    status, _, resp = await http.get(f"{v1}/old")
    assert status == 200 and resp.headers.getall("Warning") == [expected]
    # errors and watches carry it too
    status, body, resp = await http.get(f"{v1}/missing")
    expect_status(status, body, 404, "NotFound")
    assert resp.headers.getall("Warning") == [expected]
    async with http.session.get(f"{http.base}{v1}?watch=1&timeoutSeconds=1") as watch:
        assert watch.headers.getall("Warning") == [expected]


async def test_a_custom_deprecation_warning_is_sent_as_written(http: HTTP) -> None:
    await install_crd(http, two_version_crd(deprecationWarning='gizmos/v1 goes away in 2027; "move" now'))
    status, _, resp = await http.get("/apis/example.com/v1/namespaces/default/gizmos")
    assert status == 200
    assert resp.headers.getall("Warning") == ['299 - "gizmos/v1 goes away in 2027; \\"move\\" now"']


# ------------------------------------------------------------------ Deployment generation


DEPLOYMENT: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    },
}


async def test_deployment_generation_counts_annotation_changes(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(DEPLOYMENT))

    async def generation() -> int:
        return int(json.loads(await kubectl("get", "deploy", "web", "-o", "json"))["metadata"]["generation"])

    assert await generation() == 1
    # the apps strategy bumps generation when spec or any annotation changes
    await kubectl("annotate", "deploy", "web", "example.com/note=one")
    assert await generation() == 2
    await kubectl("annotate", "deploy", "web", "example.com/note=two", "--overwrite")
    assert await generation() == 3
    await kubectl("annotate", "deploy", "web", "example.com/note-")
    assert await generation() == 4
    # labels are not annotations
    await kubectl("label", "deploy", "web", "tier=front")
    assert await generation() == 4
    await kubectl("scale", "deploy", "web", "--replicas=2")
    assert await generation() == 5
    # a status write does not count
    await kubectl("patch", "deploy", "web", "--subresource=status", "--type=merge", "-p", '{"status": {"replicas": 2}}')
    assert await generation() == 5
