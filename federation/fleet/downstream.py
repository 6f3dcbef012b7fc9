"""What the federator writes into a cell, and how a cell object maps back to its project
(DESIGN.md §3 "Federator" 4, 7, 8). Pure: plain JSON dicts in, plain JSON dicts out.

Contract
- `downstream_namespace`: the cell Namespace `ns-<project namespace UID>`, labelled with
  the project's encoded upstream-cluster-name (`cluster-<org>_<project>`, taken from the
  project's registration, checked to decode to the project cluster's name) and the project
  namespace name. Keyed on the UID, so two projects' `default` namespaces never share a
  cell namespace.
- `downstream_copy`: the WD copy as a server-side apply intent: same name, in that
  namespace, labels `topology.datum.net/city-code` and upstream-namespace, annotations
  `compute.datumapis.com/ordinal-start` and `meta.datumapis.com/upstream-uid`, the spec
  copied with the cell's share in `spec.replicas` — unless the caller leaves `replicas`
  to the cell's autoscaler (`include_replicas=False`) — and, when the template references
  ConfigMaps or Secrets, `compute.datumapis.com/expected-referenced-data`
  (`references.expected_referenced_data`: a pure function of the spec, so the same write).
- `planned_shares`: the input to `plan()` read from the copies in the cells (those made
  from this very WD, by upstream UID, with the ordinals each holds), and `plan()` over it:
  the federator, the projector and the operator tools all place a WD through it.
- "The copy already says what the intent says" is `mcruntime.controllerutil.is_subset`
  everywhere (federator, projector, `check`, `plan`): maps key by key, list items of equal
  length item by item as subsets, so a field a cell defaults inside a list item (CRD
  version skew) is not drift.
- `upstream_identity`: a cell copy and its namespace → (project, project namespace, name,
  upstream uid), or None when anything is missing, malformed or contradictory.

Identity comes from where an object lives, never from labels a tenant can write (§3
Federator 8). So nothing of the project WD's own labels is copied, and of its annotations
everything but `NOT_FEDERATED_ANNOTATIONS` (the federation's own bookkeeping keys, which a
tenant must not forge; `compute.datumapis.com/suspended` is what the cells act on): the
copy's labels are the federator's routing keys, and a tenant label such as
`meta.datumapis.com/upstream-cluster-name: cluster-acme_shop` on a `web` WD must not reach
the cell. No user label is copied at all: no consumer in the cell reads WD labels (Instance
labels come from `spec.template.metadata.labels`, which travels with the spec), and a
copied label would turn every tenant label edit into a write to every cell.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from federation.api.clusternames import decode_upstream_cluster_name
from federation.api.constants import (
    API_VERSION,
    CITY_LABEL,
    FEDERATION_NAMESPACE_ANNOTATION,
    LOCATION_LABEL,
    ORDINAL_START_ANNOTATION,
    SHARD_LABEL,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    UPSTREAM_UID_ANNOTATION,
    Kind,
)
from federation.api.naming import downstream_namespace_name
from federation.fleet.locations import CityTarget, InvalidPlacementSpec, KnownLocation, resolve_city
from federation.fleet.placement import CellInfo, PlacementError, Share, city_code, plan
from federation.fleet.references import EXPECTED_ANNOTATION, Referenced, expected_referenced_data
from mcruntime.fields import get_str, get_str_map, is_object
from mcruntime.objects import LAST_APPLIED

# The project WD's annotations its copies do NOT carry (every other one does, e.g.
# `compute.datumapis.com/suspended`), and why:
NOT_FEDERATED_ANNOTATIONS: frozenset[str] = frozenset(
    {
        LAST_APPLIED,  # kubectl's record of the project object: client bookkeeping, large, meaningless in a cell
        FEDERATION_NAMESPACE_ANNOTATION,  # the project side's record of where the copies live
        # the federator's own on the copy: a tenant writing them must not steer identity or ordinals
        UPSTREAM_UID_ANNOTATION,
        ORDINAL_START_ANNOTATION,
        EXPECTED_ANNOTATION,  # computed from the spec (`references.expected_referenced_data`), never the tenant's
    }
)


@dataclass(frozen=True, slots=True)
class UpstreamRef:
    """The project WD a cell object belongs to. `name` and `uid` are empty when only a
    namespace was mapped."""

    project: str  # the project cluster's bare name (the request's cluster name)
    namespace: str  # project namespace name
    name: str
    uid: str


def _required(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = get_str(obj, f"metadata.{key}", required=False)
    if not value:
        raise ValueError(f"{what} metadata.{key}: required, got {value!r}")
    return value


def _string_at(obj: Mapping[str, Any] | None, section: str, key: str) -> str | None:
    """A non-empty string under metadata.<section>[key], else None (tolerant reading)."""
    # (on every cell event: read in place, not through a validated copy of the map)
    meta = obj.get("metadata") if is_object(obj) else None
    strings = meta.get(section) if is_object(meta) else None
    if not is_object(strings):
        return None
    value = strings.get(key)
    if not value or not isinstance(value, str):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in strings.items()):
        return None  # a malformed map reads as no value here
    return value


def _json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (an object read from the API or built like one);
    anything JSON cannot hold is copied by `copy.deepcopy`, as before."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(value))
    except TypeError:
        return _copy.deepcopy(dict(value))
    return copied


def _check_cluster(project_cluster: str) -> None:
    if not isinstance(project_cluster, str) or not project_cluster:
        raise ValueError(f"project cluster name {project_cluster!r}: must not be empty")


def downstream_namespace(
    project_cluster: str, upstream_cluster_label: str, project_namespace: Mapping[str, Any]
) -> dict[str, Any]:
    """The cell Namespace for one project namespace (an apply intent).

    `upstream_cluster_label` is the encoded value from the project's registration; it must
    decode to `project_cluster` (the bare project name), else ValueError naming both."""
    _check_cluster(project_cluster)
    try:
        decoded = decode_upstream_cluster_name(upstream_cluster_label)
    except ValueError as exc:
        raise ValueError(f"project cluster {project_cluster!r}: {exc}") from exc
    if decoded != project_cluster:
        raise ValueError(
            f"upstream cluster name {upstream_cluster_label!r} decodes to project {decoded!r}, "
            f"not to the project cluster {project_cluster!r}"
        )
    name = _required(project_namespace, "name", "project namespace")
    uid = _required(project_namespace, "uid", f"project namespace {name!r}")
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": downstream_namespace_name(uid),
            "labels": {
                UPSTREAM_CLUSTER_LABEL: upstream_cluster_label,
                UPSTREAM_NAMESPACE_LABEL: name,
            },
        },
    }


class UnresolvedLocation(PlacementError):
    """A `spec.locationRef` naming no Location, or a Location that names no city: nothing
    is wrong with the spec itself, no cell serves it (yet): `NoMatchingLocation`."""


def target_city(wd: Mapping[str, Any], locations: Iterable[KnownLocation]) -> CityTarget:
    """The WD's target city, the one place it is read from the spec: `spec.locationRef`
    resolved through the Locations (`locations.resolve_city`), or `spec.cityCode` as
    written (validated by `placement.city_code`). Raises PlacementError for an invalid
    spec and UnresolvedLocation for a Location that is missing or names no city."""
    spec = wd.get("spec")
    result = resolve_city(spec if is_object(spec) else None, locations)
    if isinstance(result, InvalidPlacementSpec):
        raise PlacementError(result.message)
    if not isinstance(result, CityTarget):
        raise UnresolvedLocation(result.message)
    if result.location is None:
        city_code(wd)  # today's checks of a written city (e.g. no spaces: it becomes a label value)
    elif any(ch.isspace() for ch in result.city_code):
        raise UnresolvedLocation(
            f"spec.locationRef.name: Location {result.location!r} names city {result.city_code!r}, "
            "which contains spaces, so no cell serves it"
        )
    return result


def downstream_copy(
    project_cluster: str,
    wd: Mapping[str, Any],
    share: Share,
    namespace: str,
    *,
    include_replicas: bool,
    target: CityTarget,
    referenced: Referenced | None = None,
) -> dict[str, Any]:
    """The WD copy for one cell (an apply intent) in downstream namespace `namespace`
    (`downstream_namespace(...)["metadata"]["name"]`). `include_replicas=False` leaves
    `spec.replicas` out, for the cell's autoscaler to own after creation. `target`
    (`target_city`) gives the city-code label and, placed by location, the location label;
    `referenced` (`references.referenced(wd)`, when the caller has it) the expected data."""
    _check_cluster(project_cluster)
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"downstream namespace {namespace!r}: must not be empty")
    name = _required(wd, "name", f"project {project_cluster!r} WorkloadDeployment")
    what = f"WorkloadDeployment {project_cluster}/{get_str(wd, 'metadata.namespace', required=False)}/{name}"
    project_ns = _required(wd, "namespace", what)
    uid = _required(wd, "uid", what)
    labels = {CITY_LABEL: target.city_code, UPSTREAM_NAMESPACE_LABEL: project_ns}
    if target.location is not None:
        labels[LOCATION_LABEL] = target.location
    shard = get_str_map(wd, "metadata.labels").get(SHARD_LABEL)
    if shard:  # sharded: the copy follows its WD's shard, whose cell caches select it
        labels[SHARD_LABEL] = shard
    # the copy owns its spec (no alias of the WD's): copied as the JSON it is, in one C-speed
    # round trip, which the federator and the projector pay per copy per reconcile (a
    # `copy.deepcopy` walk was ~5% of the manager's CPU)
    spec = _json_copy(copy_spec(wd, share, include_replicas=include_replicas))
    federated = {k: v for k, v in get_str_map(wd, "metadata.annotations").items() if k not in NOT_FEDERATED_ANNOTATIONS}
    expected = referenced.expected if referenced is not None else expected_referenced_data(wd)
    if expected is not None:  # what the cell gates Instances on, written with the spec it follows from
        federated[EXPECTED_ANNOTATION] = expected
    return {
        "apiVersion": API_VERSION,
        "kind": str(Kind.WORKLOAD_DEPLOYMENT),
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                **federated,
                ORDINAL_START_ANNOTATION: str(share.ordinal_start),
                UPSTREAM_UID_ANNOTATION: uid,
            },
        },
        "spec": spec,
    }


def copy_spec(wd: Mapping[str, Any], share: Share, *, include_replicas: bool) -> dict[str, Any]:
    """The spec `downstream_copy` writes for `share`, sharing the WD's own values (no
    copy: to compare with, never to send or change; `downstream_copy` copies it)."""
    spec = {k: v for k, v in wd["spec"].items() if k != "replicas"}
    if include_replicas:
        spec["replicas"] = share.replicas
    return spec


def cell_owns_replicas(wd: Mapping[str, Any]) -> bool:
    """Whether the cell's HorizontalPodAutoscaler owns a copy's `spec.replicas`: the cell
    creates one when `scaleSettings.maxReplicas` and `metrics` are both set (DESIGN §3)."""
    spec = wd.get("spec")
    scale = spec.get("scaleSettings") if is_object(spec) else None
    return is_object(scale) and scale.get("maxReplicas") is not None and bool(scale.get("metrics"))


def copy_ordinals(copy: Mapping[str, Any]) -> range | None:
    """The ordinals a cached copy holds now (ordinal-start annotation, default 0, and
    `spec.replicas`), as `plan`'s `current` hint wants them; None when unreadable."""
    start_text = _string_at(copy, "annotations", ORDINAL_START_ANNOTATION) or "0"
    spec = copy.get("spec")
    size = spec.get("replicas") if is_object(spec) else None
    if (
        not (start_text.isascii() and start_text.isdigit())
        or isinstance(size, bool)
        or not isinstance(size, int)
        or size < 0
    ):
        return None
    start = int(start_text)
    return range(start, start + size)


