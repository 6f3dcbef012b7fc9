"""The status and scale subresources through kubectl, and `kubectl wait` on conditions."""

from __future__ import annotations

import asyncio
import json

from kubeplane.testing import Kubectl

from .conftest import Obj, manifests, widget


async def test_status_subresource_isolates_status_from_spec(kubectl: Kubectl, widgets: Obj) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(widget("w", labels={"app": "w"})))
    # a write to /status changes only .status, whatever else the body says
    patch = {"spec": {"size": "large"}, "metadata": {"labels": {"app": "changed"}}, "status": {"phase": "Running"}}
    await kubectl("patch", "widget", "w", "--subresource=status", "--type=merge", "-p", json.dumps(patch))
    got = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert got["status"] == {"phase": "Running"}
    assert got["spec"]["size"] == "small" and got["metadata"]["labels"] == {"app": "w"}
    via_sub = json.loads(await kubectl("get", "widget", "w", "--subresource=status", "-o", "json"))
    assert via_sub["status"] == {"phase": "Running"} and via_sub["kind"] == "Widget"

    # a write to the main resource ignores .status (replace with a different status keeps the stored one)
    got["status"] = {"phase": "Hacked"}
    got["spec"]["size"] = "medium"
    await kubectl("replace", "-f", "-", stdin=json.dumps(got))
    after = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert after["status"] == {"phase": "Running"} and after["spec"]["size"] == "medium"
    assert after["metadata"]["generation"] == 2

    # status is validated against the schema too
    res = await kubectl.run(
        "patch", "widget", "w", "--subresource=status", "--type=merge", "-p", '{"status":{"replicas":"many"}}'
    )
    assert res.returncode == 1
    assert 'status.replicas: Invalid value: "many": status.replicas in body must be of type integer' in res.stderr

    # the printer column reading .status.phase shows the subresource's value
    rows = (await kubectl("get", "widget", "w", "--no-headers")).split()
    assert rows[:4] == ["w", "medium", "1", "Running"]


async def test_scale_subresource_and_kubectl_scale(kubectl: Kubectl, widgets: Obj) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(widget("w", replicas=2)))
    await kubectl(
        "patch",
        "widget",
        "w",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"replicas":2,"selector":"app=w"}}',
    )
    scale = json.loads(await kubectl("get", "widget", "w", "--subresource=scale", "-o", "json"))
    assert scale["apiVersion"] == "autoscaling/v1" and scale["kind"] == "Scale"
    assert scale["metadata"]["name"] == "w" and scale["metadata"]["namespace"] == "default"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "app=w"}
    w = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert scale["metadata"]["resourceVersion"] == w["metadata"]["resourceVersion"]
    assert scale["metadata"]["uid"] == w["metadata"]["uid"]

    out = await kubectl("scale", "widget", "w", "--replicas=5")
    assert out.strip() == "widget.example.com/w scaled"
    w = json.loads(await kubectl("get", "widget", "w", "-o", "json"))
    assert w["spec"]["replicas"] == 5 and w["metadata"]["generation"] == 2
    assert w["status"] == {"replicas": 2, "selector": "app=w"}

    # --current-replicas is a precondition kubectl checks against the Scale
    res = await kubectl.run("scale", "widget", "w", "--current-replicas=3", "--replicas=4")
    assert res.returncode == 1 and "Expected replicas to be 3, was 5" in res.stderr
    out = await kubectl("scale", "widget", "w", "--current-replicas=5", "--replicas=4")
    assert out.strip() == "widget.example.com/w scaled"
    # a Scale written back with a stale resourceVersion is a conflict
    path = "/apis/example.com/v1/namespaces/default/widgets/w/scale"
    stale = json.loads(await kubectl("get", "--raw", path))
    await kubectl("label", "widget", "w", "bump=1")
    stale["spec"]["replicas"] = 3
    res = await kubectl.run("replace", "--raw", path, "-f", "-", stdin=json.dumps(stale))
    assert res.returncode == 1 and "the object has been modified" in res.stderr
    del stale["metadata"]["resourceVersion"]
    written = json.loads(await kubectl("replace", "--raw", path, "-f", "-", stdin=json.dumps(stale)))
    assert written["kind"] == "Scale" and written["spec"]["replicas"] == 3
    await kubectl("scale", "widget", "w", "--replicas=4")
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.replicas}") == "4"
    # the custom resource's schema still applies to what scaling writes
    res = await kubectl.run("scale", "widget", "w", "--replicas=11")
    assert res.returncode == 1
    assert "spec.replicas in body should be less than or equal to 10" in res.stderr
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.replicas}") == "4"
    # the scale writes own spec.replicas (as an Update through the scale subresource): an apply that
    # sets another value conflicts with them
    res = await kubectl.run("apply", "--server-side", "-f", "-", stdin=manifests(widget("w", replicas=1)))
    assert res.returncode == 1
    assert 'conflict with "kubectl" with subresource "scale" using example.com/v1: .spec.replicas' in res.stderr
    # patching the scale subresource directly
    await kubectl("patch", "widget", "w", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":7}}')
    assert await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.replicas}") == "7"


async def test_kubectl_wait_for_conditions(kubectl: Kubectl, widgets: Obj) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(widget("w")))

    async def mark_ready() -> None:
        await asyncio.sleep(0.5)
        await kubectl(
            "patch",
            "widget",
            "w",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
        )

    waiter = asyncio.create_task(kubectl.run("wait", "--for=condition=Ready", "widget/w", "--timeout=20s"))
    await mark_ready()
    res = await waiter
    assert res.returncode == 0 and res.stdout.strip() == "widget.example.com/w condition met", res.stderr

    # a condition that does not hold times out
    res = await kubectl.run("wait", "--for=condition=Ready=False", "widget/w", "--timeout=1s")
    assert res.returncode == 1 and "timed out waiting for the condition" in res.stderr
    # jsonpath waits and waiting for deletion
    out = await kubectl("wait", "--for=jsonpath={.spec.size}=small", "widget/w", "--timeout=5s")
    assert out.strip() == "widget.example.com/w condition met"
    deleter = asyncio.create_task(kubectl.run("wait", "--for=delete", "widget/w", "--timeout=20s"))
    await asyncio.sleep(0.3)
    await kubectl("delete", "widget", "w", "--wait=false")
    res = await deleter
    assert res.returncode == 0 and res.stdout.strip() == "widget.example.com/w condition met", res.stderr
