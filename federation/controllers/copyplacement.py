"""The federator's placement of one copy in one cell, as a pure one-action decision
(DESIGN.md §3 Federator 2-5), in the manner of cells/stateful.py and deletion.py.

`next_action(observed)` looks at what the cell's caches (or the last write's answer) show
of the downstream namespace and of the WD copy, each already compared with its apply
intent, and returns the ONE thing to do now. The federator performs it (one write) and
decides again on what that write returned, until `Done` or `Blocked`: at most one write
per action, at most three per copy (namespace, copy, initial replicas), none at rest.

Rules, first match wins:
1. The namespace exists and another project's labels are on it → `Blocked`: nothing is
   written into it (tenant isolation, Federator 8).
2. The namespace is being deleted → `Blocked` until it is gone (then it is re-created).
3. The namespace is missing or differs from its intent → `ApplyNamespace`.
4. The copy is missing → `CreateCopy`.
5. The copy differs from its intent (spec, labels, annotations) → `UpdateCopy`.
6. The copy was created just now, is autoscaled, and has no `spec.replicas` yet →
   `SetInitialReplicas` (a field manager of its own that never writes again, so the
   cell's autoscaler owns the count after).
7. Otherwise → `Done`.

A copy whose upstream UID is not this WD's, or in a cell that is no target any more, is a
stray: the reconcile deletes it before placing (`_remove`), so it is never observed here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class NamespaceState(enum.StrEnum):
    MISSING = "missing"
    CURRENT = "current"  # ours, says what its intent says
    DIFFERS = "differs"  # ours, but the intent would write
    FOREIGN = "foreign"  # another project's (or unlabelled)
    DELETING = "deleting"


class CopyState(enum.StrEnum):
    MISSING = "missing"
    CURRENT = "current"
    DIFFERS = "differs"


@dataclass(frozen=True)
class Observed:
    """What the decision needs to know about one cell's namespace and copy."""

    namespace: NamespaceState
    copy: CopyState
    autoscaled: bool = False  # the cell's autoscaler owns spec.replicas
    created: bool = False  # the copy was created by this pass
    replicas_set: bool = False  # the copy has spec.replicas


@dataclass(frozen=True)
class Blocked:
    reason: str  # the cell's failure (the reconcile retries)


@dataclass(frozen=True)
class ApplyNamespace:
    pass


@dataclass(frozen=True)
class CreateCopy:
    pass


@dataclass(frozen=True)
class UpdateCopy:
    pass


@dataclass(frozen=True)
class SetInitialReplicas:
    pass


@dataclass(frozen=True)
class Done:
    pass


Action = Blocked | ApplyNamespace | CreateCopy | UpdateCopy | SetInitialReplicas | Done

FOREIGN_NAMESPACE = "belongs to another project; nothing written"
DELETING_NAMESPACE = "is being deleted; waiting"


def next_action(observed: Observed) -> Action:
    """The one thing to do now for one cell's copy (see the module docstring)."""
    match observed.namespace:
        case NamespaceState.FOREIGN:
            return Blocked(FOREIGN_NAMESPACE)
        case NamespaceState.DELETING:
            return Blocked(DELETING_NAMESPACE)
        case NamespaceState.MISSING | NamespaceState.DIFFERS:
            return ApplyNamespace()
    match observed.copy:
        case CopyState.MISSING:
            return CreateCopy()
        case CopyState.DIFFERS:
            return UpdateCopy()
    if observed.created and observed.autoscaled and not observed.replicas_set:
        return SetInitialReplicas()
    return Done()
