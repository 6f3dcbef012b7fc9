"""A project WorkloadDeployment's status, aggregated from its copies in the cells
(DESIGN.md §3 "Projector"; issue 12 items 2-3). Pure: the caller gathers one `CellReport`
per share that `plan()` names and writes the returned status only when it differs.

Rules
- Counters (`replicas`, `currentReplicas`, `updatedReplicas`, `readyReplicas`) are summed
  over the fresh cells. A stale cell (unreachable beyond the freshness threshold:
  `stale_since` set) adds nothing: its last numbers are never repeated as if current.
- `desiredReplicas` is what the project WD asks for (`desired_replicas(wd)`), `selector`
  the WD's own (`compute.datumapis.com/workload-deployment-name=<name>`).
- `observedGeneration` becomes the WD's `metadata.generation` only when every target
  cell's copy exists, is this WD's (upstream-uid), carries the desired spec (a partial
  match, `controllerutil.is_subset`: list items too; `replicas` is ignored when the cell's autoscaler owns it)
  and its ordinal start, and its cell has observed it (copy `status.observedGeneration`
  == copy `metadata.generation`). Otherwise the previous value is kept: never claimed
  early, never moved backwards. With no target cell at all it is claimed (the spec has
  been fully acted on: there is nowhere to put it).
- Conditions `Available` and `ReplicasReady` are rolled up from per-cell contributions:
  a fresh cell contributes its copy's own condition; a missing (or not yet this WD's)
  copy contributes False/`AwaitingPropagation`, and so does, for ReplicasReady, a copy
  whose spec the cell has not observed yet; a stale cell contributes Unknown/
  `CellUnreachable` with the time it was last observed. A cell with an empty share (more
  cells than replicas) has no say in either, unless stale or lagging, so it cannot make
  a healthy city look unavailable.
- Worst wins. The status is the three-valued AND of the contributions (False beats
  Unknown beats True: one cell that is certainly not ready makes the city not ready,
  whatever an unreachable one would say); among contributions of that status the worst
  reason by `REASON_ORDER`, then the cell name. The project WD is therefore Available
  only when every cell with a share is: the city is the unit the user asked for, and a
  cell that cannot serve its share is what the user must see. The message lists every
  cell that is not True, worst first (`cell dfw-2: 0/2 instances available
  (InstancesProvisioning)`), so `kubectl get wd` shows the reason and
  `kubectl describe` who is behind.
- No cell in `plan()` → both conditions False/`NoMatchingLocation`, naming the city.
- `ReferencedDataReady`, only for a WD whose template requires ConfigMaps or Secrets
  (`references.expected_referenced_data`; removed when it no longer does): the cells'
  own condition rolled up worst-wins, each cell not True named with its message (the
  missing `Kind/name`s); a copy that has not reported it is AwaitingPropagation.
- `suspended` (issue 20): true when there is a target cell and every target cell's copy
  is this WD's and reports `status.suspended: true` (the cell is its only writer; a stale
  cell's last report counts: it is what the cell was told, and its conditions already say
  it is unreachable). Otherwise — no cell, a copy not there yet, or a mix while the
  annotation travels or a resume is under way — false if the field was ever written (a
  resumed WD says so), absent if not. The mixed case is spelled out by the conditions: a
  suspended cell contributes its copy's False/`Suspended`, which ranks first (the user's
  own decision heads the rollup; the message still names every other cell and reason), so
  the project WD says Suspended from the first cell that stopped until the last one resumed.
- Conditions follow `set_condition_json`: `lastTransitionTime` (= `now`) moves only when
  a condition's status changes, so aggregating again with the same inputs returns an
  identical status and the caller writes nothing. `now` affects nothing else.
"""

from __future__ import annotations

