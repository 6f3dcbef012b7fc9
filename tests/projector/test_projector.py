"""The projector as `run --enable-management-controllers` runs it: Instances and status of
the cells mirrored into the project, worst reason named, honest freshness. The cells'
own controllers are stood in for by `cellsim.settle` so each test controls exactly what a
cell reports (tests/e2e runs the real cell controllers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from federation.api.constants import Annotation, Label
from federation.api.resources import INSTANCES, NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.fleet.routing import Routes
from mcruntime import EventType, Manager, ObjectEvent, Request
from projector.status import CopyEvents, WdEvents
from tests.federation.test_federator import WDs, shares, workload_deployment
from tests.support import Fleet, Plane, eventually, fleet, management_settings, running
from tests.support.manager import all_idle, controller, record

from .cellsim import GROUP, VERSION, settle

CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))


@asynccontextmanager
async def federation(tmp: Path, **settings: Any) -> AsyncIterator[tuple[Fleet, Manager]]:
    async with (
        fleet(tmp, projects=("acme/web", "acme/shop"), cells=CELLS) as f,
        running(management_settings(tmp / "management.kubeconfig", **settings)) as mgr,
    ):
        yield f, mgr


def projections(f: Fleet, project: str = "web") -> dict[str, dict[str, Any]]:
    found = Plane(f.server(project)).list("instances", "default", group=GROUP, version=VERSION)
    return {i["metadata"]["name"]: i for i in found if not i["metadata"].get("deletionTimestamp")}


def status(f: Fleet, name: str = "api", project: str = "web") -> dict[str, Any]:
    wd = WDs(f, project).get("default", name)
    return (wd or {}).get("status") or {}


def cond(obj_status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in obj_status.get("conditions") or [] if c["type"] == type_), {})


def available(obj_status: dict[str, Any]) -> str:
    return str(cond(obj_status, "Available").get("status"))


async def test_instances_and_status_reach_the_project(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        created = WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: set(projections(f)) == {"api-0", "api-1", "api-2", "api-3"}, "4 projections")

        def all_ready() -> bool:
            return all(cond(p.get("status") or {}, "Ready").get("status") == "True" for p in projections(f).values())

        await eventually(all_ready, "projections Ready")
        for name, p in projections(f).items():
            assert p["metadata"]["ownerReferences"] == [{
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadDeployment", "name": "api",
                "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
            cell = "dfw-1" if name in ("api-0", "api-1") else "dfw-2"
            assert p["metadata"]["annotations"]["compute.datumapis.com/cell"] == cell
            assert p["metadata"]["labels"][Label.WORKLOAD_DEPLOYMENT_UID] == created["metadata"]["uid"]
            assert p["spec"] == created["spec"]["template"]["spec"] | p["spec"]

        def aggregated() -> bool:
            s = status(f)
            counters = (s.get("replicas"), s.get("readyReplicas"), s.get("updatedReplicas"))
            return counters == (4, 4, 4) and s.get("observedGeneration") == 1 and available(s) == "True"

        await eventually(aggregated, f"project WD status 4/4/4 gen 1 Available, got {status(f)}")


async def test_a_roll_holds_observed_generation_back(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("observedGeneration") == 1, "generation 1 observed")
        WDs(f, "web").edit("default", "api", lambda o: o["spec"]["template"]["metadata"]["labels"].update(v="2"))

        def copies_at_2() -> bool:
            copies = [WDs(f, c).list() for c in ("dfw-1", "dfw-2")]
            return all(c and c[0]["metadata"]["generation"] == 2 for c in copies)

        await eventually(copies_at_2, "both copies carry the new spec")
        settle(f, "dfw-1")
        settle(f, "dfw-2", observe=False)  # dfw-2 has not observed generation 2 yet
        await eventually(lambda: cond(status(f), "ReplicasReady").get("reason") == "AwaitingPropagation", "waiting")
        assert status(f)["observedGeneration"] == 1, "not claimed before every cell observed the spec"
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("observedGeneration") == 2, "caught up once both observed it")


async def test_a_crash_in_one_cell_is_named(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2", broken={1: ("InstanceCrashing", "container api: back-off restarting failed container")})

        def crashed() -> bool:
            p = projections(f).get("api-1")
            return p is not None and cond(p.get("status") or {}, "Ready").get("reason") == "InstanceCrashing"

        await eventually(crashed, "the projection shows InstanceCrashing")
        assert "back-off restarting" in cond(projections(f)["api-1"]["status"], "Ready")["message"]
        # the status projector may aggregate a moment after the Instance projector: False
        # alone can still be the AwaitingPropagation from before the cells reported
        await eventually(lambda: cond(status(f), "Available").get("reason") == "InstanceCrashing", "WD names the crash")
        available = cond(status(f), "Available")
        assert available["status"] == "False" and "dfw-2" in available["message"], available["message"]


async def test_a_dark_cell_turns_unknown_and_recovers(tmp_path: Path) -> None:
    async with federation(tmp_path, cell_status_stale_after=1.0) as (f, mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("readyReplicas") == 2, "both ready")
        await f.cells["dfw-2"].pause()

        def unknown() -> bool:
            return cond(status(f), "Available").get("status") == "Unknown"

        await eventually(unknown, "dfw-2's contribution Unknown after the threshold", within=20)
        available = cond(status(f), "Available")
        assert available["reason"] == "CellUnreachable" and "dfw-2" in available["message"]
        assert "last observed" in available["message"]
        assert status(f)["readyReplicas"] == 1, "the dark cell's numbers are not repeated"
        await f.cells["dfw-2"].resume()
        await eventually(lambda: cond(status(f), "Available").get("status") == "True", "recovered", within=60)
        assert status(f)["readyReplicas"] == 2
        assert mgr.clusters["dfw-2"].state.value == "ready"


async def test_projections_follow_scale_down_and_deletion(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: len(projections(f)) == 4, "4 projections")
        WDs(f, "web").edit("default", "api", lambda o: o["spec"].update(replicas=2))
        # a scale-down only removes (issue 18 item 2): api-0 and api-1 stay in dfw-1
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (0, 2)}, "2 + 0")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: set(projections(f)) == {"api-0", "api-1"}, "exactly the remaining Instances")
        WDs(f, "web").delete("default", "api")
        await eventually(lambda: WDs(f, "web").get("default", "api") is None, "the WD gone")
        await eventually(lambda: projections(f) == {}, "no projection left behind")


async def test_no_cell_for_the_city(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, mgr):
        WDs(f, "web").create(workload_deployment("api", "NRT", 2))

        def nowhere() -> bool:
            return cond(status(f), "Available").get("reason") == "NoMatchingLocation"

        await eventually(nowhere, "NoMatchingLocation")
        assert "NRT" in cond(status(f), "Available")["message"]

        def warned() -> list[dict[str, Any]]:
            events = Plane(f.server("web")).list("events", "default")
            return [
                e for e in events if e.get("reason") == "NoMatchingLocation" and e["involvedObject"]["name"] == "api"
            ]

        await eventually(warned, "a NoMatchingLocation Event on the WD (as on a Workload placement)")
        assert "no registered cell serves city NRT" in warned()[0]["message"]
        # an unplaced WD read no copy: the projector keeps no copy versions for it (an
        # empty entry per unplaced WD, for its lifetime, was ~100 B of every one)
        projector = next(w.handler for w in controller(mgr, "status-projector").watches
                         if isinstance(w.handler, CopyEvents)).projector  # fmt: skip
        assert Request("web", "default", "api") not in projector.copies_read


@pytest.mark.parametrize("project", ["web"])
async def test_an_instance_without_upstream_labels_is_not_projected(tmp_path: Path, project: str) -> None:
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, project).create(workload_deployment("api", "LHR", 1))
        await eventually(lambda: len(shares(f, "api")) == 1, "the copy")
        settle(f, "lhr-1", labels=False)

        def warned() -> bool:
            events = Plane(f.server("lhr-1")).list("events")
            return any(e["reason"] == "InstanceLabelsMissing" for e in events)

        await eventually(warned, "an Event on the cell Instance")
        assert projections(f, project) == {}, "never an ownerless or unrouted projection"


async def test_an_instance_whose_project_wd_is_missing_is_not_projected(tmp_path: Path) -> None:
    """The project WD went without the federator's finalizer (as after a partition's grace):
    its copy and Instances are orphans in the cell. No projection is made for them (none
    could have a live owner); the cell Instance gets an Event saying why."""
    async with federation(tmp_path) as (f, _mgr):
        web = WDs(f, "web")
        web.create(workload_deployment("api", "LHR", 1))
        await eventually(lambda: len(shares(f, "api")) == 1, "the copy")
        settle(f, "lhr-1")
        await eventually(lambda: len(projections(f)) == 1, "projected")
        web.edit("default", "api", lambda o: o["metadata"].update(finalizers=[]))
        web.delete("default", "api")  # gone at once: no finalizer held it
        await eventually(lambda: projections(f) == {}, "the projection reclaimed with its owner")
        settle(f, "lhr-1", broken={0: ("InstanceCrashing", "a change in the cell")})  # an event on the orphan

        def warned() -> bool:
            events = Plane(f.server("lhr-1")).list("events")
            return any(e["reason"] == "UpstreamDeploymentMissing" and "web/default/api" in e["message"] for e in events)

        await eventually(warned, "an Event on the orphaned cell Instance")
        assert projections(f) == {}, "never an ownerless projection"


async def test_an_instance_moving_between_cells_keeps_its_projection(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        created = WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: len(projections(f)) == 4, "4 projections")
        await f.add_cell("dfw-3", "DFW")
        await eventually(lambda: len(shares(f, "api")) == 3, "re-divided over 3 cells")
        moved = next(cell for cell, (n, _start) in shares(f, "api").items() if cell == "dfw-3" and n == 1)
        (_n, start) = shares(f, "api")[moved]
        name = f"api-{start}"
        settle(f, "dfw-3")  # the new cell runs the moved ordinal while the old one still has it

        def fed_by_new_cell() -> bool:
            p = projections(f).get(name)
            return p is not None and p["metadata"]["annotations"]["compute.datumapis.com/cell"] == "dfw-3"

        await eventually(fed_by_new_cell, f"{name} fed by dfw-3")
        settle(f, "dfw-2")  # the old cell lets go of it
        await eventually(lambda: len(projections(f)) == 4, "still exactly 4 projections")
        assert fed_by_new_cell(), "the moved Instance's projection was kept, not deleted"
        assert projections(f)[name]["metadata"]["uid"], "one projection, the same name"
        assert WDs(f, "web").get("default", "api")["metadata"]["uid"] == created["metadata"]["uid"]  # type: ignore[index]


@pytest.mark.slow
@pytest.mark.kubectl
async def test_kubectl_get_wd_shows_a_dark_cell(tmp_path: Path) -> None:
    from kubeplane.testing import Kubectl, kubectl_path

    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with federation(tmp_path, cell_status_stale_after=1.0) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("readyReplicas") == 4, "all ready")
        kubectl = Kubectl(tmp_path / "web.kubeconfig", tmp_path / "kc")
        header, row = (await kubectl("get", "wd", "api")).splitlines()
        columns = ["NAME", "AGE", "AVAILABLE", "REASON", "REPLICAS", "READY", "DESIRED", "UP-TO-DATE", "LOCATION"]
        assert header.split() == columns  # Location (spec.locationRef.name) is empty: a cityCode WD
        assert row.split()[2:8] == ["True", "StableInstanceFound", "4", "4", "4", "4"]
        await f.cells["dfw-2"].pause()
        await eventually(lambda: available(status(f)) == "Unknown", "dfw-2 stale", within=20)
        _header, row = (await kubectl("get", "wd", "api")).splitlines()
        assert row.split()[2:8] == ["Unknown", "CellUnreachable", "2", "2", "4", "2"]
        await f.cells["dfw-2"].resume()


async def test_a_restart_before_a_cells_instances_are_listed_removes_no_projection(tmp_path: Path) -> None:
    """Issue 18 item 6: a manager that starts while a cell's downstream namespaces are
    listed but its Instances are not yet (here the cell refuses to list Instances) must not
    take the Instances for gone: no projection is deleted, none recreated."""
    async with fleet(tmp_path, projects=("acme/web", "acme/shop"), cells=CELLS) as f:
        async with running(management_settings(tmp_path / "management.kubeconfig")):
            WDs(f, "web").create(workload_deployment("api", "DFW", 4))
            await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
            settle(f, "dfw-1")
            settle(f, "dfw-2")
            await eventually(lambda: set(projections(f)) == {"api-0", "api-1", "api-2", "api-3"}, "4 projections")
        uids = {name: p["metadata"]["uid"] for name, p in projections(f).items()}
        cell = f.cells["dfw-2"]
        cell.plane.faults.configure(error_rate=1.0, error_code=500, methods=["GET"], path_contains="/instances")
        deletes = f.projects["web"].plane.counters.get("delete", "instances.compute.datumapis.com")
        async with running(management_settings(tmp_path / "management.kubeconfig")) as mgr:
            projector = controller(mgr, "instance-projector")
            recorded = record(mgr, "instance-projector")
            await eventually(lambda: mgr.clusters.get("dfw-2") is not None, "dfw-2 engaged")
            dfw2 = mgr.clusters["dfw-2"]
            await eventually(lambda: dfw2.cache.informer_of(NAMESPACES).has_synced, "dfw-2 namespaces listed")
            await eventually(lambda: dfw2.cache.informer_of(WORKLOAD_DEPLOYMENTS).has_synced, "dfw-2 copies listed")
            assert not dfw2.cache.informer_of(INSTANCES).has_synced, "the cell's Instances cannot be listed"
            # every projection reconciled now, while dfw-2's Instances are not listed
            seen = len(recorded.requests)
            for name in uids:
                projector.enqueue(Request("web", "default", name))
            await eventually(lambda: {r.name for r in recorded.requests[seen:]} >= set(uids), "reconciled again")
            await eventually(lambda: len(projector.queue) == 0 and projector.in_flight == 0, "nothing in flight")
            assert {name: p["metadata"]["uid"] for name, p in projections(f).items()} == uids
            cell.plane.faults.clear()
            await eventually(lambda: dfw2.state.value == "ready", "dfw-2 listed")
            assert await projector.wait_idle(within=30)
        assert {name: p["metadata"]["uid"] for name, p in projections(f).items()} == uids, "recreated"
        assert f.projects["web"].plane.counters.get("delete", "instances.compute.datumapis.com") == deletes


async def test_a_wd_finds_its_instances_through_an_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mapping a project WD event to its projections reads the cell Instances of that WD
    only, through the instances-of-copy index, in the cell namespaces the upstream index
    names: nothing is decoded for it, no Instance, no namespace."""
    async with federation(tmp_path) as (f, mgr):
        created = WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: len(projections(f)) == 4, "4 projections")
        # another WD's Instances beside api's in the same cell namespace
        WDs(f, "web").create(workload_deployment("db", "DFW", 40))
        await eventually(lambda: len(shares(f, "db")) == 2, "db's copies")
        cell = Plane(f.server("dfw-1"))
        api_0 = next(
            i for i in cell.list("instances", group=GROUP, version=VERSION) if i["metadata"]["name"] == "api-0"
        )
        namespace = api_0["metadata"]["namespace"]
        db_copy = WDs(f, "dfw-1").get(namespace, "db")
        assert db_copy is not None
        owner = api_0["metadata"]["ownerReferences"][0] | {"name": "db", "uid": db_copy["metadata"]["uid"]}
        for n in range(20):
            other = {"apiVersion": api_0["apiVersion"], "kind": api_0["kind"], "spec": api_0["spec"],
                     "metadata": {"name": f"db-{n}", "namespace": namespace, "labels": api_0["metadata"]["labels"],
                                  "ownerReferences": [owner]}}  # fmt: skip
            cell.create("instances", other, group=GROUP, version=VERSION)

        def cached_others() -> bool:
            store = mgr.clusters["dfw-1"].cache.informer_of(INSTANCES).store
            return sum(1 for k in store.keys() if "/db-" in k) == 20  # noqa: SIM118 (a Store, not a dict)

        await eventually(cached_others, "the other Instances cached")
        decoded: list[str] = []
        loads = orjson.loads

        def counting_loads(raw: Any) -> Any:
            obj = loads(raw)
            decoded.append(str(obj.get("kind")) if isinstance(obj, dict) else "")
            return obj

        monkeypatch.setattr(orjson, "loads", counting_loads)
        routed = await Routes(mgr).projections_of_wd("web", created)
        assert routed == [Request("web", "default", f"api-{i}") for i in range(4)]
        assert decoded == [], f"{decoded} decoded to route one WD (the cell namespaces' names come from their index)"
        mgr.clusters["dfw-1"].cache.informer_of(INSTANCES).store.get(f"{namespace}/api-0")
        monkeypatch.undo()
        assert decoded == ["Instance"], "the spy saw a read: it was in place"


