"""The federator, driven as `federation-manager run --enable-management-controllers`
drives it, on embedded servers: management, projects `acme/web` and `acme/shop`, cells
dfw-1 and dfw-2 (DFW) and lhr-1 (LHR)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from federation.api.constants import Annotation, Finalizer, Label
from federation.api.resources import NAMESPACES, WORKLOAD_DEPLOYMENTS
from federation.controllers.federator import Federator, NamespaceWrites, _Seen, claimed_only
from federation.fleet.routing import Routes
from mcruntime import Manager, Request, Store
from mcruntime.errors import TransportError
from tests.projector.cellsim import settle
from tests.support import Fleet, Plane, all_idle, controller, eventually, fleet, management_settings, record, running

GROUP, VERSION = "compute.datumapis.com", "v1alpha"
CELLS = (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR"))
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "api"}},
    "spec": {
        "runtime": {
            "resources": {"instanceType": "datumcloud/d1-standard-2"},
            "sandbox": {"containers": [{"name": "api", "image": "docker.io/library/nginx:1.27"}]},
        },
        "networkInterfaces": [{"network": {"name": "default"}}],
    },
}
# TEMPLATE as the API servers store it: the CRD defaults the interface's name, IP families
# and reclaim policy (as upstream), in the project and again, identically, in the cells.
STORED_TEMPLATE: dict[str, Any] = copy.deepcopy(TEMPLATE)
STORED_TEMPLATE["spec"]["networkInterfaces"][0].update(name="eth0", ipFamilies=["IPv6"], reclaimPolicy="Delete")


def workload_deployment(name: str, city: str, replicas: int | None = 3, **scale: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"name": "api", "uid": "00000000-0000-0000-0000-000000000001"},
        "placementName": "edge",
        "cityCode": city,
        "template": copy.deepcopy(TEMPLATE),
        "scaleSettings": {"minReplicas": 1, **scale},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "WorkloadDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


class WDs:
    """Direct reads and writes of WorkloadDeployments on one embedded server."""

    def __init__(self, f: Fleet, cluster: str) -> None:
        self.plane = Plane(f.server(cluster))

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.plane.create("workloaddeployments", obj, group=GROUP, version=VERSION)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        for obj in self.list(namespace):
            if obj["metadata"]["name"] == name:
                return obj
        return None

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.plane.list("workloaddeployments", namespace, group=GROUP, version=VERSION)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.plane.update("workloaddeployments", obj, group=GROUP, version=VERSION)

    def delete(self, namespace: str, name: str) -> None:
        self.plane.delete("workloaddeployments", namespace, name, group=GROUP, version=VERSION)

    def edit(self, namespace: str, name: str, change: Any) -> dict[str, Any]:
        current = self.get(namespace, name)
        assert current is not None, f"{namespace}/{name} not found"
        change(current)
        return self.update(current)


def shares(f: Fleet, name: str) -> dict[str, tuple[int, int]]:
    """cell → (replicas, ordinal start) of every copy of `name` in the cells."""
    out = {}
    for cell in f.cells:
        for obj in WDs(f, cell).list():
            if obj["metadata"]["name"] == name and not obj["metadata"].get("deletionTimestamp"):
                start = int(obj["metadata"]["annotations"][Annotation.ORDINAL_START])
                out[cell] = (obj["spec"].get("replicas"), start)
    return out


@asynccontextmanager
async def federation(tmp: Path, **settings: Any) -> AsyncIterator[tuple[Fleet, Manager]]:
    async with (
        fleet(tmp, projects=("acme/web", "acme/shop"), cells=CELLS) as f,
        running(management_settings(tmp / "management.kubeconfig", **settings)) as mgr,
    ):
        yield f, mgr


async def test_fan_out_divides_replicas_over_the_city(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        web = WDs(f, "web")
        created = web.create(workload_deployment("api", "DFW", 3))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (1, 2)}, "2 + 1 in the DFW cells")
        # a first placement is told by the WD's status, not by an Event (DESIGN §5 Events)
        assert [e["reason"] for e in Plane(f.server("web")).list("events", "default")] == []
        project_ns = Plane(f.server("web")).get("namespaces", "", "default")
        downstream = f"ns-{project_ns['metadata']['uid']}"
        for cell in ("dfw-1", "dfw-2"):
            ns = Plane(f.server(cell)).get("namespaces", "", downstream)
            assert ns["metadata"]["labels"] == {
                str(Label.UPSTREAM_CLUSTER_NAME): "cluster-acme_web",
                str(Label.UPSTREAM_NAMESPACE): "default",
                "kubernetes.io/metadata.name": downstream,  # the API server's own label
            }
            copy_ = WDs(f, cell).get(downstream, "api")
            assert copy_ is not None
            assert copy_["metadata"]["labels"] == {
                str(Label.TOPOLOGY_CITY_CODE): "DFW",
                str(Label.UPSTREAM_NAMESPACE): "default",
            }
            annotations = copy_["metadata"]["annotations"]
            assert annotations["meta.datumapis.com/upstream-uid"] == created["metadata"]["uid"]
            assert copy_["spec"]["template"] == STORED_TEMPLATE and copy_["spec"]["cityCode"] == "DFW"
        assert WDs(f, "lhr-1").list() == []
        live = web.get("default", "api")
        assert live is not None and live["metadata"]["finalizers"] == [Finalizer.FEDERATOR]
        # the cell namespace of its copies, recorded with the finalizer (one write, by one manager)
        assert live["metadata"]["annotations"][Annotation.FEDERATION_NAMESPACE] == downstream
        (claim,) = [
            m for m in live["metadata"]["managedFields"] if "f:finalizers" in m["fieldsV1"].get("f:metadata", {})
        ]
        assert "f:annotations" in claim["fieldsV1"]["f:metadata"]

        # a spec edit reaches both copies
        web.edit("default", "api", lambda o: o["spec"]["template"]["metadata"]["labels"].update(tier="gold"))

        def gold() -> bool:
            copies = [WDs(f, c).get(downstream, "api") for c in ("dfw-1", "dfw-2")]
            return all(c and c["spec"]["template"]["metadata"]["labels"].get("tier") == "gold" for c in copies)

        await eventually(gold, "the edit in both copies")
        # a field removed upstream goes from the copies too (an intent that shrinks)
        web.edit("default", "api", lambda o: o["spec"]["template"]["metadata"]["labels"].pop("tier"))

        def plain() -> bool:
            copies = [WDs(f, c).get(downstream, "api") for c in ("dfw-1", "dfw-2")]
            return all(c and c["spec"]["template"] == STORED_TEMPLATE for c in copies)

        await eventually(plain, "the removed label gone from both copies")
        # scaling re-divides
        web.edit("default", "api", lambda o: o["spec"].update(replicas=4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        # a third DFW cell registered while running: shares 2, 1, 1, moving one ordinal only
        await f.add_cell("dfw-3", "DFW")
        await eventually(lambda: len(shares(f, "api")) == 3, "a copy in dfw-3")

        def federated_event() -> bool:
            events = Plane(f.server("web")).list("events", "default")
            return any(e["reason"] == "Federated" and "federated to 3 cells" in e["message"] for e in events)

        await eventually(federated_event, "the Federated Event: the WD's cells changed")
        now = shares(f, "api")
        assert sorted(r for r, _ in now.values()) == [1, 1, 2]
        ranges = {cell: set(range(start, start + n)) for cell, (n, start) in now.items()}
        assert set().union(*ranges.values()) == {0, 1, 2, 3}
        before = {"dfw-1": {0, 1}, "dfw-2": {2, 3}}
        moved = sum(len(before[c] - ranges.get(c, set())) for c in before)
        assert moved == 1, f"one ordinal moves to the new cell, got {now}"
        # the cell deregistered while running: the city's shares are re-divided without it
        f.deregister("dfw-3")

        def without_dfw3() -> bool:
            return {c: v for c, v in shares(f, "api").items() if c != "dfw-3"} == {"dfw-1": (2, 0), "dfw-2": (2, 2)}

        await eventually(without_dfw3, "2 + 2 again over dfw-1 and dfw-2")
        # changing the city moves every copy (dfw-3, no longer registered, keeps what it had)
        web.edit("default", "api", lambda o: o["spec"].update(cityCode="LHR"))

        def moved_to_lhr() -> bool:
            return {c: v for c, v in shares(f, "api").items() if c != "dfw-3"} == {"lhr-1": (4, 0)}

        await eventually(moved_to_lhr, "all 4 in LHR, none left in the registered DFW cells")


async def test_deletion_and_the_orphan_sweep(tmp_path: Path) -> None:
    async with federation(tmp_path, cell_unreachable_grace=1.0) as (f, mgr):
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "copies")
        web.delete("default", "api")
        await eventually(lambda: web.get("default", "api") is None, "the project WD gone after its copies")
        assert shares(f, "api") == {}
        # a fresh WD of the same name federates again, as a new one
        fresh = web.create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: len(shares(f, "api")) == 2, "the fresh WD's copies")
        for cell in ("dfw-1", "dfw-2"):
            (c,) = [o for o in WDs(f, cell).list() if o["metadata"]["name"] == "api"]
            assert c["metadata"]["annotations"]["meta.datumapis.com/upstream-uid"] == fresh["metadata"]["uid"]
        # a cell unreachable past the grace does not hold the deletion
        await f.cells["dfw-2"].pause()
        await eventually(lambda: mgr.clusters["dfw-2"].state.value == "unreachable", "dfw-2 unreachable")
        web.delete("default", "api")
        await eventually(lambda: web.get("default", "api") is None, "deletion completes without dfw-2", within=15)
        events = Plane(f.server("web")).list("events", "default")
        warnings = [e for e in events if e["reason"] == "CellUnreachable"]
        assert warnings and "dfw-2" in warnings[0]["message"]
        assert [o["metadata"]["name"] for o in WDs(f, "dfw-2").list()] == ["api"], "the orphan waits in dfw-2"
        # ... and is swept when the cell is back
        await f.cells["dfw-2"].resume()
        await eventually(lambda: WDs(f, "dfw-2").list() == [], "the orphan swept", within=60)


@pytest.mark.slow
async def test_a_cell_that_never_synced_holds_a_deletion_for_the_grace(tmp_path: Path) -> None:
    """The manager restarts while dfw-2 is down: it never sees dfw-2's copy, yet that cell
    may hold one. The deletion waits the grace for it, then completes with the Warning,
    and the orphan is swept when dfw-2 is back."""
    grace = 3.0
    async with fleet(tmp_path, projects=("acme/web",), cells=CELLS) as f:
        web = WDs(f, "web")
        settings = management_settings(tmp_path / "management.kubeconfig", cell_unreachable_grace=grace)
        async with running(settings):
            web.create(workload_deployment("api", "DFW", 2))
            await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "copies")
        await f.cells["dfw-2"].pause()
        async with running(settings) as mgr:
            await eventually(lambda: (c := mgr.clusters.get("dfw-2")) and c.state.value == "unreachable",
                             "dfw-2 engaged and unreachable")  # fmt: skip
            assert shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}
            web.delete("default", "api")
            await eventually(lambda: WDs(f, "dfw-1").list() == [], "dfw-1's copy deleted")
            await anyio.sleep(grace / 2)
            assert web.get("default", "api") is not None, "the unseen cell holds the deletion within the grace"
            await eventually(lambda: web.get("default", "api") is None, "released after the grace", within=15)
            events = Plane(f.server("web")).list("events", "default")
            assert any(e["reason"] == "CellUnreachable" and "dfw-2" in e["message"] for e in events)
            await f.cells["dfw-2"].resume()
            await eventually(lambda: WDs(f, "dfw-2").list() == [], "the orphan swept", within=60)


async def test_the_federator_never_writes_project_status(tmp_path: Path) -> None:
    """DESIGN §3 Federator 9: on the project WD the federator owns its finalizer and
    nothing else; the status has one writer, the projector (managedFields say who wrote what)."""
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 3))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (1, 2)}, "federated")
        await eventually(lambda: (WDs(f, "web").get("default", "api") or {}).get("status"), "a status written")
        live = WDs(f, "web").get("default", "api")
        assert live is not None
        entries = live["metadata"]["managedFields"]
        status_writers = {e["manager"] for e in entries if e.get("subresource") == "status"}
        assert status_writers == {"projector"}, entries
        ours = [
            e for e in entries if e["manager"].startswith(("federator", "finalizer/compute.datumapis.com/federator"))
        ]
        assert ours, f"the federator's finalizer has its field manager: {entries}"
        for entry in ours:
            assert entry.get("subresource", "") == ""
            assert set(entry["fieldsV1"]) == {"f:metadata"}, entry
            # its finalizer, and the federation-namespace annotation written with it
            assert set(entry["fieldsV1"]["f:metadata"]) == {"f:finalizers", "f:annotations"}, entry
            assert set(entry["fieldsV1"]["f:metadata"]["f:annotations"]) == {f"f:{Annotation.FEDERATION_NAMESPACE}"}, (
                entry
            )


async def test_a_registration_naming_another_project_writes_nothing(tmp_path: Path) -> None:
    """Project `web` registered with shop's encoded name: the federator refuses with an
    Event in `web` and writes nothing into any cell (no namespace, no copy)."""
    async with federation(tmp_path) as (f, _mgr):
        mgmt = Plane(f.management)
        profile = mgmt.get("clusterprofiles", "federation-system", "web", group="multicluster.x-k8s.io",
                           version="v1alpha1")  # fmt: skip
        profile["metadata"]["labels"][str(Label.UPSTREAM_CLUSTER_NAME)] = "cluster-acme_shop"
        mgmt.update("clusterprofiles", profile, group="multicluster.x-k8s.io", version="v1alpha1")
        WDs(f, "web").create(workload_deployment("api", "LHR", 1))

        def refused() -> bool:
            events = Plane(f.server("web")).list("events", "default")
            return any(e["reason"] == "ProjectRegistrationIncomplete" and "decodes to project 'shop'" in e["message"]
                       for e in events)  # fmt: skip

        await eventually(refused, "the Event naming the mismatch")
        assert WDs(f, "lhr-1").list() == []
        assert not [n for n in Plane(f.server("lhr-1")).names("namespaces") if n.startswith("ns-")]


async def test_a_copy_maps_back_through_the_namespaces_index_without_decoding_a_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every copy event (an update's old state too, for each controller watching copies)
    maps back through its cell namespace: what that namespace serves is read from the
    namespaces' index, not decoded from the cache."""
    async with federation(tmp_path) as (f, mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 1))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (0, 1)}, "copies")
        copy = WDs(f, "dfw-1").list()[0]
        store = mgr.clusters["dfw-1"].cache.informer_of(NAMESPACES).store

        decode = Store.get

        def no_decoding(self: Store, key: str) -> dict[str, Any] | None:
            assert self is not store, "a namespace decoded to map a copy"
            return decode(self, key)

        monkeypatch.setattr(Store, "get", no_decoding)
        assert await Routes(mgr).wd_of_copy("dfw-1", copy) == [Request("web", "default", "api")]
        mislabelled = copy | {"metadata": {**copy["metadata"], "labels": {str(Label.UPSTREAM_NAMESPACE): "other"}}}
        assert await Routes(mgr).wd_of_copy("dfw-1", mislabelled) == [], "its label must repeat the namespace's"