import copy as _copy
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from federation.api.conditionjson import FALSE, TRUE, UNKNOWN, ConditionStatus, find_condition_json, set_condition_json
from federation.api.constants import ORDINAL_START_ANNOTATION, UPSTREAM_UID_ANNOTATION
from federation.api.naming import workload_deployment_selector
from federation.api.reasons import (
    InstanceReadyReason,
    ReferencedDataReason,
    ReplicasReadyReason,
    WorkloadDeploymentAvailableReason,
    WorkloadDeploymentCondition,
)
from federation.fleet.downstream import cell_owns_replicas
from federation.fleet.placement import Share, city_code, desired_replicas
from federation.fleet.references import Referenced, expected_referenced_data
from mcruntime.controllerutil import is_subset
from mcruntime.fields import get_int, get_mapping, get_str, get_str_map, is_object

# A cell has been unreachable beyond the freshness threshold: its contribution is Unknown.
# (Not yet in federation/api/reasons.py.)
CELL_UNREACHABLE = str(WorkloadDeploymentAvailableReason.CELL_UNREACHABLE)

AVAILABLE = str(WorkloadDeploymentCondition.AVAILABLE)
REPLICAS_READY = str(WorkloadDeploymentCondition.REPLICAS_READY)
REFERENCED_DATA_READY = str(WorkloadDeploymentCondition.REFERENCED_DATA_READY)
AWAITING_PROPAGATION = str(ReplicasReadyReason.AWAITING_PROPAGATION)
NO_MATCHING_LOCATION = str(WorkloadDeploymentAvailableReason.NO_MATCHING_LOCATION)
SOURCE_NOT_FOUND = str(ReferencedDataReason.SOURCE_NOT_FOUND)

# Worst first. A suspended cell first: it says what the user asked for. Then a cell may
# report an Instance's blocking reason, so those come in the Instance Ready priority's
# order; then quota; then "we do not know" and "not there yet"; then progress; the
# healthy reasons last. A reason not listed ranks just before
# the healthy ones (specific enough to be shown, not known to be worse than progress).
REASON_ORDER: tuple[str, ...] = (
    WorkloadDeploymentAvailableReason.SUSPENDED,  # asked for: heads the rollup (same word as ReplicasReady's)
    InstanceReadyReason.NETWORK_FAILED_TO_CREATE,
    InstanceReadyReason.IMAGE_UNAVAILABLE,
    InstanceReadyReason.INSTANCE_CRASHING,
    InstanceReadyReason.CONFIGURATION_ERROR,
    ReplicasReadyReason.QUOTA_EXCEEDED,
    WorkloadDeploymentAvailableReason.QUOTA_NOT_GRANTED,
    InstanceReadyReason.PENDING_QUOTA,
    CELL_UNREACHABLE,
    AWAITING_PROPAGATION,
    WorkloadDeploymentAvailableReason.INSTANCES_PROVISIONING,
    InstanceReadyReason.PROVISIONING,
    WorkloadDeploymentAvailableReason.STABLE_INSTANCE_FOUND,
    WorkloadDeploymentAvailableReason.SCALED_TO_ZERO,
    ReplicasReadyReason.REPLICAS_AVAILABLE,
)
_REASON_RANK = {str(reason): 2 * i for i, reason in enumerate(REASON_ORDER)}
_UNLISTED_RANK = _REASON_RANK[WorkloadDeploymentAvailableReason.STABLE_INSTANCE_FOUND] - 1
_STATUS_RANK = {FALSE: 0, UNKNOWN: 1, TRUE: 2}

# metav1.Condition.message maxLength.
MAX_MESSAGE = 32768

COUNTERS = ("replicas", "currentReplicas", "updatedReplicas", "readyReplicas")


@dataclass(frozen=True, slots=True)
class CellReport:
    """What the projector knows of one target cell."""

    share: Share
    copy: Mapping[str, Any] | None  # the downstream copy as cached (None: not there yet)
    desired_copy_spec: Mapping[str, Any]  # downstream_copy(...)["spec"]: what the federator writes
    stale_since: datetime | None = None  # set when unreachable beyond the freshness threshold
    last_seen: datetime | None = None
    # whether `copy` carries that spec, when the caller already knows (`WrittenSpecs`);
    # None: compared here, and only then is `desired_copy_spec` read
    spec_written: bool | None = None


