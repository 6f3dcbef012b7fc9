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


async def test_the_same_reason_on_the_same_object_is_counted_not_a_new_event(
    apiserver: EmbeddedAPIServer, cluster: Cluster
) -> None:
    """As Kubernetes' own recorders: the message is not part of the series' key, so a repeat
    with another message counts on the existing Event (which shows the latest message);
    another reason, or another object, is another Event."""
    web = await cluster.client.create(CONFIGMAPS, configmap("web"))
    api = await cluster.client.create(CONFIGMAPS, configmap("api"))
    recorder = EventRecorder(cluster.client, "federator")
    await recorder.event(web, "Warning", "CellUnreachable", "cell dfw-1 unreachable")
    await recorder.event(web, "Warning", "CellUnreachable", "cell dfw-2 unreachable")
    await recorder.event(web, "Warning", "CellUnreachable", "cell lhr-1 unreachable")
    await recorder.event(api, "Warning", "CellUnreachable", "cell dfw-1 unreachable")
    await recorder.event(web, "Normal", "Federated", "copies written")
    events = await cluster.client.list_live(EVENTS, namespace="default")
    seen = sorted((e["involvedObject"]["name"], e["reason"], e["count"], e["message"]) for e in events)
    assert seen == [
        ("api", "CellUnreachable", 1, "cell dfw-1 unreachable"),
        ("web", "CellUnreachable", 3, "cell lhr-1 unreachable"),
        ("web", "Federated", 1, "copies written"),
    ]
    counted = next(e for e in events if e["count"] == 3)
    assert counted["lastTimestamp"] >= counted["firstTimestamp"]
    assert apiserver.plane.counters.get("create", "events") == 3
    assert apiserver.plane.counters.get("patch", "events") == 2


async def test_an_expired_event_is_recreated_not_lost(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    obj = await cluster.client.create(CONFIGMAPS, configmap("s"))
    recorder = EventRecorder(cluster.client, "c")
    await recorder.event(obj, "Normal", "Changed", "one")
    [first] = await cluster.client.list_live(EVENTS, namespace="default")
    await cluster.client.delete(EVENTS, first["metadata"]["name"], namespace="default")  # as the Event TTL would
    await recorder.event(obj, "Normal", "Changed", "two")
    [again] = await cluster.client.list_live(EVENTS, namespace="default")
    assert (again["count"], again["message"]) == (1, "two")
    assert again["metadata"]["name"] != first["metadata"]["name"]


async def test_a_hot_loop_cannot_flood_events(apiserver: EmbeddedAPIServer, cluster: Cluster) -> None:
    obj = await cluster.client.create(CONFIGMAPS, configmap("noisy"))
    recorder = EventRecorder(cluster.client, "c", burst=3)
    for i in range(10):
        await recorder.event(obj, "Normal", f"Changed{i % 2}", f"change {i}")
    assert (recorder.posted, recorder.aggregated, recorder.throttled) == (2, 1, 7)
    writes = apiserver.plane.counters.get("create", "events") + apiserver.plane.counters.get("patch", "events")
    assert writes == 3


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
