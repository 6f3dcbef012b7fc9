"""The federation's invariants, checked over one `Snapshot` (issue 15 item 1). Pure: no
I/O; the tests feed it snapshots built in memory, `federation-manager check` one it read.

Invariants (each violation is a `Violation` of one kind, its message naming the objects)
- `missing-copy`, `unplanned-copy`, `wrong-share`, `copy-drift`: every project WD that is
  not being deleted has exactly its planned copies (`placement.plan`, the federator's
  own function, with `current` read from its copies) in exactly the planned cells, each
  with the planned share (ordinal start; replicas unless the cell's autoscaler owns
  them) and the project WD's spec.
- `orphan-copy`: every copy has a live upstream: its labels name a registered project
  whose WD of that namespace and name exists with the copy's upstream UID.
- `duplicate-instance`: an Instance name exists in at most one cell for a project
  namespace (projections of all of them land in that one namespace).
- `missing-projection`, `extra-projection`, `stale-projection`: a WD's projections and its
  cells' Instances match one to one by name, and each projection names the cell it
  mirrors and carries that Instance's status.
- `status-mismatch`: the project WD's status equals `federation.fleet.aggregate` over its cells
  (`lastTransitionTime` aside: it records when, not what).
- `stuck-finalizer`: the federator's finalizer on a deleting WD while no cell holds a
  copy; the workload controller's on a deleting Workload that controls no WD.
- `missing-companion`: every ConfigMap/Secret a live copy expects (its
  `expected-referenced-data`) whose source exists in the project namespace is in the
  copy's cell namespace (a missing source is the user's to fix: the WD says so).
- `unreferenced-companion`: every companion in a cell namespace is referenced (optional
  references too) by a live copy of a live WD in that namespace.

What cannot be seen is not a violation: a cell or project that was not read makes the
checks that depend on it `unchecked` (listed with the reason) — in particular copies in
an unreachable cell are "pending sweep", as the federator's orphan sweep removes them
when the cell is engaged again.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from federation.api.constants import Annotation, Finalizer
from federation.api.naming import downstream_namespace_name
from federation.fleet.aggregate import CellReport, aggregate
from federation.fleet.downstream import (
    cell_owns_replicas,
    downstream_copy,
    planned_shares,
    target_city,
    upstream_identity,
)
from federation.fleet.placement import PlacementError, Share
from federation.fleet.projection import CELL_ANNOTATION, Source, choose, holds_ordinal
from federation.fleet.references import EXPECTED_ANNOTATION, parse_expected, references
from federation.ops.snapshot import CellCopy, ProjectSnapshot, Snapshot, controller_uid
from mcruntime.controllerutil import is_subset
from mcruntime.fields import get_list, get_mapping, get_str, get_str_map, is_deleting
from mcruntime.objects import Obj


class ViolationKind(enum.StrEnum):
    MISSING_COPY = "missing-copy"
    UNPLANNED_COPY = "unplanned-copy"
    WRONG_SHARE = "wrong-share"
    COPY_DRIFT = "copy-drift"
    ORPHAN_COPY = "orphan-copy"
    DUPLICATE_INSTANCE = "duplicate-instance"
    MISSING_PROJECTION = "missing-projection"
    EXTRA_PROJECTION = "extra-projection"
    STALE_PROJECTION = "stale-projection"
    STATUS_MISMATCH = "status-mismatch"
    STUCK_FINALIZER = "stuck-finalizer"
    MISSING_COMPANION = "missing-companion"
    UNREFERENCED_COMPANION = "unreferenced-companion"


@dataclass(frozen=True, slots=True)
class Violation:
    kind: ViolationKind
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True, slots=True)
class Report:
    violations: tuple[Violation, ...]
    unchecked: tuple[str, ...]  # what could not be verified, and why

    @property
    def ok(self) -> bool:
        return not self.violations


def check(snapshot: Snapshot) -> Report:
    """Every invariant over `snapshot`: the violations found and what was left unchecked."""
    checker = _Checker(snapshot)
    checker.run()
    return Report(tuple(dict.fromkeys(checker.violations)), tuple(dict.fromkeys(checker.unchecked)))


def violations(snapshot: Snapshot) -> list[Violation]:
    return list(check(snapshot).violations)


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in get_list(obj, "metadata.finalizers")]


def _uid(obj: Mapping[str, Any]) -> str:
    return get_str(obj, "metadata.uid", required=False)


def _ns(obj: Mapping[str, Any]) -> str:
    return get_str(obj, "metadata.namespace", required=False)


def _strip_transition_times(status: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(status)
    out["conditions"] = {
        str(c.get("type")): {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    }
    return out


def status_differences(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Field by field (conditions by type, `lastTransitionTime` ignored): `actual` vs the
    aggregate `expected`."""
    want, have = _strip_transition_times(expected), _strip_transition_times(actual)
    found: list[str] = []
    for key in sorted(set(want) | set(have)):
        if key == "conditions":
            for type_ in sorted(set(want[key]) | set(have[key])):
                w, h = want[key].get(type_), have[key].get(type_)
                if w != h:
                    found.append(f"condition {type_} is {_condition_text(h)}, the aggregate says {_condition_text(w)}")
        elif want.get(key) != have.get(key):
            found.append(f"{key} is {have.get(key)!r}, the aggregate says {want.get(key)!r}")
    return found


