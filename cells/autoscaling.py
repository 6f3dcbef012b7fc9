"""The HorizontalPodAutoscaler a cell WorkloadDeployment owns when it autoscales.

Contract (pure; wire dicts in and out):

`wants_autoscaler(wd)`: `spec.scaleSettings.maxReplicas` is set AND `spec.scaleSettings.metrics`
is not empty (DESIGN §3: then the HPA, not the spec, owns the replica count).

`autoscaler_for(wd)`: the autoscaling/v2 HPA named like the WD, in its namespace:
- labelled like its WD (`autoscaler_labels`): `services.miloapis.com/service-name:
  compute.datumapis.com`, `compute.datumapis.com/workload-deployment-name`,
  `workload-deployment-uid`, `workload-name`, `placement-name`, `city-code`, and
  `topology.datum.net/location` when placed by location;
- one owner reference, the controller: the WD (same reference its Instances carry, so the
  garbage collector removes the HPA with the WD);
- `scaleTargetRef` = the WD's scale subresource (apiVersion `compute.datumapis.com/v1alpha`,
  kind `WorkloadDeployment`, its name);
- `minReplicas` = scaleSettings.minReplicas, `maxReplicas` = scaleSettings.maxReplicas;
- `metrics`: each `resource {name, target}` becomes `{type: Resource, resource: {name,
  target: {type: Utilization, averageUtilization} | {type: AverageValue, averageValue}}}`.
Errors name the WD field: minReplicas 0 (an HPA cannot scale to zero), maxReplicas below
minReplicas, a metric without `resource`, a target with no or several values, or a `value`
target (resource metrics are averaged over the Instances: Utilization or AverageValue only).

`is_controlled_by_wd(hpa, wd)`: the HPA's controller reference names the WD's uid. An HPA
with the WD's name that the WD does not control is someone else's: the controller never
adopts, updates or deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.api.constants import API_VERSION, GROUP, Kind, Label
from mcruntime.fields import get_int, get_list, get_mapping, get_str

from .instances import owner_reference, wd_city

HPA_API_VERSION = "autoscaling/v2"
HPA_KIND = "HorizontalPodAutoscaler"

# WD metric target field -> HPA target type
_TARGETS = {"averageUtilization": "Utilization", "averageValue": "AverageValue"}


def wants_autoscaler(wd: Mapping[str, Any]) -> bool:
    """Whether the WD asks for autoscaling (maxReplicas and metrics set)."""
    return get_int(wd, "spec.scaleSettings.maxReplicas") is not None and bool(
        get_list(wd, "spec.scaleSettings.metrics")
    )


def _metric(metric: Any, field: str) -> dict[str, Any]:
    if not isinstance(metric, Mapping):
        raise ValueError(f"{field}: expected an object, got {type(metric).__name__}")
    resource = get_mapping(metric, "resource", base=field)
    if not resource:
        raise ValueError(f"{field}.resource: required (resource metrics are the only kind autoscaled here)")
    name = get_str(resource, "name", base=f"{field}.resource")
    target = get_mapping(resource, "target", base=f"{field}.resource", required=True)
    target_field = f"{field}.resource.target"
    if target.get("value") is not None:
        raise ValueError(
            f"{target_field}.value: a resource metric is averaged over the Instances; "
            "use averageUtilization or averageValue"
        )
    given = [key for key in _TARGETS if target.get(key) is not None]
    if len(given) != 1:
        raise ValueError(
            f"{target_field}: set exactly one of averageUtilization or averageValue, got {given or 'none'}"
        )
    key = given[0]
    value = target[key]
    if key == "averageUtilization" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{target_field}.averageUtilization: expected a percentage >= 1, got {value!r}")
    return {"type": "Resource", "resource": {"name": name, "target": {"type": _TARGETS[key], key: value}}}


def autoscaler_labels(wd: Mapping[str, Any]) -> dict[str, str]:
    """The HPA's labels, as its WD's (upstream's set): the service, the deployment's name and
    UID, its workload and placement, its city (`wd_city`) and, placed by location, the Location."""
    labels = {
        Label.SERVICE_NAME.value: GROUP,
        Label.WORKLOAD_DEPLOYMENT_NAME.value: get_str(wd, "metadata.name"),
        Label.WORKLOAD_DEPLOYMENT_UID.value: get_str(wd, "metadata.uid"),
        Label.WORKLOAD_NAME.value: get_str(wd, "spec.workloadRef.name"),
        Label.PLACEMENT_NAME.value: get_str(wd, "spec.placementName"),
        Label.CITY_CODE.value: wd_city(wd),
    }
    location = get_str(wd, "spec.locationRef.name", required=False)
    if location:
        labels[Label.TOPOLOGY_LOCATION.value] = location
    return labels


def autoscaler_for(wd: Mapping[str, Any]) -> dict[str, Any]:
    """The HPA the WD owns (see the module docstring); call only when `wants_autoscaler`."""
    name = get_str(wd, "metadata.name")
    minimum = get_int(wd, "spec.scaleSettings.minReplicas")
    maximum = get_int(wd, "spec.scaleSettings.maxReplicas")
    if minimum is None or minimum < 1:
        raise ValueError(
            f"spec.scaleSettings.minReplicas: {minimum!r} cannot be autoscaled "
            "(a HorizontalPodAutoscaler needs minReplicas >= 1)"
        )
    if maximum is None or maximum < minimum:
        raise ValueError(f"spec.scaleSettings.maxReplicas: {maximum!r} is below minReplicas {minimum}")
    metrics = [
        _metric(m, f"spec.scaleSettings.metrics[{i}]") for i, m in enumerate(get_list(wd, "spec.scaleSettings.metrics"))
    ]
    return {
        "apiVersion": HPA_API_VERSION,
        "kind": HPA_KIND,
        "metadata": {
            "name": name,
            "namespace": get_str(wd, "metadata.namespace"),
            "labels": autoscaler_labels(wd),
            "ownerReferences": [owner_reference(wd)],
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": API_VERSION, "kind": Kind.WORKLOAD_DEPLOYMENT.value, "name": name},
            "minReplicas": minimum,
            "maxReplicas": maximum,
            "metrics": metrics,
        },
    }


def is_controlled_by_wd(hpa: Mapping[str, Any], wd: Mapping[str, Any]) -> bool:
    """Whether the WD (by uid) is the HPA's controller."""
    uid = get_str(wd, "metadata.uid")
    for ref in get_list(hpa, "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref.get("uid") == uid
    return False