async def converged_api(f: Fleet, within: float = 10.0) -> None:
    """WD `api` (4 replicas, DFW) created, its 2 + 2 copies in dfw-1 and dfw-2, both cells'
    pods ready, and its converged status written."""
    WDs(f, "web").create(workload_deployment("api", "DFW", 4))
    await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2", within=within)
    settle(f, "dfw-1")
    settle(f, "dfw-2")
    await eventually(lambda: status(f).get("observedGeneration") == 1, "the converged status")


async def test_a_wd_whose_cells_observe_it_costs_the_ideal_writes(tmp_path: Path) -> None:
    """Create: the finalizer, one copy per target cell, one status write (the converged
    one, written when the copies are observed), no Event. Update: one write per changed
    copy and one status write, no Event. Counted by the embedded servers."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, _mgr):
        web = f.server("web").plane.counters
        cells = [f.server(c).plane.counters for c in ("dfw-1", "dfw-2", "lhr-1")]
        wd_resource = f"workloaddeployments.{GROUP}"
        await converged_api(f)
        assert web.writes(wd_resource) - web.writes(f"{wd_resource}/status") == 1, f"the finalizer: {web.snapshot()}"
        assert web.writes(f"{wd_resource}/status") == 1, "one status write"
        assert web.writes("events") == 0, "no Event for a first placement"
        copy_writes = [c.writes(wd_resource) - c.writes(f"{wd_resource}/status") for c in cells]
        assert copy_writes == [1, 1, 0], "one copy per target cell"

        before = shares(f, "api")
        WDs(f, "web").edit("default", "api", lambda o: o["spec"].update(replicas=6))
        await eventually(lambda: sum(n for n, _ in shares(f, "api").values()) == 6, "6 replicas over the copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("observedGeneration") == 2, "the converged status")
        assert web.writes(f"{wd_resource}/status") == 2, "one status write for the update"
        assert web.writes("events") == 0, "no Event for a spec change"
        copy_writes = [c.writes(wd_resource) - c.writes(f"{wd_resource}/status") for c in cells]
        after = shares(f, "api")
        changed = [int(before.get(c) != after.get(c)) for c in ("dfw-1", "dfw-2", "lhr-1")]
        assert copy_writes == [1 + n for n in changed[:2]] + [0], f"one write per changed copy: {before} → {after}"


async def test_copies_written_late_cost_one_status_write(tmp_path: Path) -> None:
    """The manager's own backlog is not a slow cell: copies that reach their cells only
    after `awaiting_propagation_after` (here every copy write takes longer than that) and
    are observed at once still cost one status write, the converged one. Without the delay
    starting at the copies' write, an AwaitingPropagation status is written first."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 2.0}) as (f, _mgr):
        web = f.server("web").plane.counters
        status_resource = f"workloaddeployments.{GROUP}/status"
        for cell in ("dfw-1", "dfw-2"):
            f.server(cell).plane.faults.configure(
                latency_seconds=4.0, methods=["POST", "PATCH", "PUT"], path_contains="/workloaddeployments"
            )
        await converged_api(f, within=30.0)
        assert web.writes(status_resource) == 1, "one status write, no AwaitingPropagation one before it"