async def test_downstream_events_map_back_to_the_bare_project_name(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, mgr):
        recording = record(mgr, "federator")
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 1))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (0, 1)}, "copies")
        project_ns = Plane(f.server("web")).get("namespaces", "", "default")
        downstream = f"ns-{project_ns['metadata']['uid']}"
        recording.requests.clear()
        # a cell-side change of the copy maps back to (web, default, api) exactly
        WDs(f, "dfw-1").edit(downstream, "api", lambda o: o["metadata"].setdefault("annotations", {}).update(x="1"))
        await eventually(lambda: Request("web", "default", "api") in recording.requests, "the mapped request")
        assert all(r.cluster in ("web", "shop") for r in recording.requests), recording.requests
        # foreign namespace labels, missing labels, or an unknown project produce no request
        routes = Routes(mgr)
        cell = Plane(f.server("dfw-1"))
        cell.create("namespaces", {"metadata": {"name": "hand-made"}})
        unlabelled = workload_deployment("stray", "DFW")
        unlabelled["metadata"]["namespace"] = "hand-made"
        unlabelled["metadata"]["labels"] = {str(Label.UPSTREAM_NAMESPACE): "default"}
        WDs(f, "dfw-1").create(unlabelled)
        foreign_labels = {str(Label.UPSTREAM_CLUSTER_NAME): "cluster-other_nowhere",
                          str(Label.UPSTREAM_NAMESPACE): "default"}  # fmt: skip
        cell.create("namespaces", {"metadata": {"name": "foreign", "labels": foreign_labels}})
        foreign = workload_deployment("stray", "DFW")
        foreign["metadata"]["namespace"] = "foreign"
        foreign["metadata"]["labels"] = {str(Label.UPSTREAM_NAMESPACE): "default"}
        WDs(f, "dfw-1").create(foreign)
        await anyio.sleep(0.5)
        assert not [r for r in recording.requests if r.name == "stray"], recording.requests
        assert await routes.wd_of_copy("dfw-1", unlabelled) == []
        assert await routes.wd_of_copy("dfw-1", foreign) == []
        assert await routes.wd_of_copy("no-such-cell", foreign) == []
        # an empty cluster name never reaches reconcile
        ctrl = next(c for c in mgr.controllers if c.name == "federator")
        recording.requests.clear()
        ctrl.enqueue(Request("", "default", "api"))
        await anyio.sleep(0.2)
        assert not [r for r in recording.requests if not r.cluster]