def own_copies(wd: Mapping[str, Any], copies: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Mapping[str, Any]]:
    """cell → copy, for the `(cell, copy)` pairs made from this very WD (upstream-uid
    annotation = the WD's UID); a copy of an earlier WD of the same name is not one."""
    uid = get_str(wd, "metadata.uid", required=False)
    return {
        cell: copy for cell, copy in copies if uid and _string_at(copy, "annotations", UPSTREAM_UID_ANNOTATION) == uid
    }


def planned_shares(
    wd: Mapping[str, Any],
    cells: Iterable[CellInfo],
    copies: Iterable[tuple[str, Mapping[str, Any]]],
    locations: Iterable[KnownLocation],
    *,
    target: CityTarget | None = None,
) -> list[Share]:
    """`plan(wd, cells, current, city=...)` with the city from `target_city` (so a
    `spec.locationRef` places through the Locations) and `current` read from the
    `(cell, copy)` pairs found in the cells: the ordinals each of this WD's own copies
    holds now. Raises PlacementError (UnresolvedLocation for a location no cell serves).
    `target`: `target_city(wd, locations)`, when the caller has resolved it already."""
    city = (target if target is not None else target_city(wd, locations)).city_code
    return plan(wd, cells, current_ordinals(wd, copies), city=city)


