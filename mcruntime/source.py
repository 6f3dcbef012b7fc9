"""What a controller watches: a resource (optionally narrowed by namespace and
selectors), in which clusters, through which predicates, with which handler. The
manager binds each watch to the matching clusters as they are engaged and unbinds it
when they are disengaged."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .handlers import EventHandler
from .indexers import IndexFunc
from .predicates import Predicate
from .request import Request
from .resources import Resource
from .selectors import LabelSelector
from .view import View


@dataclass(frozen=True)
class ClusterFilter:
    """Which clusters a watch covers: the manager's own (`local`), clusters engaged by
    providers (`engaged`, narrowed by a label selector on the cluster's labels), or
    clusters by name."""

    local: bool = False
    engaged: bool = True
    selector: LabelSelector = field(default_factory=LabelSelector)
    names: frozenset[str] | None = None

    def matches(self, name: str, labels: Mapping[str, str], *, is_local: bool) -> bool:
        if is_local and not self.local:
            return False
        if not is_local and not self.engaged:
            return False
        if self.names is not None and name not in self.names:
            return False
        return is_local or self.selector.matches(labels)


LOCAL = ClusterFilter(local=True, engaged=False)
"""Only the manager's own cluster (where ClusterProfiles, Leases and kubeconfig Secrets live)."""

ENGAGED = ClusterFilter()
"""Every cluster a provider engaged."""


def engaged(selector: str = "") -> ClusterFilter:
    """Engaged clusters whose labels match `selector` (e.g. `example.com/role=cell`)."""
    return ClusterFilter(selector=LabelSelector.parse(selector))


def named(*names: str, include_local: bool = False) -> ClusterFilter:
    return ClusterFilter(local=include_local, names=frozenset(names))


def disjoint(a: ClusterFilter, b: ClusterFilter) -> bool:
    """Whether no cluster can match both filters (decidable cases only; False means "may overlap")."""
    if not (a.local and b.local) and not (a.engaged and b.engaged):
        return True
    if a.names is not None and b.names is not None and not (a.names & b.names):
        return True
    if a.local and b.local:
        return False
    return a.selector.disjoint_from(b.selector)


@dataclass(frozen=True)
class Watch:
    """A resource view in the clusters a filter selects; with a handler its events reach
    the controller, without one (`Controller.reads`) it only backs cached reads."""

    view: View
    handler: EventHandler | None
    clusters: ClusterFilter = ENGAGED
    predicates: tuple[Predicate, ...] = ()
    indexers: tuple[tuple[str, IndexFunc], ...] = ()

    @property
    def resource(self) -> Resource:
        return self.view.resource


class ClusterEventType(enum.StrEnum):
    ENGAGED = "Engaged"  # a provider engaged it (or its labels changed: DISENGAGED with the old labels, then this)
    READY = "Ready"  # every declared view synced and it answers (again)
    UNREACHABLE = "Unreachable"  # the last attempt to reach it failed
    DISENGAGED = "Disengaged"  # a provider removed it (or the manager is stopping it)


@dataclass(frozen=True)
class ClusterEvent:
    type: ClusterEventType
    cluster: str
    labels: Mapping[str, str]


ClusterMapFunc = Callable[[ClusterEvent], Iterable[Request] | Awaitable[Iterable[Request]]]

ALL_CLUSTER_EVENTS = frozenset(ClusterEventType)


@dataclass(frozen=True)
class ClusterWatch:
    """Cluster lifecycle as a source: events of the clusters a filter selects, mapped to
    requests. The map function names each request's cluster (none is injected): a
    request with an empty cluster name is dropped."""

    map_func: ClusterMapFunc
    clusters: ClusterFilter = ENGAGED
    types: frozenset[ClusterEventType] = ALL_CLUSTER_EVENTS