async def test_a_copy_edited_or_deleted_by_hand_is_restored(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "LHR", 2))
        await eventually(lambda: shares(f, "api") == {"lhr-1": (2, 0)}, "the copy")
        settle(f, "lhr-1")  # the cell observes the spec: a difference after is drift
        await eventually(lambda: (WDs(f, "web").get("default", "api") or {}).get("status", {}).get(
            "observedGeneration") == 1, "the cell observed generation 1")  # fmt: skip
        (ns,) = {o["metadata"]["namespace"] for o in WDs(f, "lhr-1").list()}
        WDs(f, "lhr-1").edit(ns, "api", lambda o: o["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
                             .update(image="evil:latest"))  # fmt: skip

        def restored() -> bool:
            c = WDs(f, "lhr-1").get(ns, "api")
            return c is not None and c["spec"]["template"] == STORED_TEMPLATE

        await eventually(restored, "the hand edit reverted")

        def told() -> bool:
            events = Plane(f.server("web")).list("events", "default")
            return any(e["reason"] == "CopyRestored" and "lhr-1" in e["message"] for e in events)

        await eventually(told, "an Event saying the copy was put back")
        WDs(f, "lhr-1").delete(ns, "api")
        await eventually(lambda: shares(f, "api") == {"lhr-1": (2, 0)} and restored(), "the deleted copy recreated")


async def test_forged_labels_and_colliding_names_stay_in_their_project(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        shop_ns = Plane(f.server("shop")).get("namespaces", "", "default")
        web_ns = Plane(f.server("web")).get("namespaces", "", "default")
        # same namespace and WD name in two projects; the web one forges shop's identity
        forged = workload_deployment("api", "LHR", 1)
        forged["metadata"]["labels"] = {str(Label.UPSTREAM_CLUSTER_NAME): "cluster-acme_shop"}
        forged["metadata"]["annotations"] = {str(Annotation.UPSTREAM_UID): "forged", str(Annotation.ORDINAL_START): "9"}
        WDs(f, "web").create(forged)
        WDs(f, "shop").create(workload_deployment("api", "LHR", 2))
        web_down, shop_down = f"ns-{web_ns['metadata']['uid']}", f"ns-{shop_ns['metadata']['uid']}"

        def both() -> bool:
            return (
                WDs(f, "lhr-1").get(web_down, "api") is not None and WDs(f, "lhr-1").get(shop_down, "api") is not None
            )

        await eventually(both, "one copy per project")
        web_copy, shop_copy = WDs(f, "lhr-1").get(web_down, "api"), WDs(f, "lhr-1").get(shop_down, "api")
        assert web_copy is not None and shop_copy is not None
        assert web_copy["spec"]["replicas"] == 1 and shop_copy["spec"]["replicas"] == 2
        assert Label.UPSTREAM_CLUSTER_NAME not in web_copy["metadata"]["labels"]
        assert web_copy["metadata"]["annotations"][Annotation.ORDINAL_START] == "0"
        assert web_copy["metadata"]["annotations"]["meta.datumapis.com/upstream-uid"] != "forged"
        ns_labels = Plane(f.server("lhr-1")).get("namespaces", "", web_down)["metadata"]["labels"]
        assert ns_labels[Label.UPSTREAM_CLUSTER_NAME] == "cluster-acme_web"


async def test_autoscaled_replicas_are_left_to_the_cell(tmp_path: Path) -> None:
    metrics = [{"resource": {"name": "cpu", "target": {"averageUtilization": 70}}}]
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "LHR", 2, maxReplicas=5, metrics=metrics))
        await eventually(lambda: shares(f, "api") == {"lhr-1": (2, 0)}, "the copy with its initial share")
        (ns,) = {o["metadata"]["namespace"] for o in WDs(f, "lhr-1").list()}
        # what a cell's HPA does: the copy's replicas change through the scale subresource
        cell = f.server("lhr-1")
        rt = Plane(cell).rt(GROUP, VERSION, "workloaddeployments")
        from kubeplane.objectapi import WriteOptions

        cell.plane.api.update_scale(rt, ns, "api", {"spec": {"replicas": 4}}, WriteOptions(field_manager="hpa"))
        # a project-side spec change still flows down, and the cell's replica count stays
        WDs(f, "web").edit("default", "api", lambda o: o["spec"]["template"]["metadata"]["labels"].update(v="2"))

        def settled() -> bool:
            c = WDs(f, "lhr-1").get(ns, "api")
            return c is not None and c["spec"]["template"]["metadata"]["labels"].get("v") == "2"

        await eventually(settled, "the template change in the copy")
        await anyio.sleep(0.5)
        assert shares(f, "api") == {"lhr-1": (4, 0)}, "the federator must not fight the cell's autoscaler"
        # autoscaling turned off upstream: the metrics leave the copy and its share is the federator's again
        WDs(f, "web").edit("default", "api", lambda o: o["spec"].update(scaleSettings={"minReplicas": 1}))

        def unscaled() -> bool:
            c = WDs(f, "lhr-1").get(ns, "api")
            scale = c["spec"]["scaleSettings"] if c is not None else {}
            return c is not None and not {"metrics", "maxReplicas"} & set(scale) and c["spec"]["replicas"] == 2

        await eventually(unscaled, "no metrics or maxReplicas in the copy, and the project's 2 replicas")


