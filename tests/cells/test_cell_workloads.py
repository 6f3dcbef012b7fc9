"""Cell mode end to end: an embedded cell with the kubelet stand-in, the cell controllers
built as `federation-manager run --enable-cell-controllers --feature-gates=PodRuntime=true`
builds them, and kubectl where a user would use it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from federation.api.constants import Finalizer, Label
from tests.support import all_idle, controller, eventually

from .cellbed import NS, UPSTREAM_LABELS, History, cell, history, workload_deployment

OWNER_KEYS = {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}


async def test_replicas_become_ready_instances_and_pods(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        created = c.create_wd(workload_deployment("api", 3))
        wd = await c.converged("api")
        uid = created["metadata"]["uid"]
        instances = c.instances("api")
        for ordinal in range(3):
            inst = instances[f"api-{ordinal}"]
            (ref,) = inst["metadata"]["ownerReferences"]
            assert ref == {
                "apiVersion": "compute.datumapis.com/v1alpha",
                "kind": "WorkloadDeployment",
                "name": "api",
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
            labels = inst["metadata"]["labels"]
            assert labels == {
                "app": "api",
                Label.WORKLOAD_UID.value: "4f0c54f6-5a37-4a59-9c7e-2f7f3f1f9a01",
                Label.WORKLOAD_DEPLOYMENT_UID.value: uid,
                Label.WORKLOAD_DEPLOYMENT_NAME.value: "api",
                Label.INSTANCE_INDEX.value: str(ordinal),
                Label.CITY_CODE.value: "DFW",
                Label.WORKLOAD_NAME.value: "api",
                Label.PLACEMENT_NAME.value: "edge",
                **UPSTREAM_LABELS,
            }
            assert inst["metadata"]["finalizers"] == [Finalizer.INSTANCE_CONTROLLER.value]
            template_hash = inst["spec"]["controller"]["templateHash"]
            assert inst["status"]["controller"] == {"observedTemplateHash": template_hash}
            conditions = {cond["type"]: cond for cond in inst["status"]["conditions"]}
            assert {t: conditions[t]["status"] for t in ("Programmed", "Available", "Ready")} == dict.fromkeys(
                ("Programmed", "Available", "Ready"), "True"
            )
            pod = c.pods()[f"api-{ordinal}"]
            (pod_ref,) = pod["metadata"]["ownerReferences"]
            assert pod_ref.keys() == OWNER_KEYS
            assert (pod_ref["kind"], pod_ref["uid"]) == ("Instance", inst["metadata"]["uid"])
            assert pod["metadata"]["labels"] == labels
        status = wd["status"]
        assert status["desiredReplicas"] == 3 and status["observedGeneration"] == wd["metadata"]["generation"]
        assert status["selector"] == f"{Label.WORKLOAD_DEPLOYMENT_NAME.value}=api"
        assert {cond["type"]: (cond["status"], cond["reason"]) for cond in status["conditions"]} == {
            "Available": ("True", "StableInstanceFound"),
            "ReplicasReady": ("True", "ReplicasAvailable"),
        }
        assert wd["metadata"]["finalizers"] == [Finalizer.WORKLOAD_DEPLOYMENT_CONTROLLER.value]
        # what a user sees
        table = await c.kubectl("get", "wd", "api", "-n", NS, "--no-headers")
        assert table.split()[2:8] == ["True", "StableInstanceFound", "3", "3", "3", "3"], table
        selector = json.loads(await c.kubectl("get", "wd", "api", "-n", NS, "--subresource=scale", "-o", "json"))
        assert selector["status"] == {"replicas": 3, "selector": status["selector"]}


def _roll_is_orderly(seen: History) -> None:
    assert seen.deleted == ["api-2", "api-1", "api-0"], "drift recreates from the highest ordinal, one at a time"
    assert seen.created == ["api-2", "api-1", "api-0"], "each recreated before the next goes"
    assert max(seen.down) == 1, f"never more than one Instance down because of the roll: {seen.down}"
    assert seen.updated_replicas[0] == 3 and seen.updated_replicas[-1] == 3
    assert min(seen.updated_replicas) < 3, f"updatedReplicas dips during the roll: {seen.updated_replicas}"


@pytest.mark.slow
async def test_template_edit_and_restart_roll_one_at_a_time_from_the_top(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 3))
        await c.converged("api")
        first = {n: o["spec"]["controller"]["templateHash"] for n, o in c.instances().items()}
        pods_before = {n: p["metadata"]["uid"] for n, p in c.pods().items()}
        async with history(c.server, {"api-0", "api-1", "api-2"}) as seen:
            c.edit_wd(lambda wd: wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0].update(
                image="docker.io/library/nginx:1.28"))  # fmt: skip

            def rolled() -> bool:
                hashes = {o["spec"]["controller"]["templateHash"] for o in c.instances().values()}
                return len(hashes) == 1 and hashes != set(first.values())

            await eventually(rolled, "every Instance on the new template")
            await c.converged("api")
        _roll_is_orderly(seen)
        pods = c.pods()
        assert all(pods[n]["spec"]["containers"][0]["image"].endswith("nginx:1.28") for n in pods)
        assert not set(pods_before.values()) & {p["metadata"]["uid"] for p in pods.values()}, "Pods were replaced"

        # restartedAt changes nothing but the template's annotations: it rolls everything the same way
        second = {o["spec"]["controller"]["templateHash"] for o in c.instances().values()}
        async with history(c.server, {"api-0", "api-1", "api-2"}) as seen:
            await c.kubectl(
                "patch", "wd", "api", "-n", NS, "--type=merge", "-p",
                json.dumps({"spec": {"template": {"metadata": {"annotations": {
                    "compute.datumapis.com/restartedAt": "2025-06-01T12:00:00Z"}}}}}),
            )  # fmt: skip

            def restarted() -> bool:
                hashes = {o["spec"]["controller"]["templateHash"] for o in c.instances().values()}
                return len(hashes) == 1 and hashes != second

            await eventually(restarted, "every Instance restarted")
            await c.converged("api")
        _roll_is_orderly(seen)
        annotations = c.instances()["api-0"]["metadata"]["annotations"]
        assert annotations == {"compute.datumapis.com/restartedAt": "2025-06-01T12:00:00Z"}


async def test_deleted_instance_and_pod_come_back(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 3))
        await c.converged("api")
        old_instance = c.instances()["api-1"]["metadata"]["uid"]
        await c.kubectl("delete", "instance", "api-1", "-n", NS)  # waits until it is gone
        await c.converged("api")
        assert c.instances()["api-1"]["metadata"]["uid"] != old_instance, "a new api-1 was created"

        instance_uid = c.instances()["api-2"]["metadata"]["uid"]
        old_pod = c.pods()["api-2"]["metadata"]["uid"]
        await c.kubectl("delete", "pod", "api-2", "-n", NS)
        await eventually(lambda: c.pods().get("api-2", {}).get("metadata", {}).get("uid") not in (None, old_pod),
                         "a new Pod api-2")  # fmt: skip
        await c.converged("api")
        assert c.instances()["api-2"]["metadata"]["uid"] == instance_uid, "the Instance itself was not replaced"


async def test_an_instance_edited_by_hand_is_recreated(tmp_path: Path) -> None:
    """Its spec no longer says what the template says: drift, deleted and recreated from
    the template (never patched in place), the others untouched."""
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 2))
        await c.converged("api", {"api-0", "api-1"})
        uids = {name: inst["metadata"]["uid"] for name, inst in c.instances().items()}
        wanted = c.instances()["api-1"]["spec"]["runtime"]
        image = "/spec/runtime/sandbox/containers/0/image"
        await c.kubectl("patch", "instance", "api-1", "-n", NS, "--type", "json",
                        "-p", f'[{{"op":"replace","path":"{image}","value":"evil:latest"}}]')  # fmt: skip

        def put_back() -> bool:
            inst = c.instances().get("api-1")
            return inst is not None and inst["metadata"]["uid"] != uids["api-1"] and inst["spec"]["runtime"] == wanted

        await eventually(put_back, "api-1 recreated from the template", within=30)
        await c.converged("api", {"api-0", "api-1"})
        assert c.instances()["api-0"]["metadata"]["uid"] == uids["api-0"]


async def test_a_spec_the_cell_rejects_is_reported_in_status(tmp_path: Path) -> None:
    """A 70-character WD name cannot be the workload-deployment-name label of its Instances:
    nothing is created, and the WD's status says so at its generation (no retry loop)."""
    name = "a" * 70
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment(name, 1))

        def reported() -> dict[str, Any] | None:
            obj = c.wd(name)
            status = (obj or {}).get("status") or {}
            conds = {x["type"]: x for x in status.get("conditions") or []}
            ok = obj is not None and status.get("observedGeneration") == obj["metadata"]["generation"]
            return conds.get("Available") if ok else None

        available = await eventually(reported, "the rejection in status")
        assert (available["status"], available["reason"]) == ("False", "ConfigurationError")
        assert "cannot be a label value" in available["message"] and "metadata.name" in available["message"]
        assert c.instances(name) == {}

        def told() -> list[dict[str, Any]]:
            return [e for e in c.plane.list("events", NS) if e["reason"] == "InvalidSpec"]

        await eventually(told, "the InvalidSpec Event (written after the status)")
        await controller(c.manager, "cell-workloaddeployment").wait_idle(10)  # the reconcile its own write brings
        before = c.server.plane.counters.writes()
        await anyio.sleep(2.0)
        assert c.server.plane.counters.writes() == before, "a rejected spec is not retried in a loop"
        events = told()
        assert len(events) == 1 and events[0].get("count", 1) == 1, "told once"


