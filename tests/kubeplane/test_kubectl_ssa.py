"""kubectl apply --server-side: managedFields per manager, conflicts and --force-conflicts,
shared ownership, removal of fields a manager stops applying, associative lists."""

from __future__ import annotations

import json
from typing import Any

from kubeplane.testing import Kubectl

from .conftest import Obj, configmap, manifests, widget


async def managed(kubectl: Kubectl, *target: str) -> dict[tuple[str, str], Obj]:
    obj = json.loads(await kubectl("get", *target, "-o", "json", "--show-managed-fields"))
    out: dict[tuple[str, str], Obj] = {}
    for entry in obj["metadata"].get("managedFields") or []:
        assert entry["fieldsType"] == "FieldsV1"
        out[(entry["manager"], entry["operation"])] = entry
    return out


async def ssa(kubectl: Kubectl, obj: Obj, *flags: str) -> Any:
    return await kubectl.run("apply", "--server-side", *flags, "-f", "-", stdin=manifests(obj))


async def test_server_side_apply_records_ownership_and_detects_conflicts(kubectl: Kubectl) -> None:
    cfg = configmap("shared", {"a": "1", "b": "2"}, labels={"team": "x"})
    res = await ssa(kubectl, cfg, "--field-manager=alice")
    assert res.returncode == 0 and res.stdout.strip() == "configmap/shared serverside-applied", res.stderr
    entries = await managed(kubectl, "cm", "shared")
    assert set(entries) == {("alice", "Apply")}
    assert entries[("alice", "Apply")]["apiVersion"] == "v1"
    assert entries[("alice", "Apply")]["fieldsV1"] == {
        "f:data": {"f:a": {}, "f:b": {}},
        "f:metadata": {"f:labels": {"f:team": {}}},
    }

    # bob applies a different value for a field alice owns: 409 Conflict naming alice and the field
    bob_cfg = configmap("shared", {"a": "changed", "c": "3"})
    res = await ssa(kubectl, bob_cfg, "--field-manager=bob")
    assert res.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "alice": .data.a' in res.stderr
    live = json.loads(await kubectl("get", "cm", "shared", "-o", "json"))
    assert live["data"] == {"a": "1", "b": "2"}

    # with --force-conflicts bob takes the field over
    res = await ssa(kubectl, bob_cfg, "--field-manager=bob", "--force-conflicts")
    assert res.returncode == 0, res.stderr
    entries = await managed(kubectl, "cm", "shared")
    assert entries[("alice", "Apply")]["fieldsV1"] == {
        "f:data": {"f:b": {}},
        "f:metadata": {"f:labels": {"f:team": {}}},
    }
    assert entries[("bob", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}, "f:c": {}}}
    live = json.loads(await kubectl("get", "cm", "shared", "-o", "json"))
    assert live["data"] == {"a": "changed", "b": "2", "c": "3"}

    # applying the same value as the current owner is not a conflict: ownership is shared
    res = await ssa(kubectl, configmap("shared", {"b": "2"}), "--field-manager=carol")
    assert res.returncode == 0, res.stderr
    entries = await managed(kubectl, "cm", "shared")
    assert entries[("carol", "Apply")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert "f:b" in entries[("alice", "Apply")]["fieldsV1"]["f:data"]

    # alice stops applying b (still owned by carol: it stays) and the label (owned by nobody else: it goes)
    res = await ssa(kubectl, configmap("shared", {}), "--field-manager=alice")
    assert res.returncode == 0, res.stderr
    live = json.loads(await kubectl("get", "cm", "shared", "-o", "json"))
    assert live["data"] == {"a": "changed", "b": "2", "c": "3"}
    assert "labels" not in live["metadata"]
    # carol stops applying b as well: now nobody owns it and it is removed
    res = await ssa(kubectl, configmap("shared", {"c": "3"}), "--field-manager=carol", "--force-conflicts")
    assert res.returncode == 0, res.stderr
    res = await ssa(kubectl, configmap("shared"), "--field-manager=carol")
    assert res.returncode == 0, res.stderr
    live = json.loads(await kubectl("get", "cm", "shared", "-o", "json"))
    assert live["data"] == {"a": "changed", "c": "3"}


async def test_update_managers_and_apply_conflicts(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(configmap("c", {"a": "1"})))
    await kubectl("label", "cm", "c", "owner=me")
    entries = await managed(kubectl, "cm", "c")
    assert set(entries) == {("kubectl-create", "Update"), ("kubectl-label", "Update")}
    assert entries[("kubectl-create", "Update")]["fieldsV1"]["f:data"]["f:a"] == {}
    assert set(entries[("kubectl-create", "Update")]["fieldsV1"]) == {"f:data"}
    assert entries[("kubectl-label", "Update")]["fieldsV1"]["f:metadata"]["f:labels"]["f:owner"] == {}
    assert set(entries[("kubectl-label", "Update")]["fieldsV1"]) == {"f:metadata"}
    # an apply that changes a field an Update manager owns conflicts with it (naming its apiVersion)
    res = await ssa(kubectl, configmap("c", {"a": "2"}, labels={"owner": "you"}))
    assert res.returncode == 1
    assert "Apply failed with 2 conflicts" in res.stderr
    assert 'conflict with "kubectl-create" using v1: .data.a' in res.stderr
    assert 'conflict with "kubectl-label" using v1: .metadata.labels.owner' in res.stderr
    res = await ssa(kubectl, configmap("c", {"a": "2"}, labels={"owner": "you"}), "--force-conflicts")
    assert res.returncode == 0, res.stderr
    entries = await managed(kubectl, "cm", "c")
    assert ("kubectl-label", "Update") not in entries  # it owned nothing any more
    assert entries[("kubectl", "Apply")]["fieldsV1"] == {
        "f:data": {"f:a": {}},
        "f:metadata": {"f:labels": {"f:owner": {}}},
    }


async def test_apply_keys_containers_by_name(kubectl: Kubectl) -> None:
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "nginx:1", "ports": [{"containerPort": 80}]}]},
    }
    res = await ssa(kubectl, pod, "--field-manager=deployer")
    assert res.returncode == 0, res.stderr
    entries = await managed(kubectl, "pod", "p")
    containers = entries[("deployer", "Apply")]["fieldsV1"]["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"main"}']
    assert containers['k:{"name":"main"}']["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }
    # re-applying the same manifest changes nothing (the applied port is the live, defaulted one)
    res = await ssa(kubectl, pod, "--field-manager=deployer")
    assert res.returncode == 0, res.stderr
    ports = json.loads(await kubectl("get", "pod", "p", "-o", "jsonpath={.spec.containers[0].ports}"))
    assert ports == [{"containerPort": 80, "protocol": "TCP"}]
    # another manager changes the image of the same container: conflict on that container's field
    other: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "nginx:2"}]},
    }
    res = await ssa(kubectl, other, "--field-manager=upgrader")
    assert res.returncode == 1
    assert 'conflict with "deployer": .spec.containers[name="main"].image' in res.stderr


