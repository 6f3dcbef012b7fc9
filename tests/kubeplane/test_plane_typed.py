"""Built-in kinds are read through their Go types, as kube-apiserver reads them: unknown
fields are dropped (or refused with fieldValidation=Strict, kubectl's default), values of
the wrong JSON type are 400s, and zero values of omitempty fields are not stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .plane_support import Client

DEPLOYMENT_WITH_TYPO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replica: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, imagePullPolicee: Always}]
"""


@pytest.fixture
async def client(apiserver: EmbeddedAPIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver, session)


async def test_kubectl_strict_validation_names_unknown_fields_of_builtins(kubectl: Kubectl) -> None:
    result = await kubectl.run("apply", "-f", "-", stdin=DEPLOYMENT_WITH_TYPO)
    assert result.returncode != 0
    assert 'unknown field "spec.replica"' in result.stderr
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolicee"' in result.stderr
    # the same manifest is accepted when validation is relaxed, without the unknown fields
    await kubectl("apply", "--validate=false", "-f", "-", stdin=DEPLOYMENT_WITH_TYPO)
    spec = await kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec}")
    assert spec.startswith("1 ")  # the typo did not set replicas; the default did
    assert "imagePullPolicee" not in spec


async def test_default_validation_warns_and_drops(apiserver: EmbeddedAPIServer) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{apiserver.url}/api/v1/namespaces/default/configmaps",
            json={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "colour": "red"},
                "data": {"a": "1"},
                "extra": True,
            },
        ) as resp,
    ):
        assert resp.status == 201
        body = await resp.json()
        warnings = resp.headers.getall("Warning")
    assert "extra" not in body and "colour" not in body["metadata"]
    assert any('unknown field \\"extra\\"' in w for w in warnings), warnings
    assert any('unknown field \\"metadata.colour\\"' in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"data": {"a": 1}}, "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
        (
            {"data": "flat"},
            "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string",
        ),
        ({"immutable": "yes"}, "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"),
    ],
)
async def test_wrong_json_types_are_bad_requests(client: Client, body: dict[str, Any], message: str) -> None:
    status = await client.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, **body},
        expect=400,
    )
    assert status["reason"] == "BadRequest"
    assert status["message"] == f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {message}'


async def test_type_errors_name_the_innermost_go_struct(client: Client) -> None:
    status = await client.request(
        "POST",
        "/api/v1/namespaces/default/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bad"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": "80"}]}]},
        },
        expect=400,
    )
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
        "ContainerPort.spec.containers.ports.containerPort of type int32"
    )


async def test_omitempty_zero_values_are_not_stored(client: Client) -> None:
    pod = await client.request(
        "POST",
        "/api/v1/namespaces/default/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx:1.25",
                        "env": [{"name": "EMPTY", "value": ""}],
                        "ports": [{"containerPort": 80, "hostPort": 0, "name": ""}],
                        "args": [],
                        "resources": {"requests": {"cpu": 0.5, "memory": 1024}},
                    }
                ],
                "hostNetwork": False,
            },
        },
    )
    container = pod["spec"]["containers"][0]
    assert container["env"] == [{"name": "EMPTY"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "args" not in container and "hostNetwork" not in pod["spec"]
    assert "labels" not in pod["metadata"]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1024"}


async def test_zero_values_of_non_omitempty_and_pointer_fields_are_kept(client: Client) -> None:
    lease = await client.request(
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "", "leaseTransitions": 0},
        },
    )
    assert lease["spec"] == {"holderIdentity": "", "leaseTransitions": 0}
    crd = await client.request(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.zero.example.com"},
            "spec": {
                "group": "zero.example.com",
                "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {
                        "name": "v0",
                        "served": False,
                        "storage": False,
                        "schema": {"openAPIV3Schema": {"type": "object", "additionalProperties": False}},
                    },
                ],
            },
        },
    )
    old = crd["spec"]["versions"][1]
    assert (old["served"], old["storage"]) == (False, False)
    assert old["schema"]["openAPIV3Schema"]["additionalProperties"] is False


async def test_deployment_pod_template_gets_pod_defaults(client: Client) -> None:
    deployment = await client.request(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
                },
            },
        },
    )
    template = deployment["spec"]["template"]["spec"]
    assert template["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert template["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert (template["restartPolicy"], template["dnsPolicy"]) == ("Always", "ClusterFirst")
    assert "priority" not in template, "priority is set by admission on pods, not on templates"


async def test_delete_options_are_validated_and_orphan_false_pending_is_202(
    apiserver: EmbeddedAPIServer, client: Client
) -> None:
    await client.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/x"]}},
    )
    path = "/api/v1/namespaces/default/configmaps/held"
    bad = await client.request("DELETE", path, {"dryRun": ["Some"]}, expect=422)
    assert bad["message"].startswith('DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Some"')
    both = await client.request(
        "DELETE", path, {"orphanDependents": False, "propagationPolicy": "Foreground"}, expect=422
    )
    assert "orphanDependents and deletionPropagation cannot be both set" in both["message"]
    marked = await client.request("DELETE", path, {"orphanDependents": False}, expect=202)
    assert marked["metadata"]["deletionTimestamp"]
