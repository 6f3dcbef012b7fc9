"""The Instances a cell WorkloadDeployment wants, and reading existing ones back.

Contract (pure; objects are the wire dicts the caches hand out):

`ordinal_range(wd)`: ordinals S..S+N-1 where S is the annotation
`compute.datumapis.com/ordinal-start` (default 0; digits only, else a `ValueError` naming
the annotation) and N is `spec.replicas`, or `spec.scaleSettings.minReplicas` when unset.

`instance_for(wd, namespace_labels, ordinal, template_hash, *, quota_gate, network_controller)`
builds the desired Instance `<wd>-<ordinal>` in the WD's namespace:
- one owner reference, the controller: apiVersion `compute.datumapis.com/v1alpha`, kind
  `WorkloadDeployment` (the Kind, never a controller name: a wrong Kind is what breaks
  cascade deletion), the WD's name and live uid, `controller` and `blockOwnerDeletion` true;
- labels: the template's labels, overlaid with ours (ours win): workload-uid,
  workload-deployment-uid, workload-deployment-name, instance-index, city-code,
  workload-name, placement-name, plus `meta.datumapis.com/upstream-cluster-name` and
  `meta.datumapis.com/upstream-namespace` copied (each if present) from the labels of the
  namespace the WD lives in. A cell used directly, without federation, has neither, and the
  Instance then carries neither;
- annotations and finalizers: the template's (template name/namespace are ignored);
- spec: the template's spec (runtime, networkInterfaces, volumes, location ...) with
  `spec.controller` replaced by ours: `templateHash` and `schedulingGates`, in the order
  Network, Quota, ReferencedData. `Quota` when `quota_gate` (the QuotaGate feature is on).
  `ReferencedData` when the WD (a federated copy) expects companions: a non-empty
  `compute.datumapis.com/expected-referenced-data` list; the Instance controller removes it
  once they are all in the namespace (a malformed value gates too). `Network` only
  when the template has network interfaces AND `network_controller` says something will
  remove the gate; the default is False because this manager ships no network controller,
  and a gate nobody removes would keep every Instance unready forever.
Every label value is checked against the Kubernetes label value rules, naming the WD field
it came from.

`wd_suspended(wd)`: whether the annotation `compute.datumapis.com/suspended` suspends the
WD: `"true"` yes; `"false"` or absent no (the values upstream writes); anything else a
`ValueError` naming the annotation (reported as ConfigurationError, nothing acted on).

`observe(instance, wd_name, template_spec)` reads an existing Instance back as
`stateful.Observed`; its ordinal comes from its name `<wd>-<ordinal>` (names are
authoritative; labels can be edited). An Instance whose spec no longer says what the
template says (edited by hand) is read as drifted whatever hash it carries, so it is
deleted and recreated like any drift — never patched in place.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from federation.api.constants import API_VERSION, Annotation, Kind, Label, SchedulingGate
from federation.api.naming import instance_name
from federation.fleet.placement import same_city
from federation.fleet.references import EXPECTED_ANNOTATION, parse_expected
from mcruntime.controllerutil import is_subset
from mcruntime.fields import get_int, get_list, get_mapping, get_str, get_str_map, is_deleting

from .readiness import is_ready, is_suspended
from .stateful import Observed

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_MAX_LABEL_VALUE = 63
_ORDINAL = re.compile(r"^[0-9]+$")
# Ordinals are Kubernetes int32 replica counts away from each other; a start beyond this
# is a typo, and would make names no one can read.
MAX_ORDINAL_START = 2**31 - 1

UPSTREAM_LABELS = (Label.UPSTREAM_CLUSTER_NAME.value, Label.UPSTREAM_NAMESPACE.value)
# the management shard that owns the copy's project WD (`run --sharding`, DESIGN.md §5): on
# its Instances too, so each shard caches and projects only the Instances of its own WDs
SHARD_LABEL = Label.SHARD.value


def desired_replicas(wd: Mapping[str, Any]) -> int:
    """`spec.replicas`, or `spec.scaleSettings.minReplicas` when unset."""
    replicas = get_int(wd, "spec.replicas")
    if replicas is not None:
        return replicas
    minimum = get_int(wd, "spec.scaleSettings.minReplicas")
    if minimum is None:
        raise ValueError("spec.scaleSettings.minReplicas: required when spec.replicas is unset")
    return minimum


def ordinal_start(wd: Mapping[str, Any]) -> int:
    """The annotation `compute.datumapis.com/ordinal-start` (default 0)."""
    key = Annotation.ORDINAL_START.value
    annotations = get_str_map(wd, "metadata.annotations")
    if key not in annotations:
        return 0
    raw = annotations[key]
    if not _ORDINAL.match(raw) or int(raw) > MAX_ORDINAL_START:
        raise ValueError(
            f"metadata.annotations[{key}]: {raw!r} is not a first ordinal (a whole number 0..{MAX_ORDINAL_START})"
        )
    return int(raw)


def wd_suspended(wd: Mapping[str, Any]) -> bool:
    """The annotation `compute.datumapis.com/suspended` ("true" suspends; "false" or none resumes)."""
    key = Annotation.SUSPENDED.value
    raw = get_str_map(wd, "metadata.annotations").get(key)
    if raw is None or raw == "false":
        return False
    if raw == "true":
        return True
    raise ValueError(f'metadata.annotations[{key}]: {raw!r} is neither "true" (suspend) nor "false" (resume)')


def ordinal_range(wd: Mapping[str, Any]) -> range:
    """Ordinals of the Instances the WD wants."""
    start = ordinal_start(wd)
    return range(start, start + desired_replicas(wd))


def _label_value(value: str, field: str) -> str:
    if len(value) > _MAX_LABEL_VALUE or not _LABEL_VALUE.match(value):
        raise ValueError(
            f"{field}: {value!r} cannot be a label value (at most 63 characters: letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit)"
        )
    return value


def instance_labels(wd: Mapping[str, Any], namespace_labels: Mapping[str, str], ordinal: int) -> dict[str, str]:
    """The labels this controller stamps on Instance `ordinal` of `wd` (without the template's)."""
    ours = {
        Label.WORKLOAD_UID.value: ("spec.workloadRef.uid", get_str(wd, "spec.workloadRef.uid")),
        Label.WORKLOAD_DEPLOYMENT_UID.value: ("metadata.uid", get_str(wd, "metadata.uid")),
        Label.WORKLOAD_DEPLOYMENT_NAME.value: ("metadata.name", get_str(wd, "metadata.name")),
        Label.INSTANCE_INDEX.value: ("ordinal", str(ordinal)),
        Label.CITY_CODE.value: ("spec.cityCode", wd_city(wd)),
        Label.WORKLOAD_NAME.value: ("spec.workloadRef.name", get_str(wd, "spec.workloadRef.name")),
        Label.PLACEMENT_NAME.value: ("spec.placementName", get_str(wd, "spec.placementName")),
    }
    labels = {key: _label_value(value, field) for key, (field, value) in ours.items()}
    for key in UPSTREAM_LABELS:
        value = namespace_labels.get(key)
        if value:
            labels[key] = _label_value(value, f"namespace label {key}")
    shard = get_str_map(wd, "metadata.labels").get(SHARD_LABEL)
    if shard:  # only a copy of a sharded federation carries it
        labels[SHARD_LABEL] = _label_value(shard, f"metadata.labels[{SHARD_LABEL}]")
    return labels


def wd_city(wd: Mapping[str, Any]) -> str:
    """The city a WD in this cell was placed for: `spec.cityCode` as written, or — for a WD
    placed by location (`spec.locationRef`), which names no city — the federator's
    `topology.datum.net/city-code` label on the copy (its Location's city, resolved in the
    management cluster). ValueError naming both when neither is there."""
    city = get_str(wd, "spec.cityCode", required=False)
    if city:
        return city
    labelled = get_str_map(wd, "metadata.labels").get(Label.TOPOLOGY_CITY_CODE.value, "")
    if labelled:
        return labelled
    raise ValueError(
        f"spec.cityCode: required, or (placed by spec.locationRef) the {Label.TOPOLOGY_CITY_CODE.value} "
        "label the federator writes on the copy"
    )


def check_served_city(wd: Mapping[str, Any], served_city: str) -> None:
    """A cell started with `--city-code` serves that city only (compared as placement does,
    case-insensitively): a WD of another city here means its registration (the city-code
    label the federator places by) disagrees with its own settings. ValueError naming both;
    nothing is created for it."""
    city = wd_city(wd)
    if served_city and not same_city(city, served_city):
        where = "spec.cityCode" if get_str(wd, "spec.cityCode", required=False) else "the city-code label"
        raise ValueError(
            f"{where}: {city!r}, but this cell serves {served_city!r} (--city-code); its registration's "
            "topology.datum.net/city-code label and its settings disagree"
        )


def owner_reference(wd: Mapping[str, Any]) -> dict[str, Any]:
    """The controller owner reference an Instance carries to its WD."""
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.WORKLOAD_DEPLOYMENT.value,
        "name": get_str(wd, "metadata.name"),
        "uid": get_str(wd, "metadata.uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def scheduling_gates_for(
    template_spec: Mapping[str, Any], *, quota_gate: bool, network_controller: bool, referenced_data: bool = False
) -> list[str]:
    """Gates a new Instance starts with, in the order Network, Quota, ReferencedData."""
    gates = []
    if network_controller and get_list(template_spec, "networkInterfaces", base="spec.template.spec"):
        gates.append(SchedulingGate.NETWORK.value)
    if quota_gate:
        gates.append(SchedulingGate.QUOTA.value)
    if referenced_data:
        gates.append(SchedulingGate.REFERENCED_DATA.value)
    return gates


def expects_referenced_data(wd: Mapping[str, Any]) -> bool:
    """Whether a WD copy's `expected-referenced-data` annotation names anything (or is malformed)."""
    value = get_str_map(wd, "metadata.annotations").get(EXPECTED_ANNOTATION)
    if value is None:
        return False
    try:
        return bool(parse_expected(value))
    except ValueError:
        return True


def instance_for(
    wd: Mapping[str, Any],
    namespace_labels: Mapping[str, str],
    ordinal: int,
    template_hash: str,
    *,
    quota_gate: bool = False,
    network_controller: bool = False,
) -> dict[str, Any]:
    """The desired Instance `<wd>-<ordinal>` (see the module docstring)."""
    if not template_hash:
        raise ValueError("template hash: required")
    name = get_str(wd, "metadata.name")
    template_meta = get_mapping(wd, "spec.template.metadata")
    template_spec = get_mapping(wd, "spec.template.spec", required=True)
    finalizers = get_list(wd, "spec.template.metadata.finalizers")
    if not all(isinstance(f, str) and f for f in finalizers):
        raise ValueError(f"spec.template.metadata.finalizers: expected non-empty strings, got {finalizers!r}")
    template_labels = get_str_map(template_meta, "labels", base="spec.template.metadata")
    for key, value in template_labels.items():
        _label_value(value, f"spec.template.metadata.labels[{key}]")
    metadata: dict[str, Any] = {
        "name": instance_name(name, ordinal),
        "namespace": get_str(wd, "metadata.namespace"),
        "labels": {
            **template_labels,
            **instance_labels(wd, namespace_labels, ordinal),
        },
        "ownerReferences": [owner_reference(wd)],
    }
    annotations = get_str_map(template_meta, "annotations", base="spec.template.metadata")
    if annotations:
        metadata["annotations"] = annotations
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    spec = copy.deepcopy(dict(template_spec))
    spec["controller"] = {
        "templateHash": template_hash,
        "schedulingGates": [
            {"name": gate}
            for gate in scheduling_gates_for(
                template_spec,
                quota_gate=quota_gate,
                network_controller=network_controller,
                referenced_data=expects_referenced_data(wd),
            )
        ],
    }
    return {"apiVersion": API_VERSION, "kind": Kind.INSTANCE.value, "metadata": metadata, "spec": spec}


def ordinal_of(name: str, wd_name: str) -> int | None:
    """The ordinal in an Instance name `<wd>-<ordinal>`, or None when it is not one."""
    prefix = f"{wd_name}-"
    if not name.startswith(prefix):
        return None
    suffix = name[len(prefix) :]
    # "07" is not a name this controller makes: instance_name writes ordinals without zeros.
    if not _ORDINAL.match(suffix) or (len(suffix) > 1 and suffix.startswith("0")):
        return None
    return int(suffix)


def _carries(template_spec: Mapping[str, Any], instance: Mapping[str, Any]) -> bool:
    """Whether the Instance's spec still says everything the template's spec says (the
    `controller` part is the controllers', not the template's; fields the server defaults
    only add keys, so they do not count)."""
    actual = get_mapping(instance, "spec")
    wanted = {k: v for k, v in template_spec.items() if k != "controller"}
    return is_subset(wanted, {k: v for k, v in actual.items() if k != "controller"})


def observe(instance: Mapping[str, Any], wd_name: str, template_spec: Mapping[str, Any] | None = None) -> Observed:
    """What `stateful.next_action` needs to know about an existing Instance of `wd_name`.
    With the WD's `template_spec`, an Instance edited by hand reads as drifted (hash "")."""
    name = get_str(instance, "metadata.name")
    ordinal = ordinal_of(name, wd_name)
    if ordinal is None:
        raise ValueError(f"metadata.name: {name!r} is not an Instance name of {wd_name!r} (<deployment>-<ordinal>)")
    stamped = get_str(instance, "spec.controller.templateHash", required=False)
    if template_spec is not None and not _carries(template_spec, instance):
        stamped = ""
    return Observed(
        name=name,
        ordinal=ordinal,
        template_hash=stamped,
        ready=is_ready(instance),
        deleting=is_deleting(instance),
        suspended=is_suspended(instance),
    )