async def test_a_kubeconfig_directory_registers_cells_and_projects(tmp_path: Path) -> None:
    """The static alternative to ClusterProfiles: `<dir>/cell/<name>.yaml` and
    `<dir>/project/<name>.yaml`, labels (city code, encoded project) in `<name>.labels.yaml`."""
    import yaml

    async with fleet(tmp_path, projects=("acme/web",), cells=(("dfw-1", "DFW"),), register=False) as f:
        clusters = tmp_path / "clusters"
        (clusters / "cell").mkdir(parents=True)
        (clusters / "project").mkdir()
        (clusters / "cell" / "dfw-1.yaml").write_text(yaml.safe_dump(f.server("dfw-1").kubeconfig()))
        (clusters / "cell" / "dfw-1.labels.yaml").write_text("topology.datum.net/city-code: DFW\n")
        (clusters / "project" / "web.yaml").write_text(yaml.safe_dump(f.server("web").kubeconfig()))
        (clusters / "project" / "web.labels.yaml").write_text(
            "meta.datumapis.com/upstream-cluster-name: cluster-acme_web\n"
        )
        settings = management_settings(
            tmp_path / "management.kubeconfig",
            registration={"provider": "kubeconfig-dir", "kubeconfig_dir": str(clusters), "poll_interval": 0.1},
        )
        async with running(settings) as mgr:
            WDs(f, "web").create(workload_deployment("api", "DFW", 2))
            await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0)}, "the copy in dfw-1")
            assert mgr.clusters["dfw-1"].labels == {
                str(Label.CLUSTER_ROLE): "cell",
                "topology.datum.net/city-code": "DFW",
            }