async def test_a_wd_of_another_city_is_refused(tmp_path: Path) -> None:
    """The cell runs with --city-code DFW; an LHR copy here means a registration that
    disagrees with the cell's settings: nothing is created, the status says why."""
    async with cell(tmp_path) as c:
        lhr = workload_deployment("api", 1)
        lhr["spec"]["cityCode"] = "LHR"
        c.create_wd(lhr)

        def reported() -> dict[str, Any] | None:
            status = (c.wd("api") or {}).get("status") or {}
            return next((x for x in status.get("conditions") or [] if x["type"] == "Available"), None)

        available = await eventually(reported, "the refusal in status")
        assert (available["status"], available["reason"]) == ("False", "ConfigurationError")
        assert "this cell serves 'DFW' (--city-code)" in available["message"]
        assert c.instances() == {}


async def test_a_copy_placed_by_location_runs_in_its_city(tmp_path: Path) -> None:
    """A copy of a `spec.locationRef` WD names no city: the cell (--city-code DFW) takes it
    from the federator's city-code label, compared case-insensitively, and runs it."""
    async with cell(tmp_path) as c:
        wd = workload_deployment("api", 2)
        del wd["spec"]["cityCode"]
        wd["spec"]["locationRef"] = {"name": "dfw"}
        wd["metadata"].setdefault("labels", {})[str(Label.TOPOLOGY_CITY_CODE)] = "dfw"
        c.create_wd(wd)
        await c.converged("api", {"api-0", "api-1"})
        assert {i["metadata"]["labels"][str(Label.CITY_CODE)] for i in c.instances("api").values()} == {"dfw"}