async def test_a_copy_event_before_the_own_write_is_cached_writes_nothing_more(tmp_path: Path) -> None:
    """The projector's status write reaches its cache a moment later; a copy event in
    between must not aggregate again from the older status (lastTransitionTime a second
    later) and write the same status again. The project's WD watch is dropped and its
    resumption held back before the write, so the cache shows the version before the write
    for the whole test, the widest such window."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, mgr):
        web = f.server("web").plane.counters
        status_resource = f"workloaddeployments.{GROUP}/status"
        WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        client = mgr.get_cluster("web").client
        held = await client.get(WORKLOAD_DEPLOYMENTS, "api", namespace="default")
        assert "status" not in held, "held back until the cells observe it"
        await anyio.sleep(1.0)  # the watches have run a while: dropping them is an ordinary end
        plane = f.server("web").plane
        plane.faults.configure(latency_seconds=30.0, methods=["GET"], path_contains="/workloaddeployments")
        plane.drop_watches()  # the project's WD watch resumes, but its answer comes 30 s late
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: status(f).get("observedGeneration") == 1, "the converged status")
        await anyio.sleep(1.1)  # a later second: a condition made afresh would carry another time
        copy = next(o for o in WDs(f, "dfw-1").list() if o["metadata"]["name"] == "api")
        copy["metadata"].setdefault("labels", {})["example.com/touched"] = "yes"
        Plane(f.server("dfw-1")).update("workloaddeployments", copy, group=GROUP, version=VERSION)
        await eventually(lambda: all_idle(mgr), "the copy event handled")
        cached = await client.get(WORKLOAD_DEPLOYMENTS, "api", namespace="default")
        assert "status" not in cached, "the cache still shows the version before the write"
        assert web.writes(status_resource) == 1, "the status written once"
        plane.faults.clear()


async def test_the_own_status_write_coming_back_costs_no_reconcile(tmp_path: Path) -> None:
    """A cell's change reaches the project WD's status in one reconcile: the status write's
    own watch event is not handed back to the projector (it would find nothing to do, and
    a change arriving meanwhile would wait behind it). Another writer's status is."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, mgr):
        web = f.server("web").plane.counters
        status_resource = f"workloaddeployments.{GROUP}/status"
        await converged_api(f)
        assert await all_idle(mgr)
        recording = record(mgr, "status-projector")
        api = Request("web", "default", "api")
        settle(f, "dfw-1", broken={0: ("ImageUnavailable", "no such image")})
        named = lambda: cond(status(f), "ReplicasReady").get("reason") == "ImageUnavailable"  # noqa: E731
        await eventually(named, "the crash named")
        await eventually(lambda: all_idle(mgr), "the status write's event handled")
        assert web.writes(status_resource) == 2
        assert recording.requests.count(api) == 1, f"one reconcile for the cell's change: {recording.requests}"

        # someone else's status write is not the projector's own: it is corrected
        edited = WDs(f, "web").get("default", "api")
        assert edited is not None
        edited["status"]["readyReplicas"] = 99
        Plane(f.server("web")).update_status("workloaddeployments", edited, group=GROUP, version=VERSION)
        await eventually(lambda: status(f).get("readyReplicas") == 3, "the status restored")
        assert recording.requests.count(api) >= 2