async def test_one_wds_copies_are_written_concurrently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new WD's copies in both DFW cells are in flight together: the second cell's
    write does not wait for the first's answer (counted by wrapping the helpers; nothing
    here measures time)."""
    in_flight: set[str] = set()
    together: list[frozenset[str]] = []

    def tracked(original: Any, what: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = what(*args)
            if key is None:
                return await original(*args, **kwargs)
            in_flight.add(key)
            together.append(frozenset(in_flight))
            try:
                return await original(*args, **kwargs)
            finally:
                in_flight.discard(key)

        return wrapper

    def place(_self: Any, _project: Any, _ns: Any, wd: Any, _target: Any, share: Any, *_: Any) -> str | None:
        return f"copy in {share.cell}" if wd["metadata"]["name"] == "api" else None

    def claim(_self: Any, _project: Any, wd: Any, *_: Any) -> str | None:
        return "finalizer" if wd["metadata"]["name"] == "api" else None

    monkeypatch.setattr(Federator, "_place", tracked(Federator._place, place))
    monkeypatch.setattr(Federator, "_claim", tracked(Federator._claim, claim))
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 4))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0), "dfw-2": (2, 2)}, "2 + 2")
        await eventually(lambda: Finalizer.FEDERATOR in WDs(f, "web").get("default", "api")["metadata"]["finalizers"],
                         "the finalizer")  # fmt: skip
    widest = max(together, key=len)
    # the finalizer goes with the copies, not a round trip before them (issue 22 point 1)
    assert widest == {"finalizer", "copy in dfw-1", "copy in dfw-2"}, f"in flight together: {together}"


async def test_a_wd_deleted_before_its_finalizer_leaves_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copies are written before the finalizer has landed, and the WD is deleted in
    between (so without the finalizer): the claim neither brings the WD back (its apply
    carries the uid: a 409) nor leaves a copy behind (the orphan sweep, `Federator.gone`,
    removes every copy whose events map back to a WD that is gone)."""
    deleted: list[str] = []
    original = Federator._claim

    async def claim(self: Federator, project: Any, wd: Any, cell_namespace: str) -> Any:
        if wd["metadata"]["name"] == "api" and not deleted:
            await eventually(lambda: len(shares(f, "api")) == 2, "both copies written before the finalizer")
            WDs(f, "web").delete("default", "api")
            deleted.append(wd["metadata"]["uid"])
        return await original(self, project, wd, cell_namespace)

    monkeypatch.setattr(Federator, "_claim", claim)
    async with federation(tmp_path) as (f, mgr):
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: deleted, "the WD deleted between its copies and its finalizer")
        await eventually(lambda: shares(f, "api") == {}, "the copies swept")
        assert await all_idle(mgr)
        assert web.get("default", "api") is None, "the claim brought the deleted WD back"
        assert shares(f, "api") == {}


async def test_project_annotations_reach_the_copies_and_their_removal_too(tmp_path: Path) -> None:
    """Annotations of the project WD travel to its copies (all but the federation's own
    bookkeeping: downstream.NOT_FEDERATED_ANNOTATIONS); removing one removes it there."""
    async with federation(tmp_path) as (f, _mgr):
        web = WDs(f, "web")
        wd = workload_deployment("api", "DFW", 2)
        wd["metadata"]["annotations"] = {"compute.datumapis.com/suspended": "true", "team.example.com/owner": "blue"}
        web.create(wd)

        def copy_annotations() -> list[dict[str, str]]:
            return [c["metadata"].get("annotations") or {} for cell in ("dfw-1", "dfw-2")
                    for c in WDs(f, cell).list() if c["metadata"]["name"] == "api"]  # fmt: skip

        def carried() -> bool:
            found = copy_annotations()
            return len(found) == 2 and all(
                a.get("compute.datumapis.com/suspended") == "true" and a.get("team.example.com/owner") == "blue"
                for a in found
            )

        await eventually(carried, "both copies carry the project WD's annotations")
        assert all(Annotation.FEDERATION_NAMESPACE not in a for a in copy_annotations())
        web.edit("default", "api", lambda o: o["metadata"]["annotations"].pop("compute.datumapis.com/suspended"))

        def removed() -> bool:
            found = copy_annotations()
            return len(found) == 2 and all(
                "compute.datumapis.com/suspended" not in a and a.get("team.example.com/owner") == "blue" for a in found
            )

        await eventually(removed, "the removed annotation gone from both copies")


