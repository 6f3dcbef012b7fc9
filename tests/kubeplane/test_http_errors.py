"""Bad requests over raw HTTP: every one gets a Kubernetes Status with the right 4xx code and
reason (malformed bodies, wrong content types, unknown resources, wrong methods, invalid
names, schema violations, invalid options), never a 500 or a hang."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kubeplane import EmbeddedAPIServer, http
from kubeplane.errors import APIError

from .conftest import HTTP, Obj, configmap, expect_status, widget

CMS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


async def test_malformed_bodies_are_400(http: HTTP) -> None:
    for raw in ('{"metadata": {"name": ', "not json at all", "[1, 2, 3]", '"a string"', "null"):
        status, body, _ = await http.post(CMS, data=raw)
        err = expect_status(status, body, 400, "BadRequest")
        assert err["message"], raw
    status, body, _ = await http.post(CMS, data="")
    expect_status(status, body, 400, "BadRequest")
    # metadata of the wrong type
    status, body, _ = await http.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})
    expect_status(status, body, 400, "BadRequest")
    # apiVersion/kind that do not belong to the URL
    status, body, _ = await http.post(CMS, {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}})
    err = expect_status(status, body, 400, "BadRequest")
    assert "the API version in the data (v2) does not match the expected API version (v1)" in err["message"]
    # a merge patch must be an object, a JSON patch a list of operations
    await http.post(CMS, configmap("p"))
    status, body, _ = await http.patch(f"{CMS}/p", [1, 2])
    expect_status(status, body, 400, "BadRequest")
    status, body, _ = await http.patch(f"{CMS}/p", {"op": "add"}, content_type="application/json-patch+json")
    expect_status(status, body, 400, "BadRequest")
    status, body, _ = await http.patch(f"{CMS}/p", data="{oops", content_type="application/merge-patch+json")
    expect_status(status, body, 400, "BadRequest")
    status, body, _ = await http.patch(
        f"{CMS}/p", [{"op": "replace", "path": "/nope/deeper", "value": 1}], content_type="application/json-patch+json"
    )
    expect_status(status, body, 422, "Invalid")
    # YAML bodies are accepted where YAML is declared, and rejected when malformed
    status, body, _ = await http.post(
        CMS, data="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n", content_type="application/yaml"
    )
    assert status == 201 and body["metadata"]["name"] == "from-yaml"
    status, body, _ = await http.post(CMS, data="metadata: [unclosed", content_type="application/yaml")
    expect_status(status, body, 400, "BadRequest")


async def test_content_types_and_negotiation(http: HTTP) -> None:
    status, body, _ = await http.post(CMS, data=json.dumps(configmap("c")), content_type="text/plain")
    err = expect_status(status, body, 415, "UnsupportedMediaType")
    assert err["message"].startswith("the body of the request was in an unknown format - accepted media types include")
    await http.post(CMS, configmap("c"))
    # PATCH needs a patch content type
    status, body, _ = await http.patch(f"{CMS}/c", {"data": {}}, content_type="application/json")
    expect_status(status, body, 415, "UnsupportedMediaType")
    status, body, _ = await http.patch(f"{CMS}/c", {"data": {}}, content_type="application/x-www-form-urlencoded")
    expect_status(status, body, 415, "UnsupportedMediaType")
    # responses: JSON by default, YAML on request, 406 for what the server cannot produce
    status, body, resp = await http.get(f"{CMS}/c", headers={"Accept": "application/yaml"})
    assert status == 200 and resp.headers["Content-Type"].startswith("application/yaml")
    assert "kind: ConfigMap" in body and "name: c" in body
    status, body, _ = await http.get(f"{CMS}/c", headers={"Accept": "text/html"})
    expect_status(status, body, 406, "NotAcceptable")
    status, body, resp = await http.get(f"{CMS}/c", headers={"Accept": "application/json, */*"})
    assert status == 200 and resp.headers["Content-Type"] == "application/json" and body["kind"] == "ConfigMap"


async def test_unknown_resources_methods_and_paths(http: HTTP) -> None:
    for path in (
        "/api/v1/flurbs",
        "/api/v1/namespaces/default/flurbs",
        "/apis/example.com/v1/widgets",
        "/apis/apps/v9/deployments",
        "/api/v1/namespaces/default/configmaps/x/nosuchsub",
        "/api/v1/namespaces/default/configmaps/x/status",  # configmaps have no status subresource
        "/api/v1/namespaces/default/namespaces",  # namespaces are cluster-scoped
        "/apis/nope.io",
        "/api/v2",
    ):
        status, body, _ = await http.get(path)
        err = expect_status(status, body, 404, "NotFound")
        assert err["message"] == "the server could not find the requested resource", path
    status, body, resp = await http.get("/not-an-api")
    assert status == 404 and resp.headers["Content-Type"].startswith("text/plain")
    # a namespaced object needs a namespace in the path
    status, body, _ = await http.get("/api/v1/configmaps/x")
    expect_status(status, body, 404, "NotFound")
    # verbs that do not exist for the path
    status, body, _ = await http.put(CMS, configmap("x"))
    expect_status(status, body, 405, "MethodNotAllowed")
    status, body, _ = await http.post(f"{CMS}/x", configmap("x"))
    expect_status(status, body, 405, "MethodNotAllowed")
    status, body, _ = await http.patch(CMS, {"data": {}})
    expect_status(status, body, 405, "MethodNotAllowed")
    # an object that does not exist
    status, body, _ = await http.put(f"{CMS}/ghost", configmap("ghost"))
    err = expect_status(status, body, 404, "NotFound")
    assert err["message"] == 'configmaps "ghost" not found'
    assert err["details"] == {"name": "ghost", "kind": "configmaps"}
    status, body, _ = await http.delete(f"{CMS}/ghost")
    expect_status(status, body, 404, "NotFound")


async def test_invalid_names_and_objects_are_422(http: HTTP, widgets: Obj) -> None:
    for name in ("UPPER", "under_score", "-dash", "dot.", "a" * 254):
        status, body, _ = await http.post(CMS, configmap(name))
        err = expect_status(status, body, 422, "Invalid")
        assert err["details"]["causes"][0]["field"] == "metadata.name", name
    status, body, _ = await http.post("/api/v1/namespaces", {"metadata": {"name": "a.b"}})
    expect_status(status, body, 422, "Invalid")
    status, body, _ = await http.post(CMS, configmap("ok", labels={"k": "bad value!"}))
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == "metadata.labels"
    status, body, _ = await http.post(CMS, configmap("ok", annotations={"/": "v"}))
    expect_status(status, body, 422, "Invalid")
    status, body, _ = await http.post(CMS, configmap("ok", finalizers=["not qualified"]))
    expect_status(status, body, 422, "Invalid")
    # built-in kinds reject finalizer names that are neither standard nor domain-qualified
    status, body, _ = await http.post(CMS, configmap("ok", finalizers=["cleanup"]))
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"][0]["message"].endswith(
        "name is neither a standard finalizer name nor is it fully qualified"
    )
    # ...custom resources accept them with a warning
    w = widget("w")
    w["metadata"]["finalizers"] = ["cleanup"]
    status, body, resp = await http.post(WIDGETS, w)
    assert status == 201, body
    assert 'metadata.finalizers: \\"cleanup\\": prefer a domain-qualified finalizer name' in resp.headers["Warning"]
    # an update warns only about the names it adds
    status, body, resp = await http.patch(f"{WIDGETS}/w", {"metadata": {"labels": {"a": "b"}}})
    assert status == 200 and "Warning" not in resp.headers
    status, body, resp = await http.patch(f"{WIDGETS}/w", {"metadata": {"finalizers": ["cleanup", "other"]}})
    assert status == 200 and resp.headers.getall("Warning") == [
        '299 - "metadata.finalizers: \\"other\\": prefer a domain-qualified finalizer name including a path (/) '
        'to avoid accidental conflicts with other finalizer writers"'
    ]
    # schema violations
    status, body, _ = await http.post(WIDGETS, widget("bad", size=3))
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: 3: spec.size in body must be of type string: "integer"',
            "field": "spec.size",
        }
    ]
    status, body, _ = await http.post(
        WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "n"}, "spec": 5}
    )
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == "spec"


async def test_write_options_are_validated(http: HTTP) -> None:
    status, body, _ = await http.post(f"{CMS}?dryRun=Sometimes", configmap("a"))
    err = expect_status(status, body, 422, "Invalid")
    assert err["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value')
    status, body, _ = await http.post(f"{CMS}?fieldValidation=Loose", configmap("a"))
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == "fieldValidation"
    status, body, _ = await http.post(f"{CMS}?fieldManager={'m' * 129}", configmap("a"))
    err = expect_status(status, body, 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == "fieldManager"
    await http.post(CMS, configmap("a"))
    status, body, _ = await http.put(f"{CMS}/a?dryRun=x", configmap("a"))
    assert expect_status(status, body, 422, "Invalid")["message"].startswith('UpdateOptions.meta.k8s.io "" is invalid')
    # server-side apply needs a field manager, and force only goes with apply
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    status, body, _ = await http.patch(f"{CMS}/a", apply, content_type="application/apply-patch+yaml")
    err = expect_status(status, body, 422, "Invalid")
    assert err["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    status, body, _ = await http.patch(f"{CMS}/a?force=true", {"data": {"k": "v"}})
    expect_status(status, body, 422, "Invalid")
    status, body, _ = await http.patch(
        f"{CMS}/a?fieldManager=me&force=true", apply, content_type="application/apply-patch+yaml"
    )
    assert status == 200 and body["data"] == {"k": "v"}
    # strict field validation of built-ins
    extra: Obj = configmap("strict")
    extra["bogus"] = 1
    status, body, _ = await http.post(f"{CMS}?fieldValidation=Strict", extra)
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"] == 'strict decoding error: unknown field "bogus"'
    status, body, resp = await http.post(f"{CMS}?fieldValidation=Warn", extra)
    assert status == 201 and "bogus" not in body
    assert resp.headers["Warning"] == '299 - "unknown field \\"bogus\\""'
    # list/watch parameters
    for query in ("limit=abc", "timeoutSeconds=x", "continue=%%%", "labelSelector=a%20b", "fieldSelector=x"):
        status, body, _ = await http.get(f"{CMS}?{query}")
        expect_status(status, body, 400, "BadRequest")
    for query in (
        "resourceVersionMatch=Exact",
        "resourceVersionMatch=Sometime&resourceVersion=1",
        "resourceVersionMatch=Exact&resourceVersion=0",
        "resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=abc",
    ):
        status, body, _ = await http.get(f"{CMS}?{query}")
        err = expect_status(status, body, 422, "Invalid")
        assert err["message"].startswith('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch'), query
    # a negative limit means no limit
    status, body, _ = await http.get(f"{CMS}?limit=-5")
    assert status == 200 and len(body["items"]) == 2 and "continue" not in body["metadata"]


async def test_server_survives_a_burst_of_bad_requests(http: HTTP, apiserver: EmbeddedAPIServer) -> None:
    # nothing above leaves the server unable to answer, and no request is a 500
    bad = [
        http.post(CMS, data="{"),
        http.post(CMS, data="x", content_type="application/octet-stream"),
        http.patch(f"{CMS}/x", data="[", content_type="application/json-patch+json"),
        http.get("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=abc"),
        http.get("/apis/example.com"),
        http.delete(CMS + "?labelSelector=%3D%3D"),
    ]
    for call in bad:
        status, body, _ = await call
        assert 400 <= status < 500, (status, body)
    status, body, _ = await http.get(CMS)
    assert status == 200 and body["kind"] == "ConfigMapList"
    status, body, _ = await http.get("/healthz")
    assert status == 200 and body == "ok"
    assert apiserver.url.startswith("http://")


def test_a_repeated_accept_header_is_negotiated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request of a client carries the same Accept header: its answer is remembered (and
    cannot be changed by whoever gets it), a refusal (406) is not; a long header is parsed each time."""
    calls: list[str] = []
    real = http._negotiate

    def counted(accept: str) -> http.Output:
        calls.append(accept)
        return real(accept)

    monkeypatch.setattr(http, "_negotiate", counted)
    http._negotiate_remembered.cache_clear()
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    assert http.negotiate(table) == http.Output("table", "v1") == http.negotiate(table)
    assert calls == [table]
    with pytest.raises(dataclasses.FrozenInstanceError):
        http.negotiate(table).kind = "json"  # type: ignore[misc]
    for _ in range(2):
        with pytest.raises(APIError) as refused:
            http.negotiate("image/png")
        assert refused.value.code == 406
    long = "application/json;" + "x=y;" * http.REMEMBERED_HEADER
    assert http.negotiate(long) == http.negotiate(long) == http.Output("json")
    assert calls == [table, *["image/png"] * 2, long, long]
