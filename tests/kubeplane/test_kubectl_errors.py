"""Errors as kubectl reports them: NotFound, AlreadyExists, Conflict, Invalid, BadRequest for
malformed bodies, unknown resources and bad query parameters."""

from __future__ import annotations

import json

from kubeplane.testing import Kubectl

from .conftest import configmap, manifests


async def test_not_found_already_exists_and_conflict(kubectl: Kubectl) -> None:
    res = await kubectl.run("get", "cm", "missing")
    assert res.returncode == 1 and res.stderr.strip() == 'Error from server (NotFound): configmaps "missing" not found'
    # kubectl follows a NotFound with a lookup of the namespace and reports that one when it is missing
    res = await kubectl.run("get", "cm", "-n", "nowhere", "x")
    assert res.returncode == 1 and 'namespaces "nowhere" not found' in res.stderr
    raw = await kubectl.run("get", "--raw", "/api/v1/namespaces/nowhere/configmaps/x")
    assert raw.returncode == 1 and 'configmaps "x" not found' in raw.stderr
    res = await kubectl.run("get", "ns", "nowhere")
    assert res.returncode == 1 and 'namespaces "nowhere" not found' in res.stderr
    res = await kubectl.run("get", "crd", "nope.example.com")
    assert res.returncode == 1
    assert 'customresourcedefinitions.apiextensions.k8s.io "nope.example.com" not found' in res.stderr

    await kubectl("create", "-f", "-", stdin=manifests(configmap("dup")))
    res = await kubectl.run("create", "-f", "-", stdin=manifests(configmap("dup")))
    assert res.returncode == 1
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": configmaps "dup" already exists' in res.stderr
    )

    live = json.loads(await kubectl("get", "cm", "dup", "-o", "json"))
    await kubectl("label", "cm", "dup", "x=1")
    live["data"] = {"a": "b"}
    res = await kubectl.run("replace", "-f", "-", stdin=json.dumps(live))
    assert res.returncode == 1
    assert (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps '
        '"dup": the object has been modified; please apply your changes to the latest version and try again'
    ) in res.stderr


async def test_unknown_resources_and_bad_requests(kubectl: Kubectl) -> None:
    res = await kubectl.run("get", "flurbs")
    assert res.returncode == 1 and 'the server doesn\'t have a resource type "flurbs"' in res.stderr
    for path in ("/api/v1/flurbs", "/apis/nope.example.com/v1", "/apis/nope.example.com/v1/things", "/api/v2"):
        res = await kubectl.run("get", "--raw", path)
        assert res.returncode == 1, path
        assert "Error from server (NotFound): the server could not find the requested resource" in res.stderr, path

    base = "/api/v1/namespaces/default/configmaps"
    res = await kubectl.run("create", "--raw", base, "-f", "-", stdin='{"metadata": {"name": ')
    assert res.returncode == 1 and "Error from server (BadRequest)" in res.stderr
    res = await kubectl.run("create", "--raw", base, "-f", "-", stdin='["not", "an", "object"]')
    assert res.returncode == 1 and "Error from server (BadRequest)" in res.stderr
    res = await kubectl.run(
        "create",
        "--raw",
        base,
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    )
    assert res.returncode == 1 and "Error from server (BadRequest)" in res.stderr
    assert "the kind in the data (Secret) does not match the expected kind (ConfigMap)" in res.stderr
    # a body whose namespace disagrees with the URL
    other_ns = configmap("c", namespace="kube-system")
    res = await kubectl.run("create", "--raw", base, "-f", "-", stdin=json.dumps(other_ns))
    assert res.returncode == 1
    assert "the namespace of the provided object does not match the namespace sent on the request" in res.stderr
    # an object that is not valid for its kind
    bad = configmap("ok", data={"bad key!": "v"})
    res = await kubectl.run("create", "-f", "-", stdin=manifests(bad))
    assert res.returncode == 1 and 'The ConfigMap "ok" is invalid: data: Invalid value: "bad key!"' in res.stderr
    # bad query parameters
    res = await kubectl.run("get", "--raw", f"{base}?limit=many")
    assert res.returncode == 1 and "BadRequest" in res.stderr
    res = await kubectl.run("get", "--raw", f"{base}?resourceVersion=abc&resourceVersionMatch=Exact")
    assert res.returncode == 1 and "BadRequest" in res.stderr
    res = await kubectl.run("get", "--raw", f"{base}?resourceVersionMatch=Exact")
    assert res.returncode == 1 and res.stderr.strip() == (
        'The ListOptions "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless '
        "resourceVersion is provided"
    )
    res = await kubectl.run("get", "--raw", f"{base}?watch=1&resourceVersion=99999999")
    assert res.returncode == 1 and "Too large resource version" in res.stderr
    assert (await kubectl("get", "cm", "-o", "name")).strip() == ""