def carries_status(projection: Mapping[str, Any], instance: Mapping[str, Any]) -> bool:
    """Whether a projection carries its Instance's status: every status field of the
    Instance, conditions matched by type. Fields only the projection has are allowed:
    the API server defaults an Instance's conditions when the projection is created, and
    the projector's server-side apply of the status leaves the ones the cell never set."""
    have, want = _mapping(projection.get("status")), _mapping(instance.get("status"))
    for key, value in want.items():
        if key != "conditions":
            if have.get(key) != value:
                return False
            continue
        shown = _by_type(have.get("conditions"))
        if any(shown.get(type_) != cond for type_, cond in _by_type(value).items()):
            return False
    return True


def _by_type(conditions: Any) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in conditions or [] if isinstance(c, Mapping)}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _condition_text(cond: Mapping[str, Any] | None) -> str:
    if cond is None:
        return "missing"
    text = f"{cond.get('status')}/{cond.get('reason')}"
    return f"{text} ({cond.get('message')!r})" if cond.get("message") else text


@dataclass
class _Checker:
    snap: Snapshot
    violations: list[Violation] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cells = self.snap.cell_infos()
        self.copies = list(self.snap.copies())
        self.by_upstream = self.snap.copies_by_upstream()
        # Instances by where they are and who controls them: (cluster, namespace, controller UID)
        self.controlled: dict[tuple[str, str, str], list[Obj]] = {}
        for cell in self.snap.cells.values():
            for inst in cell.instances:
                self.controlled.setdefault((f"cell/{cell.name}", _ns(inst), controller_uid(inst)), []).append(inst)
        self.wds: dict[tuple[str, str, str], Obj] = {}
        for project in self.snap.projects.values():
            for inst in project.instances:
                self.controlled.setdefault((f"project/{project.name}", _ns(inst), controller_uid(inst)), []).append(
                    inst
                )
            for wd in project.workload_deployments:
                self.wds[(project.name, _ns(wd), get_str(wd, "metadata.name", required=False))] = wd

    def add(self, kind: ViolationKind, message: str) -> None:
        self.violations.append(Violation(kind, message))

    def read(self, cell: str) -> bool:
        found = self.snap.cells.get(cell)
        return found is not None and found.reachable

    # ------------------------------------------------------------------ the walk
    def run(self) -> None:
        snap = self.snap
        if not snap.management.reachable:
            self.unchecked.append(
                f"management cluster {snap.source} not read ({snap.management.error}): nothing checked"
            )
            return
        for project in snap.projects.values():
            if not project.reachable:
                self.unchecked.append(
                    f"project {project.name} not read ({project.health.error}): its "
                    "WorkloadDeployments and the copies that name it are not checked"
                )
        for cell in snap.cells.values():
            if not cell.reachable:
                self.unchecked.append(
                    f"cell {cell.name} not read ({cell.health.error}): its copies count as pending "
                    "sweep; shares and status that depend on it are not checked"
                )
        for project in snap.projects.values():
            if project.reachable:
                for wd in sorted(
                    project.workload_deployments, key=lambda o: (_ns(o), get_str(o, "metadata.name", required=False))
                ):
                    self.workload_deployment(project, wd)
                for workload in sorted(
                    project.workloads, key=lambda o: (_ns(o), get_str(o, "metadata.name", required=False))
                ):
                    self.workload_finalizer(project, workload)
        self.orphans()
        self.duplicate_instances()
        self.companions()

    def workload_deployment(self, project: ProjectSnapshot, wd: Obj) -> None:
        ns, name, uid = _ns(wd), get_str(wd, "metadata.name", required=False), _uid(wd)
        what = f"project {project.name}: WorkloadDeployment {ns}/{name}"
        named = self.by_upstream.get((project.name, ns, name), [])
        if is_deleting(wd):
            self.federator_finalizer(what, wd, named)
            return
        ours = [c for c in named if c.upstream_uid == uid]
        try:
            target = target_city(wd, self.snap.locations)
            shares = planned_shares(wd, self.cells, ((c.cell, c.obj) for c in named), self.snap.locations)
        except PlacementError as exc:
            self.unchecked.append(f"{what}: cannot be placed ({exc}); its copies are not checked")
            return
        project_ns = project.namespace(ns)
        namespace = downstream_namespace_name(_uid(project_ns)) if project_ns is not None and _uid(project_ns) else ""
        try:
            desired = {
                s.cell: downstream_copy(
                    project.name,
                    wd,
                    s,
                    namespace or "ns-unknown",
                    include_replicas=not cell_owns_replicas(wd),
                    target=target,
                )["spec"]
                for s in shares
            }
        except ValueError as exc:
            self.unchecked.append(f"{what}: {exc}; not checked")
            return
        self.planned_copies(what, wd, shares, ours, desired)
        self.projections(project, what, wd, shares, ours)
        self.status(what, wd, shares, ours, desired)

    # ------------------------------------------------------------------ copies
    def planned_copies(
        self, what: str, wd: Obj, shares: Sequence[Share], ours: Sequence[CellCopy], desired: Mapping[str, Obj]
    ) -> None:
        autoscaled = cell_owns_replicas(wd)
        planned = {s.cell for s in shares}
        for share in shares:
            if not self.read(share.cell):
                continue  # listed as unchecked
            found = [c for c in ours if c.cell == share.cell]
            plan_text = f"{_replicas(share.replicas)} from ordinal {share.ordinal_start}"
            if not found:
                self.add(ViolationKind.MISSING_COPY, f"{what}: cell {share.cell} has no copy (planned: {plan_text})")
                continue
            if len(found) > 1:
                where = ", ".join(sorted(c.namespace for c in found))
                self.add(
                    ViolationKind.UNPLANNED_COPY,
                    f"{what}: cell {share.cell} holds {len(found)} copies (namespaces {where}); one is planned",
                )
            for copy in found:
                start = get_str_map(copy.obj, "metadata.annotations").get(Annotation.ORDINAL_START, "0")
                replicas = get_mapping(copy.obj, "spec").get("replicas")
                wrong = []
                if start != str(share.ordinal_start):
                    wrong.append(f"ordinal start {start}")
                if not autoscaled and replicas != share.replicas:
                    wrong.append(_replicas(replicas))
                if wrong:
                    self.add(
                        ViolationKind.WRONG_SHARE,
                        f"{what}: the copy in cell {share.cell} ({copy.namespace}) "
                        f"has {' and '.join(wrong)}; planned: {plan_text}",
                    )
                spec = {k: v for k, v in desired[share.cell].items() if k != "replicas"}
                if not is_subset({"spec": spec}, copy.obj):
                    self.add(
                        ViolationKind.COPY_DRIFT,
                        f"{what}: the copy in cell {share.cell} ({copy.namespace}) "
                        "does not carry the project WorkloadDeployment's spec",
                    )
        for copy in ours:
            if copy.cell not in planned:
                self.add(
                    ViolationKind.UNPLANNED_COPY,
                    f"{what}: cell {copy.cell} holds a copy ({copy.namespace}/"
                    f"{copy.name}) but the plan places nothing there",
                )

    def orphans(self) -> None:
        for copy in self.copies:
            where = f"cell {copy.cell}: copy {copy.namespace}/{copy.name}"
            up = copy.upstream
            if up is None:
                self.add(
                    ViolationKind.ORPHAN_COPY,
                    f"{where} names no project WorkloadDeployment (upstream labels or "
                    "annotation missing or contradictory)",
                )
                continue
            upstream = f"{up.project}/{up.namespace}/{up.name}"
            project = self.snap.projects.get(up.project)
            if project is None:
                self.add(ViolationKind.ORPHAN_COPY, f"{where} belongs to project {up.project}, which is not registered")
                continue
            if not project.reachable:
                continue  # listed as unchecked
            wd = self.wds.get((up.project, up.namespace, up.name))
            if wd is None:
                self.add(ViolationKind.ORPHAN_COPY, f"{where}: its WorkloadDeployment {upstream} does not exist")
            elif _uid(wd) != copy.upstream_uid:
                self.add(
                    ViolationKind.ORPHAN_COPY,
                    f"{where} was made from an earlier WorkloadDeployment {upstream} "
                    f"(upstream uid {copy.upstream_uid or 'missing'}, the live one "
                    f"is {_uid(wd)})",
                )

    # ------------------------------------------------------------------ referenced data
    def companions(self) -> None:
        """`missing-companion` and `unreferenced-companion`, per reachable cell namespace
        whose project was read."""
        referenced: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for copy in self.copies:
            up = copy.upstream
            project = self.snap.projects.get(up.project) if up is not None else None
            wd = self.wds.get((up.project, up.namespace, up.name)) if up is not None else None
            if (
                up is None
                or project is None
                or not project.reachable
                or is_deleting(copy.obj)
                or not self.read(copy.cell)
            ):
                continue
            if wd is None or _uid(wd) != copy.upstream_uid or is_deleting(wd):
                continue  # an orphan or one on its way out: nothing of it is needed
            refs = {(r.kind, r.name) for r in references(copy.obj)}
            referenced.setdefault((copy.cell, copy.namespace), set()).update(refs)
            sources = {(get_str(o, "kind"), get_str(o, "metadata.name")) for o in project.sources
                       if _ns(o) == up.namespace}  # fmt: skip
            present = {(get_str(o, "kind"), get_str(o, "metadata.name")) for o in self.snap.cells[copy.cell].companions
                       if _ns(o) == copy.namespace}  # fmt: skip
            try:
                expected = parse_expected(
                    get_str_map(copy.obj, "metadata.annotations").get(EXPECTED_ANNOTATION) or "[]"
                )
            except ValueError as exc:
                expected = []
                self.add(ViolationKind.MISSING_COMPANION, f"cell {copy.cell}: copy {copy.namespace}/{copy.name}: {exc}")
            for kind, name in expected:
                if (kind, name) in sources and (kind, name) not in present:
                    where = f"cell {copy.cell}: {kind} {copy.namespace}/{name}"
                    self.add(ViolationKind.MISSING_COMPANION,
                             f"{where}, expected by copy {copy.name} ({up.project}), is not there")  # fmt: skip
        for cell in self.snap.cells.values():
            if not cell.reachable:
                continue
            for companion in cell.companions:
                key = (get_str(companion, "kind"), get_str(companion, "metadata.name"))
                namespace = cell.namespace(_ns(companion))
                upstream = _upstream_of_namespace(namespace) if namespace is not None else None
                project = self.snap.projects.get(upstream[0]) if upstream is not None else None
                if project is not None and not project.reachable:
                    continue  # its WDs were not read: listed as unchecked
                if key not in referenced.get((cell.name, _ns(companion)), set()):
                    self.add(ViolationKind.UNREFERENCED_COMPANION, f"cell {cell.name}: {key[0]} "
                             f"{_ns(companion)}/{key[1]} is referenced by no live copy in its namespace")  # fmt: skip

    # ------------------------------------------------------------------ Instances
    def duplicate_instances(self) -> None:
        holders: dict[tuple[str, str, str], list[str]] = {}
        for cell in self.snap.cells.values():
            namespaces = {get_str(ns, "metadata.name", required=False): ns for ns in cell.namespaces}
            for inst in cell.instances:
                copy_ns = namespaces.get(_ns(inst))
                up = None if copy_ns is None else _upstream_of_namespace(copy_ns)
                if up is not None:
                    holders.setdefault((*up, get_str(inst, "metadata.name", required=False)), []).append(
                        f"{cell.name} ({cell.city_code or 'no city'})"
                    )
        for (project, namespace, name), cells in sorted(holders.items()):
            if len(cells) > 1:
                self.add(
                    ViolationKind.DUPLICATE_INSTANCE,
                    f"project {project} namespace {namespace}: Instance {name} "
                    f"exists in cells {', '.join(sorted(cells))}",
                )

    def projections(
        self, project: ProjectSnapshot, what: str, wd: Obj, shares: Sequence[Share], ours: Sequence[CellCopy]
    ) -> None:
        ns, uid = _ns(wd), _uid(wd)
        projections = {
            get_str(p, "metadata.name", required=False): p
            for p in self.controlled.get((f"project/{project.name}", ns, uid), [])
            if not is_deleting(p)
        }
        sources: dict[str, list[Source]] = {}
        for copy in ours:
            for inst in self.controlled.get((f"cell/{copy.cell}", copy.namespace, copy.uid), []):
                sources.setdefault(get_str(inst, "metadata.name", required=False), []).append(
                    Source(copy.cell, inst, wd, holds_ordinal(copy.obj, inst))
                )
        unread = sorted(s.cell for s in shares if not self.read(s.cell))
        for name in sorted(set(sources) - set(projections)):
            cells = ", ".join(sorted(s.cell for s in sources[name]))
            self.add(
                ViolationKind.MISSING_PROJECTION,
                f"{what}: Instance {name} in cell {cells} has no projection in project {project.name}",
            )
        for name in sorted(set(projections) - set(sources)):
            claimed = get_str_map(projections[name], "metadata.annotations").get(CELL_ANNOTATION, "")
            if unread or (claimed and not self.read(claimed)):
                continue  # the Instance may be in a cell that was not read
            self.add(
                ViolationKind.EXTRA_PROJECTION,
                f"{what}: projection {ns}/{name} (cell {claimed or 'unnamed'}) mirrors no Instance in any cell",
            )
        for name in sorted(set(projections) & set(sources)):
            source = choose(sources[name])
            assert source is not None  # every name in `sources` has at least one
            shown = projections[name]
            claimed = get_str_map(shown, "metadata.annotations").get(CELL_ANNOTATION, "")
            if claimed != source.cell:
                self.add(
                    ViolationKind.STALE_PROJECTION,
                    f"{what}: projection {ns}/{name} names cell {claimed or 'none'}, the Instance is in {source.cell}",
                )
            elif not carries_status(shown, source.instance):
                self.add(
                    ViolationKind.STALE_PROJECTION,
                    f"{what}: projection {ns}/{name} does not carry the status of the Instance in cell {source.cell}",
                )

    # ------------------------------------------------------------------ status
    def status(
        self, what: str, wd: Obj, shares: Sequence[Share], ours: Sequence[CellCopy], desired: Mapping[str, Obj]
    ) -> None:
        unread = [s.cell for s in shares if not self.read(s.cell)]
        if unread:
            self.unchecked.append(f"{what}: status not checked (cells {', '.join(unread)} not read)")
            return
        by_cell = {c.cell: c.obj for c in ours}
        reports = [CellReport(s, by_cell.get(s.cell), desired[s.cell]) for s in shares]
        try:
            expected = aggregate(
                wd, reports, now=self.snap.taken_at, city=target_city(wd, self.snap.locations).city_code
            )
        except ValueError as exc:
            self.unchecked.append(f"{what}: status not checked ({exc})")
            return
        found = status_differences(expected, wd.get("status") or {})
        if found:
            self.add(
                ViolationKind.STATUS_MISMATCH, f"{what}: status is not the aggregate of its cells: {'; '.join(found)}"
            )

    # ------------------------------------------------------------------ finalizers
    def federator_finalizer(self, what: str, wd: Obj, named: Iterable[CellCopy]) -> None:
        if Finalizer.FEDERATOR not in _finalizers(wd) or any(True for _ in named):
            return  # no finalizer, or a copy still exists: a live reason
        unread = [c.name for c in self.snap.unreachable_cells()]
        if unread:
            self.unchecked.append(
                f"{what} is being deleted and holds {Finalizer.FEDERATOR}: not checked (cells "
                f"{', '.join(unread)} not read; a copy there holds it until the grace ends)"
            )
            return
        self.add(
            ViolationKind.STUCK_FINALIZER,
            f"{what} is being deleted and holds {Finalizer.FEDERATOR}, but no cell holds a copy",
        )

    def workload_finalizer(self, project: ProjectSnapshot, workload: Obj) -> None:
        if not is_deleting(workload) or Finalizer.WORKLOAD_CONTROLLER not in _finalizers(workload):
            return
        uid = _uid(workload)
        if any(controller_uid(wd) == uid for wd in project.workload_deployments):
            return
        self.add(
            ViolationKind.STUCK_FINALIZER,
            f"project {project.name}: Workload {_ns(workload)}/{get_str(workload, 'metadata.name', required=False)} "
            "is being deleted and holds "
            f"{Finalizer.WORKLOAD_CONTROLLER}, but controls no WorkloadDeployment",
        )


def _replicas(n: Any) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


def _upstream_of_namespace(namespace: Obj) -> tuple[str, str] | None:
    ref = upstream_identity(None, namespace)
    return None if ref is None else (ref.project, ref.namespace)