async def test_finalizers_alone_wake_nothing_a_cell_change_does(tmp_path: Path) -> None:
    """The status follows from the WD's spec, status, labels and deletion and from its copies'
    spec, annotations, status and deletion, never from finalizers or the federator's
    `federation-namespace` annotation: a change of those alone (the federator's claim, here
    made again after the annotation was dropped by hand; a finalizer on the project WD or on a
    copy, as the cell WD controller adds) costs the projector no reconcile (`NOT_CLAIM_ONLY`,
    `NOT_FINALIZERS_ONLY`). A copy deleted by hand and a cell's status change still reach
    the project WD's status."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, mgr):
        await converged_api(f)
        assert await all_idle(mgr)
        recording = record(mgr, "status-projector")
        federator = record(mgr, "federator")
        api = Request("web", "default", "api")
        namespace_annotation = str(Annotation.FEDERATION_NAMESPACE)

        def unclaim(wd: dict[str, Any]) -> None:
            wd["metadata"]["finalizers"].append("example.com/keep")
            del wd["metadata"]["annotations"][namespace_annotation]

        WDs(f, "web").edit("default", "api", unclaim)

        def reclaimed() -> bool:
            return namespace_annotation in (WDs(f, "web").get("default", "api") or {})["metadata"]["annotations"]

        await eventually(reclaimed, "the federator's claim made again")
        copy_namespace = WDs(f, "dfw-1").list()[0]["metadata"]["namespace"]
        WDs(f, "dfw-1").edit(
            copy_namespace, "api", lambda o: o["metadata"].setdefault("finalizers", []).append("example.com/cell")
        )
        await eventually(lambda: all_idle(mgr), "the events handled")
        assert federator.requests.count(api) >= 1, "the federator took the annotation's removal"
        assert recording.requests.count(api) == 0, (
            f"no status reconcile for finalizers and the claim: {recording.requests}"
        )

        WDs(f, "dfw-2").delete(copy_namespace, "api")

        def awaiting() -> bool:
            ready = cond(status(f), "ReplicasReady")
            return ready.get("reason") == "AwaitingPropagation" and "dfw-2" in ready.get("message", "")

        await eventually(awaiting, f"the copy deleted by hand named on the project WD: {status(f)}")
        assert recording.requests.count(api) >= 1
        settle(f, "dfw-2")
        settle(f, "dfw-1", broken={0: ("ImageUnavailable", "no such image")})
        named = lambda: cond(status(f), "ReplicasReady").get("reason") == "ImageUnavailable"  # noqa: E731
        await eventually(named, f"the cell's change reaches the project WD: {status(f)}")


class Requests:
    """A RequestSink that keeps what it is handed."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)

    def drop(self, reason: str, detail: str) -> None:
        raise AssertionError(f"dropped ({reason}): {detail}")


