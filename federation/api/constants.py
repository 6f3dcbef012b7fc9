"""API identity and the well-known keys of the compute API (DESIGN.md §2).

Every key is a `DocumentedStr` member: it *is* the string (usable directly as a dict key
or label value) and carries a one-line meaning, from which docs/api.md is generated, so
the documentation cannot drift from what the controllers use.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Self

GROUP: Final = "compute.datumapis.com"
VERSION: Final = "v1alpha"
API_VERSION: Final = f"{GROUP}/{VERSION}"

# The claim/budget API of the QuotaGate feature: a subgroup, so the compute group stays
# exactly the upstream-compatible surface.
QUOTA_GROUP: Final = f"quota.{GROUP}"
QUOTA_API_VERSION: Final = f"{QUOTA_GROUP}/{VERSION}"

# Datum's location registry (network-services-operator): Locations name a city through
# their topology; the management cluster serves them.
NETWORKING_GROUP: Final = "networking.datumapis.com"
NETWORKING_API_VERSION: Final = f"{NETWORKING_GROUP}/{VERSION}"

CLUSTER_INVENTORY_GROUP: Final = "multicluster.x-k8s.io"
CLUSTER_INVENTORY_VERSION: Final = "v1alpha1"
CLUSTER_INVENTORY_API_VERSION: Final = f"{CLUSTER_INVENTORY_GROUP}/{CLUSTER_INVENTORY_VERSION}"

# The name this manager puts in ClusterProfile spec.clusterManager.name and in the
# x-k8s.io/cluster-manager label of the profiles it is meant to consume.
CLUSTER_MANAGER_NAME: Final = "federation-manager"

# Data key of the kubeconfig inside a registration Secret.
KUBECONFIG_SECRET_KEY: Final = "kubeconfig"
# Suffix of the Secret name when a ClusterProfile carries no kubeconfig-secret annotation.
KUBECONFIG_SECRET_SUFFIX: Final = "-kubeconfig"


class DocumentedStr(StrEnum):
    """A string constant with a meaning attached (`Label.CITY_CODE.meaning`)."""

    meaning: str

    def __new__(cls, value: str, meaning: str = "") -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


class Kind(DocumentedStr):
    WORKLOAD = "Workload", "A user's workload: an instance template and where to place it."
    WORKLOAD_DEPLOYMENT = "WorkloadDeployment", "One placement of a Workload in one city."
    INSTANCE = "Instance", "One running copy (sandbox or VM) of a WorkloadDeployment's template."
    CLUSTER_PROFILE = "ClusterProfile", "Registration of a cell or project cluster (SIG Multicluster)."
    RESOURCE_CLAIM = "ResourceClaim", "Request for quota on behalf of one Instance (QuotaGate feature)."
    RESOURCE_BUDGET = "ResourceBudget", "Quota of one namespace in a cell: what granted claims may add up to."
    LOCATION = "Location", "A place Datum runs workloads (networking.datumapis.com); its topology names its city."


class Plural(DocumentedStr):
    WORKLOADS = "workloads", "Resource name of Workload."
    WORKLOAD_DEPLOYMENTS = "workloaddeployments", "Resource name of WorkloadDeployment."
    INSTANCES = "instances", "Resource name of Instance."
    CLUSTER_PROFILES = "clusterprofiles", "Resource name of ClusterProfile."
    RESOURCE_CLAIMS = "resourceclaims", "Resource name of ResourceClaim."
    RESOURCE_BUDGETS = "resourcebudgets", "Resource name of ResourceBudget."
    LOCATIONS = "locations", "Resource name of Location."


class Label(DocumentedStr):
    WORKLOAD_UID = (
        "compute.datumapis.com/workload-uid",
        "UID of the Workload an Instance (or WorkloadDeployment) ultimately belongs to.",
    )
    WORKLOAD_DEPLOYMENT_UID = (
        "compute.datumapis.com/workload-deployment-uid",
        "UID of the WorkloadDeployment that owns an Instance.",
    )
    WORKLOAD_DEPLOYMENT_NAME = (
        "compute.datumapis.com/workload-deployment-name",
        "Name of the WorkloadDeployment that owns an Instance; the WorkloadDeployment's status.selector selects on it.",
    )
    INSTANCE_INDEX = (
        "compute.datumapis.com/instance-index",
        "Ordinal of an Instance within its WorkloadDeployment (`<deployment>-<index>`).",
    )
    CITY_CODE = (
        "compute.datumapis.com/city-code",
        "City code of the WorkloadDeployment (spec.cityCode); on Instances and on downstream WorkloadDeployments.",
    )
    WORKLOAD_NAME = (
        "compute.datumapis.com/workload-name",
        "Name of the Workload an Instance belongs to (spec.workloadRef.name of its deployment).",
    )
    PLACEMENT_NAME = (
        "compute.datumapis.com/placement-name",
        "Placement of the Workload that produced the deployment (spec.placementName).",
    )
    CLUSTER_ROLE = (
        "compute.datumapis.com/cluster-role",
        "On a ClusterProfile: `cell` (a site that runs Instances) or `project` (a tenant control plane).",
    )
    TOPOLOGY_CITY_CODE = (
        "topology.datum.net/city-code",
        "City code a cell serves (on cell ClusterProfiles) or a downstream WorkloadDeployment was placed for.",
    )
    SERVICE_NAME = (
        "services.miloapis.com/service-name",
        "The service an object belongs to, `compute.datumapis.com` (upstream lists by it); on cell HPAs.",
    )
    TOPOLOGY_LOCATION = (
        "topology.datum.net/location",
        "Location a downstream WorkloadDeployment was placed for (spec.locationRef.name), beside its city code.",
    )
    UPSTREAM_CLUSTER_NAME = (
        "meta.datumapis.com/upstream-cluster-name",
        "Encoded project the object came from, `cluster-<org>_<project>`; on downstream namespaces, "
        "on project ClusterProfiles, and copied onto cell Instances.",
    )
    UPSTREAM_NAMESPACE = (
        "meta.datumapis.com/upstream-namespace",
        "Project namespace name the object came from; on downstream namespaces, WorkloadDeployments and Instances.",
    )
    SHARD = (
        "sharding.compute.datumapis.com/shard",
        "On a project WorkloadDeployment, with `run --sharding`: the management shard (replica) that reconciles it; "
        "written by the sharder, removed by the shard when it acknowledges a drain (docs/DESIGN.md §5). The "
        "federator puts the WD's value on its copies in the cells and the Instance projector on its Instance "
        "projections in the project (a hand-over relabels them).",
    )
    DRAIN = (
        "sharding.compute.datumapis.com/drain",
        "On a project WorkloadDeployment: the sharder asks its shard to hand it over; the shard stops reconciling it "
        "and removes this label and the shard label, then the sharder assigns the new shard.",
    )
    SHARD_RING = (
        "sharding.compute.datumapis.com/ring",
        "On a shard's membership Lease in the management cluster: the sharder Lease name (--leader-election-id) of "
        "the ring the shard belongs to.",
    )
    REFERENCED_DATA = (
        "compute.datumapis.com/referenced-data",
        '`"true"` on a companion: a copy, written by the federation, of a ConfigMap or Secret a project '
        "WorkloadDeployment references, in the cell namespace of its copies.",
    )
    CLUSTER_MANAGER = (
        "x-k8s.io/cluster-manager",
        "SIG Multicluster convention on a ClusterProfile: name of the cluster manager that owns it.",
    )


class Annotation(DocumentedStr):
    TRACEPARENT = (
        "compute.datumapis.com/traceparent",
        "On a downstream WorkloadDeployment copy and its Instances: the W3C traceparent of the project "
        "WorkloadDeployment generation it carries (derived from its uid and generation), set in the same write as "
        "the spec change; the cell controllers continue that change's trace from it.",
    )
    RESTARTED_AT = (
        "compute.datumapis.com/restartedAt",
        "RFC 3339 time on a template's annotations; changing it changes the template hash and rolls every Instance.",
    )
    FEDERATION_NAMESPACE = (
        "compute.datumapis.com/federation-namespace",
        "On a project WorkloadDeployment, written by the federator with its finalizer: the cell namespace its "
        "copies live in, `ns-<project namespace UID>` (so finalization needs nothing else).",
    )
    SUSPENDED = (
        "compute.datumapis.com/suspended",
        'On a project WorkloadDeployment (and so on its copies): `"true"` suspends it — in each cell its '
        "Instances stay, their Pods stop, and `status.suspended` is true on the copy, its Instances and the project "
        'WD; `"false"` or no annotation resumes it, in ordinal order. Any other value is refused by the cells '
        "(ConfigurationError).",
    )
    ORDINAL_START = (
        "compute.datumapis.com/ordinal-start",
        "First Instance ordinal of a downstream WorkloadDeployment copy when a city's replicas are split over "
        "several cells (default 0), like a StatefulSet's spec.ordinals.start.",
    )
    UPSTREAM_UID = (
        "meta.datumapis.com/upstream-uid",
        "On a downstream WorkloadDeployment copy: UID of the project WorkloadDeployment it was made from "
        "(a fresh WD of the same name is never mistaken for the old one).",
    )
    EXPECTED_REFERENCED_DATA = (
        "compute.datumapis.com/expected-referenced-data",
        "On a downstream WorkloadDeployment copy, written by the federator with the spec: a JSON array of the "
        'companions its Instances need, `"<Kind>/<name>"` sorted (Kind `ConfigMap` or `Secret`); absent when '
        "the template references none. A tenant's own value is never copied.",
    )
    REFERENCED_BY = (
        "compute.datumapis.com/referenced-by",
        'On a companion ConfigMap/Secret in a cell: JSON array (sorted) of `"<namespace>/<name>"` of the '
        "project WorkloadDeployments whose copies in that cell reference it. With `--sharding`, each shard lists "
        "its own WDs under `referenced-by.sharding.compute.datumapis.com/<shard>` instead, and puts a label of the "
        'same key (value `"true"`) on it, which its cell caches select (shards co-own the companion; '
        "docs/DESIGN.md §5).",
    )
    KUBECONFIG_SECRET = (
        "compute.datumapis.com/kubeconfig-secret",
        "On a ClusterProfile: name of the Secret (same namespace) holding the cluster's kubeconfig under data key "
        "`kubeconfig`; default `<profile-name>-kubeconfig`.",
    )


class Finalizer(DocumentedStr):
    FEDERATOR = (
        "compute.datumapis.com/federator",
        "On a project WorkloadDeployment: held until every downstream copy in the cells is gone.",
    )
    WORKLOAD_CONTROLLER = (
        "compute.datumapis.com/workload-controller",
        "On a Workload: held until the WorkloadDeployments created for its placements are gone.",
    )
    INSTANCE_CONTROLLER = (
        "compute.datumapis.com/instance-controller",
        "On an Instance: held until the runtime has released what realises it (its Pod).",
    )
    WORKLOAD_DEPLOYMENT_CONTROLLER = (
        "compute.datumapis.com/workload-deployment-controller",
        "On a cell WorkloadDeployment: held until the cell controller has deleted its Instances and seen them gone.",
    )


class SchedulingGate(DocumentedStr):
    NETWORK = "Network", "Removed once the Instance's network interfaces are programmed."
    QUOTA = "Quota", "Removed once QuotaGranted is True at the Instance's current generation."
    REFERENCED_DATA = (
        "ReferencedData",
        "Removed once ReferencedDataReady is True at the Instance's current generation: every companion its "
        "WorkloadDeployment copy expects is in the cell namespace.",
    )


class ClusterRole(DocumentedStr):
    CELL = "cell", "A site cluster that runs Instances; carries topology.datum.net/city-code."
    PROJECT = "project", "A tenant project control plane; carries meta.datumapis.com/upstream-cluster-name."


class InstanceManagementPolicy(DocumentedStr):
    ORDERED_READY = "OrderedReady", "Create, replace and delete Instances one at a time, waiting for readiness."


# The keys read or written on every event and reconcile, as plain strings made once, in one
# home: on Python 3.11 an enum member's lookup (`Label.X`) is a Python-level class
# attribute access, and these run per event. The same strings as the members.
CLUSTER_ROLE_LABEL: Final = str(Label.CLUSTER_ROLE)
SHARD_RING_LABEL: Final = str(Label.SHARD_RING)
CELL_ROLE: Final = str(ClusterRole.CELL)
PROJECT_ROLE: Final = str(ClusterRole.PROJECT)
CITY_LABEL: Final = str(Label.TOPOLOGY_CITY_CODE)
LOCATION_LABEL: Final = str(Label.TOPOLOGY_LOCATION)
SHARD_LABEL: Final = str(Label.SHARD)
UPSTREAM_NAMESPACE_LABEL: Final = str(Label.UPSTREAM_NAMESPACE)
UPSTREAM_CLUSTER_LABEL: Final = str(Label.UPSTREAM_CLUSTER_NAME)
UPSTREAM_UID_ANNOTATION: Final = str(Annotation.UPSTREAM_UID)
ORDINAL_START_ANNOTATION: Final = str(Annotation.ORDINAL_START)
FEDERATION_NAMESPACE_ANNOTATION: Final = str(Annotation.FEDERATION_NAMESPACE)
FEDERATOR_FINALIZER: Final = str(Finalizer.FEDERATOR)

# Namespace of cluster registrations (ClusterProfiles and kubeconfig Secrets) in the
# management cluster: where the overlays deploy the manager and `up` registers clusters.
REGISTRATION_NAMESPACE: Final = "federation-system"

# The manager's environment variables: every flag's starts so (`run`'s settings and the
# other subcommands' flags alike). Here, below both, so the CLI names them without loading
# the settings (pydantic), which an API server process never needs.
ENV_PREFIX: Final = "FEDERATION_"
