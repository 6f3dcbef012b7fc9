"""The CustomResourceDefinitions this project serves, generated from the models.

What a schema cannot say lives here: names, scope, printer columns, subresources. The
WorkloadDeployment printer columns and scale subresource are part of the compatibility
contract (DESIGN.md §2); Instance and Workload columns follow upstream Datum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import KubeModel
from .clusterprofile import ClusterProfile
from .constants import (
    CLUSTER_INVENTORY_GROUP,
    CLUSTER_INVENTORY_VERSION,
    GROUP,
    NETWORKING_GROUP,
    QUOTA_GROUP,
    VERSION,
)
from .instance import Instance
from .location import Location
from .openapi import object_schema
from .quota import ResourceBudget, ResourceClaim
from .workload import Workload
from .workloaddeployment import WorkloadDeployment


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "jsonPath": self.json_path, "type": self.type}
        if self.priority:
            out["priority"] = self.priority
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Scale:
    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True)
class CRDDefinition:
    model: type[KubeModel]
    group: str
    version: str
    kind: str
    plural: str
    scope: str = "Namespaced"
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: Scale | None = None
    short_names: tuple[str, ...] = ()
    # `kubectl get compute` lists every kind in the category
    categories: tuple[str, ...] = ()
    # Sub-directory of config/crd/: overlays install CRD sets (compute on cells and
    # projects, cluster-inventory on the management cluster), and kustomize can only
    # reference another directory, not a single file outside its own root.
    bundle: str = "compute"

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def file_name(self) -> str:
        """Path under config/crd/ (controller-gen's `<group>_<plural>.yaml` in its bundle)."""
        return f"{self.bundle}/{self.group}_{self.plural}.yaml"


AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")


def _condition(type_: str, attr: str) -> str:
    return f'.status.conditions[?(@.type=="{type_}")].{attr}'


WORKLOAD_DEPLOYMENT_CRD = CRDDefinition(
    model=WorkloadDeployment,
    group=GROUP,
    version=VERSION,
    kind="WorkloadDeployment",
    plural="workloaddeployments",
    short_names=("wd",),
    categories=("compute",),
    printer_columns=(
        AGE,
        PrinterColumn("Available", _condition("Available", "status")),
        PrinterColumn("Reason", _condition("Available", "reason")),
        PrinterColumn("Replicas", ".status.replicas"),
        PrinterColumn("Ready", ".status.readyReplicas"),
        PrinterColumn("Desired", ".status.desiredReplicas"),
        PrinterColumn("Up-to-date", ".status.updatedReplicas"),
        PrinterColumn("Location", ".spec.locationRef.name"),
    ),
    scale=Scale(".spec.replicas", ".status.replicas", ".status.selector"),
)

INSTANCE_CRD = CRDDefinition(
    model=Instance,
    group=GROUP,
    version=VERSION,
    kind="Instance",
    plural="instances",
    short_names=("inst",),
    categories=("compute",),
    printer_columns=(
        AGE,
        PrinterColumn("Ready", _condition("Ready", "status")),
        PrinterColumn("Reason", _condition("Ready", "reason")),
        PrinterColumn("Network IP", ".status.networkInterfaces[0].assignments.networkIP"),
        PrinterColumn("External IP", ".status.networkInterfaces[0].assignments.externalIP"),
        PrinterColumn("Message", _condition("Ready", "message"), priority=1),
        PrinterColumn("Quota", _condition("QuotaGranted", "reason"), priority=1),
    ),
)

WORKLOAD_CRD = CRDDefinition(
    model=Workload,
    group=GROUP,
    version=VERSION,
    kind="Workload",
    plural="workloads",
    short_names=("wl",),
    categories=("compute",),
    printer_columns=(
        AGE,
        PrinterColumn("Available", _condition("Available", "status")),
        PrinterColumn("Reason", _condition("Available", "reason")),
        PrinterColumn("Deployments", ".status.deployments"),
        PrinterColumn("Replicas", ".status.replicas"),
        PrinterColumn("Ready", ".status.readyReplicas"),
        PrinterColumn("Desired", ".status.desiredReplicas"),
        PrinterColumn("Up-to-date", ".status.currentReplicas"),
    ),
)

# Same shape as kubernetes-sigs/cluster-inventory-api's CRD (no printer columns), so it
# can coexist with, or stand in for, the one another cluster manager installs.
CLUSTER_PROFILE_CRD = CRDDefinition(
    model=ClusterProfile,
    group=CLUSTER_INVENTORY_GROUP,
    version=CLUSTER_INVENTORY_VERSION,
    kind="ClusterProfile",
    plural="clusterprofiles",
    bundle="cluster-inventory",
)

# QuotaGate: installed with the compute kinds (cells need them wherever Instances run).
RESOURCE_CLAIM_CRD = CRDDefinition(
    model=ResourceClaim,
    group=QUOTA_GROUP,
    version=VERSION,
    kind="ResourceClaim",
    plural="resourceclaims",
    short_names=("claim",),
    categories=("quota",),
    printer_columns=(
        AGE,
        PrinterColumn("Granted", _condition("Granted", "status")),
        PrinterColumn("Reason", _condition("Granted", "reason")),
        PrinterColumn("CPU", ".spec.requests.cpu"),
        PrinterColumn("Memory", ".spec.requests.memory"),
        PrinterColumn("Instance", ".spec.consumerRef.name"),
        PrinterColumn("Message", _condition("Granted", "message"), priority=1),
    ),
)

RESOURCE_BUDGET_CRD = CRDDefinition(
    model=ResourceBudget,
    group=QUOTA_GROUP,
    version=VERSION,
    kind="ResourceBudget",
    plural="resourcebudgets",
    short_names=("budget",),
    categories=("quota",),
    printer_columns=(
        AGE,
        PrinterColumn("CPU Used", ".status.used.cpu"),
        PrinterColumn("CPU Hard", ".spec.hard.cpu"),
        PrinterColumn("Memory Used", ".status.used.memory"),
        PrinterColumn("Memory Hard", ".spec.hard.memory"),
        PrinterColumn("Granted", ".status.grantedClaims", "integer"),
        PrinterColumn("Pending", ".status.pendingClaims", "integer"),
    ),
)

# Datum's location registry, served in the management cluster (where placement reads it).
LOCATION_CRD = CRDDefinition(
    model=Location,
    group=NETWORKING_GROUP,
    version=VERSION,
    kind="Location",
    plural="locations",
    scope="Cluster",
    printer_columns=(
        PrinterColumn("Class", ".spec.locationClassName"),
        PrinterColumn("City", ".spec.topology.topology\\.datum\\.net/city-code"),
        AGE,
        PrinterColumn("Ready", _condition("Ready", "status")),
        PrinterColumn("Reason", _condition("Ready", "reason")),
    ),
    bundle="locations",
)

QUOTA_CRDS: tuple[CRDDefinition, ...] = (RESOURCE_CLAIM_CRD, RESOURCE_BUDGET_CRD)
COMPUTE_CRDS: tuple[CRDDefinition, ...] = (INSTANCE_CRD, WORKLOAD_DEPLOYMENT_CRD, WORKLOAD_CRD)
# What the management cluster serves: registrations and the location registry.
MANAGEMENT_CRDS: tuple[CRDDefinition, ...] = (CLUSTER_PROFILE_CRD, LOCATION_CRD)
ALL_CRDS: tuple[CRDDefinition, ...] = (*COMPUTE_CRDS, *QUOTA_CRDS, CLUSTER_PROFILE_CRD, LOCATION_CRD)


def crd_manifest(crd: CRDDefinition) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition for one definition."""
    subresources: dict[str, Any] = {"status": {}}
    if crd.scale is not None:
        scale: dict[str, Any] = {
            "specReplicasPath": crd.scale.spec_replicas_path,
            "statusReplicasPath": crd.scale.status_replicas_path,
        }
        if crd.scale.label_selector_path:
            scale["labelSelectorPath"] = crd.scale.label_selector_path
        subresources["scale"] = scale
    version: dict[str, Any] = {
        "name": crd.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": object_schema(crd.model, root=True)},
        "subresources": subresources,
    }
    if crd.printer_columns:
        version["additionalPrinterColumns"] = [c.to_wire() for c in crd.printer_columns]
    names: dict[str, Any] = {
        "kind": crd.kind,
        "listKind": f"{crd.kind}List",
        "plural": crd.plural,
        "singular": crd.kind.lower(),
    }
    if crd.short_names:
        names["shortNames"] = list(crd.short_names)
    if crd.categories:
        names["categories"] = list(crd.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.name},
        "spec": {"group": crd.group, "names": names, "scope": crd.scope, "versions": [version]},
    }


def all_crd_manifests() -> list[dict[str, Any]]:
    return [crd_manifest(c) for c in ALL_CRDS]
