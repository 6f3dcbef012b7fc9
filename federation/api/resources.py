"""REST addresses (runtime `Resource`s) of the kinds the controllers read and write, so no
controller spells a group, version or plural itself."""

from __future__ import annotations

from mcruntime.resources import CLUSTER_PROFILES, EVENTS, NAMESPACES, PODS, SECRETS, Resource

from .constants import GROUP, NETWORKING_GROUP, QUOTA_GROUP, VERSION, Kind, Plural

WORKLOADS = Resource(GROUP, VERSION, Plural.WORKLOADS, Kind.WORKLOAD)
WORKLOAD_DEPLOYMENTS = Resource(GROUP, VERSION, Plural.WORKLOAD_DEPLOYMENTS, Kind.WORKLOAD_DEPLOYMENT)
INSTANCES = Resource(GROUP, VERSION, Plural.INSTANCES, Kind.INSTANCE)
RESOURCE_CLAIMS = Resource(QUOTA_GROUP, VERSION, Plural.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM)
RESOURCE_BUDGETS = Resource(QUOTA_GROUP, VERSION, Plural.RESOURCE_BUDGETS, Kind.RESOURCE_BUDGET)
LOCATIONS = Resource(NETWORKING_GROUP, VERSION, Plural.LOCATIONS, Kind.LOCATION, namespaced=False)
HORIZONTAL_POD_AUTOSCALERS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")

__all__ = [
    "CLUSTER_PROFILES",
    "EVENTS",
    "HORIZONTAL_POD_AUTOSCALERS",
    "INSTANCES",
    "LOCATIONS",
    "NAMESPACES",
    "PODS",
    "RESOURCE_BUDGETS",
    "RESOURCE_CLAIMS",
    "SECRETS",
    "WORKLOADS",
    "WORKLOAD_DEPLOYMENTS",
]