async def test_a_copy_version_already_read_wakes_nothing(tmp_path: Path) -> None:
    """A cell's cache holds a copy's new version before its event is handed to the
    projector: a reconcile in between reads it, and the event coming after would only wake
    a reconcile that finds what that one found (`CopyEvents`). A version not read yet, and
    a deletion, do wake the WD."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, mgr):
        await converged_api(f)
        assert await all_idle(mgr)
        handler = next(w.handler for w in controller(mgr, "status-projector").watches
                       if isinstance(w.handler, CopyEvents))  # fmt: skip
        namespace = WDs(f, "dfw-1").list()[0]["metadata"]["namespace"]
        cached = await mgr.clusters["dfw-1"].client.get(WORKLOAD_DEPLOYMENTS, "api", namespace=namespace)
        api, key, sink = Request("web", "default", "api"), f"{namespace}/api", Requests()

        def version(rv: str) -> dict[str, Any]:
            return cached | {"metadata": {**cached["metadata"], "resourceVersion": rv}}

        read = ObjectEvent(EventType.MODIFIED, key, obj=cached, old_raw=orjson.dumps(version("1")))
        await handler.handle("dfw-1", read, sink)
        assert sink.requests == [], "the version the converged status was written from"
        newer = ObjectEvent(EventType.MODIFIED, key, obj=version("999999"), old_raw=orjson.dumps(cached))
        await handler.handle("dfw-1", newer, sink)
        assert sink.requests == [api], "a version no reconcile read"
        sink.requests.clear()
        await handler.handle("dfw-1", ObjectEvent(EventType.DELETED, key, obj=cached), sink)
        assert sink.requests == [api], "a deletion"


async def test_a_wd_being_deleted_is_forgotten_once_its_copies_wake_nothing(tmp_path: Path) -> None:
    """The reconcile that sees a WD's deletion forgets it, and so would every next one until
    it is gone: its copies' events (the federator deleting them) and its own DELETED enqueue
    nothing (`CopyEvents`, `WdEvents`: the WD's uid in `StatusProjector.deleting`). A copy of
    another WD of that name (made afresh: another uid) still wakes it, and the WD gone
    leaves nothing held for it."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 60.0}) as (f, mgr):
        await converged_api(f)
        assert await all_idle(mgr)
        ctrl = controller(mgr, "status-projector")
        copies = next(w.handler for w in ctrl.watches if isinstance(w.handler, CopyEvents))
        own = next(w.handler for w in ctrl.watches if isinstance(w.handler, WdEvents))
        projector = copies.projector
        api, sink = Request("web", "default", "api"), Requests()
        namespace = WDs(f, "dfw-1").list()[0]["metadata"]["namespace"]
        copy = await mgr.clusters["dfw-1"].client.get(WORKLOAD_DEPLOYMENTS, "api", namespace=namespace)
        key = f"{namespace}/api"

        # a finalizer of someone else's keeps the WD deleting after the federator let go
        WDs(f, "web").edit("default", "api", lambda o: o["metadata"]["finalizers"].append("example.com/keep"))
        recording = record(mgr, "status-projector")
        WDs(f, "web").delete("default", "api")
        await eventually(lambda: not WDs(f, "dfw-1").list() and not WDs(f, "dfw-2").list(), "the copies deleted")
        assert await all_idle(mgr)
        wd = WDs(f, "web").get("default", "api")
        assert wd is not None and wd["metadata"].get("deletionTimestamp")
        uid = wd["metadata"]["uid"]
        assert projector.deleting == {api: uid}, "the deletion seen, the WD forgotten"
        assert api not in projector.copies_read and len(projector.placements) == 0
        reconciles = recording.requests.count(api)
        assert reconciles >= 1, "the deletion itself is reconciled"

        await copies.handle("dfw-1", ObjectEvent(EventType.DELETED, key, obj=copy), sink)
        modified = copy | {"metadata": {**copy["metadata"], "resourceVersion": "999999"}}
        await copies.handle(
            "dfw-1", ObjectEvent(EventType.MODIFIED, key, obj=modified, old_raw=orjson.dumps(copy)), sink
        )
        assert sink.requests == [], "a copy of the WD being deleted wakes nothing"
        annotations = {**copy["metadata"]["annotations"], str(Annotation.UPSTREAM_UID): "another-uid"}
        afresh = copy | {"metadata": {**copy["metadata"], "annotations": annotations, "resourceVersion": "1000000"}}
        await copies.handle("dfw-1", ObjectEvent(EventType.ADDED, key, obj=afresh), sink)
        assert sink.requests == [api], "a copy of another WD of that name does"
        sink.requests.clear()
        await own.handle(
            "web",
            ObjectEvent(
                EventType.DELETED, "default/api", obj=wd | {"metadata": {**wd["metadata"], "uid": "another-uid"}}
            ),
            sink,
        )
        assert sink.requests == [api], "the DELETED of another WD of that name goes through"
        sink.requests.clear()

        WDs(f, "web").edit("default", "api", lambda o: o["metadata"]["finalizers"].remove("example.com/keep"))
        await eventually(lambda: WDs(f, "web").get("default", "api") is None, "the WD gone")
        assert await all_idle(mgr)
        assert recording.requests.count(api) == reconciles, f"its DELETED wakes nothing: {recording.requests}"
        assert projector.deleting == {} and api not in projector.own_writes, "nothing held for a WD gone"


async def test_the_own_projection_write_coming_back_costs_no_reconcile(tmp_path: Path) -> None:
    """A cell Instance's status change reaches its projection in one reconcile: the
    projection's status write coming back through the watch wakes nothing."""
    async with federation(tmp_path) as (f, mgr):
        web = f.server("web").plane.counters
        WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        await eventually(lambda: len(projections(f)) == 4, "4 projections")
        assert await all_idle(mgr)
        before = web.writes(f"instances.{GROUP}/status")
        recording = record(mgr, "instance-projector")
        settle(f, "dfw-1", broken={0: ("ImageUnavailable", "no such image")})
        crashed = lambda: cond(projections(f)["api-0"]["status"], "Ready").get("reason") == "ImageUnavailable"  # noqa: E731
        await eventually(crashed, "the crash projected")
        await eventually(lambda: all_idle(mgr), "the projection's write handled")
        assert web.writes(f"instances.{GROUP}/status") == before + 1
        api_0 = Request("web", "default", "api-0")
        assert recording.requests.count(api_0) == 1, f"one reconcile for the cell's change: {recording.requests}"


async def test_a_slow_cell_shows_awaiting_propagation(tmp_path: Path) -> None:
    """Copies nobody observes: the status is written anyway after the configured delay,
    saying AwaitingPropagation (a delayed requeue, no copy event needed)."""
    async with federation(tmp_path, controllers={"awaiting_propagation_after": 0.2}) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        await eventually(lambda: cond(status(f), "ReplicasReady").get("reason") == "AwaitingPropagation", "waiting")
        assert "observedGeneration" not in status(f)


DFW = ("dfw-1", "dfw-2")


async def federate_with_the_namespaces_late(f: Fleet, mgr: Manager) -> None:
    """Both DFW cells' watches dropped and resumed with the namespaces' answers 12 s late, then
    a DFW WD federated and its copies observed (and their Instances made) in the cells."""

    def ready() -> bool:
        return all(c in mgr.clusters and mgr.clusters[c].state.value == "ready" for c in DFW)

    await eventually(ready, "both DFW cells ready")
    await anyio.sleep(1.0)  # the watches have run a while: dropping them is an ordinary end, not a failure
    for cell in DFW:
        plane = f.server(cell).plane
        plane.faults.configure(latency_seconds=12.0, methods=["GET"], path_contains="/api/v1/namespaces")
        plane.drop_watches()  # every watch resumes at once, but the namespaces' answers 12 s late
    WDs(f, "web").create(workload_deployment("api", "DFW", 2))
    await eventually(lambda: len(shares(f, "api")) == 2, "the copies written")
    settle(f, "dfw-1")
    settle(f, "dfw-2")


async def let_the_namespaces_arrive(f: Fleet, mgr: Manager) -> None:
    for cell in DFW:
        f.server(cell).plane.faults.clear()
    await eventually(lambda: all(mgr.clusters[c].cache.informer_of(NAMESPACES).list() for c in DFW),
                     "the namespaces seen", within=20)  # fmt: skip


async def test_a_copy_seen_before_its_cell_namespace_is_projected_when_the_namespace_arrives(tmp_path: Path) -> None:
    """The manager sees a cell's copies and its downstream namespaces through separate
    watches, so a copy's event can arrive before its namespace's (here the namespaces'
    watch is re-established 12 s late while the first WD of a project namespace is
    federated and observed). Until then every copy event maps to no WD (the namespace is
    what names the project) and the copies cannot be found: the status is held back. The
    namespace's arrival must bring the WD back at once — not the `--cell-status-stale-after`
    bound on the hold (600 s here), and not a copy event that will not come."""
    async with federation(tmp_path, cell_status_stale_after=600.0) as (f, mgr):
        await federate_with_the_namespaces_late(f, mgr)

        def cached_observed() -> bool:
            copies = [mgr.clusters[c].cache.informer_of(WORKLOAD_DEPLOYMENTS).list() for c in DFW]
            return all(len(cs) == 1 and (cs[0].get("status") or {}).get("observedGeneration") == 1 for cs in copies)

        await eventually(cached_observed, "the observed copies in the manager's cache (their events mapped to nothing)")
        assert all(not mgr.clusters[c].cache.informer_of(NAMESPACES).list() for c in DFW), "namespaces not seen yet"
        assert "observedGeneration" not in status(f), "held back: no copy found without its namespace"
        await let_the_namespaces_arrive(f, mgr)
        await eventually(lambda: status(f).get("observedGeneration") == 1, "projected once the namespaces are seen")
        assert status(f)["readyReplicas"] == 2


async def test_an_instance_seen_before_its_cell_namespace_is_projected_when_the_namespace_arrives(
    tmp_path: Path,
) -> None:
    """As for the copies above: a cell Instance whose event arrives before its downstream
    namespace's maps to no projection (the namespace names the project). The namespace's
    arrival must bring its Instances back, or they are never projected (no further Instance
    event need ever come)."""
    async with federation(tmp_path) as (f, mgr):
        await federate_with_the_namespaces_late(f, mgr)

        def instances_cached() -> bool:
            return all(len(mgr.clusters[c].cache.informer_of(INSTANCES).list()) == 1 for c in DFW)

        await eventually(instances_cached, "the cell Instances in the manager's cache (their events mapped to nothing)")
        assert all(not mgr.clusters[c].cache.informer_of(NAMESPACES).list() for c in DFW), "namespaces not seen yet"
        assert projections(f) == {}, "nothing projected without the namespaces"
        await let_the_namespaces_arrive(f, mgr)
        await eventually(lambda: set(projections(f)) == {"api-0", "api-1"}, "projected once the namespaces are seen")


async def test_a_status_write_refused_is_not_taken_for_written(tmp_path: Path) -> None:
    """Every status write answered 500 for a while: the projector retries, and remembers
    nothing of a write the server did not take (its memory of its own last write is only
    for a write that succeeded), so once the server takes writes again the status is
    written — no event from the cells is needed for it."""
    async with federation(tmp_path) as (f, _mgr):
        web = f.server("web").plane
        web.faults.configure(error_rate=1.0, error_code=500, methods=["PATCH"],
                             path_contains="/workloaddeployments/api/status")  # fmt: skip
        WDs(f, "web").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "copies")
        settle(f, "dfw-1")
        settle(f, "dfw-2")
        refused = web.faults.injected
        await eventually(lambda: web.faults.injected >= refused + 3, "the status writes refused, and retried")
        assert status(f) == {}, "nothing written while every write is refused"
        web.faults.clear()
        await eventually(lambda: status(f).get("observedGeneration") == 1, "written once the server takes it")
        assert status(f)["readyReplicas"] == 2


