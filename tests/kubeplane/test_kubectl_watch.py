"""WATCH through kubectl: `get -w --output-watch-events` with selectors applied per event,
and raw watches (`kubectl get --raw ...?watch=1`) for resume from a resourceVersion, initial
state from "" and "0", 410 Expired after compaction, bookmarks and timeoutSeconds."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .conftest import Obj, configmap, eventually, manifests


class WatchProcess:
    """`kubectl get -w` running in the background, its output read line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []

    async def expect(self, count: int, within: float = 15.0) -> list[list[str]]:
        """Wait until `count` event lines (after the header) arrived; return them split in columns."""
        assert self.proc.stdout is not None

        async def read() -> None:
            assert self.proc.stdout is not None
            while len([ln for ln in self.lines if not ln.startswith("EVENT")]) < count:
                line = await self.proc.stdout.readline()
                if not line:
                    raise AssertionError(f"kubectl get -w ended early; output so far: {self.lines}")
                self.lines.append(line.decode().rstrip("\n"))

        try:
            await asyncio.wait_for(read(), within)
        except TimeoutError:
            raise AssertionError(f"expected {count} watch events within {within}s, got {self.lines}") from None
        return [ln.split() for ln in self.lines if not ln.startswith("EVENT")]


@asynccontextmanager
async def kubectl_watch(kubectl: Kubectl, apiserver: EmbeddedAPIServer, *args: str) -> AsyncIterator[WatchProcess]:
    env = dict(os.environ, KUBECONFIG=str(kubectl.kubeconfig), KUBECACHEDIR=str(kubectl.cache_dir))
    before = len(apiserver.plane.watchers)
    proc = await asyncio.create_subprocess_exec(
        kubectl.binary,
        "get",
        *args,
        "-w",
        "--output-watch-events",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:

        async def watching() -> bool:
            return len(apiserver.plane.watchers) > before

        await eventually(watching, "kubectl get -w to open its watch")
        yield WatchProcess(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


def _raw_events(out: str) -> list[Obj]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _summary(events: list[Obj]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_get_watch_output_watch_events_with_selector(kubectl: Kubectl, apiserver: EmbeddedAPIServer) -> None:
    await kubectl(
        "create",
        "-f",
        "-",
        stdin=manifests(configmap("early", labels={"tier": "web"}), configmap("other", labels={"tier": "db"})),
    )
    async with kubectl_watch(kubectl, apiserver, "configmaps", "-l", "tier=web") as watch:
        assert [e[:3] for e in await watch.expect(1)] == [["ADDED", "early", "0"]]
        await kubectl("create", "-f", "-", stdin=manifests(configmap("late", labels={"tier": "web"})))
        await kubectl("create", "-f", "-", stdin=manifests(configmap("ignored", labels={"tier": "db"})))
        await kubectl("patch", "cm", "late", "--type=merge", "-p", '{"data":{"k":"v"}}')
        await kubectl("label", "cm", "late", "tier=db", "--overwrite")  # stops matching: DELETED
        await kubectl("label", "cm", "other", "tier=web", "--overwrite")  # starts matching: ADDED
        await kubectl("delete", "cm", "other")
        events = await watch.expect(6)
    assert [e[:3] for e in events] == [
        ["ADDED", "early", "0"],
        ["ADDED", "late", "0"],
        ["MODIFIED", "late", "1"],
        ["DELETED", "late", "1"],
        ["ADDED", "other", "0"],
        ["DELETED", "other", "0"],
    ]


async def test_get_watch_single_object_and_all_namespaces(kubectl: Kubectl, apiserver: EmbeddedAPIServer) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(configmap("target"), configmap("bystander")))
    async with kubectl_watch(kubectl, apiserver, "cm", "target") as watch:
        await kubectl("label", "cm", "bystander", "x=1")
        await kubectl("label", "cm", "target", "x=1")
        events = await watch.expect(2)
    assert [e[:2] for e in events] == [["ADDED", "target"], ["MODIFIED", "target"]]

    await kubectl(
        "create", "-f", "-", stdin=manifests({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns2"}})
    )
    async with kubectl_watch(kubectl, apiserver, "cm", "-A", "--watch-only") as watch:
        await kubectl("create", "-n", "ns2", "-f", "-", stdin=manifests(configmap("elsewhere")))
        await kubectl("delete", "cm", "target")
        events = await watch.expect(2)
    assert [e[:3] for e in events] == [["ADDED", "ns2", "elsewhere"], ["DELETED", "default", "target"]]


@pytest.mark.slow
async def test_raw_watch_resume_initial_state_expiry_bookmarks_and_timeout(
    kubectl: Kubectl, apiserver: EmbeddedAPIServer
) -> None:
    base = "/api/v1/namespaces/default/configmaps"
    await kubectl("create", "-f", "-", stdin=manifests(configmap("a"), configmap("b")))
    listed = json.loads(await kubectl("get", "--raw", base))
    rv = listed["metadata"]["resourceVersion"]
    await kubectl("label", "cm", "a", "step=1")
    await kubectl("delete", "cm", "b")
    await kubectl("create", "-f", "-", stdin=manifests(configmap("c")))

    async def raw(query: str) -> list[Obj]:
        return _raw_events(await kubectl("get", "--raw", f"{base}?watch=1&timeoutSeconds=1&{query}"))

    # resume: exactly the events after the list's revision, in order, each with its own revision
    resumed, from_empty, from_zero = await asyncio.gather(
        raw(f"resourceVersion={rv}"), raw("resourceVersion="), raw("resourceVersion=0")
    )
    assert _summary(resumed) == [("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]
    revs = [int(e["object"]["metadata"]["resourceVersion"]) for e in resumed]
    assert revs == sorted(revs) and revs[0] > int(rv)
    # "" and "0": the current state as synthetic ADDED events
    assert sorted(_summary(from_empty)) == [("ADDED", "a"), ("ADDED", "c")]
    assert sorted(_summary(from_zero)) == [("ADDED", "a"), ("ADDED", "c")]

    # compaction: resuming from before the window is an ERROR event carrying a 410 Expired Status
    apiserver.plane.expire_history()
    expired = await raw(f"resourceVersion={rv}")
    assert len(expired) == 1 and expired[0]["type"] == "ERROR"
    status = expired[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {rv} (")
    # resuming from the current revision still works after compaction
    now = json.loads(await kubectl("get", "--raw", base))["metadata"]["resourceVersion"]
    assert await raw(f"resourceVersion={now}") == []

    # bookmarks: with allowWatchBookmarks, periodic BOOKMARK events carry the current revision
    marked = _raw_events(
        await kubectl("get", "--raw", f"{base}?watch=1&timeoutSeconds=3&allowWatchBookmarks=true&resourceVersion={now}")
    )
    assert marked, "expected at least one BOOKMARK within the 3s watch (bookmark interval is 1s)"
    assert {e["type"] for e in marked} == {"BOOKMARK"}
    for event in marked:
        assert event["object"]["kind"] == "ConfigMap" and event["object"]["apiVersion"] == "v1"
        assert event["object"]["metadata"] == {"resourceVersion": now}


async def test_raw_watch_selectors_per_event(kubectl: Kubectl, apiserver: EmbeddedAPIServer) -> None:
    base = "/api/v1/namespaces/default/configmaps"
    await kubectl("create", "-f", "-", stdin=manifests(configmap("m", labels={"on": "yes"}), configmap("n")))
    rv = json.loads(await kubectl("get", "--raw", base))["metadata"]["resourceVersion"]
    await kubectl("label", "cm", "m", "on-")  # leaves the selection
    await kubectl("label", "cm", "n", "on=yes")  # enters it
    await kubectl("annotate", "cm", "n", "note=1")
    await kubectl("label", "cm", "m", "unrelated=1")  # still outside
    labelled, named = await asyncio.gather(
        kubectl("get", "--raw", f"{base}?watch=1&timeoutSeconds=1&resourceVersion={rv}&labelSelector=on%3Dyes"),
        kubectl(
            "get", "--raw", f"{base}?watch=1&timeoutSeconds=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dm"
        ),
    )
    events = _raw_events(labelled)
    assert _summary(events) == [("DELETED", "m"), ("ADDED", "n"), ("MODIFIED", "n")]
    # the DELETED for an object leaving the selection carries its last matching state at the new revision
    gone: Any = events[0]["object"]
    assert gone["metadata"]["labels"] == {"on": "yes"}
    assert int(gone["metadata"]["resourceVersion"]) > int(rv)
    assert _summary(_raw_events(named)) == [("MODIFIED", "m"), ("MODIFIED", "m")]
