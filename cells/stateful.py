"""Ordered, one-at-a-time Instance control of a WorkloadDeployment, as a pure decision.

`next_action(wanted, current_hash, observed, *, suspended=False)` looks at the Instances
that exist and returns the ONE thing the controller should do now (or None when everything
is as wanted). The controller performs it and reconciles again on the resulting watch
event: level-triggered, no timers and no memory between calls, so a deleted Instance
simply comes back.

While the WD is suspended (`suspended`, from `compute.datumapis.com/suspended: "true"`),
rules 1-2 hold, then:
S3. An Instance not yet suspended (its `status.suspended`) → `Suspend` the HIGHEST (stopped
    from the top, as a scale-down goes; stopping waits on nothing).
S4. Otherwise → None: nothing is created, recreated or rolled while suspended; the
    Instances that exist stay (their Pods stopped), missing ordinals wait for the resume.

Otherwise, first match wins:
1. An Instance is being deleted → `Wait` on it (the lowest ordinal among them).
2. Instances outside `wanted` (scale down, ordinal-start moved) → `Delete` the HIGHEST.
   Before waiting on not-ready ones: an Instance nobody wants costs no availability, and a
   scale-down of a broken WD must not wait for Instances that may never become ready.
3. An in-range Instance whose template hash drifted and that is not ready → `Delete` the
   highest such. Replacing an already-broken Instance costs no availability, and without
   this rule a bad template could never be fixed by a good one (rule 4 would wait forever).
4. The lowest in-range Instance that is suspended or not ready: not suspended → `Wait` on
   it; suspended → `Resume` it, unless a lower ordinal is missing (then rule 5 creates
   that first). OrderedReady, at most one Instance unavailable at a time — and so a resume
   goes in ordinal order, each Instance once every lower one exists and is ready again.
5. Missing in-range ordinals → `Create` the LOWEST (self-heal and scale up, ascending).
6. A ready Instance whose hash drifted → `Delete` the HIGHEST such: recreated on the
   current template by rule 5, never updated in place.
7. Otherwise → None.

Consequences the tests pin down: a ready Instance is deleted for a roll only when every
other in-range Instance exists and is ready; creates and resumes happen only when every
lower in-range ordinal exists and is ready; scale-down, drift deletions and suspensions go
from the highest ordinal down; a suspended WD creates nothing and deletes only what is out
of range.

Invalid input (`wanted` with a step other than 1 or a negative start, two Instances with
one ordinal, a negative ordinal) is a `ValueError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Observed:
    """What the decision needs to know about one existing Instance."""

    name: str
    ordinal: int
    template_hash: str
    ready: bool
    deleting: bool
    suspended: bool = False  # its status.suspended (written by the cell WD controller)


@dataclass(frozen=True)
class Create:
    """Create the Instance with this ordinal from the current template."""

    ordinal: int


@dataclass(frozen=True)
class Delete:
    """Delete this Instance (it is recreated later if its ordinal is still wanted)."""

    name: str
    ordinal: int
    reason: str


@dataclass(frozen=True)
class Wait:
    """Do nothing until this Instance changes (its watch event triggers the next decision)."""

    name: str
    reason: str


@dataclass(frozen=True)
class Suspend:
    """Set this Instance's `status.suspended` (its Pod is stopped; the Instance stays)."""

    name: str
    ordinal: int


@dataclass(frozen=True)
class Resume:
    """Clear this Instance's `status.suspended` (its Pod starts again)."""

    name: str
    ordinal: int


Action = Create | Delete | Wait | Suspend | Resume


def _check(wanted: range, observed: Sequence[Observed]) -> None:
    if wanted.step != 1:
        raise ValueError(f"wanted ordinals {wanted!r}: step must be 1")
    if wanted.start < 0:
        raise ValueError(f"wanted ordinals {wanted!r}: must start at >= 0")
    seen: dict[int, str] = {}
    for inst in observed:
        if inst.ordinal < 0:
            raise ValueError(f"Instance {inst.name!r}: ordinal {inst.ordinal} must be >= 0")
        if inst.ordinal in seen:
            raise ValueError(f"Instances {seen[inst.ordinal]!r} and {inst.name!r} both have ordinal {inst.ordinal}")
        seen[inst.ordinal] = inst.name


def _span(wanted: range) -> str:
    return f"{wanted.start}..{wanted.stop - 1}" if wanted else "none"


def _lowest_missing(wanted: range, present: set[int]) -> int | None:
    # Every present ordinal is in `wanted` here, so this looks at most len(present) + 1
    # ordinals, however large the replica count.
    for ordinal in wanted:
        if ordinal not in present:
            return ordinal
    return None


def next_action(
    wanted: range, current_hash: str, observed: Sequence[Observed], *, suspended: bool = False
) -> Action | None:
    """The one action to take now towards exactly `wanted` ordinals, ready, on `current_hash`
    (or, `suspended`, towards the existing in-range Instances all suspended)."""
    _check(wanted, observed)
    by_ordinal = sorted(observed, key=lambda inst: inst.ordinal)
    deleting = [i for i in by_ordinal if i.deleting]
    if deleting:
        first = deleting[0]
        return Wait(first.name, f"Instance {first.name} is being deleted")
    outside = [i for i in by_ordinal if i.ordinal not in wanted]
    if outside:
        top = outside[-1]
        return Delete(top.name, top.ordinal, f"scale down: ordinal {top.ordinal} is outside {_span(wanted)}")
    if suspended:
        running = [i for i in by_ordinal if not i.suspended]
        return Suspend(running[-1].name, running[-1].ordinal) if running else None
    drifted = [i for i in by_ordinal if i.template_hash != current_hash]
    broken = [i for i in drifted if not i.ready]
    if broken:
        top = broken[-1]
        return Delete(
            top.name,
            top.ordinal,
            f"template changed ({top.template_hash or 'none'} -> {current_hash}) and the Instance is not ready",
        )
    lowest_missing = _lowest_missing(wanted, {i.ordinal for i in by_ordinal})
    stopped = [i for i in by_ordinal if i.suspended or not i.ready]
    if stopped:
        first = stopped[0]
        if not first.suspended:
            return Wait(first.name, f"Instance {first.name} is not ready yet (one at a time)")
        if lowest_missing is None or lowest_missing > first.ordinal:
            return Resume(first.name, first.ordinal)
    if lowest_missing is not None:
        return Create(lowest_missing)
    if drifted:
        top = drifted[-1]
        return Delete(
            top.name,
            top.ordinal,
            f"template changed ({top.template_hash or 'none'} -> {current_hash}): recreate",
        )
    return None
