"""QuotaGate end to end on an embedded cell: claims, the grant controller, the Quota gate, and
the tier requeue that picks up a grant whose watch event never arrives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cells.quotaclaim import is_granted
from federation.api.resources import RESOURCE_CLAIMS
from mcruntime import Manager, Request, Result
from tests.support import controller, eventually

from .cellbed import NS, QUOTA_GROUP, VERSION, Cell, cell, workload_deployment

GATES = "PodRuntime=true,QuotaGate=true"


def budget(cpu: str, memory: str = "8Gi") -> dict[str, Any]:
    return {
        "apiVersion": f"{QUOTA_GROUP}/{VERSION}",
        "kind": "ResourceBudget",
        "metadata": {"name": "project", "namespace": NS},
        "spec": {"hard": {"cpu": cpu, "memory": memory}},
    }


def set_budget_cpu(c: Cell, cpu: str) -> None:
    current = c.plane.get("resourcebudgets", NS, "project", group=QUOTA_GROUP, version=VERSION)
    current["spec"]["hard"]["cpu"] = cpu
    c.plane.update("resourcebudgets", current, group=QUOTA_GROUP, version=VERSION)


def conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {cond["type"]: cond for cond in (obj or {}).get("status", {}).get("conditions", [])}


def gates(obj: dict[str, Any] | None) -> list[str]:
    return [g["name"] for g in (obj or {}).get("spec", {}).get("controller", {}).get("schedulingGates", [])]


async def held_back(c: Cell) -> None:
    """api-0 exists, gated, its claim refused: the state every test below starts from."""

    def refused() -> bool:
        claim = c.claims().get("instance-api-0")
        inst = c.instances().get("api-0")
        return (
            conditions(claim).get("Granted", {}).get("reason") == "QuotaExceeded"
            and conditions(inst).get("QuotaGranted", {}).get("reason") == "QuotaExceeded"
        )

    await eventually(refused, "api-0 held back for quota")
    inst = c.instances()["api-0"]
    assert gates(inst) == ["Quota"]
    assert (conditions(inst)["Ready"]["status"], conditions(inst)["Ready"]["reason"]) == ("False", "PendingQuota")
    assert "needs cpu 1 but ResourceBudget project has 0 of 0 left" in conditions(inst)["QuotaGranted"]["message"]
    claim = c.claims()["instance-api-0"]
    assert claim["spec"]["requests"] == {"cpu": "1", "memory": "2Gi"}  # datumcloud/d1-standard-2
    (ref,) = claim["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"]) == ("Instance", inst["metadata"]["uid"], True)
    assert "api-0" not in c.pods()

    def deployment_says_quota() -> bool:
        conds = conditions(c.wd("api"))
        return (conds.get("Available", {}).get("reason"), conds.get("ReplicasReady", {}).get("reason")) == (
            "QuotaNotGranted",
            "QuotaExceeded",
        )

    await eventually(deployment_says_quota, "the WorkloadDeployment naming quota")


class Passes:
    """Wraps the Instance controller's reconciler: per pass, whether the claim was granted in
    its cache when the pass began, and the gates the Instance has (live) when it ended."""

    def __init__(self, c: Cell, manager: Manager) -> None:
        self.cell = c
        self.manager = manager
        ctrl = controller(manager, "instance-controller")
        self.inner = ctrl.reconciler
        ctrl.reconciler = self
        self.passes: list[tuple[bool, list[str]]] = []

    async def reconcile(self, req: Request) -> Result:
        informer = self.manager.get_cluster(req.cluster).cache.informer_of(RESOURCE_CLAIMS)
        claim = informer.get(f"instance-{req.name}", namespace=req.namespace)
        granted_at_start = claim is not None and is_granted(claim)
        result: Result = await self.inner.reconcile(req)
        if req.name == "api-0":
            self.passes.append((granted_at_start, gates(self.cell.instances().get("api-0"))))
        return result


async def test_a_grant_on_the_watch_removes_the_gate_in_one_pass(tmp_path: Path) -> None:
    async with cell(tmp_path, feature_gates=GATES) as c:
        c.plane.create("resourcebudgets", budget("0"), group=QUOTA_GROUP, version=VERSION)
        c.create_wd(workload_deployment("api", 1))
        await held_back(c)
        passes = Passes(c, c.manager)
        set_budget_cpu(c, "1")
        await c.converged("api", {"api-0"})
        saw_grant = [after for granted_at_start, after in passes.passes if granted_at_start]
        assert saw_grant, "the grant reached the Instance controller through its claim watch"
        assert all("Quota" not in after for after in saw_grant), (
            f"a pass that saw the grant left the gate for a later pass: {passes.passes}"
        )
        inst = c.instances()["api-0"]
        assert gates(inst) == []
        quota = conditions(inst)["QuotaGranted"]
        assert (quota["status"], quota["reason"]) == ("True", "QuotaAvailable")
        assert quota["observedGeneration"] == inst["metadata"]["generation"] == 2  # re-stamped after the gate went
        used = c.plane.get("resourcebudgets", NS, "project", group=QUOTA_GROUP, version=VERSION)["status"]
        assert used == {"used": {"cpu": "1", "memory": "2Gi"}, "grantedClaims": 1, "pendingClaims": 0}


async def test_a_grant_missed_by_the_watch_is_picked_up_by_the_tier_requeue(tmp_path: Path) -> None:
    async with cell(tmp_path, feature_gates=GATES) as c:
        c.plane.create("resourcebudgets", budget("0"), group=QUOTA_GROUP, version=VERSION)
        c.create_wd(workload_deployment("api", 1))
        await held_back(c)
        # every claim watch (and re-list) of the cell now fails: no claim event reaches anyone
        faults = c.server.plane.faults
        faults.configure(
            error_rate=1.0, error_code=503, methods=["GET"], path_contains=f"/{QUOTA_GROUP}/{VERSION}/resourceclaims"
        )
        c.server.plane.drop_watches()
        set_budget_cpu(c, "1")  # the grant controller hears the budget and grants from a live LIST
        await eventually(lambda: is_granted(c.claims()["instance-api-0"]), "the claim granted")
        await eventually(lambda: gates(c.instances().get("api-0")) == [], "the gate removed by the tier requeue")
        cached = (
            c.manager.get_cluster("cell-dfw").cache.informer_of(RESOURCE_CLAIMS).get("instance-api-0", namespace=NS)
        )
        assert cached is not None and not is_granted(cached), "no watch event carried the grant"
        assert faults.injected > 0
        faults.clear()
        await c.converged("api", {"api-0"})


async def test_a_roll_under_a_full_budget_passes_each_grant_on(tmp_path: Path) -> None:
    """Each recreated Instance gets a new claim of the same name, granted from the room its
    predecessor's claim freed: the old claim must be gone (with its Instance) first."""
    async with cell(tmp_path, feature_gates=GATES) as c:
        c.plane.create("resourcebudgets", budget("2", "4Gi"), group=QUOTA_GROUP, version=VERSION)  # exactly two
        c.create_wd(workload_deployment("api", 2))
        await c.converged("api", {"api-0", "api-1"})
        before = {name: claim["metadata"]["uid"] for name, claim in c.claims().items()}
        c.edit_wd(lambda wd: wd["spec"]["template"]["metadata"]["labels"].update(release="2"))

        def rolled() -> bool:
            instances = c.instances().values()
            return len(instances) == 2 and all(i["metadata"]["labels"].get("release") == "2" for i in instances)

        await eventually(rolled, "both Instances recreated on the new template", within=20)
        await c.converged("api", {"api-0", "api-1"})
        after = {name: claim["metadata"]["uid"] for name, claim in c.claims().items()}
        assert set(after) == set(before) == {"instance-api-0", "instance-api-1"}
        assert not set(after.values()) & set(before.values()), "every claim is the new Instance's own"
        usage = c.plane.get("resourcebudgets", NS, "project", group=QUOTA_GROUP, version=VERSION)["status"]
        assert usage == {"used": {"cpu": "2", "memory": "4Gi"}, "grantedClaims": 2, "pendingClaims": 0}