async def test_a_burst_of_wds_writes_each_cell_namespace_once(tmp_path: Path) -> None:
    """Many WDs of one project namespace reconciled at once (already there when the manager
    starts, so its workers take them together) write their cell namespace once per cell:
    the first write's answer serves the reconciles that wanted the same namespace
    (issue 22 point 2; the cells' request counters count the writes). Then nothing more."""
    count = 24
    async with fleet(tmp_path, projects=("acme/web", "acme/shop"), cells=CELLS) as f:
        web = WDs(f, "web")
        for i in range(count):
            web.create(workload_deployment(f"api-{i}", "DFW", 2))
        async with running(management_settings(tmp_path / "management.kubeconfig")) as mgr:

            def all_copies() -> bool:
                return all(len(WDs(f, cell).list()) == count for cell in ("dfw-1", "dfw-2"))

            await eventually(all_copies, f"{count} copies in each DFW cell")
            assert await all_idle(mgr)
            writes = {cell: f.server(cell).plane.counters.writes("namespaces") for cell in f.cells}
            assert writes == {"dfw-1": 1, "dfw-2": 1, "lhr-1": 0}, writes
            # the namespaces' and copies' own events bring their WDs back: they write nothing
            before = {cell: f.server(cell).plane.counters.snapshot() for cell in f.cells}
            await anyio.sleep(1.0)  # an idle window, not a timed assertion
            assert await all_idle(mgr)
            assert {cell: f.server(cell).plane.counters.snapshot() for cell in f.cells} == before
            # bounded: no lock outlives its writers, no answer outlives the cache's own event
            federator = controller(mgr, "federator").reconciler.inner
            assert isinstance(federator, Federator) and federator.namespace_writes.held() == (0, 0)


def _ns(uid: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "ns-1", "uid": uid, "resourceVersion": rv}}


@pytest.mark.parametrize(
    ("before", "answer", "after_write", "now", "latest"),
    [
        # the cache has not seen the write yet: the answer stands in for it
        (None, _ns("a", "5"), None, None, _ns("a", "5")),
        (_ns("a", "3"), _ns("a", "5"), _ns("a", "3"), _ns("a", "3"), _ns("a", "5")),
        # the cache moved on (the write's own event, or newer): the cache, and the answer goes
        (None, _ns("a", "5"), None, _ns("a", "5"), _ns("a", "5")),
        (None, _ns("a", "5"), None, _ns("a", "7"), _ns("a", "7")),
        (_ns("a", "3"), _ns("a", "5"), _ns("a", "3"), None, None),  # deleted since
        (None, _ns("a", "5"), None, _ns("b", "9"), _ns("b", "9")),  # re-created since
        # the write's own event came before its answer: nothing kept
        (None, _ns("a", "5"), _ns("a", "5"), None, None),
    ],
)
def test_a_namespace_writes_answer_lasts_until_the_cache_moves_on(
    before: Any, answer: Any, after_write: Any, now: Any, latest: Any
) -> None:
    writes = NamespaceWrites()
    key = ("dfw-1", "ns-1")
    writes.remember(key, before, answer, after_write)
    assert writes.latest(key, now) == latest
    assert writes.held() == (0, 0 if latest == now else 1)  # an answer the cache has caught up with goes
    writes.forget(key)
    assert writes.latest(key, now) == now and writes.held() == (0, 0)


async def test_namespace_writes_one_at_a_time_and_no_lock_left() -> None:
    writes = NamespaceWrites()
    key = ("dfw-1", "ns-1")
    inside: list[int] = []
    widest = 0

    async def write() -> None:
        nonlocal widest
        async with writes.one_at_a_time(key):
            inside.append(1)
            widest = max(widest, len(inside))
            await anyio.lowlevel.checkpoint()
            inside.pop()

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(write)
        await anyio.lowlevel.checkpoint()
        assert writes.held() == (1, 0)
    assert widest == 1 and writes.held() == (0, 0)


async def test_a_failed_namespace_write_fails_its_waiters_instead_of_each_trying_in_turn() -> None:
    """Reconciles waiting on a cell namespace's write that fails (a dark cell's timeout)
    fail with it, each to be retried, rather than each sending its own write in turn
    (16 workers would then wait 16 timeouts on one lock)."""
    release = anyio.Event()

    class DarkCell:
        name = "dfw-1"

        def __init__(self) -> None:
            self.client = self
            self.applies = 0

        async def get_or_none(self, *_: Any, **__: Any) -> None:
            return None

        async def apply(self, *_: Any, **__: Any) -> dict[str, Any]:
            self.applies += 1
            await release.wait()
            raise TransportError("timed out")

    federator = Federator.__new__(Federator)  # the namespace step alone: no manager needed
    federator.namespace_writes = NamespaceWrites()
    cell = DarkCell()
    intent = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-1", "labels": {"a": "b"}}}
    failures: list[str] = []

    async def place() -> None:
        seen = _Seen("web", intent, {"metadata": {"name": "api"}}, False, None, None)
        try:
            await federator._apply_namespace(cell, seen)  # type: ignore[arg-type]
        except TransportError as exc:
            failures.append(str(exc))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(place)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert cell.applies == 1 and len(failures) == 5, (cell.applies, failures)
    assert federator.namespace_writes.held() == (0, 0)  # the next try is a new flight


