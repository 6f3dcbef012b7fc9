"""What a controller watches: a resource (optionally narrowed by namespace and
selectors), in which clusters, through which predicates, with which handler. The
manager binds each watch to the matching clusters as they are engaged and unbinds it
when they are disengaged."""

from __future__ import annotations

from dataclasses import dataclass, field

from .handlers import EventHandler
from .predicates import Predicate
from .resources import Resource
from .selectors import LabelSelector


@dataclass(frozen=True)
class ClusterFilter:
    """Which clusters a watch covers: the manager's own (`local`), clusters engaged by
    providers (`engaged`, narrowed by a label selector on the cluster's labels), or
    clusters by name."""

    local: bool = False
    engaged: bool = True
    selector: LabelSelector = field(default_factory=LabelSelector)
    names: frozenset[str] | None = None

    def matches(self, name: str, labels: dict[str, str], *, is_local: bool) -> bool:
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


@dataclass(frozen=True)
class Watch:
    resource: Resource
    handler: EventHandler
    clusters: ClusterFilter = ENGAGED
    predicates: tuple[Predicate, ...] = ()
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
