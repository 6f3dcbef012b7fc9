"""CRD validation rules (`x-kubernetes-validations`) and string formats through the
embedded API server, driven with the real kubectl: rules are compiled when the CRD is
written (a rule that does not compile is a 422 naming it), evaluated on every create and
update with the messages, reasons and field paths Kubernetes 1.32 reports, transition
rules see oldSelf only on updates, unchanged values only warn (ratcheting), and formats
are checked with kube-openapi's wording."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from kubeplane.testing import Kubectl

from .conftest import Obj, eventually, manifests

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_PROFILE_CRD = ROOT / "config/crd/cluster-inventory/multicluster.x-k8s.io_clusterprofiles.yaml"

SCALER_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "self.minReplicas <= self.maxReplicas",
                    "message": "minReplicas must not exceed maxReplicas",
                    "fieldPath": ".minReplicas",
                },
                {
                    "rule": "has(self.image) || has(self.template)",
                    "message": "one of image or template is required",
                    "reason": "FieldValueRequired",
                },
                {
                    "rule": "!has(self.mode) || self.mode != 'Legacy' || self.maxReplicas <= 3",
                    "messageExpression": "'Legacy mode allows at most 3 replicas, not ' + string(self.maxReplicas)",
                },
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "image": {"type": "string"},
                "template": {"type": "string"},
                "mode": {"type": "string"},
                "owner": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "owner is immutable"}],
                },
                "replicas": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {
                            "rule": "self >= oldSelf",
                            "message": "replicas may not decrease",
                            "reason": "FieldValueForbidden",
                        }
                    ],
                },
                "channel": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {
                            "rule": "oldSelf.hasValue() || self == 'stable'",
                            "message": "new scalers start on the stable channel",
                            "optionalOldSelf": True,
                        }
                    ],
                },
                "containers": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "x-kubernetes-validations": [
                        {"rule": "size(self) <= 3", "message": "at most 3 containers"},
                        {
                            "rule": "self.all(c, c.name.matches('^[a-z]+$'))",
                            "message": "container names must be lowercase letters",
                        },
                    ],
                },
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    },
}

SCALER_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scalers.cel.example.com"},
    "spec": {
        "group": "cel.example.com",
        "scope": "Namespaced",
        "names": {"plural": "scalers", "singular": "scaler", "kind": "Scaler"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": SCALER_SCHEMA},
            }
        ],
    },
}


def scaler(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "cel.example.com/v1", "kind": "Scaler", "metadata": {"name": name}, "spec": spec}


def good_scaler(name: str, **overrides: Any) -> Obj:
    spec = {"minReplicas": 1, "maxReplicas": 3, "image": "nginx", "channel": "stable", **overrides}
    return scaler(name, **spec)


async def install(kubectl: Kubectl, crd: Obj) -> None:
    await kubectl("apply", "-f", "-", stdin=manifests(crd))
    await kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=10s")


async def rejected(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    res = await kubectl.run(*args, stdin=stdin)
    assert res.returncode == 1, f"expected kubectl {' '.join(args)} to fail: {res.stdout}"
    return res.stderr


async def test_rules_accept_and_reject_creates(kubectl: Kubectl) -> None:
    await install(kubectl, SCALER_CRD)
    out = await kubectl(
        "create", "-f", "-", stdin=manifests(good_scaler("ok", owner={"name": "team-a"}, containers=[{"name": "web"}]))
    )
    assert out.strip() == "scaler.cel.example.com/ok created"

    # the message at the rule's fieldPath, and a reason other than the default Invalid
    err = await rejected(kubectl, "create", "-f", "-", stdin=manifests(scaler("b", minReplicas=5, maxReplicas=3)))
    assert err == (
        'The Scaler "b" is invalid: \n'
        '* spec.minReplicas: Invalid value: "object": minReplicas must not exceed maxReplicas\n'
        "* spec: Required value: one of image or template is required\n"
    )
    # messageExpression, and optionalOldSelf: the rule runs on create with no old value
    stdin = manifests(good_scaler("c", maxReplicas=5, mode="Legacy", channel="beta"))
    assert await rejected(kubectl, "create", "-f", "-", stdin=stdin) == (
        'The Scaler "c" is invalid: \n'
        '* spec: Invalid value: "object": Legacy mode allows at most 3 replicas, not 5\n'
        '* spec.channel: Invalid value: "string": new scalers start on the stable channel\n'
    )
    # rules on a list; a missing field is an evaluation error reported with the rule
    many = [{"name": "Web"}, {"name": "a"}, {"name": "b"}, {"name": "c"}]
    stdin = manifests(scaler("d", minReplicas=1, image="x", channel="stable", containers=many))
    assert await rejected(kubectl, "create", "-f", "-", stdin=stdin) == (
        'The Scaler "d" is invalid: \n'
        '* spec: Invalid value: "object": no such key: maxReplicas evaluating rule: '
        "minReplicas must not exceed maxReplicas\n"
        '* spec.containers: Invalid value: "array": at most 3 containers\n'
        '* spec.containers: Invalid value: "array": container names must be lowercase letters\n'
    )
    # an object that already fails its schema is not run through the rules
    stdin = manifests(good_scaler("e", minReplicas="one"))
    assert await rejected(kubectl, "create", "-f", "-", stdin=stdin) == (
        'The Scaler "e" is invalid: \n'
        '* spec.minReplicas: Invalid value: "one": spec.minReplicas in body must be of type integer: "string"\n'
        '* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation\n"
    )
    assert (await kubectl("get", "scalers", "-o", "name")).split() == ["scaler.cel.example.com/ok"]


async def test_transition_rules_compare_with_the_old_object(kubectl: Kubectl) -> None:
    await install(kubectl, SCALER_CRD)
    # transition rules do not run on create
    await kubectl("create", "-f", "-", stdin=manifests(good_scaler("s", owner={"name": "team-a"}, replicas=2)))

    err = await rejected(kubectl, "patch", "scaler", "s", "--type=merge", "-p", '{"spec":{"owner":{"name":"team-b"}}}')
    assert err == 'The Scaler "s" is invalid: spec.owner: Invalid value: "object": owner is immutable\n'
    err = await rejected(kubectl, "patch", "scaler", "s", "--type=merge", "-p", '{"spec":{"replicas":1}}')
    assert err == 'The Scaler "s" is invalid: spec.replicas: Forbidden: replicas may not decrease\n'

    # growing replicas is fine, and once a channel exists it may change (oldSelf has a value)
    out = await kubectl("patch", "scaler", "s", "--type=merge", "-p", '{"spec":{"replicas":4,"channel":"beta"}}')
    assert out.strip() == "scaler.cel.example.com/s patched"
    # a field set for the first time on an update has no old value: the transition rule is skipped
    await kubectl("create", "-f", "-", stdin=manifests(good_scaler("t")))
    await kubectl("patch", "scaler", "t", "--type=merge", "-p", '{"spec":{"owner":{"name":"x"},"replicas":1}}')
    got = json.loads(await kubectl("get", "scaler", "t", "-o", "json"))
    assert got["spec"]["owner"] == {"name": "x"} and got["spec"]["replicas"] == 1
    # the status subresource is validated against the rules of the whole object too
    out = await kubectl("patch", "scaler", "s", "--subresource=status", "--type=merge", "-p", '{"status":{"ready":1}}')
    assert out.strip() == "scaler.cel.example.com/s patched"


async def test_cluster_profile_cluster_manager_is_immutable(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(CLUSTER_PROFILE_CRD))
    name = "clusterprofiles.multicluster.x-k8s.io"
    await kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=10s")
    profile = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "cell-1"},
        "spec": {"clusterManager": {"name": "federation-manager"}, "displayName": "Cell 1"},
    }
    await kubectl("apply", "-f", "-", stdin=manifests(profile))
    patch = '{"spec":{"clusterManager":{"name":"someone-else"}}}'
    err = await rejected(kubectl, "patch", "clusterprofile", "cell-1", "--type=merge", "-p", patch)
    assert err == (
        'The ClusterProfile "cell-1" is invalid: spec.clusterManager: Invalid value: "object": '
        "ClusterManager is immutable\n"
    )
    out = await kubectl("patch", "clusterprofile", "cell-1", "--type=merge", "-p", '{"spec":{"displayName":"One"}}')
    assert out.strip() == "clusterprofile.multicluster.x-k8s.io/cell-1 patched"
    assert await kubectl("get", "clusterprofile", "cell-1", "-o", "jsonpath={.spec.clusterManager.name}") == (
        "federation-manager"
    )


async def test_unchanged_values_that_break_a_new_rule_only_warn(kubectl: Kubectl) -> None:
    await install(kubectl, SCALER_CRD)
    await kubectl("create", "-f", "-", stdin=manifests(good_scaler("r", maxReplicas=9)))
    crd = json.loads(await kubectl("get", "crd", "scalers.cel.example.com", "-o", "json"))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"].append(
        {"rule": "self.maxReplicas <= 5", "message": "at most 5 replicas"}
    )
    await kubectl("replace", "-f", "-", stdin=json.dumps(crd))

    async def new_rule_served() -> bool:
        res = await kubectl.run(
            "create", "--dry-run=server", "-f", "-", stdin=manifests(good_scaler("x", maxReplicas=9))
        )
        return res.returncode == 1 and "at most 5 replicas" in res.stderr

    await eventually(new_rule_served, "the updated CRD's rule to be enforced")
    # spec did not change: the failing rule is a warning (CRDValidationRatcheting)
    res = await kubectl.run("label", "scaler", "r", "team=a")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "scaler.cel.example.com/r labeled"
    assert res.stderr == 'Warning: spec: Invalid value: "object": at most 5 replicas\n'
    # a change to spec makes it an error again, until the value satisfies the rule
    err = await rejected(kubectl, "patch", "scaler", "r", "--type=merge", "-p", '{"spec":{"image":"httpd"}}')
    assert err == 'The Scaler "r" is invalid: spec: Invalid value: "object": at most 5 replicas\n'
    out = await kubectl("patch", "scaler", "r", "--type=merge", "-p", '{"spec":{"maxReplicas":5}}')
    assert out.strip() == "scaler.cel.example.com/r patched"


async def test_a_crd_whose_rules_do_not_compile_is_rejected(kubectl: Kubectl) -> None:
    crd = copy.deepcopy(SCALER_CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [
        {"rule": "self.minReplicas <= self.maxReplica", "message": "min <= max"},
        {"rule": "self.image.startsWith(1)"},
    ]
    err = await rejected(kubectl, "apply", "-f", "-", stdin=manifests(crd))
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert err == (
        'The CustomResourceDefinition "scalers.cel.example.com" is invalid: \n'
        f"* {base}[0].rule: Invalid value: apiextensions.ValidationRule{{"
        'Rule:"self.minReplicas <= self.maxReplica", Message:"min <= max", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:25: undefined field 'maxReplica'\n"
        " | self.minReplicas <= self.maxReplica\n"
        " | ........................^\n"
        f"* {base}[1].rule: Invalid value: apiextensions.ValidationRule{{"
        'Rule:"self.image.startsWith(1)", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:22: found no matching overload for 'startsWith' applied to "
        "'string.(int)'\n"
        " | self.image.startsWith(1)\n"
        " | .....................^\n"
    )
    # syntax errors, and transition rules where old values cannot be correlated
    spec["x-kubernetes-validations"] = [{"rule": "self.minReplicas <= "}]
    spec["properties"]["containers"]["items"]["x-kubernetes-validations"] = [{"rule": "self == oldSelf"}]
    err = await rejected(kubectl, "apply", "-f", "-", stdin=manifests(crd))
    assert "compilation failed: ERROR: <input>:1:21: Syntax error: mismatched input '<EOF>'" in err
    assert (
        f"{base.replace('x-kubernetes-validations', 'properties[containers].items.x-kubernetes-validations')}[0].rule: "
        'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within '
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[containers]"
    ) in err
    # a function of Kubernetes' CEL environment this server does not implement is named, not skipped
    spec["x-kubernetes-validations"] = [{"rule": "'%d'.format([self.minReplicas]) != ''"}]
    del spec["properties"]["containers"]["items"]["x-kubernetes-validations"]
    err = await rejected(kubectl, "apply", "-f", "-", stdin=manifests(crd))
    assert "function 'format' is not supported by the embedded API server's CEL interpreter" in err
    assert (await kubectl.run("get", "crd", "scalers.cel.example.com")).returncode == 1


FORMATS_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "endpoints.cel.example.com"},
    "spec": {
        "group": "cel.example.com",
        "scope": "Namespaced",
        "names": {"plural": "endpoints", "singular": "endpoint", "kind": "Endpoint"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {"rule": "!has(self.token) || size(self.token) <= 4", "message": "token too long"},
                                    {
                                        "rule": "!has(self.since) || self.since < timestamp('2100-01-01T00:00:00Z')",
                                        "message": "since must be in this century",
                                    },
                                ],
                                "properties": {
                                    "token": {"type": "string", "format": "byte"},
                                    "since": {"type": "string", "format": "date-time"},
                                    "address": {"type": "string", "format": "ipv4"},
                                    "id": {"type": "string", "format": "uuid"},
                                    "contact": {"type": "string", "format": "email"},
                                    "port": {"type": "integer", "format": "int32"},
                                    "flavor": {"type": "string", "format": "our-own-format"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def endpoint(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "cel.example.com/v1", "kind": "Endpoint", "metadata": {"name": name}, "spec": spec}


async def test_string_formats_are_validated(kubectl: Kubectl) -> None:
    await install(kubectl, FORMATS_CRD)
    good = endpoint(
        "good",
        token="aGk=",
        since="2024-05-01T10:00:00Z",
        address="10.1.2.3",
        id="123e4567-e89b-12d3-a456-426614174000",
        contact="ops@example.com",
        port=2**40,  # kube-openapi does not range-check int32
        flavor="anything at all",  # formats Kubernetes does not know are ignored
    )
    assert (
        await kubectl("create", "-f", "-", stdin=manifests(good))
    ).strip() == "endpoint.cel.example.com/good created"

    bad = endpoint(
        "bad",
        token="not base64!",
        since="2024-05-01 10:00:00",
        address="10.1.2.300",
        id="123e4567",
        contact="ops.example.com",
    )
    assert await rejected(kubectl, "create", "-f", "-", stdin=manifests(bad)) == (
        'The Endpoint "bad" is invalid: \n'
        '* spec.address: Invalid value: "10.1.2.300": spec.address in body must be of type ipv4: "10.1.2.300"\n'
        '* spec.contact: Invalid value: "ops.example.com": spec.contact in body must be of type email: '
        '"ops.example.com"\n'
        '* spec.id: Invalid value: "123e4567": spec.id in body must be of type uuid: "123e4567"\n'
        '* spec.since: Invalid value: "2024-05-01 10:00:00": spec.since in body must be of type date-time: '
        '"2024-05-01 10:00:00"\n'
        '* spec.token: Invalid value: "not base64!": spec.token in body must be of type byte: "not base64!"\n'
        '* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation\n"
    )
    # rules see formatted strings as CEL values: bytes (decoded) and timestamps
    err = await rejected(
        kubectl, "create", "-f", "-", stdin=manifests(endpoint("long", token="aGVsbG8=", since="2199-01-01T00:00:00Z"))
    )
    assert err == (
        'The Endpoint "long" is invalid: \n'
        '* spec: Invalid value: "object": token too long\n'
        '* spec: Invalid value: "object": since must be in this century\n'
    )
