"""What `federation-manager plan -f WD.yaml` shows: where a WorkloadDeployment would land
and what would change against what is deployed. Pure over one `Snapshot`.

The shares are `placement.plan` itself — the function the federator runs — over the
registered cells, with `current` read from the copies of the deployed WD of that name
(matched by the upstream UID, as the federator matches them). So what `plan` shows is
what the federator would write.

Per cell (`Action`): `create` (no copy yet), `re-divide` (the copy's share or ordinal
start moves; with autoscaling only the start, the cell owns the replica count),
`update` (same share, the spec changes), `keep` (nothing to write), `replace` (the cell
holds a copy of an earlier WD of that name: it is removed and a new one made), `remove`
(a copy in a cell the plan no longer names), `unknown` (the cell was not read).

Input checks (`parse_workload_deployment`): one YAML document, a
`compute.datumapis.com/v1alpha` WorkloadDeployment that the API model accepts; each
failure is an `InputError` naming the file and the field."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from federation.api.constants import API_VERSION, Kind
from federation.api.strictfields import strict_decoding_error
from federation.api.workloaddeployment import WorkloadDeployment
from federation.fleet.downstream import (
    cell_owns_replicas,
    copy_ordinals,
    current_ordinals,
    downstream_copy,
    planned_shares,
    target_city,
)
from federation.fleet.placement import desired_replicas, moves
from federation.ops.snapshot import CellCopy, Snapshot
from federation.ops.statusview import ordinals_text
from mcruntime.controllerutil import is_subset
from mcruntime.fields import get_mapping, get_str
from mcruntime.objects import Obj

# downstream_copy wants a UID and a namespace; only the spec it builds is compared here
_PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"
_PLACEHOLDER_NAMESPACE = "ns-planned"


class InputError(ValueError):
    """The WorkloadDeployment given to `plan` is unusable; the message is one line."""


class Action(enum.StrEnum):
    CREATE = "create"
    REDIVIDE = "re-divide"
    UPDATE = "update"
    KEEP = "keep"
    REPLACE = "replace"
    REMOVE = "remove"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class CellPlan:
    cell: str
    reachable: bool
    replicas: int | None  # the planned share (None: the cell gets nothing)
    ordinal_start: int | None
    current: range | None  # the ordinals the deployed copy holds (None: no copy, or not read)
    action: Action


@dataclass(frozen=True, slots=True)
class PlanView:
    project: str
    namespace: str
    name: str
    city: str
    replicas: int
    autoscaled: bool
    deployed: bool  # a WD of this name exists in the project namespace
    cells: tuple[CellPlan, ...]  # planned cells in ordinal order, then removals by name
    moves: tuple[str, ...] = ()  # "moves api-2 from dfw-2 to dfw-1": running Instances recreated elsewhere

    def count(self, action: Action) -> int:
        return sum(1 for c in self.cells if c.action is action)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return _one_line(str(exc))
    return f"line {mark.line + 1}, column {mark.column + 1}: {_one_line(str(problem))}"


def parse_workload_deployment(text: str, source: str) -> dict[str, Any]:
    """The one WorkloadDeployment in `text` (YAML or JSON), checked against the API model."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None
    if len(docs) != 1:
        raise InputError(f"{source}: holds {len(docs)} YAML documents; give exactly one WorkloadDeployment")
    doc = docs[0]
    if not isinstance(doc, dict):
        raise InputError(f"{source}: not a Kubernetes object (expected a YAML mapping, got {type(doc).__name__})")
    if doc.get("kind") != Kind.WORKLOAD_DEPLOYMENT:
        raise InputError(f"{source}: kind {doc.get('kind')!r} is not a WorkloadDeployment")
    if doc.get("apiVersion") != API_VERSION:
        raise InputError(f"{source}: apiVersion {doc.get('apiVersion')!r}: expected {API_VERSION}")
    try:
        get_str(doc, "metadata.name")
    except ValueError as exc:
        raise InputError(f"{source}: {exc}") from None
    strict = strict_decoding_error(doc)  # unknown fields, as the server's strict validation reports them
    if strict is not None:
        raise InputError(f"{source}: {strict}")
    try:
        WorkloadDeployment.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{source}: {where}: {first['msg']}{more}") from None
    if doc.get("spec") is None:
        # The API server accepts a WorkloadDeployment without a spec (as upstream); it places nowhere.
        raise InputError(f"{source}: spec: required to plan a placement")
    return doc


def _action(share_replicas: int, share_start: int, copy: CellCopy, desired_spec: Obj, autoscaled: bool) -> Action:
    held = copy_ordinals(copy.obj)
    start = held.start if held is not None else None
    if start != share_start or (not autoscaled and (held is None or len(held) != share_replicas)):
        return Action.REDIVIDE
    spec = {k: v for k, v in desired_spec.items() if k != "replicas"}
    return Action.KEEP if is_subset({"spec": spec}, copy.obj) else Action.UPDATE


