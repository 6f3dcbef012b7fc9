"""Placement: which cells of a city run a WorkloadDeployment, and which ordinals each runs
(DESIGN.md §3 "Placement"). One pure function, `plan`, shared by the federator (writes
it), the projector (knows which cells must report) and the CLI (shows it), so the three
can never disagree.

Rules
- Target cells are the registered cells whose city code equals `spec.cityCode` exactly.
  None → `[]` (the projector then reports Available=False/NoMatchingLocation).
- Every target cell gets a `Share`, possibly of 0 replicas (more cells than replicas).
- Sizes: the replicas (`spec.replicas`, else `spec.scaleSettings.minReplicas`, else 0)
  are divided as evenly as possible; with the cells sorted by name, earlier cells take the
  remainder. Sizes never depend on anything else.
- Ordinals: the shares' ranges are contiguous, disjoint and together cover 0..N-1, so
  Instance names (`<wd>-<ordinal>`) are unique across the city's cells.
- Unreachable cells keep their share. Re-dividing around a partition would move
  ordinals, and every moved ordinal is an Instance deleted in one cell and created in
  another: a network blip would cause mass recreation, then again when the cell returns.
  The flag is carried into the `Share` so the projector and the CLI can say so.

Moving as few ordinals as possible
With ranges laid out strictly in name order, a cell joining in the middle of the sort
order shifts every range after it (N=3: a:{0,1} b:{2}; add c → a:{0} b:{1} c:{2} moves 2
ordinals where 1 suffices). So `plan` takes `current` — cell → the range its copy has now
(the caller reads it from the copies' `compute.datumapis.com/ordinal-start` annotation and
`spec.replicas`) — as a hint, keeps the sizes rule, and chooses the *order* of the cells'
ranges along 0..N-1 that keeps the most ordinals in the cell that has them now. Among
equally good orders the one closest to name order wins (lexicographically smallest in
cell names), so without `current` the layout is exactly name order, and feeding a plan's
own ranges back as `current` returns the same plan (idempotent).

The optimum is exact: a dynamic programme over subsets of the cells with a non-empty
share, O(2^k · k), for up to `MAX_OPTIMISED_CELLS` (12) such cells in one city. Beyond
that (not a realistic city) the layout falls back to name order. Zero-replica shares hold
no ordinals and always come last, at ordinal N, in name order.

`current` is only a hint: entries for cells that do not match any more, ranges that
overlap or are stale, and values that are not step-1 ranges are ignored, never an error.
Invalid WD input raises `PlacementError` naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Above this many cells with a non-empty share in one city, the exact search (2^k states)
# is skipped and ranges follow name order.
MAX_OPTIMISED_CELLS = 12
# spec.replicas is an int32 on the wire.
MAX_REPLICAS = 2**31 - 1


class PlacementError(ValueError):
    """The WorkloadDeployment (or the cell list) cannot be placed; the message names the field."""


@dataclass(frozen=True, slots=True)
class CellInfo:
    """A registered cell as the federator sees it."""

    name: str
    city_code: str
    reachable: bool = True


@dataclass(frozen=True, slots=True)
class Share:
    """One cell's part of a WorkloadDeployment: `replicas` Instances from `ordinal_start`."""

    cell: str
    replicas: int
    ordinal_start: int
    reachable: bool = True

    @property
    def ordinals(self) -> range:
        return range(self.ordinal_start, self.ordinal_start + self.replicas)


