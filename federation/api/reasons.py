"""Condition types and reasons of the compute API (DESIGN.md §2) and the priority that
decides which blocking reason an Instance's Ready condition reports."""

from __future__ import annotations

from .constants import DocumentedStr


class InstanceCondition(DocumentedStr):
    PROGRAMMED = "Programmed", "The runtime has been given everything needed to realise the Instance."
    AVAILABLE = "Available", "The Instance is serving (replaced the older `Running`)."
    READY = "Ready", "Summary: True when Programmed and Available; otherwise the most specific blocking reason."
    QUOTA_GRANTED = "QuotaGranted", "Quota has been allocated for the Instance."
    REFERENCED_DATA_READY = (
        "ReferencedDataReady",
        "Every ConfigMap and Secret the Instance references is in its namespace (on Instances and "
        "WorkloadDeployments).",
    )


class InstanceReadyReason(DocumentedStr):
    SCHEDULING_GATES_PRESENT = "SchedulingGatesPresent", "Scheduling gates (Network, Quota) are still present."
    AVAILABLE = "Available", "Ready=True: the Instance is available."
    IMAGE_UNAVAILABLE = "ImageUnavailable", "The image could not be pulled (bad name, credentials, registry)."
    INSTANCE_CRASHING = "InstanceCrashing", "The process starts but keeps exiting (CrashLoopBackOff)."
    CONFIGURATION_ERROR = "ConfigurationError", "The runtime rejected the configuration before the process started."
    PROVISIONING = "Provisioning", "The runtime is still setting up (image unpacking, container creation)."
    PENDING_QUOTA = "PendingQuota", "Waiting for a quota grant."
    NETWORK_FAILED_TO_CREATE = "NetworkFailedToCreate", "The Instance's network could not be created."
    PENDING_PROGRAMMING = "PendingProgramming", "Not yet programmed by the runtime."
    PENDING = "Pending", "Default before any controller has looked at the Instance."
    SUSPENDED = "Suspended", "Ready=False: its WorkloadDeployment is suspended (`status.suspended`); no Pod runs."


class InstanceProgrammedReason(DocumentedStr):
    PENDING = "Pending", "Default before any controller has looked at the Instance."
    PENDING_PROGRAMMING = "PendingProgramming", "The runtime has not programmed the Instance yet."
    PROGRAMMING_IN_PROGRESS = "ProgrammingInProgress", "The runtime is programming the Instance."
    PROGRAMMED = "Programmed", "Programmed=True."
    PENDING_QUOTA = "PendingQuota", "Programming waits for a quota grant."
    NETWORK_FAILED_TO_CREATE = "NetworkFailedToCreate", "Programming failed: the network could not be created."


class InstanceAvailableReason(DocumentedStr):
    PENDING = "Pending", "Default before any controller has looked at the Instance."
    STARTING = "Starting", "The Instance is starting."
    AVAILABLE = "Available", "Available=True: serving."
    STOPPING = "Stopping", "The Instance is stopping."
    STOPPED = "Stopped", "The Instance is stopped."
    IMAGE_UNAVAILABLE = "ImageUnavailable", "Available=False because the image cannot be pulled."
    INSTANCE_CRASHING = "InstanceCrashing", "Available=False because the process keeps crashing."
    CONFIGURATION_ERROR = "ConfigurationError", "Available=False because the runtime rejected the configuration."
    PROVISIONING = "Provisioning", "Available=False while the runtime sets the Instance up."
    SUSPENDED = "Suspended", "Available=False: the Instance is suspended and its Pod is stopped."


class QuotaGrantedReason(DocumentedStr):
    PENDING_EVALUATION = "PendingEvaluation", "Default: quota has not been evaluated yet."
    QUOTA_AVAILABLE = "QuotaAvailable", "QuotaGranted=True."
    QUOTA_EXCEEDED = "QuotaExceeded", "The project's quota does not allow this Instance."
    VALIDATION_FAILED = "ValidationFailed", "The quota request could not be validated."


class ResourceClaimCondition(DocumentedStr):
    GRANTED = (
        "Granted",
        "The claim's amounts are allocated from the namespace's ResourceBudgets; reasons as for QuotaGranted.",
    )


