"""What `federation-manager status` shows, computed from one `Snapshot`: every project
WorkloadDeployment with its cells (the shares `placement.plan` gives, the federator's own
function), per cell the copy's desired / ready / up-to-date numbers and how fresh they are,
and the WD's worst condition. Pure: `status_view` builds plain data, `to_json` and
`render` (a `rich` renderable) present it.

Freshness of a cell's numbers (`CopyState`): `observed` (the cell has acted on the copy's
current spec), `pending` (the copy is there, its spec not yet observed by the cell),
`missing` (the cell was read and holds no copy of this WD), `unknown` (the cell was not
read: its numbers are not shown rather than guessed).

The worst condition is the project WD's own (written by the projector): among
`Available` and `ReplicasReady`, False before Unknown before True, then the projector's
reason order (`federation.fleet.aggregate.REASON_ORDER`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from federation.fleet.aggregate import AVAILABLE, REASON_ORDER, REPLICAS_READY
from federation.fleet.downstream import planned_shares, target_city
from federation.fleet.placement import CellInfo, PlacementError
from federation.ops.snapshot import CellCopy, Snapshot
from mcruntime.fields import get_int, get_str, is_deleting
from mcruntime.objects import Obj

_STATUS_RANK = {"False": 0, "Unknown": 1, "True": 2}
_REASON_RANK = {str(reason): i for i, reason in enumerate(REASON_ORDER)}
_STYLE = {"True": "green", "False": "red", "Unknown": "yellow"}


class CopyState(enum.StrEnum):
    OBSERVED = "observed"
    PENDING = "pending"
    MISSING = "missing"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ClusterRow:
    name: str
    role: str  # management | project | cell
    city: str
    reachable: bool
    registered: bool
    error: str


@dataclass(frozen=True, slots=True)
class CellRow:
    cell: str
    share: int
    ordinal_start: int
    reachable: bool
    copy: CopyState
    desired: int | None
    ready: int | None
    updated: int | None


@dataclass(frozen=True, slots=True)
class ConditionRow:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class WorkloadDeploymentRow:
    project: str
    namespace: str
    name: str
    city: str
    deleting: bool
    desired: int | None
    ready: int | None
    updated: int | None
    condition: ConditionRow | None  # the worst of the WD's conditions (None: no status yet)
    problem: str  # why it cannot be placed ("" when it can)
    cells: tuple[CellRow, ...]


@dataclass(frozen=True, slots=True)
class StatusView:
    clusters: tuple[ClusterRow, ...]
    workload_deployments: tuple[WorkloadDeploymentRow, ...]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def worst_condition(status: Mapping[str, Any]) -> ConditionRow | None:
    found = [
        ConditionRow(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""), str(c.get("message") or ""))
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") in (AVAILABLE, REPLICAS_READY)
    ]
    if not found:
        return None
    return min(
        found,
        key=lambda c: (_STATUS_RANK.get(c.status, 1), _REASON_RANK.get(c.reason, len(REASON_ORDER)), c.type),
    )


def _cell_row(snapshot: Snapshot, cell: str, share: int, start: int, copy: CellCopy | None) -> CellRow:
    found = snapshot.cells.get(cell)
    if found is None or not found.reachable:
        return CellRow(cell, share, start, False, CopyState.UNKNOWN, None, None, None)
    if copy is None:
        return CellRow(cell, share, start, True, CopyState.MISSING, None, None, None)
    status = _mapping(copy.obj.get("status"))
    generation = get_int(copy.obj, "metadata.generation")
    observed = generation is not None and status.get("observedGeneration") == generation
    desired = _int(status.get("desiredReplicas"))
    if desired is None:
        desired = _int(_mapping(copy.obj.get("spec")).get("replicas"))
    return CellRow(
        cell,
        share,
        start,
        True,
        CopyState.OBSERVED if observed else CopyState.PENDING,
        desired,
        _int(status.get("readyReplicas")) or 0,
        _int(status.get("updatedReplicas")) or 0,
    )


def _city(wd: Obj, snapshot: Snapshot) -> str:
    """The WD's target city (its Location's, or as written); "" when it has none."""
    try:
        return target_city(wd, snapshot.locations).city_code
    except PlacementError:
        return ""


def _wd_row(
    snapshot: Snapshot,
    registered: list[CellInfo],
    copies: Mapping[tuple[str, str, str], list[CellCopy]],
    project: str,
    wd: Obj,
) -> WorkloadDeploymentRow:
    ns, name, uid = (
        get_str(wd, "metadata.namespace", required=False),
        get_str(wd, "metadata.name", required=False),
        get_str(wd, "metadata.uid", required=False),
    )
    status = _mapping(wd.get("status"))
    named = copies.get((project, ns, name), [])
    ours = {c.cell: c for c in named if c.upstream_uid == uid}
    problem = ""
    cells: tuple[CellRow, ...] = ()
    try:
        shares = planned_shares(wd, registered, ((c.cell, c.obj) for c in named), snapshot.locations)
        cells = tuple(
            _cell_row(snapshot, s.cell, s.replicas, s.ordinal_start, ours.get(s.cell))
            for s in sorted(shares, key=lambda s: s.cell)
        )
    except PlacementError as exc:
        problem = str(exc)
    return WorkloadDeploymentRow(
        project=project,
        namespace=ns,
        name=name,
        city=_city(wd, snapshot),
        deleting=is_deleting(wd),
        desired=_int(status.get("desiredReplicas")),
        ready=_int(status.get("readyReplicas")),
        updated=_int(status.get("updatedReplicas")),
        condition=worst_condition(status),
        problem=problem,
        cells=cells,
    )


def _clusters(snapshot: Snapshot) -> tuple[ClusterRow, ...]:
    mgmt = snapshot.management
    rows = [ClusterRow("management", "management", "", mgmt.reachable, mgmt.registered, mgmt.error)]
    rows += [
        ClusterRow(p.name, "project", "", p.reachable, p.health.registered, p.health.error)
        for p in snapshot.projects.values()
    ]
    rows += [
        ClusterRow(c.name, "cell", c.city_code, c.reachable, c.health.registered, c.health.error)
        for c in snapshot.cells.values()
    ]
    return tuple(rows)


def status_view(snapshot: Snapshot, *, namespace: str | None = None, project: str | None = None) -> StatusView:
    """Every project WD (optionally of one project namespace and/or one project), sorted by
    project, namespace and name; each WD's cells in name order."""
    rows = []
    copies = snapshot.copies_by_upstream()
    registered = snapshot.cell_infos()
    for found in sorted(snapshot.projects.values(), key=lambda p: p.name):
        if project is not None and found.name != project:
            continue
        for wd in found.workload_deployments:
            if namespace is None or get_str(wd, "metadata.namespace", required=False) == namespace:
                rows.append(_wd_row(snapshot, registered, copies, found.name, wd))
    rows.sort(key=lambda r: (r.project, r.namespace, r.name))
    return StatusView(_clusters(snapshot), tuple(rows))


