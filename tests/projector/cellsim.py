"""A stand-in for a cell's own controllers, for projector tests that need exact control of
what a cell reports: it writes the Instances of every federated copy (labels, owner,
status) and the copy's status, as the cell WD controller would after converging."""

from __future__ import annotations

from typing import Any

from federation.api.constants import Annotation, Label
from tests.support import Fleet, Plane

GROUP, VERSION = "compute.datumapis.com", "v1alpha"


def condition(type_: str, status: str, reason: str, message: str = "", generation: int = 1) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation}  # fmt: skip


def settle(
    f: Fleet,
    cell: str,
    *,
    broken: dict[int, tuple[str, str]] | None = None,
    observe: bool = True,
    labels: bool = True,
) -> None:
    """Make the cell's Instances match every copy's share and report status: all Ready,
    except ordinals in `broken` (ordinal → (reason, message)). With `observe=False` the
    copy's status is left behind the copy's generation (a cell that has not caught up)."""
    plane = Plane(f.server(cell))
    broken = broken or {}
    namespaces = {n["metadata"]["name"]: n for n in plane.list("namespaces")}
    for copy in plane.list("workloaddeployments", group=GROUP, version=VERSION):
        meta = copy["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        ns_labels = namespaces[meta["namespace"]]["metadata"].get("labels") or {}
        start = int(meta["annotations"][Annotation.ORDINAL_START])
        wanted = range(start, start + int(copy["spec"].get("replicas") or 0))
        in_namespace = plane.list("instances", meta["namespace"], group=GROUP, version=VERSION)
        existing = {  # this copy's own Instances (its WD's name label): copies of one namespace differ in replicas
            i["metadata"]["name"]: i
            for i in in_namespace
            if (i["metadata"].get("labels") or {}).get(Label.WORKLOAD_DEPLOYMENT_NAME) == meta["name"]
        }
        for name, inst in existing.items():
            index = int(inst["metadata"]["labels"][Label.INSTANCE_INDEX])
            if index not in wanted:
                plane.delete("instances", meta["namespace"], name, group=GROUP, version=VERSION)
        ready = 0
        for i in wanted:
            name = f"{meta['name']}-{i}"
            inst_labels = {
                str(Label.WORKLOAD_DEPLOYMENT_NAME): meta["name"],
                str(Label.WORKLOAD_DEPLOYMENT_UID): meta["uid"],
                str(Label.INSTANCE_INDEX): str(i),
                str(Label.CITY_CODE): copy["spec"]["cityCode"],
            }
            if labels:
                for key in (Label.UPSTREAM_CLUSTER_NAME, Label.UPSTREAM_NAMESPACE):
                    inst_labels[str(key)] = ns_labels[key]
            shard = (meta.get("labels") or {}).get(Label.SHARD)
            if shard:  # `run --sharding`: the copy's shard label follows onto its Instances
                inst_labels[str(Label.SHARD)] = shard
            held = existing.get(name)
            if shard and held is not None and (held["metadata"].get("labels") or {}).get(Label.SHARD) != shard:
                held["metadata"].setdefault("labels", {})[str(Label.SHARD)] = shard  # relabelled after a hand-over
                existing[name] = plane.update("instances", held, group=GROUP, version=VERSION)
            inst = existing.get(name) or plane.create("instances", {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "Instance",
                "metadata": {"name": name, "namespace": meta["namespace"], "labels": inst_labels,
                             "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadDeployment",
                                                  "name": meta["name"], "uid": meta["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "spec": copy["spec"]["template"]["spec"],
            }, group=GROUP, version=VERSION)  # fmt: skip
            reason, message = broken.get(i, ("Available", ""))
            ok = i not in broken
            ready += ok
            gen = inst["metadata"].get("generation", 1)
            inst["status"] = {"conditions": [
                condition("Programmed", "True", "Programmed", generation=gen),
                condition("Available", "True" if ok else "False", reason, message, gen),
                condition("Ready", "True" if ok else "False", reason, message, gen),
            ]}  # fmt: skip
            plane.update_status("instances", inst, group=GROUP, version=VERSION)
        n = len(wanted)
        worst = next(iter(broken.values()), None)
        copy["status"] = {
            "replicas": n, "currentReplicas": n, "updatedReplicas": n, "readyReplicas": ready, "desiredReplicas": n,
            "observedGeneration": meta["generation"] if observe else meta["generation"] - 1,
            "conditions": [
                condition("Available", "True" if ready else "False",
                          "StableInstanceFound" if ready else (worst[0] if worst else "InstancesProvisioning"),
                          f"{ready}/{n} ready", meta["generation"]),
                condition("ReplicasReady", "True" if ready >= n else "False",
                          "ReplicasAvailable" if ready >= n else (worst[0] if worst else "InstancesProvisioning"),
                          f"{ready}/{n} ready", meta["generation"]),
            ],
        }  # fmt: skip
        plane.update_status("workloaddeployments", copy, group=GROUP, version=VERSION)
