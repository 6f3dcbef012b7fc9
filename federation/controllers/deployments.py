"""What a Workload asks for (pure): one WorkloadDeployment per placement target (a
Location, or a city code) whose city has a registered cell — named
`<workload>-<placement>-<lowercase location>` (placing by `spec.locationRef`) or
`<workload>-<placement>-<lowercase city>` (by `spec.cityCode`) — and the Workload's status
summed over the deployments that exist.

A city without a registered cell gets no deployment (DESIGN §2); the placement's
status says so, so the user sees why fewer deployments exist than cities were asked for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, find_condition_json, set_condition_json
from federation.api.constants import API_VERSION, Kind, Label
from federation.api.naming import workload_deployment_name
from federation.api.reasons import WorkloadCondition, WorkloadDeploymentAvailableReason
from federation.fleet.locations import ByCity, ByLocation, KnownLocation, placement_targets
from federation.fleet.placement import city_key
from mcruntime.fields import get_list, get_mapping, get_str

COUNTERS = ("replicas", "currentReplicas", "desiredReplicas", "readyReplicas")


def placements(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = workload.get("spec") or {}
    found = spec.get("placements") or []
    return [p for p in found if isinstance(p, Mapping)]


def desired_deployments(
    workload: Mapping[str, Any], cities_with_cells: Iterable[str], locations: Iterable[KnownLocation] = ()
) -> dict[str, dict[str, Any]]:
    """The WorkloadDeployments (apply intents, by name) a Workload wants, given the city
    codes that have at least one registered cell and the known Locations
    (`locations.placement_targets`): a placement's `locations` / `locationSelector` give
    WDs with `spec.locationRef`, named `<workload>-<placement>-<lowercase location>`; its
    `cityCodes` give WDs with `spec.cityCode`, named by the lowercase city. A target whose
    city no registered cell serves gets none. `spec.replicas` is deliberately left out: it
    belongs to the scale subresource (`kubectl scale`, an autoscaler)."""
    served = {city_key(c) for c in cities_with_cells}
    known = {loc.name: loc for loc in locations}
    name, namespace, uid = (
        get_str(workload, "metadata.name", required=False),
        get_str(workload, "metadata.namespace", required=False),
        get_str(workload, "metadata.uid", required=False),
    )
    if not (name and namespace and uid):
        raise ValueError("a Workload needs metadata.name, metadata.namespace and metadata.uid")
    template = get_mapping(workload, "spec.template")
    wanted: dict[str, dict[str, Any]] = {}
    for i, placement in enumerate(placements(workload)):
        placement_name = str(placement.get("name") or "")
        for target in placement_targets(placement, known.values(), where=f"spec.placements[{i}]").targets:
            city = target.city_code if isinstance(target, ByCity) else known[target.name].city_code
            if not city or city_key(city) not in served:
                continue
            labels = {
                str(Label.WORKLOAD_UID): uid,
                str(Label.WORKLOAD_NAME): name,
                str(Label.PLACEMENT_NAME): placement_name,
                str(Label.CITY_CODE): city,
            }
            spec: dict[str, Any] = {"workloadRef": {"name": name, "uid": uid}, "placementName": placement_name}
            if isinstance(target, ByLocation):
                wd_name = workload_deployment_name(name, placement_name, target.name)
                labels[str(Label.TOPOLOGY_LOCATION)] = target.name
                spec["locationRef"] = {"name": target.name}
            else:
                wd_name = workload_deployment_name(name, placement_name, city)
                spec["cityCode"] = city
            spec.update(template=template, scaleSettings=placement.get("scaleSettings") or {})
            wanted[wd_name] = {
                "apiVersion": API_VERSION,
                "kind": str(Kind.WORKLOAD_DEPLOYMENT),
                "metadata": {"name": wd_name, "namespace": namespace, "labels": labels},
                "spec": spec,
            }
    return wanted


def unserved_targets(
    workload: Mapping[str, Any], cities_with_cells: Iterable[str], locations: Iterable[KnownLocation] = ()
) -> dict[str, list[str]]:
    """Per placement, what no registered cell serves: city codes, Locations whose city has
    no cell (or that name none, or do not exist: the error's message names the field)."""
    served = {city_key(c) for c in cities_with_cells}
    known = {loc.name: loc for loc in locations}
    out: dict[str, list[str]] = {}
    for i, placement in enumerate(placements(workload)):
        found = placement_targets(placement, known.values(), where=f"spec.placements[{i}]")
        missing = [error.message for error in found.errors]
        for target in found.targets:
            if isinstance(target, ByCity):
                if city_key(target.city_code) not in served:
                    missing.append(target.city_code)
                continue
            city = known[target.name].city_code
            if not city:
                missing.append(f"Location {target.name} (it names no city)")
            elif city_key(city) not in served:
                missing.append(f"Location {target.name} ({city})")
        if missing:
            out[str(placement.get("name") or "")] = missing
    return out


def _is_available(wd: Mapping[str, Any]) -> bool:
    cond = find_condition_json(get_list(wd, "status.conditions"), "Available")
    return cond is not None and cond.get("status") == TRUE


def workload_status(
    workload: Mapping[str, Any],
    deployments: Sequence[Mapping[str, Any]],
    cities_with_cells: Iterable[str],
    *,
    now: str,
    locations: Iterable[KnownLocation] = (),
) -> dict[str, Any]:
    """The Workload's status: counters summed over its deployments, per placement and in
    total, and `Available` (True when any deployment is available). Conditions keep their
    lastTransitionTime when unchanged, so equal inputs give an equal status (no write)."""
    previous = workload.get("status") or {}
    totals = dict.fromkeys(COUNTERS, 0)
    per_placement: dict[str, dict[str, Any]] = {}
    previous_placements = {p.get("name"): p for p in previous.get("placements") or [] if isinstance(p, Mapping)}
    missing = unserved_targets(workload, cities_with_cells, locations)
    for placement in placements(workload):
        pname = str(placement.get("name") or "")
        mine = [d for d in deployments if get_mapping(d, "spec").get("placementName") == pname]
        counts = {k: sum(int(get_mapping(d, "status").get(k) or 0) for d in mine) for k in COUNTERS}
        for k in COUNTERS:
            totals[k] += counts[k]
        conditions = [dict(c) for c in (previous_placements.get(pname) or {}).get("conditions") or []]
        if pname in missing:
            # as for a WD whose city has no cell (issue 18 item 5): the placement is not
            # what was asked for, whatever its other cities serve
            served = (
                f"; {sum(1 for d in mine if _is_available(d))} of {len(mine)} deployments available" if mine else ""
            )
            set_condition_json(conditions, WorkloadCondition.AVAILABLE, FALSE,
                               WorkloadDeploymentAvailableReason.NO_MATCHING_LOCATION,
                               f"no registered cell serves {', '.join(missing[pname])}{served}", now=now)  # fmt: skip
        elif any(_is_available(d) for d in mine):
            set_condition_json(conditions, WorkloadCondition.AVAILABLE, TRUE,
                               WorkloadDeploymentAvailableReason.STABLE_INSTANCE_FOUND,
                               f"{sum(1 for d in mine if _is_available(d))} of {len(mine)} deployments available",
                               now=now)  # fmt: skip
        else:
            set_condition_json(conditions, WorkloadCondition.AVAILABLE, FALSE,
                               WorkloadDeploymentAvailableReason.INSTANCES_PROVISIONING,
                               f"0 of {len(mine)} deployments available", now=now)  # fmt: skip
        per_placement[pname] = {"name": pname, "conditions": conditions, **counts}
    conditions = [dict(c) for c in previous.get("conditions") or []]

    def available_of(p: Mapping[str, Any]) -> Mapping[str, Any]:
        found = find_condition_json(p["conditions"], WorkloadCondition.AVAILABLE)
        assert found is not None  # set for every placement above
        return found

    available = [p for p in per_placement.values() if available_of(p)["status"] == TRUE]
    if available:
        set_condition_json(conditions, WorkloadCondition.AVAILABLE, TRUE,
                           WorkloadDeploymentAvailableReason.STABLE_INSTANCE_FOUND,
                           f"{len(available)} of {len(per_placement)} placements available", now=now)  # fmt: skip
    else:
        first = next(iter(per_placement.values()), None)
        reason = available_of(first)["reason"] if first else WorkloadDeploymentAvailableReason.NO_MATCHING_LOCATION
        set_condition_json(conditions, WorkloadCondition.AVAILABLE, FALSE, reason,
                           f"0 of {len(per_placement)} placements available", now=now)  # fmt: skip
    return {
        "conditions": conditions,
        "deployments": len(deployments),
        **totals,
        "placements": list(per_placement.values()),
    }


def newly_unplaced(previous: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, str]:
    """Placement → message, for the placements whose Available condition becomes
    NoMatchingLocation in `status` (the Workload controller's Warning Event, sent with
    that status write only: a Workload left as it is costs no request)."""

    def unplaced(s: Mapping[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for p in s.get("placements") or []:
            if not isinstance(p, Mapping):
                continue
            cond = find_condition_json(p.get("conditions") or [], WorkloadCondition.AVAILABLE)
            if cond is not None and cond.get("reason") == WorkloadDeploymentAvailableReason.NO_MATCHING_LOCATION:
                out[str(p.get("name") or "")] = str(cond.get("message") or "")
        return out

    before = unplaced(previous)
    return {name: message for name, message in unplaced(status).items() if name not in before}