async def test_ordinal_start_and_scale_follow(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 2, ordinal_start=7))
        await c.converged("api", {"api-7", "api-8"})
        async with history(c.server, set()) as seen:
            await c.kubectl("scale", "wd", "api", "-n", NS, "--replicas=5")
            await c.converged("api", {f"api-{i}" for i in range(7, 12)})
            assert seen.created == ["api-9", "api-10", "api-11"], "scale up creates ascending"
            await c.kubectl("scale", "wd", "api", "-n", NS, "--replicas=1")
            await c.converged("api", {"api-7"})
            assert seen.deleted == ["api-11", "api-10", "api-9", "api-8"], "scale down deletes from the highest"
        assert set(c.pods()) == {"api-7"}
        scale = json.loads(await c.kubectl("get", "wd", "api", "-n", NS, "--subresource=scale", "-o", "json"))
        assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (1, 1)


CPU_60 = [{"resource": {"name": "cpu", "target": {"averageUtilization": 60}}}]


@pytest.mark.parametrize("cascade", ["background", "foreground"])
async def test_cascading_deletion_leaves_nothing(tmp_path: Path, cascade: str) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 2, maxReplicas=4, metrics=CPU_60))
        await c.converged("api", {"api-0", "api-1"})
        assert c.hpa("api") is not None
        await c.kubectl("delete", "wd", "api", "-n", NS, f"--cascade={cascade}")  # waits until it is gone
        assert c.wd("api") is None

        def nothing_left() -> bool:
            return not (c.instances("api") or c.pods() or c.hpa("api"))

        await eventually(nothing_left, f"no Instance, Pod or HPA left after --cascade={cascade}")


