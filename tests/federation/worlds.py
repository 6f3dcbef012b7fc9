"""Federations built in memory, for the pure views over a `Snapshot` (invariants, status,
plan). `converged()` writes what the controllers would have written once everything has
settled — with the controllers' own pure functions (placement, downstream objects,
projections, aggregation), so a test that breaks one object checks the checker against
the real rules, not against a second copy of them."""

from __future__ import annotations

import copy as _copy
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from federation.api.constants import Annotation, Finalizer, Label
from federation.api.naming import downstream_namespace_name
from federation.fleet.aggregate import CellReport, aggregate
from federation.fleet.downstream import (
    cell_owns_replicas,
    copy_ordinals,
    downstream_copy,
    downstream_namespace,
    planned_shares,
    target_city,
)
from federation.fleet.placement import CellInfo
from federation.fleet.projection import Source, projection, projection_status
from federation.fleet.references import references
from federation.ops.snapshot import OK, CellSnapshot, Health, ProjectSnapshot, Snapshot
from federation.registration import project_cluster_name
from tests.federation.test_federator import workload_deployment

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
Obj = dict[str, Any]
_uids = itertools.count(1)


def uid(prefix: str = "uid") -> str:
    return f"{prefix}-{next(_uids):04d}"


def condition(type_: str, status: str, reason: str, generation: int = 1) -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": generation,
    }


@dataclass
class Cell:
    city: str
    health: Health = OK
    namespaces: list[Obj] = field(default_factory=list)
    copies: list[Obj] = field(default_factory=list)
    instances: list[Obj] = field(default_factory=list)
    companions: list[Obj] = field(default_factory=list)  # names only, as the snapshot keeps them


@dataclass
class Project:
    path: str
    health: Health = OK
    namespaces: list[Obj] = field(default_factory=list)
    wds: list[Obj] = field(default_factory=list)
    instances: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    sources: list[Obj] = field(default_factory=list)  # ConfigMaps and Secrets, names only

    @property
    def label(self) -> str:
        return "cluster-" + self.path.replace("/", "_")

    def namespace(self, name: str) -> Obj:
        for ns in self.namespaces:
            if ns["metadata"]["name"] == name:
                return ns
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid("ns")}}
        self.namespaces.append(ns)
        return ns

    def wd(self, namespace: str, name: str) -> Obj:
        return next(w for w in self.wds if w["metadata"]["namespace"] == namespace and w["metadata"]["name"] == name)