async def test_apply_custom_resources_and_status(kubectl: Kubectl, widgets: Obj) -> None:
    res = await ssa(kubectl, widget("w", size="medium", tags=["a"]), "--field-manager=ops")
    assert res.returncode == 0 and res.stdout.strip() == "widget.example.com/w serverside-applied", res.stderr
    live = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert live["spec"] == {"size": "medium", "tags": ["a"], "replicas": 1, "color": "blue"}
    assert live["metadata"]["generation"] == 1
    entries = await managed(kubectl, "widget", "w")
    assert entries[("ops", "Apply")]["fieldsV1"] == {"f:spec": {"f:size": {}, "f:tags": {}}}

    # status through the status subresource: its own manager entry with subresource=status
    status_obj: Obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    status_obj["status"] = {"phase": "Ready", "replicas": 1}
    res = await ssa(kubectl, status_obj, "--field-manager=ctrl", "--subresource=status")
    assert res.returncode == 0, res.stderr
    live = json.loads(await kubectl("get", "widget", "w", "-o", "json", "--show-managed-fields"))
    assert live["status"] == {"phase": "Ready", "replicas": 1}
    assert live["metadata"]["generation"] == 1
    ctrl = next(m for m in live["metadata"]["managedFields"] if m["manager"] == "ctrl")
    assert ctrl["subresource"] == "status" and ctrl["operation"] == "Apply"
    assert ctrl["fieldsV1"] == {"f:status": {"f:phase": {}, "f:replicas": {}}}

    # an atomic list (no list-type) is replaced whole; a spec change bumps generation
    res = await ssa(kubectl, widget("w", size="medium", tags=["b", "c"]), "--field-manager=ops")
    assert res.returncode == 0, res.stderr
    live = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert live["spec"]["tags"] == ["b", "c"] and live["metadata"]["generation"] == 2
    assert live["status"] == {"phase": "Ready", "replicas": 1}