async def test_an_updates_old_state_is_mapped_only_when_it_names_another_wd() -> None:
    """`CopyEvents` maps an update's old state too (a WD that lost the copy hears of it),
    but not when all `wd_of_copy` reads of a copy (namespace, name, labels, annotations)
    is the same in both states — a status update's: it maps to the same WD (counted)."""
    from types import SimpleNamespace

    copy_ = {"metadata": {"name": "api", "namespace": "ns-1", "uid": "c1", "resourceVersion": "5",
                          "labels": {"l": "1"}, "annotations": {"a": "1"}}, "status": {"replicas": 1}}  # fmt: skip
    mapped: list[str] = []

    class Counting:
        same_wd_of_copy = staticmethod(Routes.same_wd_of_copy)

        async def wd_of_copy(self, _cell: str, copy: dict[str, Any]) -> list[Request]:
            mapped.append(copy["metadata"]["resourceVersion"])
            return [Request("web", "default", copy["metadata"]["annotations"]["a"])]

    clock = SimpleNamespace(copy_changed=lambda _copy: None)
    projector = SimpleNamespace(clock=clock, copies_read={}, deleting={})
    handler = CopyEvents(projector, Counting())  # type: ignore[arg-type]
    status_only = copy_ | {"metadata": {**copy_["metadata"], "resourceVersion": "6"}, "status": {"replicas": 2}}
    sink = Requests()
    await handler.handle("dfw-1", ObjectEvent(EventType.MODIFIED, "ns-1/api", obj=status_only,
                                              old_raw=orjson.dumps(copy_)), sink)  # fmt: skip
    assert mapped == ["6"] and sink.requests == [Request("web", "default", "1")]
    moved = copy_ | {"metadata": {**copy_["metadata"], "resourceVersion": "7", "annotations": {"a": "2"}}}
    await handler.handle("dfw-1", ObjectEvent(EventType.MODIFIED, "ns-1/api", obj=moved,
                                              old_raw=orjson.dumps(copy_)), sink)  # fmt: skip
    assert mapped == ["6", "7", "5"]
    assert sink.requests[1:] == [Request("web", "default", "2"), Request("web", "default", "1")]


@pytest.mark.parametrize(
    ("change", "same"),
    [
        ({"resourceVersion": "9"}, True),
        ({"finalizers": ["x"]}, True),
        ({"labels": {"l": "2"}}, False),
        ({"annotations": {}}, False),
        ({"namespace": "ns-2"}, False),
        ({"name": "web"}, False),
    ],
)
def test_what_a_copys_mapping_reads(change: dict[str, Any], same: bool) -> None:

    old = {"metadata": {"name": "api", "namespace": "ns-1", "labels": {"l": "1"}, "annotations": {"a": "1"}}}
    assert Routes.same_wd_of_copy(old, {"metadata": {**old["metadata"], **change}}) is same
    assert Routes.same_wd_of_copy({"metadata": None}, old) is False
