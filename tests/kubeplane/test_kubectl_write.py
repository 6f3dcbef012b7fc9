"""kubectl create / replace / edit-style replace / apply (client-side) / patch / dry-run,
and the metadata every write sets (uid, creationTimestamp, resourceVersion, generation,
generateName), namespace admission and name validation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .conftest import configmap, manifests, namespace, to_json

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


async def get_json(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(await kubectl("get", *args, "-o", "json"))


async def test_create_sets_uid_timestamp_and_one_monotonic_resource_version(kubectl: Kubectl) -> None:
    out = await kubectl(
        "create", "-f", "-", stdin=manifests(configmap("one", {"k": "v"}), namespace("team-a"), configmap("two"))
    )
    assert out.split("\n")[:3] == ["configmap/one created", "namespace/team-a created", "configmap/two created"]
    one = await get_json(kubectl, "cm", "one")
    ns = await get_json(kubectl, "ns", "team-a")
    two = await get_json(kubectl, "cm", "two")
    for obj in (one, ns, two):
        meta = obj["metadata"]
        assert UID.match(meta["uid"]), meta
        assert RFC3339.match(meta["creationTimestamp"]), meta
        assert "generation" not in meta  # configmaps and namespaces have no spec generation
    # one revision counter across all kinds, increasing with every write
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (one, ns, two)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert one["metadata"]["uid"] != two["metadata"]["uid"]
    # a fresh namespace gets the kubernetes finalizer, Active phase and its name label
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}

    await kubectl("label", "cm", "one", "touched=yes")
    relabeled = await get_json(kubectl, "cm", "one")
    assert int(relabeled["metadata"]["resourceVersion"]) > rvs[-1]
    assert relabeled["metadata"]["uid"] == one["metadata"]["uid"]
    assert relabeled["metadata"]["creationTimestamp"] == one["metadata"]["creationTimestamp"]

    # a list reports the current revision
    listed = await get_json(kubectl, "cm")
    assert int(relabeled["metadata"]["resourceVersion"]) <= int(
        json.loads(await kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps"))["metadata"][
            "resourceVersion"
        ]
    )
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one", "two"]


async def test_generate_name(kubectl: Kubectl) -> None:
    manifest = manifests({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-"}})
    first = (await kubectl("create", "-f", "-", stdin=manifest)).strip()
    second = (await kubectl("create", "-f", "-", stdin=manifest)).strip()
    pattern = re.compile(r"^configmap/job-[bcdfghjklmnpqrstvwxz2456789]{5} created$")
    assert pattern.match(first) and pattern.match(second), (first, second)
    assert first != second
    names = (await kubectl("get", "cm", "-o", "name")).split()
    assert len(names) == 2 and all(n.startswith("configmap/job-") for n in names)
    obj = await get_json(kubectl, names[0])
    assert obj["metadata"]["generateName"] == "job-"


async def test_replace_and_edit_style_replace_with_conflicts(
    kubectl: Kubectl, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(configmap("settings", {"mode": "a"})))
    live = await get_json(kubectl, "cm", "settings")
    # edit-style: read, change, write back with the resourceVersion that was read
    live["data"]["mode"] = "b"
    assert (await kubectl("replace", "-f", "-", stdin=to_json(live))).strip() == "configmap/settings replaced"
    after = await get_json(kubectl, "cm", "settings")
    assert after["data"] == {"mode": "b"}
    assert int(after["metadata"]["resourceVersion"]) > int(live["metadata"]["resourceVersion"])

    # writing back the stale copy is a 409 Conflict
    live["data"]["mode"] = "c"
    stale = await kubectl.run("replace", "-f", "-", stdin=to_json(live))
    assert stale.returncode == 1
    assert "Error from server (Conflict)" in stale.stderr
    assert 'Operation cannot be fulfilled on configmaps "settings": the object has been modified' in stale.stderr
    assert (await get_json(kubectl, "cm", "settings"))["data"] == {"mode": "b"}

    # without a resourceVersion, replace is unconditional
    out = await kubectl("replace", "-f", "-", stdin=manifests(configmap("settings", {"mode": "d"})))
    assert out.strip() == "configmap/settings replaced"
    assert (await get_json(kubectl, "cm", "settings"))["data"] == {"mode": "d"}

    # replace of something that does not exist is NotFound
    missing = await kubectl.run("replace", "-f", "-", stdin=manifests(configmap("ghost")))
    assert missing.returncode == 1 and 'configmaps "ghost" not found' in missing.stderr

    # kubectl edit itself, with a scripted editor
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i -e 's/mode: d/mode: e/' \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("KUBE_EDITOR", str(editor))
    out = await kubectl("edit", "cm", "settings")
    assert out.strip() == "configmap/settings edited"
    assert (await get_json(kubectl, "cm", "settings"))["data"] == {"mode": "e"}


async def test_client_side_apply_three_way_merge(kubectl: Kubectl) -> None:
    v1 = configmap("app", {"a": "1", "b": "2"}, labels={"tier": "web"})
    assert (await kubectl("apply", "-f", "-", stdin=manifests(v1))).strip() == "configmap/app created"
    assert (await kubectl("apply", "-f", "-", stdin=manifests(v1))).strip() == "configmap/app unchanged"
    live = await get_json(kubectl, "cm", "app", "--show-managed-fields")
    last = json.loads(live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"a": "1", "b": "2"}
    managers = {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]}
    assert managers == {("kubectl-client-side-apply", "Update")}

    # someone else adds a key; the next apply drops "b" (no longer in the manifest) but keeps theirs
    await kubectl("patch", "cm", "app", "--type=merge", "-p", '{"data":{"theirs":"x"}}')
    v2 = configmap("app", {"a": "10"}, labels={"tier": "web"})
    assert (await kubectl("apply", "-f", "-", stdin=manifests(v2))).strip() == "configmap/app configured"
    assert (await get_json(kubectl, "cm", "app"))["data"] == {"a": "10", "theirs": "x"}

    # a pod: the apply patch is a strategic merge that keys containers by name
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox:1"},
            ]
        },
    }
    await kubectl("apply", "-f", "-", stdin=manifests(pod))
    pod["spec"]["containers"][1]["image"] = "busybox:2"
    assert (await kubectl("apply", "-f", "-", stdin=manifests(pod))).strip() == "pod/p configured"
    live_pod = await get_json(kubectl, "pod", "p")
    assert [(c["name"], c["image"]) for c in live_pod["spec"]["containers"]] == [
        ("main", "nginx:1"),
        ("side", "busybox:2"),
    ]
    assert live_pod["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


async def test_patch_types(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(configmap("p", {"a": "1", "b": "2"}, labels={"x": "y"})))
    # JSON merge patch: null removes
    await kubectl("patch", "cm", "p", "--type=merge", "-p", '{"data":{"a":null,"c":"3"}}')
    assert (await get_json(kubectl, "cm", "p"))["data"] == {"b": "2", "c": "3"}
    # JSON patch, guarded by a passing test op
    ops = [
        {"op": "test", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/metadata/labels/added", "value": "yes"},
        {"op": "remove", "path": "/data/c"},
    ]
    await kubectl("patch", "cm", "p", "--type=json", "-p", json.dumps(ops))
    live = await get_json(kubectl, "cm", "p")
    assert live["data"] == {"b": "20"} and live["metadata"]["labels"] == {"x": "y", "added": "yes"}
    # a failing test op rejects the whole patch
    failing = [{"op": "test", "path": "/data/b", "value": "nope"}, {"op": "add", "path": "/data/z", "value": "1"}]
    res = await kubectl.run("patch", "cm", "p", "--type=json", "-p", json.dumps(failing))
    assert res.returncode == 1 and "test failed" in res.stderr
    assert (await get_json(kubectl, "cm", "p"))["data"] == {"b": "20"}
    # a merge patch carrying a stale resourceVersion is a 409 Conflict
    stale = json.dumps({"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "data": {"q": "1"}})
    await kubectl("label", "cm", "p", "bump=1")
    res = await kubectl.run("patch", "cm", "p", "--type=merge", "-p", stale)
    assert res.returncode == 1 and "Error from server (Conflict)" in res.stderr
    # strategic merge (kubectl's default for built-ins) on data is a plain map merge
    await kubectl("patch", "cm", "p", "-p", '{"data":{"s":"1"}}')
    assert (await get_json(kubectl, "cm", "p"))["data"] == {"b": "20", "s": "1"}
    # a patch that changes nothing does not bump the resourceVersion
    before = (await get_json(kubectl, "cm", "p"))["metadata"]["resourceVersion"]
    out = await kubectl("patch", "cm", "p", "--type=merge", "-p", '{"data":{"s":"1"}}')
    assert out.strip() == "configmap/p patched (no change)"
    assert (await get_json(kubectl, "cm", "p"))["metadata"]["resourceVersion"] == before


async def test_strategic_merge_lists_by_key(kubectl: Kubectl) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 80, "name": "http"}],
                        },
                        {"name": "sidecar", "image": "envoy:1"},
                    ]
                },
            },
        },
    }
    await kubectl("create", "-f", "-", stdin=manifests(deployment))
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 443, "name": "https"}],
                        }
                    ]
                }
            }
        }
    }
    await kubectl("patch", "deployment", "web", "-p", json.dumps(patch))
    spec = (await get_json(kubectl, "deployment", "web"))["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["app", "sidecar"]
    app = spec["containers"][0]
    assert app["image"] == "nginx:1"
    assert app["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]
    assert [p["containerPort"] for p in app["ports"]] == [80, 443]
    # $patch: delete removes one keyed item
    delete = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}
    await kubectl("patch", "deployment", "web", "-p", json.dumps(delete))
    spec = (await get_json(kubectl, "deployment", "web"))["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["app"]
    # the generation moved with each spec change
    assert (await get_json(kubectl, "deployment", "web"))["metadata"]["generation"] == 3


async def test_generation_bumps_on_spec_changes_only(kubectl: Kubectl) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "maxReplicas": 3},
    }
    await kubectl("create", "-f", "-", stdin=manifests(hpa))
    assert (await get_json(kubectl, "hpa", "h"))["metadata"]["generation"] == 1
    await kubectl("label", "hpa", "h", "a=b")
    await kubectl("annotate", "hpa", "h", "c=d")
    assert (await get_json(kubectl, "hpa", "h"))["metadata"]["generation"] == 1
    await kubectl("patch", "hpa", "h", "--type=merge", "-p", '{"spec":{"maxReplicas":4}}')
    assert (await get_json(kubectl, "hpa", "h"))["metadata"]["generation"] == 2
    # status lives in a subresource: writes there never bump generation, and the main resource ignores it
    await kubectl("patch", "hpa", "h", "--subresource=status", "--type=merge", "-p", '{"status":{"currentReplicas":2}}')
    await kubectl("patch", "hpa", "h", "--type=merge", "-p", '{"status":{"currentReplicas":9}}')
    got = await get_json(kubectl, "hpa", "h")
    assert got["metadata"]["generation"] == 2 and got["status"]["currentReplicas"] == 2


async def test_namespace_admission_and_name_validation(kubectl: Kubectl, apiserver: EmbeddedAPIServer) -> None:
    res = await kubectl.run("create", "-n", "nowhere", "-f", "-", stdin=manifests(configmap("c")))
    assert res.returncode == 1
    assert 'Error from server (NotFound): error when creating "STDIN": namespaces "nowhere" not found' in res.stderr

    # a namespace that is terminating (held by content with a finalizer) refuses new content
    await kubectl("create", "-f", "-", stdin=manifests(namespace("closing")))
    held = configmap("held", finalizers=["example.com/hold"])
    await kubectl("create", "-n", "closing", "-f", "-", stdin=manifests(held))
    await kubectl("delete", "ns", "closing", "--wait=false")
    assert await kubectl("get", "ns", "closing", "-o", "jsonpath={.status.phase}") == "Terminating"
    res = await kubectl.run("create", "-n", "closing", "-f", "-", stdin=manifests(configmap("late")))
    assert res.returncode == 1
    assert "Error from server (Forbidden)" in res.stderr
    assert "unable to create new content in namespace closing because it is being terminated" in res.stderr
    await kubectl("patch", "-n", "closing", "cm", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    await kubectl("wait", "--for=delete", "ns/closing", "--timeout=10s")

    # names: DNS subdomain for configmaps, DNS label for namespaces
    res = await kubectl.run("create", "-f", "-", stdin=manifests(configmap("Bad_Name")))
    assert res.returncode == 1
    assert 'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in res.stderr
    assert "a lowercase RFC 1123 subdomain" in res.stderr
    res = await kubectl.run("create", "-f", "-", stdin=manifests(namespace("a.b")))
    assert res.returncode == 1
    assert 'The Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b"' in res.stderr
    assert "a lowercase RFC 1123 label" in res.stderr
    res = await kubectl.run("create", "-f", "-", stdin=manifests(configmap("x" * 254)))
    assert res.returncode == 1 and "must be no more than 253 characters" in res.stderr
    res = await kubectl.run("create", "-f", "-", stdin=manifests(configmap("ok", labels={"bad key!": "v"})))
    assert res.returncode == 1 and "metadata.labels: Invalid value" in res.stderr
    assert (await kubectl("get", "cm", "-o", "name")).split() == []


async def test_server_side_dry_run(kubectl: Kubectl) -> None:
    out = await kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifests(configmap("dry", {"a": "1"})))
    assert out.strip() == "configmap/dry created (server dry run)"
    assert (await kubectl.run("get", "cm", "dry")).returncode == 1
    # dry-run output is the object as it would be stored (defaults applied)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}
    rendered = json.loads(await kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=manifests(secret)))
    assert rendered["type"] == "Opaque" and rendered["data"] == {"k": "dg=="}
    assert "resourceVersion" not in rendered["metadata"]
    assert (await kubectl.run("get", "secret", "s")).returncode == 1

    # validation still runs under dry-run
    res = await kubectl.run("apply", "--dry-run=server", "-f", "-", stdin=manifests(configmap("Nope")))
    assert res.returncode == 1 and 'The ConfigMap "Nope" is invalid' in res.stderr

    # dry-run of updates, patches and deletes leaves the object as it was
    await kubectl("apply", "-f", "-", stdin=manifests(configmap("real", {"a": "1"})))
    rv = await kubectl("get", "cm", "real", "-o", "jsonpath={.metadata.resourceVersion}")
    out = await kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifests(configmap("real", {"a": "2"})))
    assert out.strip() == "configmap/real configured (server dry run)"
    out = await kubectl("patch", "cm", "real", "--dry-run=server", "--type=merge", "-p", '{"data":{"a":"3"}}')
    assert out.startswith("configmap/real patched")
    replaced = await kubectl("replace", "--dry-run=server", "-f", "-", stdin=manifests(configmap("real", {"a": "4"})))
    assert replaced.strip() == "configmap/real replaced (server dry run)"
    out = await kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", stdin=manifests(configmap("real")))
    assert out.strip() == "configmap/real serverside-applied (server dry run)"
    out = await kubectl("delete", "cm", "real", "--dry-run=server")
    assert out.strip() == 'configmap "real" deleted (server dry run)'
    live = await get_json(kubectl, "cm", "real")
    assert live["data"] == {"a": "1"} and live["metadata"]["resourceVersion"] == rv