async def test_an_orphaning_delete_leaves_the_instances_running_unowned(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 2))
        await c.converged("api", {"api-0", "api-1"})
        await c.kubectl("delete", "wd", "api", "-n", NS, "--cascade=orphan")  # waits until it is gone
        assert c.wd("api") is None
        instances = c.instances()
        assert set(instances) == {"api-0", "api-1"}, "the finalizer left the Instances to the garbage collector"
        assert all(not i["metadata"].get("ownerReferences") for i in instances.values())
        assert c.running_pods() == {"api-0", "api-1"}


async def test_autoscaler_follows_scale_settings_and_foreign_ones_are_left_alone(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        created = c.create_wd(workload_deployment("api", 1, maxReplicas=3, metrics=CPU_60))
        await eventually(lambda: c.hpa("api"), "the HPA")
        hpa = c.hpa("api")
        assert hpa is not None
        assert hpa["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "compute.datumapis.com/v1alpha",
                "kind": "WorkloadDeployment",
                "name": "api",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        spec = hpa["spec"]
        assert spec["scaleTargetRef"] == {
            "apiVersion": "compute.datumapis.com/v1alpha",
            "kind": "WorkloadDeployment",
            "name": "api",
        }
        assert (spec["minReplicas"], spec["maxReplicas"]) == (1, 3)
        assert spec["metrics"] == [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            }
        ]

        def scale(wd: dict[str, Any]) -> None:
            wd["spec"]["scaleSettings"].update(
                minReplicas=2,
                maxReplicas=6,
                metrics=[{"resource": {"name": "memory", "target": {"averageValue": "512Mi"}}}],
            )

        c.edit_wd(scale)

        def followed() -> bool:
            current = c.hpa("api")
            return current is not None and (current["spec"]["minReplicas"], current["spec"]["maxReplicas"]) == (2, 6)

        await eventually(followed, "the HPA following scaleSettings")
        current = c.hpa("api")
        assert current is not None and current["spec"]["metrics"] == [
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}},
            }
        ]
        c.edit_wd(lambda wd: wd["spec"]["scaleSettings"].pop("metrics"))
        await eventually(lambda: c.hpa("api") is None, "the HPA gone once metrics are removed")

        # someone else's HPA with a WD's name: never adopted, overwritten or deleted
        foreign = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 9,
            },
        }
        await c.kubectl("apply", "-f", "-", stdin=json.dumps(foreign))
        before = c.hpa("web")
        assert before is not None
        c.create_wd(workload_deployment("web", 1, maxReplicas=3, metrics=CPU_60))
        await c.converged("web", {"web-0"})
        events = await c.kubectl(
            "get",
            "events",
            "-n",
            NS,
            "--field-selector=involvedObject.name=web,reason=AutoscalerNotOwned",
            "-o",
            "name",
        )
        assert events.strip(), "the WorkloadDeployment says why it has no autoscaler"
        c.edit_wd(lambda wd: wd["spec"]["scaleSettings"].pop("metrics"), name="web")
        await eventually(lambda: (c.wd("web") or {}).get("status", {}).get("observedGeneration") == 2, "the edit seen")
        assert await controller(c.manager, "cell-workloaddeployment").wait_idle(within=10)
        after = c.hpa("web")
        assert after is not None and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert "ownerReferences" not in after["metadata"]