class WorkloadDeploymentCondition(DocumentedStr):
    AVAILABLE = "Available", "At least one Instance is available (or why not)."
    REPLICAS_READY = "ReplicasReady", "All desired replicas are ready (or why not)."
    REFERENCED_DATA_READY = (
        "ReferencedDataReady",
        "Every ConfigMap and Secret the template references is present where its Instances run (or which is not).",
    )


class ReferencedDataReason(DocumentedStr):
    READY = "Ready", "ReferencedDataReady=True: every referenced companion is present."
    SOURCE_NOT_FOUND = (
        "SourceNotFound",
        "A referenced ConfigMap or Secret does not exist in the project namespace (a Warning Event on the WD).",
    )
    SOURCE_TOO_LARGE = (
        "SourceTooLarge",
        "A referenced object holds more than 256 KiB of data, more than a companion may (a Warning Event on the WD).",
    )
    RESOLVING = "Resolving", "The copy's expected-referenced-data annotation cannot be read (the message says why)."
    AWAITING_PROPAGATION = (
        "AwaitingPropagation",
        "Some companions have not reached the cell yet; the message names them.",
    )


class WorkloadDeploymentAvailableReason(DocumentedStr):
    STABLE_INSTANCE_FOUND = "StableInstanceFound", "Available=True: at least one Instance is ready."
    SCALED_TO_ZERO = "ScaledToZero", "Available=True: no Instances are desired (replicas is 0), so none is missing."
    NO_MATCHING_LOCATION = "NoMatchingLocation", "No registered cell serves spec.cityCode."
    INSTANCES_PROVISIONING = "InstancesProvisioning", "Instances exist but none is ready yet."
    QUOTA_NOT_GRANTED = "QuotaNotGranted", "Instances are held back because quota was not granted."
    SUSPENDED = (
        "Suspended",
        'False: the deployment is suspended (`compute.datumapis.com/suspended: "true"`); its Instances stay, '
        "stopped. The Instances' own reason (upstream has no WD-level reason for it).",
    )
    CELL_UNREACHABLE = (
        "CellUnreachable",
        "Unknown: a target cell has been unreachable longer than the freshness threshold; the message names it and "
        "when it was last observed, and its numbers are left out instead of repeated.",
    )


class ReplicasReadyReason(DocumentedStr):
    REPLICAS_AVAILABLE = "ReplicasAvailable", "ReplicasReady=True: every desired replica is ready."
    QUOTA_EXCEEDED = "QuotaExceeded", "Some replicas cannot run because quota is exceeded."
    AWAITING_PROPAGATION = "AwaitingPropagation", "The spec has not yet reached (or been observed by) every cell."
    SUSPENDED = "Suspended", "The deployment is suspended: its Instances stay, stopped."


class WorkloadCondition(DocumentedStr):
    AVAILABLE = "Available", "At least one of the Workload's deployments is available."


class ClusterProfileCondition(DocumentedStr):
    CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy", "SIG Multicluster: the cluster's control plane is healthy."


# How specific (and how blocking) a Ready reason is: when several apply, the highest wins.
READY_REASON_PRIORITY: dict[str, int] = {
    InstanceReadyReason.NETWORK_FAILED_TO_CREATE: 7,
    InstanceReadyReason.IMAGE_UNAVAILABLE: 5,
    InstanceReadyReason.INSTANCE_CRASHING: 5,
    InstanceReadyReason.CONFIGURATION_ERROR: 5,
    InstanceReadyReason.PENDING_QUOTA: 3,
    InstanceReadyReason.PROVISIONING: 1,
}


def ready_reason_priority(reason: str) -> int:
    """Priority of a blocking Ready reason (0 for reasons not in the table)."""
    return READY_REASON_PRIORITY.get(reason, 0)


def most_blocking_reason(reasons: list[str]) -> str | None:
    """The reason Ready should report among several candidates: highest priority, and
    among equals the first given (so callers control ties by their order)."""
    best: str | None = None
    for reason in reasons:
        if best is None or ready_reason_priority(reason) > ready_reason_priority(best):
            best = reason
    return best
