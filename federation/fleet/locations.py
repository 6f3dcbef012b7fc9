"""Where a placement points: Locations (`networking.datumapis.com/v1alpha`) resolved to city
codes, and Workload placements resolved to their targets. Pure functions, no I/O.

Cells stay labelled by city code (`topology.datum.net/city-code`), so every placement
ends as a city code:

- a WorkloadDeployment of the current era names a Location (`spec.locationRef.name`);
  the Location's `spec.topology["topology.datum.net/city-code"]` is its city;
- one of the older era names the city itself (`spec.cityCode`).

A Workload placement names Locations (`locations`), selects them (`locationSelector`,
matched over each Location's labels with its topology laid over them, since upstream
selects on topology keys), or names cities (`cityCodes`, older manifests).

City codes compare case-insensitively (`city_key`): `dfw` and `DFW` are one city. They
are returned as written (by the user, or by the Location) and never rewritten.

Failures are values, not exceptions, so a controller can put the message in a condition
or an Event without a try block; every message names the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from federation.api.constants import Label
from federation.fleet.placement import city_key
from mcruntime.fields import get_mapping, get_str, get_str_map, is_object
from mcruntime.selectors import LabelSelector

CITY_CODE_KEY = Label.TOPOLOGY_CITY_CODE.value


@dataclass(frozen=True)
class KnownLocation:
    """What placement needs of one Location: its name, its city and what selectors see."""

    name: str
    city_code: str  # "" when the Location's topology names no city
    labels: Mapping[str, str] = field(default_factory=dict)


def known_location(obj: Mapping[str, Any]) -> KnownLocation:
    """From a Location as the API server returns it (a wire dict)."""
    topology = {str(k): str(v) for k, v in get_mapping(obj, "spec.topology").items()}
    labels = get_str_map(obj, "metadata.labels")
    return KnownLocation(
        name=get_str(obj, "metadata.name", required=False),
        city_code=topology.get(CITY_CODE_KEY, "").strip(),
        labels={**labels, **topology},
    )


# ------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)  # remembered per WD (PlacementMemo)
class CityTarget:
    """A WorkloadDeployment's resolved target: the city whose cells serve it, and the
    Location it was named by (None for a `spec.cityCode` deployment)."""

    city_code: str
    location: str | None = None


@dataclass(frozen=True)
class UnknownLocation:
    field: str
    name: str

    @property
    def message(self) -> str:
        return f"{self.field}: Location {self.name!r} does not exist in the management cluster"


@dataclass(frozen=True)
class LocationWithoutCity:
    field: str
    name: str

    @property
    def message(self) -> str:
        return f"{self.field}: Location {self.name!r} has no {CITY_CODE_KEY} in spec.topology, so no cell serves it"


@dataclass(frozen=True)
class InvalidPlacementSpec:
    field: str
    problem: str

    @property
    def message(self) -> str:
        return f"{self.field}: {self.problem}"


LocationError = UnknownLocation | LocationWithoutCity | InvalidPlacementSpec


def _index(locations: Iterable[KnownLocation]) -> dict[str, KnownLocation]:
    return {loc.name: loc for loc in locations}


# ------------------------------------------------------- WorkloadDeployment


def resolve_city(spec: Mapping[str, Any] | None, locations: Iterable[KnownLocation]) -> CityTarget | LocationError:
    """The city a WorkloadDeployment spec places in.

    `spec.locationRef` resolves through the known Locations; `spec.cityCode` is taken as
    written. Exactly one of them must be set (the CRD's rule; checked again here because
    objects may come from anywhere, e.g. `plan -f`)."""
    spec = spec or {}
    ref, city = spec.get("locationRef"), spec.get("cityCode")
    if (ref is None) == (city is None):
        return InvalidPlacementSpec("spec", "exactly one of spec.locationRef or spec.cityCode must be set")
    if city is not None:
        if not isinstance(city, str) or not city.strip():
            return InvalidPlacementSpec("spec.cityCode", f"{city!r} is not a city code")
        return CityTarget(city)
    name = ref.get("name") if is_object(ref) else None
    if not isinstance(name, str) or not name:
        return InvalidPlacementSpec("spec.locationRef.name", "required")
    location = _index(locations).get(name)
    if location is None:
        return UnknownLocation("spec.locationRef.name", name)
    if not location.city_code:
        return LocationWithoutCity("spec.locationRef.name", name)
    return CityTarget(location.city_code, location.name)


# ------------------------------------------------------- Workload placements


@dataclass(frozen=True)
class ByLocation:
    """Deploy at this Location (the WorkloadDeployment gets `spec.locationRef`)."""

    name: str


@dataclass(frozen=True)
class ByCity:
    """Deploy in this city (the WorkloadDeployment gets `spec.cityCode`, as written)."""

    city_code: str


PlacementTarget = ByLocation | ByCity


@dataclass(frozen=True)
class PlacementTargets:
    """What one Workload placement asks for; `errors` name what cannot be acted on."""

    targets: tuple[PlacementTarget, ...] = ()
    errors: tuple[LocationError, ...] = ()


def placement_targets(
    placement: Mapping[str, Any], locations: Iterable[KnownLocation], *, where: str = "placement"
) -> PlacementTargets:
    """The targets of one `spec.placements[]` entry, in a stable order without duplicates.

    - `locations`: each named Location; unknown names are errors (and no target).
    - `locationSelector`: every known Location whose labels (topology laid over them)
      match; values under the city-code key match case-insensitively. An empty selector
      is an error: it does not mean "every location".
    - `cityCodes`: each city once, case-insensitively, spelled as first written.
    `where` prefixes field names in errors (e.g. `spec.placements[0]`)."""
    known = _index(locations)
    sources = [k for k in ("locations", "locationSelector", "cityCodes") if placement.get(k) is not None]
    if len(sources) != 1:
        problem = "exactly one of locations, locationSelector or cityCodes must be set"
        return PlacementTargets(errors=(InvalidPlacementSpec(where, problem),))
    if sources == ["locations"]:
        return _named(placement["locations"], known, f"{where}.locations")
    if sources == ["locationSelector"]:
        return _selected(placement["locationSelector"], known, f"{where}.locationSelector")
    return _cities(placement["cityCodes"], f"{where}.cityCodes")


def _named(refs: Any, known: Mapping[str, KnownLocation], where: str) -> PlacementTargets:
    targets: dict[str, PlacementTarget] = {}
    errors: list[LocationError] = []
    for i, ref in enumerate(refs if isinstance(refs, list) else []):
        name = ref.get("name") if is_object(ref) else None
        if not isinstance(name, str) or not name:
            errors.append(InvalidPlacementSpec(f"{where}[{i}].name", "required"))
        elif name not in known:
            errors.append(UnknownLocation(f"{where}[{i}].name", name))
        else:
            targets.setdefault(name, ByLocation(name))
    if not isinstance(refs, list) or not refs:
        errors.append(InvalidPlacementSpec(where, "must name at least one Location"))
    return PlacementTargets(tuple(targets.values()), tuple(errors))


def _selected(selector: Any, known: Mapping[str, KnownLocation], where: str) -> PlacementTargets:
    if not is_object(selector) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return PlacementTargets(
            errors=(InvalidPlacementSpec(where, "must not be empty (it does not mean every location)"),)
        )
    try:
        parsed = LabelSelector.from_dict(_fold_city_values(selector))
    except ValueError as exc:
        return PlacementTargets(errors=(InvalidPlacementSpec(where, str(exc)),))
    matched = [ByLocation(name) for name, loc in sorted(known.items()) if parsed.matches(_fold_city_labels(loc.labels))]
    return PlacementTargets(tuple(matched))


def _cities(codes: Any, where: str) -> PlacementTargets:
    seen: dict[str, PlacementTarget] = {}
    errors: list[LocationError] = []
    for i, code in enumerate(codes if isinstance(codes, list) else []):
        if not isinstance(code, str) or not code.strip():
            errors.append(InvalidPlacementSpec(f"{where}[{i}]", f"{code!r} is not a city code"))
        else:
            seen.setdefault(city_key(code), ByCity(code))
    if not isinstance(codes, list) or not codes:
        errors.append(InvalidPlacementSpec(where, "must name at least one city"))
    return PlacementTargets(tuple(seen.values()), tuple(errors))


def _fold_city_labels(labels: Mapping[str, str]) -> dict[str, str]:
    out = dict(labels)
    if CITY_CODE_KEY in out:
        out[CITY_CODE_KEY] = city_key(out[CITY_CODE_KEY])
    return out


def _fold_city_values(selector: Mapping[str, Any]) -> dict[str, Any]:
    """The selector with every value under the city-code key in compared form."""
    labels = {k: city_key(str(v)) if k == CITY_CODE_KEY else v for k, v in (selector.get("matchLabels") or {}).items()}
    exprs = []
    for raw in selector.get("matchExpressions") or []:
        expr = dict(raw) if is_object(raw) else {}
        if expr.get("key") == CITY_CODE_KEY:
            expr["values"] = [city_key(str(v)) for v in expr.get("values") or []]
        exprs.append(expr)
    return {"matchLabels": labels, "matchExpressions": exprs}