def test_a_cell_namespace_is_compared_once_per_version_and_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The WDs of one project namespace all compare the same namespace intent with the
    same cached cell namespace: `Comparisons` compares once per (cell, namespace
    version, project, intent) and answers as the comparison would after (counted by
    wrapping the comparison; bounded)."""
    from federation.controllers import copyplacement
    from federation.controllers import federator as module
    from federation.fleet.downstream import downstream_namespace
    from mcruntime.controllerutil import intent_annotation, intent_digest

    intent = downstream_namespace("web", "cluster-acme_web", {"metadata": {"name": "default", "uid": "u1"}})
    written = {k: v for k, v in intent.items() if k not in ("apiVersion", "kind")}  # as the apply wrote it
    annotations = {intent_annotation(module.FIELD_MANAGER): intent_digest(written)}
    cached = {**intent, "metadata": {**intent["metadata"], "annotations": annotations, "uid": "n1",
                                     "resourceVersion": "7"}}  # fmt: skip
    compared: list[str] = []
    real = module._namespace_state

    def counted(obj: Any, desired: Any, project: str) -> copyplacement.NamespaceState:
        compared.append(project)
        return real(obj, desired, project)

    monkeypatch.setattr(module, "_namespace_state", counted)
    comparisons = module.Comparisons(size=3)
    for _ in range(50):  # a burst of one namespace's WDs: each reads its own decoded copy of the cache
        state = comparisons.namespace("dfw-1", copy.deepcopy(cached), copy.deepcopy(intent), "web")
        assert state is copyplacement.NamespaceState.CURRENT
    assert len(compared) == 1
    relabelled = copy.deepcopy(cached)
    relabelled["metadata"]["labels"] = {}
    relabelled["metadata"]["resourceVersion"] = "8"
    table = [
        (("dfw-1", relabelled, intent, "web"), copyplacement.NamespaceState.FOREIGN),  # a new version
        (("dfw-2", cached, intent, "web"), copyplacement.NamespaceState.CURRENT),  # another cell
        (("dfw-1", cached, intent, "shop"), copyplacement.NamespaceState.FOREIGN),  # another project
        (("dfw-1", cached, {**intent, "metadata": {**intent["metadata"], "labels": {"x": "y"}}}, "web"),
         copyplacement.NamespaceState.DIFFERS),  # another intent
        (("dfw-1", None, intent, "web"), copyplacement.NamespaceState.MISSING),  # nothing cached: nothing kept
    ]  # fmt: skip
    for args, expected in table:
        assert comparisons.namespace(*args) is expected, args
    assert len(compared) == 6
    assert len(comparisons) == 3  # bounded: the oldest went


async def test_a_status_only_change_of_the_project_wd_costs_the_federator_no_reconcile(tmp_path: Path) -> None:
    """The project WD's status is the projector's, written on every cell report: the
    federator writes nothing that follows from it, so a status-only change is filtered
    before its queue (`not_status_only`), while a change of anything else still comes.
    Ordered, not timed: one informer delivers one listener's events in order, so once the
    later label change of another WD is reconciled, the status change was seen first."""
    async with federation(tmp_path) as (f, mgr):
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 2))
        web.create(workload_deployment("marker", "LHR", 1))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "copies")
        await eventually(lambda: shares(f, "marker") == {"lhr-1": (1, 0)}, "the marker's copy")
        assert await all_idle(mgr)
        recording = record(mgr, "federator")
        api = web.get("default", "api")
        assert api is not None
        api["status"] = {**(api.get("status") or {}), "replicas": 7}
        web.plane.update_status("workloaddeployments", api, group=GROUP, version=VERSION)
        web.edit("default", "marker", lambda o: o["metadata"].setdefault("labels", {}).update(touched="1"))
        await eventually(lambda: Request("web", "default", "marker") in recording.requests, "the marker's reconcile")
        assert Request("web", "default", "api") not in recording.requests, recording.requests
        web.edit("default", "api", lambda o: o["metadata"].setdefault("labels", {}).update(touched="1"))
        await eventually(lambda: Request("web", "default", "api") in recording.requests, "a label change reconciles")


def test_a_copy_is_compared_once_per_version_and_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reconcile that finds a copy as the last one left it (its own events, the WD's
    finalizer) compares it with the same intent again: `Comparisons` answers from the
    first comparison until the copy's version or the intent changes."""
    from federation.controllers import copyplacement
    from federation.controllers import federator as module

    desired = workload_deployment("api", "DFW", 2)
    cached = copy.deepcopy(desired)
    cached["metadata"].update(uid="c1", resourceVersion="5")
    compared: list[int] = []
    real = module._copy_state

    def counted(obj: Any, want: Any) -> copyplacement.CopyState:
        compared.append(1)
        return real(obj, want)

    monkeypatch.setattr(module, "_copy_state", counted)
    comparisons = module.Comparisons()
    first = comparisons.copy("dfw-1", cached, desired)
    for _ in range(20):
        assert comparisons.copy("dfw-1", copy.deepcopy(cached), copy.deepcopy(desired)) is first
    assert len(compared) == 1
    assert first is real(cached, desired)
    newer = copy.deepcopy(cached) | {"metadata": {**cached["metadata"], "resourceVersion": "6"}}
    scaled = copy.deepcopy(desired)
    scaled["spec"]["replicas"] = 3
    for args in (("dfw-1", newer, desired), ("dfw-1", cached, scaled), ("dfw-2", cached, desired)):
        assert comparisons.copy(*args) is real(*args[1:]), args
    assert comparisons.copy("dfw-1", None, desired) is copyplacement.CopyState.MISSING
    assert len(compared) == 1 + 3 + 1