def current_ordinals(wd: Mapping[str, Any], copies: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, range]:
    """cell → the ordinals this WD's own copy there holds now (`plan`'s `current` hint)."""
    return {cell: r for cell, copy in own_copies(wd, copies).items() if (r := copy_ordinals(copy)) is not None}


def upstream_identity(copy: Mapping[str, Any] | None, namespace: Mapping[str, Any] | None) -> UpstreamRef | None:
    """The project WD a cell copy belongs to, read only from labels the federator wrote:
    the namespace's upstream-cluster-name (decoded to the bare project name) and
    upstream-namespace, which the copy's upstream-namespace label must repeat, and the
    copy's upstream-uid annotation. With `copy=None` the namespace alone is mapped (name
    and uid empty). None when anything is missing, malformed or contradictory."""
    if namespace is None:
        return None
    encoded = _string_at(namespace, "labels", UPSTREAM_CLUSTER_LABEL)
    project_ns = _string_at(namespace, "labels", UPSTREAM_NAMESPACE_LABEL)
    if encoded is None or project_ns is None:
        return None
    try:
        project = decode_upstream_cluster_name(encoded)
    except ValueError:
        return None
    served = UpstreamRef(project, project_ns, "", "")
    if copy is None:
        return served
    if get_str(copy, "metadata.namespace", required=False) != get_str(namespace, "metadata.name", required=False):
        return None  # the copy does not live in this namespace
    return copy_upstream(copy, served)


def copy_upstream(copy: Mapping[str, Any], served: UpstreamRef) -> UpstreamRef | None:
    """`upstream_identity`'s reading of a copy that lives in a namespace serving `served`
    (its `upstream_identity(None, namespace)`, or the same read from an index of the
    namespaces): the copy's upstream-namespace label must repeat the namespace's, and its
    upstream-uid annotation names the WD. None when anything is missing or contradictory."""
    name = get_str(copy, "metadata.name", required=False)
    if not name:
        return None
    if _string_at(copy, "labels", UPSTREAM_NAMESPACE_LABEL) != served.namespace:
        return None
    uid = _string_at(copy, "annotations", UPSTREAM_UID_ANNOTATION)
    if uid is None:
        return None
    return UpstreamRef(served.project, served.namespace, name, uid)
