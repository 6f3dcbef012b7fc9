"""The invariant behind the hostile-input suite, tested generically at the storage layer:
nothing is committed that the server cannot serialise back, whoever writes it (an HTTP
client or an embedded controller), and a watch that meets an event it cannot encode ends
with an ERROR event instead of going silent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane import store as store_module
from kubeplane.errors import APIError
from kubeplane.objectapi import WriteOptions
from kubeplane.registry import ResourceType

from .conftest import HTTP
from .hostile_support import BLOBS, blob, nested, stored_sentinels


def blobs_type(server: EmbeddedAPIServer) -> ResourceType:
    rt = server.plane.registry.get("example.com", "v1", "blobs")
    assert rt is not None
    return rt


@pytest.mark.parametrize(
    "spec",
    [
        {"values": {1, 2, 3}},  # a Python value JSON has no form for
        {"deep": nested(300)},  # past what the serialiser can write
    ],
    ids=["unencodable", "too-deep"],
)
async def test_an_in_process_write_that_cannot_be_served_is_refused(
    apiserver: EmbeddedAPIServer, http: HTTP, spec: dict[str, Any]
) -> None:
    guard = await stored_sentinels(http)
    rt = blobs_type(apiserver)
    api = apiserver.plane.api
    rev = api.db.rev
    with pytest.raises(APIError) as refused:
        api.create(rt, "default", blob("odd", spec), WriteOptions(field_manager="in-process"))
    assert refused.value.code == 500 and refused.value.reason == "InternalError"
    assert "the object 'odd' cannot be stored: it cannot be serialized" in refused.value.message
    assert api.store_for(rt).get("default", "odd") is None
    assert api.db.rev == rev  # no revision was spent on it
    # an embedded controller's update is refused the same way and leaves the object as it was
    entry = api.get(rt, "default", "sentinel")
    changed = entry.copy()
    changed["spec"] = spec
    with pytest.raises(APIError):
        api.commit_internal(rt, entry, changed, "some-controller")
    assert api.get(rt, "default", "sentinel") is entry
    await guard.assert_intact()


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize(("accept", "query"), [("application/json", ""), (TABLE, "&includeObject=Object")])
async def test_a_watch_that_cannot_encode_an_event_ends_with_an_error(
    apiserver: EmbeddedAPIServer, http: HTTP, monkeypatch: pytest.MonkeyPatch, accept: str, query: str
) -> None:
    guard = await stored_sentinels(http)
    status, listed, _ = await http.get(BLOBS)
    assert status == 200, listed
    rv = listed["metadata"]["resourceVersion"]
    # let an object the server cannot encode past the commit check, as if storage were corrupt
    monkeypatch.setattr(store_module, "encode_for_storage", lambda obj: None, raising=False)
    rt = blobs_type(apiserver)
    apiserver.plane.api.create(rt, "default", blob("corrupt", {"values": {1, 2}}), WriteOptions(field_manager="t"))
    monkeypatch.undo()
    events: list[dict[str, Any]] = []

    async def read_to_the_end() -> None:
        url = f"{http.base}{BLOBS}?watch=1&resourceVersion={rv}{query}"
        async with http.session.get(url, headers={"Accept": accept}) as resp:
            assert resp.status == 200
            while line := await resp.content.readline():
                events.append(json.loads(line))

    # the stream must end by itself: a watch that goes silent fails here
    await asyncio.wait_for(read_to_the_end(), 5.0)
    assert [e["type"] for e in events] == ["ERROR"], events
    status_obj = events[-1]["object"]
    assert status_obj["kind"] == "Status" and status_obj["code"] == 500 and status_obj["reason"] == "InternalError"
    assert status_obj["message"].startswith("Internal error occurred: unable to encode watch object for blobs: ")
    await guard.assert_intact()
