"""ForObject (mcruntime/objectreconciler.py): the runtime hands a reconciler the cluster
and the cached object; an object gone from the cache gets no call, and a request for a
cluster that is not engaged (or has no name) never reaches it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from mcruntime import Request, Result
from mcruntime.cluster import Cluster
from mcruntime.errors import ClusterNotEngagedError
from mcruntime.objectreconciler import ForObject
from mcruntime.resources import CONFIGMAPS, Resource


@dataclass
class FakeClient:
    objects: dict[tuple[str, str], dict[str, Any]]

    async def get_or_none(self, resource: Resource, name: str, *, namespace: str | None = None) -> Any:
        assert resource == CONFIGMAPS
        return self.objects.get((namespace or "", name))


@dataclass
class FakeCluster:
    name: str
    client: FakeClient


@dataclass
class FakeManager:
    clusters: dict[str, FakeCluster]

    def get_cluster(self, name: str) -> Cluster:
        if name not in self.clusters:
            raise ClusterNotEngagedError(name)
        return cast(Cluster, self.clusters[name])


@dataclass
class Recording:
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def reconcile(self, cluster: Cluster, obj: dict[str, Any]) -> Result:
        self.calls.append((cluster.name, obj["metadata"]["name"]))
        return Result(requeue_after=5)


def reconciler() -> tuple[ForObject, Recording]:
    cell = FakeCluster("cell", FakeClient({("ns", "there"): {"metadata": {"name": "there", "namespace": "ns"}}}))
    inner = Recording()
    return ForObject(FakeManager({"cell": cell}), CONFIGMAPS, inner), inner


async def test_the_cluster_and_the_cached_object_are_handed_over() -> None:
    outer, inner = reconciler()
    assert await outer.reconcile(Request("cell", "ns", "there")) == Result(requeue_after=5)
    assert inner.calls == [("cell", "there")]


async def test_an_object_gone_from_the_cache_gets_no_call() -> None:
    outer, inner = reconciler()
    assert await outer.reconcile(Request("cell", "ns", "gone")) == Result()
    assert inner.calls == []


@pytest.mark.parametrize("cluster", ["", "elsewhere"])
async def test_a_cluster_not_engaged_never_reaches_the_reconciler(cluster: str) -> None:
    outer, inner = reconciler()
    with pytest.raises(ClusterNotEngagedError):
        await outer.reconcile(Request(cluster, "ns", "there"))
    assert inner.calls == []


@dataclass
class RecordingGone(Recording):
    gone_calls: list[tuple[str, str, str]] = field(default_factory=list)

    async def gone(self, cluster: Cluster, request: Request) -> Result:
        self.gone_calls.append((cluster.name, request.namespace, request.name))
        return Result()


async def test_a_reconciler_that_handles_gone_objects_is_told_instead() -> None:
    cell = FakeCluster("cell", FakeClient({("ns", "there"): {"metadata": {"name": "there", "namespace": "ns"}}}))
    inner = RecordingGone()
    outer = ForObject(FakeManager({"cell": cell}), CONFIGMAPS, inner)
    await outer.reconcile(Request("cell", "ns", "there"))
    await outer.reconcile(Request("cell", "ns", "gone"))
    assert inner.calls == [("cell", "there")] and inner.gone_calls == [("cell", "ns", "gone")]
    with pytest.raises(ClusterNotEngagedError):
        await outer.reconcile(Request("", "ns", "gone"))
    assert inner.gone_calls == [("cell", "ns", "gone")], "an empty cluster name is dropped before anything"