# the comparison rule: `is_subset` unless a caller passes another
Subset = Callable[[Any, Any], bool]


class WrittenSpecs:
    """Whether a copy carries the spec the federator writes for its share (the rule of
    `_unwritten`: `is_subset` of the desired spec, `replicas` left out when the cell's
    autoscaler owns it), remembered per copy spec version and WD spec version, so the deep
    walk is made once per new copy spec or new WD spec, not on every event of the WD (a
    status write, a cell's status report on the copy). Provably the same answer: only the
    copy's spec is compared, and one uid and generation is one spec (the API server moves
    the generation with every spec change, never with status or metadata); the desired spec
    is a function of the WD's spec (one per uid and generation) and the share's size.
    Without a uid or generation it is not remembered. Bounded: the oldest entry goes first."""

    def __init__(self, size: int = 65536) -> None:
        self._size = size
        self._memo: dict[tuple[object, ...], bool] = {}

    def __call__(
        self, wd: Mapping[str, Any], share: Share, copy: Mapping[str, Any], desired: Callable[[], Mapping[str, Any]]
    ) -> bool:
        """`desired()` makes the desired spec (`downstream_copy(...)["spec"]`), called on a miss only."""
        meta, wd_meta = get_mapping(copy, "metadata"), get_mapping(wd, "metadata")
        key = (meta.get("uid"), meta.get("generation"), wd_meta.get("uid"), wd_meta.get("generation"),
               share.replicas)  # fmt: skip
        if not all(key[:4]):
            return _spec_written(wd, desired(), copy)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = _spec_written(wd, desired(), copy)
            if len(self._memo) > self._size:
                del self._memo[next(iter(self._memo))]
        return found

    def __len__(self) -> int:
        return len(self._memo)


