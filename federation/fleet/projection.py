"""Which cell Instance a project Instance projection mirrors, and what the projection
says. Pure: the Instance projector writes what these return; `check` verifies with them.

Rules
- An Instance's ordinal is its `compute.datumapis.com/instance-index` label, an integer
  (`instance_ordinal`; None when missing or not a number).
- Among same-named Instances in several cells (one moving between cells of the city), the
  projection mirrors, in order: one whose cell's copy holds its ordinal, one not being
  deleted, then the first cell by name (`choose`).
- The projection has the Instance's name, labels (plus the project WD's UID), spec and
  status, in the project WD's namespace, controlled by the project WD and annotated with
  the cell it mirrors (`CELL_ANNOTATION`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from federation.api.constants import Label
from federation.api.resources import INSTANCES
from federation.fleet.downstream import copy_ordinals
from mcruntime import controllerutil
from mcruntime.fields import get_str, get_str_map, is_deleting
from mcruntime.objects import Obj

CELL_ANNOTATION = "compute.datumapis.com/cell"  # on a projection: the cell it mirrors


def instance_ordinal(instance: Mapping[str, Any]) -> int | None:
    value = get_str_map(instance, "metadata.labels").get(str(Label.INSTANCE_INDEX))
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def holds_ordinal(copy: Mapping[str, Any], instance: Mapping[str, Any]) -> bool:
    """Whether the cell's copy currently holds this Instance's ordinal."""
    ordinal = instance_ordinal(instance)
    return ordinal is not None and ordinal in (copy_ordinals(copy) or range(0))


@dataclass(frozen=True)
class Source:
    """One cell Instance that a projection may mirror, with the project WD it belongs to."""

    cell: str
    instance: Obj
    wd: Obj
    in_share: bool  # the cell's copy currently holds this ordinal

    @property
    def rank(self) -> tuple[bool, bool, str]:
        deleting = is_deleting(self.instance)
        return (not self.in_share, deleting, self.cell)


def choose(sources: Iterable[Source]) -> Source | None:
    """The Instance a projection mirrors among same-named ones (None: there is none)."""
    return min(sources, key=lambda s: s.rank, default=None)


def projection(source: Source) -> Obj:
    """The project Instance for a cell Instance (an apply intent for metadata and spec)."""
    inst, wd = source.instance, source.wd
    # the shard label is the management shards' own business: the project WD's (not the
    # cell Instance's, which follows the copy later), so the projection is in the cache of
    # the shard that projects it; a hand-over relabels it (one write, as for a copy)
    labels = {str(k): str(v) for k, v in get_str_map(inst, "metadata.labels").items() if k != Label.SHARD}
    shard = get_str_map(wd, "metadata.labels").get(str(Label.SHARD))
    if shard:  # sharded only
        labels[str(Label.SHARD)] = shard
    labels[str(Label.WORKLOAD_DEPLOYMENT_UID)] = get_str(wd, "metadata.uid")  # the project's WD, not the cell copy
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {
            "name": get_str(inst, "metadata.name"),
            "namespace": get_str(wd, "metadata.namespace"),
            "labels": labels,
            "annotations": {CELL_ANNOTATION: source.cell},
            "ownerReferences": [controllerutil.controller_reference(wd)],
        },
        "spec": inst.get("spec") or {},
    }


def projection_status(source: Source) -> Obj:
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {
            "name": get_str(source.instance, "metadata.name"),
            "namespace": get_str(source.wd, "metadata.namespace"),
        },
        "status": source.instance.get("status") or {},
    }