# ---------------------------------------------------------------------- presenting


def to_json(view: StatusView) -> dict[str, Any]:
    return {
        "clusters": [
            {
                "name": c.name,
                "role": c.role,
                "city": c.city,
                "reachable": c.reachable,
                "registered": c.registered,
                "error": c.error,
            }
            for c in view.clusters
        ],
        "workloadDeployments": [
            {
                "project": r.project,
                "namespace": r.namespace,
                "name": r.name,
                "cityCode": r.city,
                "deleting": r.deleting,
                "desired": r.desired,
                "ready": r.ready,
                "updated": r.updated,
                "condition": None
                if r.condition is None
                else {
                    "type": r.condition.type,
                    "status": r.condition.status,
                    "reason": r.condition.reason,
                    "message": r.condition.message,
                },
                "problem": r.problem,
                "cells": [
                    {
                        "cell": c.cell,
                        "share": c.share,
                        "ordinalStart": c.ordinal_start,
                        "reachable": c.reachable,
                        "copy": str(c.copy),
                        "desired": c.desired,
                        "ready": c.ready,
                        "updated": c.updated,
                    }
                    for c in r.cells
                ],
            }
            for r in view.workload_deployments
        ],
    }


def ordinals_text(start: int, count: int) -> str:
    if count <= 0:
        return "-"
    return str(start) if count == 1 else f"{start}-{start + count - 1}"


def _number(value: int | None) -> str:
    return "?" if value is None else str(value)


_FRESHNESS = {
    CopyState.OBSERVED: Text("observed", style="green"),
    CopyState.PENDING: Text("copy not observed yet", style="yellow"),
    CopyState.MISSING: Text("no copy", style="red"),
    CopyState.UNKNOWN: Text("cell unreachable", style="red"),
}


def render(view: StatusView, *, wide: bool = False) -> RenderableType:
    """The table; `wide` (-o wide) adds the condition's MESSAGE."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in (
        "WORKLOADDEPLOYMENT",
        "CITY",
        "CELL",
        "ORDINALS",
        "DESIRED",
        "READY",
        "UP-TO-DATE",
        "FRESHNESS",
        "REASON",
        *(("MESSAGE",) if wide else ()),
    ):
        table.add_column(column, no_wrap=True)  # never folded: the console is as wide as the table
    for r in view.workload_deployments:
        cond = r.condition
        reason = (
            Text("no status yet", style="yellow") if cond is None else Text(cond.reason, _STYLE.get(cond.status, ""))
        )
        if r.problem:
            reason = Text(f"cannot be placed: {r.problem}", style="red")
        elif r.deleting:
            reason = Text("deleting", style="yellow") + Text(" ") + reason
        table.add_row(
            Text(f"{r.project}/{r.namespace}/{r.name}"),
            Text(r.city),
            Text("(all)"),
            Text(""),
            Text(_number(r.desired)),
            Text(_number(r.ready)),
            Text(_number(r.updated)),
            Text(""),
            reason,
            *((Text(" ".join((cond.message if cond else "").split())),) if wide else ()),
        )
        for c in r.cells:
            table.add_row(
                Text(""),
                Text(""),
                Text(c.cell),
                Text(ordinals_text(c.ordinal_start, c.share)),
                Text(_number(c.desired)),
                Text(_number(c.ready)),
                Text(_number(c.updated)),
                _FRESHNESS[c.copy],
                Text(""),
                *((Text(""),) if wide else ()),
            )
    parts: list[RenderableType] = [table if view.workload_deployments else Text("no WorkloadDeployments found")]
    for cluster in view.clusters:
        if not cluster.reachable:
            what = "unreachable" if cluster.registered else "not registered"
            parts.append(Text(f"{cluster.role} {cluster.name}: {what} ({cluster.error})", style="red"))
    return Group(*parts)