def _spec_written(
    wd: Mapping[str, Any], desired: Mapping[str, Any], copy: Mapping[str, Any], subset: Subset = is_subset
) -> bool:
    owned = cell_owns_replicas(wd)
    intent = {k: v for k, v in desired.items() if not (k == "replicas" and owned)}
    if same_json(intent, copy.get("spec")):
        return True  # the copy's spec is the intent itself: a subset, without the walk
    return subset({"spec": intent}, copy)


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value, compared in C: their serializations
    with sorted keys (types kept: `true` is not `1`, `1` not `1.0`). False for anything
    JSON cannot hold. Implies `is_subset(a, b)`; the converse needs the walk (a cell's
    defaults make the copy larger than the intent)."""
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return False


@dataclass(frozen=True, slots=True)
class _Contribution:
    cell: str
    status: ConditionStatus
    reason: str
    message: str

    def rank(self) -> tuple[int, int, str]:
        return (_STATUS_RANK[self.status], _REASON_RANK.get(self.reason, _UNLISTED_RANK), self.cell)


def _json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object, made in C (a status from the API is JSON)."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(value))
    except TypeError:  # not JSON (a caller's own values): the general copy
        return _copy.deepcopy(dict(value))
    return copied


def _rfc3339(when: datetime, what: str) -> str:
    if when.tzinfo is None:
        raise ValueError(f"{what}: a timezone-aware datetime is required, got naive {when.isoformat()}")
    return _utc_second(math.floor(when.timestamp()))


@functools.lru_cache(maxsize=1024)
def _utc_second(epoch_second: int) -> str:
    """The RFC 3339 text of a whole second: every reconcile stamps its `now` and each
    cell's last contact, and the same few seconds recur (`strftime` was ~1% of the manager)."""
    return datetime.fromtimestamp(epoch_second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(status: Mapping[str, Any], key: str, cell: str) -> int:
    value = status.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"cell {cell}: status.{key}: expected a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class _CellView:
    """One report, read once: which case it is and the numbers it brings."""

    report: CellReport
    stale: bool
    present: bool  # the copy exists and is this WD's
    lag: str | None  # why the copy is not current yet (None: current and observed)
    status: Mapping[str, Any]

    @property
    def cell(self) -> str:
        return self.report.share.cell

    def count(self, key: str) -> int:
        return _count(self.status, key, self.cell) if self.present and not self.stale else 0

    def desired(self) -> int:
        if self.present and self.status.get("desiredReplicas") is not None:
            return _count(self.status, "desiredReplicas", self.cell)
        return self.report.share.replicas


def _unwritten(report: CellReport, wd: Mapping[str, Any], subset: Subset) -> str | None:
    """Why the copy does not carry what the federator writes yet (None: it does)."""
    copy = report.copy or {}
    written = report.spec_written
    if written is None:
        written = _spec_written(wd, report.desired_copy_spec, copy, subset)
    if not written:
        return "copy not yet updated to the current spec"
    annotations = get_str_map(copy, "metadata.annotations")
    if annotations.get(ORDINAL_START_ANNOTATION, "0") != str(report.share.ordinal_start):
        return f"copy not yet moved to ordinal start {report.share.ordinal_start}"
    return None


def _lag(report: CellReport, wd: Mapping[str, Any], subset: Subset) -> str | None:
    copy = report.copy or {}
    if (unwritten := _unwritten(report, wd, subset)) is not None:
        return unwritten
    generation = get_int(copy, "metadata.generation")
    observed = get_mapping(copy, "status").get("observedGeneration")
    if generation is None or observed != generation:
        return f"spec not yet observed by the cell (generation {generation}, observed {observed})"
    return None


def copies_written(wd: Mapping[str, Any], reports: Sequence[CellReport], subset: Subset = is_subset) -> bool:
    """Every target cell holds this WD's copy with the current spec and ordinal start,
    observed by its cell or not: what is left to converge is the cells' part. (The status
    projector starts a WD's AwaitingPropagation delay here, so the manager's own backlog
    of copies to write is not taken for a slow cell.)"""
    uid = get_str(wd, "metadata.uid", required=False)
    for report in reports:
        if report.copy is None or not uid:
            return False
        annotations = get_str_map(report.copy, "metadata.annotations")
        if annotations.get(UPSTREAM_UID_ANNOTATION) != uid or _unwritten(report, wd, subset) is not None:
            return False
    return True


def _view(report: CellReport, wd: Mapping[str, Any], subset: Subset) -> _CellView:
    uid = get_str(wd, "metadata.uid", required=False)
    copy = report.copy
    annotations = get_str_map(copy, "metadata.annotations") if copy is not None else {}
    present = copy is not None and bool(uid) and annotations.get(UPSTREAM_UID_ANNOTATION) == uid
    return _CellView(
        report=report,
        stale=report.stale_since is not None,
        present=present,
        lag=_lag(report, wd, subset) if present else "copy not created yet",
        status=get_mapping(copy, "status") if present and copy is not None else {},
    )


def _contribution(view: _CellView, type_: str) -> _Contribution:
    cell, report = view.cell, view.report
    if view.stale:
        seen = _rfc3339(report.last_seen, "last_seen") if report.last_seen is not None else "never"
        return _Contribution(cell, UNKNOWN, CELL_UNREACHABLE, f"cell {cell}: unreachable, last observed {seen}")
    if not view.present:
        why = "copy not created yet" if report.copy is None else "copy still belongs to an earlier WD of this name"
        return _Contribution(cell, FALSE, AWAITING_PROPAGATION, f"cell {cell}: {why}")
    if type_ == REPLICAS_READY and view.lag is not None:
        return _Contribution(cell, FALSE, AWAITING_PROPAGATION, f"cell {cell}: {view.lag}")
    reported = [c for c in view.status.get("conditions") or [] if isinstance(c, dict)]
    cond = find_condition_json(reported, type_)
    if cond is None:
        return _Contribution(cell, FALSE, AWAITING_PROPAGATION, f"cell {cell}: no status reported yet")
    status = cond.get("status")
    reason = str(cond.get("reason") or "Unspecified")
    what = "instances available" if type_ == AVAILABLE else "replicas ready"
    detail = f"{reason}: {cond['message']}" if cond.get("message") else reason
    return _Contribution(
        cell,
        status if status in (TRUE, FALSE) else UNKNOWN,
        reason,
        f"cell {cell}: {view.count('readyReplicas')}/{view.desired()} {what} ({detail})",
    )


def _has_say(view: _CellView, type_: str) -> bool:
    if view.stale or view.report.share.replicas > 0 or view.desired() > 0:
        return True
    return type_ == REPLICAS_READY and view.lag is not None


def _roll_up(views: Sequence[_CellView], type_: str, ready: int, desired: int) -> _Contribution:
    voters = [v for v in views if _has_say(v, type_)] or list(views)
    contributions = sorted((_contribution(v, type_) for v in voters), key=_Contribution.rank)
    worst = contributions[0]
    if worst.status == TRUE:
        what = "instances available" if type_ == AVAILABLE else "replicas ready"
        cells = ", ".join(sorted(v.cell for v in voters))
        if worst.reason == WorkloadDeploymentAvailableReason.SCALED_TO_ZERO:  # nothing desired: say so
            return _Contribution(worst.cell, TRUE, worst.reason, f"no Instances desired (replicas is 0) in {cells}")
        return _Contribution(worst.cell, TRUE, worst.reason, f"{ready}/{desired} {what} in {cells}")
    behind = "; ".join(c.message for c in contributions if c.status != TRUE)
    if len(behind) > MAX_MESSAGE:  # the API rejects longer condition messages
        behind = behind[: MAX_MESSAGE - 1] + "…"
    return _Contribution(worst.cell, worst.status, worst.reason, behind)


def aggregate(
    wd: Mapping[str, Any],
    reports: Sequence[CellReport],
    *,
    now: datetime,
    city: str | None = None,
    unplaced: str | None = None,
    subset: Subset = is_subset,
    missing_sources: Sequence[str] = (),
    referenced: Referenced | None = None,
) -> dict[str, Any]:
    """The project WD's desired `.status`, from one report per share of `plan(wd, ...)`.

    Fields of the previous status this function does not compute are kept. Raises
    PlacementError for an invalid spec (as `plan` does) and ValueError for a malformed
    counter in a cell's status or a naive datetime. `city` is the resolved target city
    (`downstream.target_city`; None reads `spec.cityCode`); `unplaced` is the message of
    a location that resolves to no city (then there are no reports and the conditions
    say NoMatchingLocation with it); `missing_sources` the `"<Kind>/<name>"` of required
    references missing from the project namespace (ReferencedDataReady=False SourceNotFound);
    `referenced` the WD's `references.referenced(wd)`, when the caller has it."""
    name = get_str(wd, "metadata.name", required=False)
    if not name:
        raise ValueError(f"WorkloadDeployment metadata.name: required, got {name!r}")
    desired = desired_replicas(wd)
    if unplaced is None and city is None:
        city = city_code(wd)
    stamp = _rfc3339(now, "now")
    previous = get_mapping(wd, "status")
    status: dict[str, Any] = _json_copy(previous)
    views = [_view(report, wd, subset) for report in reports]

    for key in COUNTERS:
        status[key] = sum(v.count(key) for v in views)
    status["desiredReplicas"] = desired
    status["selector"] = workload_deployment_selector(name)

    generation, held = get_int(wd, "metadata.generation"), previous.get("observedGeneration")
    held = held if isinstance(held, int) and not isinstance(held, bool) else None
    observed = held
    if isinstance(generation, int) and all(not v.stale and v.present and v.lag is None for v in views):
        observed = generation if held is None else max(generation, held)
    if observed is None:
        status.pop("observedGeneration", None)
    else:
        status["observedGeneration"] = observed

    conditions = [dict(c) for c in previous.get("conditions") or [] if is_object(c)]
    if not views:
        nowhere = unplaced if unplaced is not None else f"no registered cell serves city {city}"
        rolled = {t: _Contribution("", FALSE, NO_MATCHING_LOCATION, nowhere) for t in (AVAILABLE, REPLICAS_READY)}
    else:
        ready = status["readyReplicas"]
        rolled = {t: _roll_up(views, t, ready, desired) for t in (AVAILABLE, REPLICAS_READY)}
    expected = referenced.expected if referenced is not None else expected_referenced_data(wd)
    data_ready = _referenced_data(views, wd, missing_sources) if expected is not None else None
    if data_ready is not None:
        rolled[REFERENCED_DATA_READY] = data_ready
    else:  # the template references nothing (any more): no such condition
        conditions = [c for c in conditions if c.get("type") != REFERENCED_DATA_READY]
    for type_, result in rolled.items():
        set_condition_json(
            conditions, type_, result.status, result.reason, result.message, observed_generation=observed, now=stamp
        )
    status["conditions"] = conditions
    suspended = bool(views) and all(v.present and v.status.get("suspended") is True for v in views)
    if suspended or "suspended" in status:
        status["suspended"] = suspended
    return status


def _referenced_data(
    views: Sequence[_CellView], wd: Mapping[str, Any], missing_sources: Sequence[str]
) -> _Contribution:
    """ReferencedDataReady of a WD whose template requires ConfigMaps or Secrets (the
    caller asks only then): a source missing from the project namespace first
    (SourceNotFound, naming each: no cell can ever get it); else the cells' own (a copy
    without it yet, or none at all, is AwaitingPropagation), worst wins; the message names
    every cell that is not True with its own message (the missing objects)."""
    if missing_sources:
        namespace = get_str(wd, "metadata.namespace", required=False)
        return _Contribution("", FALSE, SOURCE_NOT_FOUND,
                             f"{', '.join(missing_sources)} not found in project namespace {namespace}")  # fmt: skip
    if not views:
        return _Contribution("", FALSE, AWAITING_PROPAGATION, "no cell to propagate the referenced data to")
    contributions = []
    for view in views:
        reported = [c for c in view.status.get("conditions") or [] if isinstance(c, dict)]
        cond = find_condition_json(reported, REFERENCED_DATA_READY) if view.present and not view.stale else None
        if view.stale:
            contributions.append(_Contribution(view.cell, UNKNOWN, CELL_UNREACHABLE, f"cell {view.cell}: unreachable"))
        elif cond is None:
            contributions.append(_Contribution(view.cell, FALSE, AWAITING_PROPAGATION,
                                               f"cell {view.cell}: not reported yet"))  # fmt: skip
        else:
            value = cond.get("status")
            contributions.append(_Contribution(view.cell, value if value in (TRUE, FALSE) else UNKNOWN,
                                               str(cond.get("reason") or "Unspecified"),
                                               f"cell {view.cell}: {cond.get('message') or ''}"))  # fmt: skip
    contributions.sort(key=_Contribution.rank)
    worst = contributions[0]
    if worst.status == TRUE:
        cells = ", ".join(sorted(c.cell for c in contributions))
        return _Contribution(worst.cell, TRUE, worst.reason, f"every referenced companion is present in {cells}")
    behind = "; ".join(c.message for c in contributions if c.status != TRUE)
    return _Contribution(worst.cell, worst.status, worst.reason, behind[:MAX_MESSAGE])
