"""Wire details over raw HTTP: status codes of each verb, watch framing (chunked JSON lines,
in-stream 410, bookmarks, initial-events-end, timeoutSeconds), Table and metadata-only
responses, aggregated discovery, warnings."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from kubeplane import EmbeddedAPIServer

from .conftest import HTTP, Obj, configmap, widget

CMS = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def test_verbs_answer_with_kubernetes_status_codes(http: HTTP) -> None:
    status, created, resp = await http.post(CMS, configmap("a", {"k": "v"}))
    assert status == 201 and resp.headers["Content-Type"] == "application/json"
    assert created["apiVersion"] == "v1" and created["kind"] == "ConfigMap"
    assert list(created)[:3] == ["apiVersion", "kind", "metadata"]
    assert isinstance(created["metadata"]["resourceVersion"], str)
    status, dry, _ = await http.post(f"{CMS}?dryRun=All", configmap("b"))
    assert status == 201 and dry["metadata"]["uid"] and "resourceVersion" not in dry["metadata"]
    status, got, _ = await http.get(f"{CMS}/a")
    assert status == 200 and got == created
    status, updated, _ = await http.put(f"{CMS}/a", {**created, "data": {"k": "w"}})
    assert status == 200 and int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, patched, _ = await http.patch(f"{CMS}/a", {"data": {"x": "y"}})
    assert status == 200 and patched["data"] == {"k": "w", "x": "y"}
    status, gone, _ = await http.delete(f"{CMS}/a")
    assert status == 200 and gone["kind"] == "Status" and gone["status"] == "Success"
    status, listed, _ = await http.get(CMS)
    assert status == 200 and listed == {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]},
        "items": [],
    }
    status, version, _ = await http.get("/version")
    assert status == 200 and version["gitVersion"].startswith("v1.32")


async def test_watch_stream_framing(http: HTTP, apiserver: EmbeddedAPIServer) -> None:
    _, first, _ = await http.post(CMS, configmap("w1"))
    rv = first["metadata"]["resourceVersion"]
    await http.post(CMS, configmap("w2"))
    async with http.session.get(f"{http.base}{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=1") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        body = await resp.read()
    lines = body.decode().splitlines()
    assert len(lines) == 1 and body.endswith(b"\n")
    event = json.loads(lines[0])
    assert set(event) == {"type", "object"} and event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "w2"

    # an expired resourceVersion is an HTTP 200 whose single event is an ERROR carrying the Status
    apiserver.plane.expire_history()
    async with http.session.get(f"{http.base}{CMS}?watch=1&resourceVersion={rv}") as resp:
        assert resp.status == 200
        body = await asyncio.wait_for(resp.read(), 10)
    (error,) = [json.loads(line) for line in body.decode().splitlines()]
    assert error["type"] == "ERROR"
    assert error["object"] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error["object"]["message"],
        "reason": "Expired",
        "code": 410,
    }
    # a resourceVersion from the future is refused before the stream starts
    status, body_json, _ = await http.get(f"{CMS}?watch=1&resourceVersion=999999")
    assert status == 504 and body_json["reason"] == "Timeout"
    assert body_json["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"

    # the legacy /watch/ path prefix and single-object watches
    _, current, _ = await http.get(CMS)
    now = current["metadata"]["resourceVersion"]

    async def make_changes() -> None:
        await asyncio.sleep(0.2)
        await http.patch(f"{CMS}/w1", {"data": {"a": "1"}})
        await http.patch(f"{CMS}/w2", {"data": {"b": "2"}})

    task = asyncio.create_task(make_changes())
    events = await http.watch_lines(
        f"/api/v1/watch/namespaces/default/configmaps/w2?resourceVersion={now}&timeoutSeconds=5",
        until=lambda evs: len(evs) >= 1,
    )
    await task
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "w2")]


async def test_initial_events_and_bookmarks(http: HTTP) -> None:
    await http.post(CMS, configmap("x"))
    await http.post(CMS, configmap("y"))
    events = await http.watch_lines(
        f"{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
        "&resourceVersion=&timeoutSeconds=5",
        until=lambda evs: any(e["type"] == "BOOKMARK" for e in evs),
    )
    assert sorted((e["type"], e["object"]["metadata"].get("name")) for e in events[:-1]) == [
        ("ADDED", "x"),
        ("ADDED", "y"),
    ]
    bookmark = events[-1]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    _, listed, _ = await http.get(CMS)
    assert bookmark["object"]["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]
    # periodic bookmarks on an idle watch
    events = await http.watch_lines(
        f"{CMS}?watch=1&allowWatchBookmarks=true&resourceVersion={listed['metadata']['resourceVersion']}"
        "&timeoutSeconds=10",
        until=lambda evs: len(evs) >= 2,
    )
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert all(e["object"]["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"] for e in events)


async def test_tables_metadata_and_discovery(http: HTTP, widgets: Obj) -> None:
    await http.post(CMS, configmap("t", {"a": "1", "b": "2"}))
    status, table, _ = await http.get(CMS, headers={"Accept": TABLE})
    assert status == 200 and table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["t", 2]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    _, full, _ = await http.get(f"{CMS}?includeObject=Object", headers={"Accept": TABLE})
    assert full["rows"][0]["object"]["data"] == {"a": "1", "b": "2"}
    _, bare, _ = await http.get(f"{CMS}?includeObject=None", headers={"Accept": TABLE})
    assert "object" not in bare["rows"][0]

    await http.post("/apis/example.com/v1/namespaces/default/widgets", widget("w", replicas=3))
    _, wtable, _ = await http.get("/apis/example.com/v1/namespaces/default/widgets/w", headers={"Accept": TABLE})
    assert [c["name"] for c in wtable["columnDefinitions"]] == ["Name", "Size", "Replicas", "Phase", "Age"]
    assert [c["type"] for c in wtable["columnDefinitions"]][:4] == ["string", "string", "integer", "string"]
    assert wtable["rows"][0]["cells"][:4] == ["w", "small", 3, None]

    meta_accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    _, metas, _ = await http.get(CMS, headers={"Accept": meta_accept})
    assert metas["kind"] == "PartialObjectMetadataList"
    assert metas["items"][0]["metadata"]["name"] == "t" and "data" not in metas["items"][0]

    accept_v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    status, agg, resp = await http.get("/apis", headers={"Accept": accept_v2})
    assert status == 200 and resp.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    groups = {item["metadata"]["name"]: item for item in agg["items"]}
    widget_res = groups["example.com"]["versions"][0]["resources"][0]
    assert widget_res["resource"] == "widgets" and widget_res["scope"] == "Namespaced"
    assert widget_res["responseKind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert {s["subresource"] for s in widget_res["subresources"]} == {"status", "scale"}
    _, core_agg, _ = await http.get("/api", headers={"Accept": accept_v2})
    core_res = {r["resource"]: r for r in core_agg["items"][0]["versions"][0]["resources"]}
    assert core_res["configmaps"]["shortNames"] == ["cm"] and core_res["namespaces"]["scope"] == "Cluster"


async def test_history_window_is_bounded() -> None:
    # a small window: resuming from a revision that has scrolled out of it is 410 Expired
    async with EmbeddedAPIServer(history=4) as server, aiohttp.ClientSession() as session:
        http = HTTP(session, server.url)
        _, first, _ = await http.post(CMS, configmap("c", {"n": "0"}))
        rv = first["metadata"]["resourceVersion"]
        for n in range(1, 30):
            await http.patch(f"{CMS}/c", {"data": {"n": str(n)}})
        events = await http.watch_lines(f"{CMS}?watch=1&resourceVersion={rv}", until=lambda evs: len(evs) >= 1)
        assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
        status, body, _ = await http.get(f"{CMS}?resourceVersion={rv}&resourceVersionMatch=Exact")
        assert status == 410 and body["reason"] == "Expired"
        # a recent revision is still inside the window
        _, live, _ = await http.get(f"{CMS}/c")
        recent = int(live["metadata"]["resourceVersion"]) - 2
        events = await http.watch_lines(
            f"{CMS}?watch=1&resourceVersion={recent}&timeoutSeconds=1", until=lambda evs: len(evs) >= 2
        )
        assert [e["object"]["data"]["n"] for e in events] == ["28", "29"]
