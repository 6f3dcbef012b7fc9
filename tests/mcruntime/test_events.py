from __future__ import annotations

import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import Cluster, EventRecorder
from mcruntime.resources import CONFIGMAPS, EVENTS
from tests.support import configmap


async def test_events_are_posted_and_repeats_aggregated(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    obj = await cluster.client.create(CONFIGMAPS, configmap("subject"))
    recorder = EventRecorder(cluster.client, "test-controller")
    await recorder.event(obj, "Warning", "ImageUnavailable", "image x cannot be pulled")
    await recorder.event(obj, "Warning", "ImageUnavailable", "image x cannot be pulled")
    await recorder.event(obj, "Warning", "ImageUnavailable", "image x cannot be pulled")
    await recorder.event(obj, "Normal", "Available", "running")
    events = await cluster.client.list_live(EVENTS, namespace="default")
    by_reason = {e["reason"]: e for e in events}
    assert len(events) == 2
    pulled = by_reason["ImageUnavailable"]
    assert pulled["count"] == 3 and pulled["type"] == "Warning"
    assert pulled["involvedObject"]["uid"] == obj["metadata"]["uid"]
    assert pulled["source"]["component"] == "test-controller"
    assert apiserver.plane.counters.get("create", "events") == 2
    assert apiserver.plane.counters.get("patch", "events") == 2


async def test_a_hot_loop_cannot_flood_events(cluster: Cluster) -> None:
    obj = await cluster.client.create(CONFIGMAPS, configmap("noisy"))
    recorder = EventRecorder(cluster.client, "c", burst=3)
    for i in range(10):
        await recorder.event(obj, "Normal", "Changed", f"change {i}")
    assert recorder.posted == 3 and recorder.throttled == 7


async def test_recording_failures_are_logged_not_raised(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    obj = await cluster.client.create(CONFIGMAPS, configmap("s"))
    apiserver.plane.faults.configure(error_rate=1.0, error_code=500, path_contains="events")
    await EventRecorder(cluster.client, "c").event(obj, "Normal", "X", "y")  # must not raise


async def test_bad_events_are_refused(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "c")
    with pytest.raises(ValueError, match="Normal or Warning"):
        await recorder.event(configmap("x"), "Error", "R", "m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"kind and metadata\.name"):
        await recorder.event({"metadata": {"name": "x"}}, "Normal", "R", "m")