def plan_view(snapshot: Snapshot, project: str, wd: Mapping[str, Any], namespace: str) -> PlanView:
    """The plan of `wd` (parsed, e.g. by `parse_workload_deployment`) for `project`'s
    `namespace`. Raises PlacementError for a WD placement rejects."""
    found = snapshot.projects[project]
    name = get_str(wd, "metadata.name", required=False)
    deployed = found.workload_deployment(namespace, name)
    uid = get_str(deployed, "metadata.uid", required=False) if deployed is not None else ""
    named = snapshot.copies_of(project, namespace, name)
    ours = {c.cell: c for c in named if uid and c.upstream_uid == uid}
    placed = {**wd, "metadata": {**get_mapping(wd, "metadata"), "namespace": namespace, "uid": uid or _PLACEHOLDER_UID}}
    pairs = [(c.cell, c.obj) for c in named]
    target = target_city(placed, snapshot.locations)
    shares = planned_shares(placed, snapshot.cell_infos(), pairs, snapshot.locations)
    moved = tuple(m.describe(name) for m in moves(current_ordinals(placed, pairs), shares))
    autoscaled = cell_owns_replicas(wd)
    cells: list[CellPlan] = []
    for share in shares:
        cell = snapshot.cells.get(share.cell)
        copy = ours.get(share.cell)
        current_range = copy_ordinals(copy.obj) if copy is not None else None
        if cell is None or not cell.reachable:
            action = Action.UNKNOWN
        elif copy is not None:
            desired = downstream_copy(project, placed, share, _PLACEHOLDER_NAMESPACE, include_replicas=not autoscaled,
                                      target=target)  # fmt: skip
            action = _action(share.replicas, share.ordinal_start, copy, desired["spec"], autoscaled)
        elif (stale := next((c for c in named if c.cell == share.cell), None)) is not None:
            action, current_range = Action.REPLACE, copy_ordinals(stale.obj)
        else:
            action = Action.CREATE
        cells.append(CellPlan(share.cell, share.reachable, share.replicas, share.ordinal_start, current_range, action))
    planned = {s.cell for s in shares}
    for copy in sorted(named, key=lambda c: (c.cell, c.namespace)):
        if copy.cell not in planned:
            cells.append(CellPlan(copy.cell, True, None, None, copy_ordinals(copy.obj), Action.REMOVE))
    return PlanView(
        project=project,
        namespace=namespace,
        name=name,
        city=target.city_code,
        replicas=desired_replicas(wd),
        autoscaled=autoscaled,
        deployed=deployed is not None,
        cells=tuple(cells),
        moves=moved,
    )


# ---------------------------------------------------------------------- presenting


def _range_json(r: range | None) -> dict[str, int] | None:
    return None if r is None else {"replicas": len(r), "ordinalStart": r.start}


def to_json(view: PlanView) -> dict[str, Any]:
    return {
        "project": view.project,
        "namespace": view.namespace,
        "name": view.name,
        "cityCode": view.city,
        "replicas": view.replicas,
        "autoscaled": view.autoscaled,
        "deployed": view.deployed,
        "cells": [
            {
                "cell": c.cell,
                "reachable": c.reachable,
                "replicas": c.replicas,
                "ordinalStart": c.ordinal_start,
                "current": _range_json(c.current),
                "action": str(c.action),
            }
            for c in view.cells
        ],
        "moves": list(view.moves),
    }


def summary(view: PlanView) -> str:
    if not view.cells:
        return (
            f"no registered cell serves city {view.city}: nothing would be placed (Available=False/NoMatchingLocation)"
        )
    changes = [
        f"{verb} {n}"
        for verb, action in (
            ("create", Action.CREATE),
            ("re-divide", Action.REDIVIDE),
            ("update", Action.UPDATE),
            ("replace", Action.REPLACE),
            ("remove", Action.REMOVE),
        )
        if (n := view.count(action))
    ]
    tail = [f"{n} unchanged" for n in [view.count(Action.KEEP)] if n]
    tail += [f"{n} in cells not read" for n in [view.count(Action.UNKNOWN)] if n]
    head = f"would {', '.join(changes)}" if changes else "nothing would change"
    return "; ".join([head, *tail])


_ACTION_STYLE = {
    Action.CREATE: "green",
    Action.REDIVIDE: "yellow",
    Action.UPDATE: "yellow",
    Action.REPLACE: "yellow",
    Action.REMOVE: "red",
    Action.UNKNOWN: "red",
    Action.KEEP: "",
}


def render(view: PlanView) -> RenderableType:
    deployed = "deployed" if view.deployed else "not deployed yet"
    scaled = ", replicas owned by each cell's autoscaler after creation" if view.autoscaled else ""
    head = Text(
        f"WorkloadDeployment {view.project}/{view.namespace}/{view.name}: {view.replicas} replicas in city "
        f"{view.city} ({deployed}{scaled})"
    )
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("CELL", "REPLICAS", "ORDINALS", "NOW", "ACTION"):
        table.add_column(column, no_wrap=True)
    for c in view.cells:
        share = "-" if c.replicas is None else str(c.replicas)
        ordinals = "-" if c.replicas is None or c.ordinal_start is None else ordinals_text(c.ordinal_start, c.replicas)
        if c.action is Action.UNKNOWN:
            now = "?"
        else:
            now = "no copy" if c.current is None else ordinals_text(c.current.start, len(c.current))
        cell = Text(c.cell) if c.reachable else Text(f"{c.cell} (unreachable)", style="red")
        table.add_row(cell, Text(share), Text(ordinals), Text(now), Text(str(c.action), style=_ACTION_STYLE[c.action]))
    parts: list[RenderableType] = [head]
    if view.cells:
        parts.append(table)
    parts.extend(Text(line, style="yellow") for line in view.moves)
    parts.append(Text(summary(view)))
    return Group(*parts)