@dataclass
class World:
    cells: dict[str, Cell] = field(default_factory=dict)
    projects: dict[str, Project] = field(default_factory=dict)
    management: Health = OK

    # ------------------------------------------------------------------ building
    def add_cell(self, name: str, city: str) -> None:
        self.cells[name] = Cell(city)

    def add_project(self, path: str) -> str:
        name = project_cluster_name(path)
        self.projects[name] = Project(path)
        return name

    def add_wd(
        self, project: str, name: str, city: str, replicas: int | None, namespace: str = "default", **scale: Any
    ) -> Obj:
        p = self.projects[project]
        p.namespace(namespace)
        wd = workload_deployment(name, city, replicas, **scale)
        wd["metadata"].update(namespace=namespace, uid=uid("wd"), generation=1, finalizers=[str(Finalizer.FEDERATOR)])
        p.wds.append(wd)
        return wd

    def cell_infos(self) -> list[CellInfo]:
        return [CellInfo(n, c.city, c.health.reachable) for n, c in sorted(self.cells.items())]

    # ------------------------------------------------------------------ what the controllers write
    def copies_of(self, project: str, wd: Obj) -> dict[str, Obj]:
        found = {}
        ns_name = downstream_namespace_name(
            self.projects[project].namespace(wd["metadata"]["namespace"])["metadata"]["uid"]
        )
        for cell_name, cell in self.cells.items():
            for c in cell.copies:
                same = c["metadata"]["namespace"] == ns_name and c["metadata"]["name"] == wd["metadata"]["name"]
                if same and c["metadata"]["annotations"][str(Annotation.UPSTREAM_UID)] == wd["metadata"]["uid"]:
                    found[cell_name] = c
        return found

    def federate(self, project: str, wd: Obj) -> None:
        """The federator's writes for one WD: namespaces and copies in the planned cells."""
        p = self.projects[project]
        project_ns = p.namespace(wd["metadata"]["namespace"])
        for share in planned_shares(wd, self.cell_infos(), self.copies_of(project, wd).items(), ()):
            cell = self.cells[share.cell]
            ns = downstream_namespace(project, p.label, project_ns)
            if not any(n["metadata"]["name"] == ns["metadata"]["name"] for n in cell.namespaces):
                ns["metadata"]["uid"] = uid("cellns")
                cell.namespaces.append(ns)
            desired = downstream_copy(
                project,
                wd,
                share,
                ns["metadata"]["name"],
                include_replicas=not cell_owns_replicas(wd),
                target=target_city(wd, ()),
            )
            desired["metadata"].update(uid=uid("copy"), generation=1)
            desired["spec"].setdefault("replicas", share.replicas)  # an autoscaled copy's initial replicas
            cell.copies = [
                c
                for c in cell.copies
                if not (
                    c["metadata"]["namespace"] == ns["metadata"]["name"]
                    and c["metadata"]["name"] == wd["metadata"]["name"]
                )
            ]
            cell.copies.append(desired)
            self.copy_companions(p, cell, wd, ns["metadata"]["name"])

    @staticmethod
    def copy_companions(p: Project, cell: Cell, wd: Obj, namespace: str) -> None:
        """The companion controller's writes for one copy: the referenced sources that exist."""
        sources = {(o["kind"], o["metadata"]["name"]) for o in p.sources
                   if o["metadata"]["namespace"] == wd["metadata"]["namespace"]}  # fmt: skip
        have = {(o["kind"], o["metadata"]["name"]) for o in cell.companions if o["metadata"]["namespace"] == namespace}
        for ref in references(wd):
            if (ref.kind, ref.name) in sources and (ref.kind, ref.name) not in have:
                cell.companions.append({"kind": ref.kind, "metadata": {"name": ref.name, "namespace": namespace}})

    def run_cell(self, cell_name: str) -> None:
        """A cell's controllers, converged: Instances for every copy's share, all Ready,
        and the copy's status."""
        cell = self.cells[cell_name]
        for c in cell.copies:
            meta = c["metadata"]
            ns = next(n for n in cell.namespaces if n["metadata"]["name"] == meta["namespace"])
            held = copy_ordinals(c) or range(0)
            cell.instances = [
                i
                for i in cell.instances
                if i["metadata"]["namespace"] != meta["namespace"]
                or i["metadata"]["labels"][Label.WORKLOAD_DEPLOYMENT_NAME] != meta["name"]
            ]
            for i in held:
                cell.instances.append(
                    {
                        "apiVersion": "compute.datumapis.com/v1alpha",
                        "kind": "Instance",
                        "metadata": {
                            "name": f"{meta['name']}-{i}",
                            "namespace": meta["namespace"],
                            "uid": uid("inst"),
                            "labels": {
                                str(Label.WORKLOAD_DEPLOYMENT_NAME): meta["name"],
                                str(Label.WORKLOAD_DEPLOYMENT_UID): meta["uid"],
                                str(Label.INSTANCE_INDEX): str(i),
                                str(Label.UPSTREAM_CLUSTER_NAME): ns["metadata"]["labels"][Label.UPSTREAM_CLUSTER_NAME],
                                str(Label.UPSTREAM_NAMESPACE): ns["metadata"]["labels"][Label.UPSTREAM_NAMESPACE],
                            },
                            "ownerReferences": [
                                {
                                    "apiVersion": "compute.datumapis.com/v1alpha",
                                    "kind": "WorkloadDeployment",
                                    "name": meta["name"],
                                    "uid": meta["uid"],
                                    "controller": True,
                                    "blockOwnerDeletion": True,
                                }
                            ],
                        },
                        "spec": _copy.deepcopy(c["spec"]["template"]["spec"]),
                        "status": {
                            "conditions": [
                                condition("Programmed", "True", "Programmed"),
                                condition("Available", "True", "Available"),
                                condition("Ready", "True", "Available"),
                            ]
                        },
                    }
                )
            n = len(held)
            c["status"] = {
                "replicas": n,
                "currentReplicas": n,
                "updatedReplicas": n,
                "readyReplicas": n,
                "desiredReplicas": n,
                "observedGeneration": meta["generation"],
                "conditions": [
                    condition(
                        "Available", "True" if n else "False", "StableInstanceFound" if n else "InstancesProvisioning"
                    ),
                    condition("ReplicasReady", "True", "ReplicasAvailable"),
                ],
            }

    def project_back(self, project: str, wd: Obj) -> None:
        """The projector's writes for one WD: projections and the aggregated status."""
        p = self.projects[project]
        copies = self.copies_of(project, wd)
        shares = planned_shares(wd, self.cell_infos(), copies.items(), ())
        p.instances = [i for i in p.instances if i["metadata"]["ownerReferences"][0]["uid"] != wd["metadata"]["uid"]]
        for cell_name, c in sorted(copies.items()):
            for inst in self.cells[cell_name].instances:
                if inst["metadata"]["ownerReferences"][0]["uid"] == c["metadata"]["uid"]:
                    source = Source(cell_name, inst, wd, True)
                    shown = projection(source)
                    shown["metadata"]["uid"] = uid("proj")
                    shown["status"] = _copy.deepcopy(projection_status(source)["status"])
                    p.instances.append(shown)
        reports = [
            CellReport(
                s,
                copies.get(s.cell),
                downstream_copy(
                    project,
                    wd,
                    s,
                    "ns-x",
                    include_replicas=not cell_owns_replicas(wd),
                    target=target_city(wd, ()),
                )["spec"],
            )
            for s in shares
        ]
        wd["status"] = aggregate(wd, reports, now=NOW)

    def converge(self) -> World:
        for name, p in self.projects.items():
            for wd in p.wds:
                if not wd["metadata"].get("deletionTimestamp"):
                    self.federate(name, wd)
        for cell in self.cells:
            self.run_cell(cell)
        for name, p in self.projects.items():
            for wd in p.wds:
                if not wd["metadata"].get("deletionTimestamp"):
                    self.project_back(name, wd)
        return self

    # ------------------------------------------------------------------ the snapshot
    def snapshot(self) -> Snapshot:
        """What a read would give: a cluster that was not read brings no objects."""

        def objects(health: Health, *lists: list[Obj]) -> list[tuple[Obj, ...]]:
            return [tuple(_copy.deepcopy(objs)) for objs in lists] if health.reachable else []

        projects = {
            name: ProjectSnapshot(name, p.label, p.health, *objects(p.health, p.namespaces, p.wds, p.instances,
                                                                    p.workloads, p.sources))
            for name, p in sorted(self.projects.items())
        }  # fmt: skip
        cells = {
            name: CellSnapshot(
                name, c.city, c.health, *objects(c.health, c.namespaces, c.copies, c.instances, c.companions)
            )
            for name, c in sorted(self.cells.items())
        }
        return Snapshot(self.management, "https://management.test", projects=projects, cells=cells, taken_at=NOW)


def standard() -> World:
    """Projects web and shop (org acme); cells dfw-1, dfw-2 (DFW) and lhr-1 (LHR); WDs
    web/default/api (DFW, 3), web/default/edge (LHR, 1) and shop/default/api (DFW, 2),
    converged."""
    w = World()
    for name, city in (("dfw-1", "DFW"), ("dfw-2", "DFW"), ("lhr-1", "LHR")):
        w.add_cell(name, city)
    w.add_project("acme/web")
    w.add_project("acme/shop")
    w.add_wd("web", "api", "DFW", 3)
    w.add_wd("web", "edge", "LHR", 1)
    w.add_wd("shop", "api", "DFW", 2)
    return w.converge()
