"""The compute API (`compute.datumapis.com/v1alpha`) and cluster registration
(`multicluster.x-k8s.io/v1alpha1` ClusterProfile): pydantic models as the single source of
truth, the well-known keys, condition helpers, the upstream-cluster-name encoding, and CRD
generation. See docs/api.md (generated from this package) for every field and key."""

# Names load on first use (PEP 562): the models are pydantic classes, ~4 MiB a process
# pays only if it asks for one; a controller that imports `federation.api.constants`
# (say) no longer builds every model through this package's `__init__`.
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import KubeModel, ObjectMeta, OwnerReference, TemplateMeta
    from .clusternames import (
        ProjectPath,
        decode_upstream_cluster_name,
        encode_upstream_cluster_name,
        parse_upstream_cluster_name,
    )
    from .clusterprofile import ClusterProfile, ClusterProfileSpec, ClusterProfileStatus, kubeconfig_secret_name
    from .conditions import (
        FALSE,
        TRUE,
        UNKNOWN,
        Condition,
        ConditionStatus,
        default_instance_conditions,
        find_condition,
        find_condition_json,
        is_condition_current,
        is_condition_true,
        remove_condition,
        remove_condition_json,
        rfc3339_now,
        set_condition,
        set_condition_json,
    )
    from .constants import (
        API_VERSION,
        CLUSTER_INVENTORY_API_VERSION,
        GROUP,
        KUBECONFIG_SECRET_KEY,
        VERSION,
        Annotation,
        ClusterRole,
        Finalizer,
        Kind,
        Label,
        Plural,
        SchedulingGate,
    )
    from .instance import Instance, InstanceSpec, InstanceStatus, InstanceTemplateSpec
    from .naming import (
        downstream_namespace_name,
        instance_name,
        workload_deployment_name,
        workload_deployment_selector,
    )
    from .reasons import (
        InstanceAvailableReason,
        InstanceCondition,
        InstanceProgrammedReason,
        InstanceReadyReason,
        QuotaGrantedReason,
        ReplicasReadyReason,
        WorkloadDeploymentAvailableReason,
        WorkloadDeploymentCondition,
        most_blocking_reason,
        ready_reason_priority,
    )
    from .workload import Workload, WorkloadSpec, WorkloadStatus
    from .workloaddeployment import (
        HorizontalScaleSettings,
        WorkloadDeployment,
        WorkloadDeploymentSpec,
        WorkloadDeploymentStatus,
    )

_SUBMODULE = {
    "KubeModel": "base",
    "ObjectMeta": "base",
    "OwnerReference": "base",
    "TemplateMeta": "base",
    "ProjectPath": "clusternames",
    "decode_upstream_cluster_name": "clusternames",
    "encode_upstream_cluster_name": "clusternames",
    "parse_upstream_cluster_name": "clusternames",
    "ClusterProfile": "clusterprofile",
    "ClusterProfileSpec": "clusterprofile",
    "ClusterProfileStatus": "clusterprofile",
    "kubeconfig_secret_name": "clusterprofile",
    "FALSE": "conditions",
    "TRUE": "conditions",
    "UNKNOWN": "conditions",
    "Condition": "conditions",
    "ConditionStatus": "conditions",
    "default_instance_conditions": "conditions",
    "find_condition": "conditions",
    "find_condition_json": "conditions",
    "is_condition_current": "conditions",
    "is_condition_true": "conditions",
    "remove_condition": "conditions",
    "remove_condition_json": "conditions",
    "rfc3339_now": "conditions",
    "set_condition": "conditions",
    "set_condition_json": "conditions",
    "API_VERSION": "constants",
    "CLUSTER_INVENTORY_API_VERSION": "constants",
    "GROUP": "constants",
    "KUBECONFIG_SECRET_KEY": "constants",
    "VERSION": "constants",
    "Annotation": "constants",
    "ClusterRole": "constants",
    "Finalizer": "constants",
    "Kind": "constants",
    "Label": "constants",
    "Plural": "constants",
    "SchedulingGate": "constants",
    "Instance": "instance",
    "InstanceSpec": "instance",
    "InstanceStatus": "instance",
    "InstanceTemplateSpec": "instance",
    "downstream_namespace_name": "naming",
    "instance_name": "naming",
    "workload_deployment_name": "naming",
    "workload_deployment_selector": "naming",
    "InstanceAvailableReason": "reasons",
    "InstanceCondition": "reasons",
    "InstanceProgrammedReason": "reasons",
    "InstanceReadyReason": "reasons",
    "QuotaGrantedReason": "reasons",
    "ReplicasReadyReason": "reasons",
    "WorkloadDeploymentAvailableReason": "reasons",
    "WorkloadDeploymentCondition": "reasons",
    "most_blocking_reason": "reasons",
    "ready_reason_priority": "reasons",
    "Workload": "workload",
    "WorkloadSpec": "workload",
    "WorkloadStatus": "workload",
    "HorizontalScaleSettings": "workloaddeployment",
    "WorkloadDeployment": "workloaddeployment",
    "WorkloadDeploymentSpec": "workloaddeployment",
    "WorkloadDeploymentStatus": "workloaddeployment",
}


def __getattr__(name: str) -> Any:
    module = _SUBMODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULE])


__all__ = [
    "API_VERSION",
    "CLUSTER_INVENTORY_API_VERSION",
    "FALSE",
    "GROUP",
    "KUBECONFIG_SECRET_KEY",
    "TRUE",
    "UNKNOWN",
    "VERSION",
    "Annotation",
    "ClusterProfile",
    "ClusterProfileSpec",
    "ClusterProfileStatus",
    "ClusterRole",
    "Condition",
    "ConditionStatus",
    "Finalizer",
    "HorizontalScaleSettings",
    "Instance",
    "InstanceAvailableReason",
    "InstanceCondition",
    "InstanceProgrammedReason",
    "InstanceReadyReason",
    "InstanceSpec",
    "InstanceStatus",
    "InstanceTemplateSpec",
    "Kind",
    "KubeModel",
    "Label",
    "ObjectMeta",
    "OwnerReference",
    "Plural",
    "ProjectPath",
    "QuotaGrantedReason",
    "ReplicasReadyReason",
    "SchedulingGate",
    "TemplateMeta",
    "Workload",
    "WorkloadDeployment",
    "WorkloadDeploymentAvailableReason",
    "WorkloadDeploymentCondition",
    "WorkloadDeploymentSpec",
    "WorkloadDeploymentStatus",
    "WorkloadSpec",
    "WorkloadStatus",
    "decode_upstream_cluster_name",
    "default_instance_conditions",
    "downstream_namespace_name",
    "encode_upstream_cluster_name",
    "find_condition",
    "find_condition_json",
    "instance_name",
    "is_condition_current",
    "is_condition_true",
    "kubeconfig_secret_name",
    "most_blocking_reason",
    "parse_upstream_cluster_name",
    "ready_reason_priority",
    "remove_condition",
    "remove_condition_json",
    "rfc3339_now",
    "set_condition",
    "set_condition_json",
    "workload_deployment_name",
    "workload_deployment_selector",
]