def _condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    conds = {cond["type"]: cond for cond in (obj or {}).get("status", {}).get("conditions", [])}
    return conds.get(type_) or {}


@pytest.mark.parametrize(
    ("image", "reason", "message"),
    [
        (
            "registry.example.com/team/unpullable:1",
            "ImageUnavailable",
            'Back-off pulling image "registry.example.com/team/unpullable:1"',
        ),
        ("registry.example.com/team/crasher:1", "InstanceCrashing", "restarting failed container=api"),
    ],
    ids=["unpullable", "crashing"],
)
async def test_bad_images_surface_on_instance_and_deployment(
    tmp_path: Path, image: str, reason: str, message: str
) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(workload_deployment("api", 1, image=image))

        def ready() -> dict[str, Any]:
            return _condition(c.instances().get("api-0"), "Ready")

        def available() -> dict[str, Any]:
            return _condition(c.wd("api"), "Available")

        await eventually(lambda: ready().get("reason") == reason, f"api-0 Ready=False/{reason}")
        assert ready()["status"] == "False" and "container api: " in ready()["message"]
        assert message in ready()["message"], "the container's own message"
        await eventually(lambda: reason in available().get("message", ""), "the WorkloadDeployment reflecting it")
        assert (available()["status"], available()["reason"]) == ("False", reason), "the headline is the real reason"
        assert f"api-0: {reason}: container api: " in available()["message"]
        row = await c.kubectl("get", "instance", "api-0", "-n", NS, "--no-headers")
        assert row.split()[2:4] == ["False", reason], row
        events = await c.kubectl(
            "get", "events", "-n", NS, f"--field-selector=involvedObject.name=api-0,reason={reason}", "-o", "json"
        )
        (event,) = json.loads(events)["items"]
        assert event["type"] == "Warning" and message in event["message"]


async def test_a_copys_shard_label_follows_onto_its_instances(tmp_path: Path) -> None:
    """With `run --sharding`, a copy carries its project WD's shard label: its Instances carry
    it too (the owning shard caches only its own), and a relabel after a hand-over costs one
    label patch per Instance; a copy without the label gives Instances without it."""
    shard = str(Label.SHARD)
    async with cell(tmp_path) as c:
        wd = workload_deployment("api", 2)
        wd["metadata"].setdefault("labels", {})[shard] = "shard-a"
        c.create_wd(wd)
        c.create_wd(workload_deployment("web", 1))
        await c.converged("api", {"api-0", "api-1"})
        await c.converged("web", {"web-0"})
        assert {i["metadata"]["labels"].get(shard) for i in c.instances("api").values()} == {"shard-a"}
        assert shard not in c.instances("web")["web-0"]["metadata"]["labels"]
        counters = c.server.plane.counters
        assert await all_idle(c.manager)
        patches = counters.get("patch", "instances.compute.datumapis.com")

        def relabel(obj: dict[str, Any]) -> None:
            obj["metadata"]["labels"][shard] = "shard-b"

        c.edit_wd(relabel)
        await eventually(
            lambda: {i["metadata"]["labels"].get(shard) for i in c.instances("api").values()} == {"shard-b"} or None,
            "the Instances relabelled for shard-b",
        )
        assert await all_idle(c.manager)
        assert counters.get("patch", "instances.compute.datumapis.com") - patches == 2, "one label patch per Instance"