def _spec(wd: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = wd.get("spec") if isinstance(wd, Mapping) else None
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise PlacementError(f"spec: expected an object, got {type(spec).__name__}")
    return spec


def _replica_count(value: Any, field: str) -> int:
    # bool is an int in Python but not in JSON
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlacementError(f"{field}: expected an integer, got {value!r}")
    if not 0 <= value <= MAX_REPLICAS:
        raise PlacementError(f"{field}: must be between 0 and {MAX_REPLICAS}, got {value}")
    return value


def desired_replicas(wd: Mapping[str, Any]) -> int:
    """`spec.replicas`, else `spec.scaleSettings.minReplicas`, else 0."""
    spec = _spec(wd)
    if spec.get("replicas") is not None:
        return _replica_count(spec["replicas"], "spec.replicas")
    scale = spec.get("scaleSettings")
    if scale is None:
        return 0
    if not isinstance(scale, Mapping):
        raise PlacementError(f"spec.scaleSettings: expected an object, got {type(scale).__name__}")
    if scale.get("minReplicas") is None:
        return 0
    return _replica_count(scale["minReplicas"], "spec.scaleSettings.minReplicas")


def city_code(wd: Mapping[str, Any]) -> str:
    """`spec.cityCode`, validated: a non-empty upper-case string without spaces."""
    value = _spec(wd).get("cityCode")
    if value is None or value == "":
        raise PlacementError("spec.cityCode: required")
    if not isinstance(value, str):
        raise PlacementError(f"spec.cityCode: expected a string, got {value!r}")
    if any(ch.isspace() for ch in value) or value != value.upper():
        raise PlacementError(f"spec.cityCode: {value!r} must be upper-case without spaces (e.g. 'DFW')")
    return value


def ranges_of(shares: Iterable[Share]) -> dict[str, range]:
    """cell → ordinals, the shape `plan` takes as `current`."""
    return {share.cell: share.ordinals for share in shares}


def _target_cells(cells: Iterable[CellInfo], city: str) -> list[CellInfo]:
    seen: set[str] = set()
    targets: list[CellInfo] = []
    for cell in cells:
        if not isinstance(cell.name, str) or not cell.name:
            raise PlacementError(f"cells: a cell without a name ({cell!r})")
        if cell.name in seen:
            raise PlacementError(f"cells: cell {cell.name!r} is listed twice")
        seen.add(cell.name)
        if cell.city_code == city:
            targets.append(cell)
    return sorted(targets, key=lambda c: c.name)


def _usable_hint(current: Mapping[str, range] | None, names: set[str]) -> dict[str, range]:
    if not current:
        return {}
    return {
        cell: r for cell, r in current.items() if cell in names and isinstance(r, range) and r.step == 1 and len(r) > 0
    }


def _overlap(start: int, size: int, held: range | None) -> int:
    if held is None:
        return 0
    return max(0, min(start + size, held.stop) - max(start, held.start))


def _best_order(sizes: Sequence[int], held: Sequence[range | None]) -> list[int]:
    """Indices (into name order) in the order their ranges are laid out: most ordinals kept,
    then lexicographically smallest. `best[mask]` = the most ordinals the cells outside
    `mask` can keep when the cells in `mask` are laid out first (in any order: where the
    rest start depends only on which cells came before, not their order)."""
    k = len(sizes)
    full = (1 << k) - 1
    used = [0] * (full + 1)  # ordinals taken by the cells in mask
    for mask in range(1, full + 1):
        low = mask & -mask
        used[mask] = used[mask ^ low] + sizes[low.bit_length() - 1]
    best = [0] * (full + 1)
    for mask in range(full - 1, -1, -1):
        start = used[mask]
        best[mask] = max(
            _overlap(start, sizes[i], held[i]) + best[mask | (1 << i)] for i in range(k) if not mask & (1 << i)
        )
    order: list[int] = []
    mask = 0
    while mask != full:
        start = used[mask]
        for i in range(k):  # name order first: ties go to the earlier name
            bit = 1 << i
            if not mask & bit and _overlap(start, sizes[i], held[i]) + best[mask | bit] == best[mask]:
                order.append(i)
                mask |= bit
                break
    return order


def plan(wd: Mapping[str, Any], cells: Iterable[CellInfo], current: Mapping[str, range] | None = None) -> list[Share]:
    """The shares of `wd` over the cells of its city, in ordinal order (see the module
    docstring for the rules). `current` (cell → ordinals its copy has now) is a hint used
    only to move as few ordinals as possible."""
    city = city_code(wd)
    replicas = desired_replicas(wd)
    targets = _target_cells(cells, city)
    if not targets:
        return []
    base, extra = divmod(replicas, len(targets))
    sizes = [base + (1 if i < extra else 0) for i in range(len(targets))]
    # sizes never increase along name order, so the non-empty shares are a prefix
    holding = [i for i, size in enumerate(sizes) if size > 0]
    hint = _usable_hint(current, {targets[i].name for i in holding})
    if hint and len(holding) <= MAX_OPTIMISED_CELLS:
        order = _best_order([sizes[i] for i in holding], [hint.get(targets[i].name) for i in holding])
    else:
        order = list(range(len(holding)))
    shares: list[Share] = []
    start = 0
    for i in order + list(range(len(holding), len(targets))):
        cell = targets[i]
        shares.append(Share(cell.name, sizes[i], start, cell.reachable))
        start += sizes[i]
    return shares
