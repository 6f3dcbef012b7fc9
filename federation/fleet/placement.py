"""Placement: which cells of a city run a WorkloadDeployment, and which ordinals each runs
(DESIGN.md §3 "Placement"). One pure function, `plan`, shared by the federator (writes
it), the projector (knows which cells must report) and the CLI (shows it), so the three
can never disagree.

Rules
- Target cells are the registered cells whose city code equals `spec.cityCode`, compared
  case-insensitively (`dfw` places on cells labelled DFW; the WD keeps what was written).
  None → `[]` (the projector then reports Available=False/NoMatchingLocation).
- Every target cell gets a `Share`, possibly of 0 replicas (more cells than replicas).
- Ordinals: the shares' ranges are contiguous, disjoint and together cover 0..N-1, so
  Instance names (`<wd>-<ordinal>`) are unique across the city's cells.
- Unreachable cells keep their share. Re-dividing around a partition would move
  ordinals, and every moved ordinal is an Instance deleted in one cell and created in
  another: a network blip would cause mass recreation, then again when the cell returns.
  The flag is carried into the `Share` so the projector and the CLI can say so.

Not moving running Instances comes first, balance second (issue 18 item 2)
`current` — cell → the range its copy has now (the caller reads it from the copies'
`compute.datumapis.com/ordinal-start` annotation and `spec.replicas`; a cell whose copy
holds 0 replicas is present with an empty range) — decides between two layouts:

- Keep (every target cell has a copy, and their ranges do not overlap): every ordinal
  below N stays in the cell that has it. A scale-down therefore only removes (ranges are
  cut at N); a scale-up only adds: the new ordinals N_old..N-1 go, as evenly as the
  sizes allow, to the cell holding the last range and the cells holding none (in name
  order), the smaller first. Ordinals nobody holds (a cell that left) go to the cells
  either side of the gap, the smaller first. A cell leaving thus moves only its own
  ordinals — the fewest possible.
- Balance (a target cell has no copy yet — a new WD, or a cell joined — or the ranges are
  inconsistent): sizes are divided as evenly as possible, earlier names taking the
  remainder, and the *order* of the ranges along 0..N-1 keeps the most ordinals in the
  cell that has them now; among equally good orders the one closest to name order wins
  (lexicographically smallest in cell names). Without `current` the layout is exactly
  name order.

So the split converges towards balance when a cell joins (the only time sizes are
re-divided), and otherwise only as far as scale-ups fill the smaller cells; a scale-up
never moves a running Instance. Feeding a plan's own ranges back as `current` returns the
same plan (idempotent) in both modes, and so do the intermediate states while the
federator writes a plan's copies one by one.

The Balance optimum is exact: a dynamic programme over subsets of the cells with a
non-empty share, O(2^k · k), for up to `MAX_OPTIMISED_CELLS` (12) such cells in one city.
Beyond that (not a realistic city) the layout falls back to name order. Zero-replica
shares hold no ordinals and always come last, at ordinal N, in name order.

`current` is only a hint: entries for cells that do not match any more and values that
are not step-1 ranges are ignored, never an error. Invalid WD input raises
`PlacementError` naming the field.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcruntime.fields import is_object

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
    spec = wd.get("spec") if is_object(wd) else None
    if spec is None:
        return {}
    if not is_object(spec):
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
    if not is_object(scale):
        raise PlacementError(f"spec.scaleSettings: expected an object, got {type(scale).__name__}")
    if scale.get("minReplicas") is None:
        return 0
    return _replica_count(scale["minReplicas"], "spec.scaleSettings.minReplicas")


def city_code(wd: Mapping[str, Any]) -> str:
    """`spec.cityCode` as written, validated: a non-empty string without spaces (matched
    against cells' city codes case-insensitively: `same_city`)."""
    value = _spec(wd).get("cityCode")
    if value is None or value == "":
        raise PlacementError("spec.cityCode: required")
    if not isinstance(value, str):
        raise PlacementError(f"spec.cityCode: expected a string, got {value!r}")
    if any(ch.isspace() for ch in value):
        raise PlacementError(f"spec.cityCode: {value!r} must not contain spaces (e.g. 'DFW')")
    return value


def city_key(city: str) -> str:
    """The one rule for matching city codes, as a key: case-insensitive (`dfw` is DFW).
    Indexes of objects by city and their lookups both go through it."""
    return city.casefold()


def same_city(a: str, b: str) -> bool:
    return city_key(a) == city_key(b)


@dataclass(frozen=True, slots=True)
class Move:
    """An ordinal whose Instance `plan` moves: deleted in `source`, created in `target`."""

    ordinal: int
    source: str
    target: str

    def describe(self, wd_name: str) -> str:
        return f"moves {wd_name}-{self.ordinal} from {self.source} to {self.target}"


def moves(current: Mapping[str, range] | None, shares: Iterable[Share]) -> list[Move]:
    """The ordinals `shares` take from another of their cells that holds them now (by
    `current`), in ordinal order: what a plan costs in running Instances recreated in
    another cell of the city (a city change replaces every copy; that is not a move)."""
    shares = list(shares)
    targets = {s.cell for s in shares}
    holder: dict[int, str] = {}
    for cell, held in sorted((current or {}).items()):
        if cell in targets and isinstance(held, range) and held.step == 1:
            for ordinal in held:
                holder.setdefault(ordinal, cell)
    out = [Move(o, holder[o], s.cell) for s in shares for o in s.ordinals if o in holder and holder[o] != s.cell]
    return sorted(out, key=lambda m: m.ordinal)


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
        if cell.city_code and same_city(cell.city_code, city):
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


def _kept_layout(targets: Sequence[CellInfo], held: Mapping[str, range], replicas: int) -> list[Share] | None:
    """The Keep layout (module docstring), or None when the held ranges overlap."""
    clipped = {c.name: range(held[c.name].start, min(held[c.name].stop, replicas)) for c in targets}
    holders = sorted((c for c in targets if len(clipped[c.name]) > 0), key=lambda c: clipped[c.name].start)
    for a, b in itertools.pairwise(holders):
        if clipped[a.name].stop > clipped[b.name].start:
            return None
    empty = [c for c in targets if len(clipped[c.name]) == 0]  # name order (targets are sorted)
    # (cell, start, size) along 0..N-1; gaps nobody holds go to their neighbours
    lay: list[list[Any]] = [[c, clipped[c.name].start, len(clipped[c.name])] for c in holders]
    if lay and lay[0][1] > 0:  # a head gap: the first holder extends down
        lay[0][2] += lay[0][1]
        lay[0][1] = 0
    for left, right in itertools.pairwise(lay):
        gap = right[1] - (left[1] + left[2])
        if gap > 0:  # the smaller side first; the earlier cell on a tie
            to_left = max(0, min(gap, (gap + right[2] - left[2] + 1) // 2))
            left[2] += to_left
            right[1] -= gap - to_left
            right[2] += gap - to_left
    end = lay[-1][1] + lay[-1][2] if lay else 0
    tail = [lay[-1]] if lay else []
    tail += [[c, 0, 0] for c in empty]
    extra = _fill([row[2] for row in tail], replicas - end)
    start = tail[0][1] if tail else 0
    for row, size in zip(tail, extra, strict=True):
        row[1], row[2] = start, size
        start += size
    rows = lay[:-1] + tail if lay else tail
    placed = [r for r in rows if r[2] > 0] + [r for r in rows if r[2] == 0]
    out, start = [], 0
    for cell, _start, size in placed:
        out.append(Share(cell.name, size, start, cell.reachable))
        start += size
    return out


def _fill(sizes: Sequence[int], more: int) -> list[int]:
    """`sizes` grown by `more` in all, the smallest first (water-filling; among equals the
    earlier first), never shrunk."""
    if not sizes:
        return []
    low, high = min(sizes), max(sizes) + more
    while low < high:  # the highest level reachable with `more`
        level = (low + high + 1) // 2
        if sum(max(0, level - s) for s in sizes) <= more:
            low = level
        else:
            high = level - 1
    out = [max(s, low) for s in sizes]
    left = more - sum(o - s for o, s in zip(out, sizes, strict=True))
    for i, size in enumerate(out):
        if left and size == low:
            out[i] += 1
            left -= 1
    return out


def plan(
    wd: Mapping[str, Any],
    cells: Iterable[CellInfo],
    current: Mapping[str, range] | None = None,
    *,
    city: str | None = None,
) -> list[Share]:
    """The shares of `wd` over the cells of its city, in ordinal order (see the module
    docstring for the rules). `current` (cell → ordinals its copy has now) decides what
    must not move. `city` is the WD's resolved target city (`downstream.target_city`:
    a `spec.locationRef` resolved through the Locations); None reads `spec.cityCode`."""
    city = city_code(wd) if city is None else city
    replicas = desired_replicas(wd)
    targets = _target_cells(cells, city)
    if not targets:
        return []
    held = {c: r for c, r in (current or {}).items() if isinstance(r, range) and r.step == 1 and r.start >= 0}
    if all(c.name in held for c in targets):
        kept = _kept_layout(targets, held, replicas)
        if kept is not None:
            return kept
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