async def test_own_write_echoes_cost_no_reconcile(tmp_path: Path) -> None:
    """A create costs the federator one reconcile, and a spec change one more: the echoes
    of its own writes (the claim on the project WD, each copy's create or update, the cell
    namespace) wake nothing (`UnlessOwnWrite`), with the cells reporting status as they
    would. Anything else still comes: a copy edited or deleted by hand is reconciled and
    put back. Counted once the manager's caches show every write, and its queues are idle."""
    async with federation(tmp_path) as (f, mgr):
        recording = record(mgr, "federator")
        api = Request("web", "default", "api")
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "the copies")
        for cell in ("dfw-1", "dfw-2"):
            settle(f, cell)  # the cells report status on their copies (status only: no reconcile)
        project, cells = mgr.get_cluster("web").client, [mgr.get_cluster(c).client for c in ("dfw-1", "dfw-2")]
        downstream = f"ns-{Plane(f.server('web')).get('namespaces', '', 'default')['metadata']['uid']}"

        async def cached(replicas: int) -> bool:
            wd = await project.get_or_none(WORKLOAD_DEPLOYMENTS, "api", namespace="default")
            copies = [await c.get_or_none(WORKLOAD_DEPLOYMENTS, "api", namespace=downstream) for c in cells]
            namespaces = [await c.get_or_none(NAMESPACES, downstream) for c in cells]
            return (
                wd is not None
                and Finalizer.FEDERATOR in wd["metadata"].get("finalizers", [])
                and "observedGeneration" in wd.get("status", {})
                and all(n is not None for n in namespaces)
                and sum((c or {}).get("spec", {}).get("replicas", 0) for c in copies) == replicas
                and all("status" in (c or {}) for c in copies)
            )

        await eventually(lambda: cached(2), "the caches show every write of the create")
        assert await all_idle(mgr)
        # one; a second only when some write's own event outran its answer (the echo then
        # finds no answer to match and wakes a reconcile that writes nothing). Without
        # `UnlessOwnWrite` every echo wakes one: 3 here, the claim's and each copy's.
        created = recording.requests.count(api)
        assert created in (1, 2), recording.requests
        # the cell WD controller's finalizer on a copy (another writer, but nothing the
        # federator writes follows from it): no reconcile either
        cell_finalizer = str(Finalizer.WORKLOAD_DEPLOYMENT_CONTROLLER)
        WDs(f, "dfw-1").edit(downstream, "api", lambda o: o["metadata"].update(finalizers=[cell_finalizer]))

        async def finalized() -> bool:
            found = await cells[0].get_or_none(WORKLOAD_DEPLOYMENTS, "api", namespace=downstream)
            return cell_finalizer in (found or {}).get("metadata", {}).get("finalizers", [])

        await eventually(finalized, "the caches show the cells' finalizers")
        assert await all_idle(mgr)
        assert recording.requests.count(api) == created, recording.requests
        web.edit("default", "api", lambda o: o["spec"].update(replicas=4))
        updated = {"dfw-1": (1, 0), "dfw-2": (3, 1)}  # the first ordinals stay where they are
        await eventually(lambda: shares(f, "api") == updated, "the copies updated")
        for cell in ("dfw-1", "dfw-2"):
            settle(f, cell)
        await eventually(lambda: cached(4), "the caches show every write of the update")
        assert await all_idle(mgr)
        assert recording.requests.count(api) - created in (1, 2), recording.requests
        WDs(f, "dfw-1").edit(downstream, "api", lambda o: o["spec"]["template"]["metadata"]["labels"].update(app="x"))
        await eventually(lambda: (WDs(f, "dfw-1").get(downstream, "api") or {}).get("spec", {}).get("template")
                         == STORED_TEMPLATE, "the hand edit reverted")  # fmt: skip
        assert recording.requests.count(api) >= 3, "a hand edit is reconciled"
        WDs(f, "dfw-2").delete(downstream, "api")

        def recreated() -> bool:
            found = shares(f, "api")
            return set(found) == {"dfw-1", "dfw-2"} and sum(r for r, _ in found.values()) == 4

        await eventually(recreated, "the deleted copy recreated (the shares planned afresh)")


def _claimed(change: Any) -> dict[str, Any]:
    answer = copy.deepcopy(_UNCLAIMED)
    answer["metadata"].update(resourceVersion="6", finalizers=[str(Finalizer.FEDERATOR)])
    answer["metadata"]["annotations"][str(Annotation.FEDERATION_NAMESPACE)] = "ns-1"
    change(answer)
    return answer


_UNCLAIMED: dict[str, Any] = {
    **workload_deployment("api", "DFW", 2),
    "metadata": {"name": "api", "namespace": "default", "uid": "u", "resourceVersion": "5", "generation": 1,
                 "labels": {"team": "a"}, "annotations": {"note": "x"}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "only"),
    [
        (lambda o: None, True),  # the finalizer and the annotation
        (lambda o: o.update(status={"replicas": 2}), True),  # the projector's status meanwhile
        (lambda o: o["spec"].update(replicas=3) or o["metadata"].update(generation=2), False),
        (lambda o: o["metadata"]["labels"].update(team="b"), False),
        (lambda o: o["metadata"]["annotations"].update(note="y"), False),
        (lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"), False),
    ],
)
def test_a_claims_answer_is_its_own_only_without_anyone_elses_change(change: Any, only: bool) -> None:
    """The claim's answer stands for its watch event (which then wakes nothing) only when
    it differs from the WD it was made over by the claim alone: a change someone made in
    between (spec, labels, other annotations, deletion) is reconciled even if its own event
    is never seen (a re-list that shows only the latest state)."""
    assert claimed_only(_UNCLAIMED, _claimed(change)) is only


async def test_a_reconcile_resolves_the_city_and_the_references_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A federator reconcile resolves the WD's target city once (`planned_shares` takes
    it, not resolving it again) and walks its template's references once for all its
    cells' copies (`downstream_copy` takes them: `references.referenced`): counted by
    wrapping `target_city` and `expected_referenced_data` where they are read, over the
    reconciles of a WD with two cells, then of its update, then of a copy restored."""
    from federation.controllers import federator as module
    from federation.fleet import downstream
    from projector import placementmemo

    made: list[str] = []
    monkeypatch.setattr(placementmemo, "target_city", downstream.target_city)  # the projector's own: not counted

    def counting(where: Any, name: str, label: str) -> None:
        real = getattr(where, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            made.append(label)
            return real(*args, **kwargs)

        monkeypatch.setattr(where, name, counted)

    counting(module, "target_city", "federator resolves")
    counting(downstream, "target_city", "resolved again")
    counting(downstream, "expected_referenced_data", "references walked per copy")
    async with federation(tmp_path) as (f, mgr):
        recording = record(mgr, "federator")
        web = WDs(f, "web")
        web.create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (1, 0), "dfw-2": (1, 1)}, "the copies")
        web.edit("default", "api", lambda o: o["spec"].update(replicas=4))
        await eventually(lambda: sum(n for n, _ in shares(f, "api").values()) == 4, "4 over the two cells")
        assert await all_idle(mgr)
        api = Request("web", "default", "api")
        before = recording.requests.count(api)
        (ns,) = {o["metadata"]["namespace"] for o in WDs(f, "dfw-1").list()}
        WDs(f, "dfw-1").edit(ns, "api", lambda o: o["spec"].update(replicas=9))

        def reverted() -> bool:
            now = shares(f, "api")
            return recording.requests.count(api) > before and now.get("dfw-1", (9, 0))[0] != 9 and sum(
                n for n, _ in now.values()) == 4  # fmt: skip

        await eventually(reverted, "the hand edit reverted")
        assert await all_idle(mgr)
        reconciles = recording.requests.count(Request("web", "default", "api"))
        assert reconciles >= 3
        assert made.count("federator resolves") == reconciles, (made, reconciles)
        assert "resolved again" not in made and "references walked per copy" not in made, made
