"""Where a project WD goes, as the status projector reads it on every reconcile, made once
per input that can change it (issue 22 item 3: CPU per write). Pure: no I/O.

The status projector places a WD twice or more per change (the WD's own event, then its
copies' writes and their cells' reports), and each time `target_city` resolves the same
spec through the same Locations and `plan` divides the same replicas over the same cells.
`PlacementMemo` remembers, per WD (the caller's key: its request), the last answer of each
with every input it was made from, and gives it back only when every input is the same:

- the target city: the WD's uid and generation (one spec: the API server moves the
  generation with every spec change) and the Locations list object (the caller hands the
  same list object for as long as the Locations are unchanged, a new one when any moved:
  `fleetview.KnownLocations`);
- the shares: uid, generation, the city, the cells (name, city, reachability: `CellInfo`)
  and the ordinals the WD's copies hold now (`plan`'s `current`) — either exactly the
  ordinals the answer was made from, or exactly the answer's own ranges, for which `plan`
  returns the same answer (it is idempotent: tests/federation/test_placement.py
  `test_idempotent`). That second case is the common one: the plan made when the WD
  appeared (no copy yet), met again once the federator wrote its copies as planned.

- what its template references (`references.referenced`: the references and the copies'
  expected-referenced-data value): the uid and generation alone (the template is spec).

A failure (an invalid spec, a Location that names no city) is not remembered: it is made
again, as before. A WD without a uid or generation is not remembered either. Bounded: one
entry per WD, dropped by `forget` when the WD goes."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from federation.fleet.downstream import target_city
from federation.fleet.locations import CityTarget, KnownLocation
from federation.fleet.placement import CellInfo, Share, plan, ranges_of
from federation.fleet.references import Referenced, referenced
from mcruntime.fields import get_mapping

K = TypeVar("K", bound=Hashable)

# (cell, start, stop) per cell, sorted: `plan`'s `current` as a comparable value
Ordinals = tuple[tuple[str, int, int], ...]


def ordinals_key(current: Mapping[str, range]) -> Ordinals:
    return tuple(sorted((cell, r.start, r.stop) for cell, r in current.items() if r.step == 1))


@dataclass(slots=True)
class _Entry:
    spec: tuple[object, object]  # (uid, generation) both answers were made for
    locations: Sequence[KnownLocation] | None = None  # the list object `target` was resolved through
    target: CityTarget | None = None
    placed: tuple[str, tuple[CellInfo, ...]] | None = None  # (city, cells) `shares` were planned over
    made_from: Ordinals = ()  # the ordinals `shares` were planned from
    planned: Ordinals = ()  # the ordinals `shares` give (ranges_of)
    shares: list[Share] | None = None
    referenced: Referenced | None = None


class PlacementMemo(Generic[K]):
    def __init__(self) -> None:
        self._entries: dict[K, _Entry] = {}

    def _entry(self, key: K, wd: Mapping[str, Any]) -> _Entry | None:
        """This WD's entry for its current spec (a new one when the spec moved); None when
        the WD has no uid or generation to tell its specs apart."""
        meta = get_mapping(wd, "metadata")
        spec = (meta.get("uid"), meta.get("generation"))
        if not spec[0] or spec[1] is None:
            return None
        entry = self._entries.get(key)
        if entry is None or entry.spec != spec:
            entry = self._entries[key] = _Entry(spec)
        return entry

    def target(self, key: K, wd: Mapping[str, Any], locations: Sequence[KnownLocation]) -> CityTarget:
        """`target_city(wd, locations)`, remembered (raises as it does)."""
        entry = self._entry(key, wd)
        if entry is None:
            return target_city(wd, locations)
        if entry.target is None or entry.locations is not locations:
            entry.target, entry.locations = target_city(wd, locations), locations
        return entry.target

    def shares(
        self,
        key: K,
        wd: Mapping[str, Any],
        cells: Sequence[CellInfo],
        current: Mapping[str, range],
        city: str,
        planner: Callable[..., list[Share]] | None = None,
    ) -> list[Share]:
        """`plan(wd, cells, current, city=city)`, remembered (raises as it does)."""
        planner = planner or plan
        entry = self._entry(key, wd)
        if entry is None:
            return planner(wd, cells, current, city=city)
        placed, made_from = (city, tuple(cells)), ordinals_key(current)
        if entry.shares is None or entry.placed != placed or made_from not in (entry.made_from, entry.planned):
            shares = planner(wd, cells, current, city=city)
            entry.shares, entry.placed, entry.made_from = shares, placed, made_from
            entry.planned = ordinals_key(ranges_of(shares))
        return list(entry.shares)

    def referenced(self, key: K, wd: Mapping[str, Any]) -> Referenced:
        """`references.referenced(wd)`, remembered."""
        entry = self._entry(key, wd)
        if entry is None:
            return referenced(wd)
        if entry.referenced is None:
            entry.referenced = referenced(wd)
        return entry.referenced

    def forget(self, key: K) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
