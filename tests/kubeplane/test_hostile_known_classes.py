"""Hostile input the server already handled before the hardening, kept under test: malformed
and wrong-type JSON, bad names and labels, bad query parameters, wrong patch content types,
path traversal, many stale writers at once, and watches opened and dropped in bulk. Each
answers a Status with kube-apiserver's code and message, and leaves the server healthy with
everything stored before byte-identical."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer

from .conftest import HTTP, configmap, expect_status
from .hostile_support import CMS, stored_sentinels

DECODE = 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '


@pytest.mark.parametrize(
    ("body", "code", "reason", "message"),
    [
        (b'{"metadata": {"name": ', 400, "BadRequest", "couldn't get version/kind; json parse error: "),
        (b"\xff\xfe", 400, "BadRequest", "couldn't get version/kind; json parse error: "),
        (b"[1, 2]", 400, "BadRequest", "the request body must be a JSON object"),
        (b'{"metadata": []}', 400, "BadRequest", "metadata must be an object"),
        (
            b'{"metadata": {"name": 5}}',
            400,
            "BadRequest",
            DECODE + "number into Go struct field ObjectMeta.metadata.name of type string",
        ),
        (
            b'{"metadata": {"name": "x", "labels": ["a"]}}',
            400,
            "BadRequest",
            DECODE + "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            b'{"metadata": {"name": "x"}, "data": {"a": 1}}',
            400,
            "BadRequest",
            DECODE + "number into Go struct field ConfigMap.data of type string",
        ),
    ],
)
async def test_invalid_and_wrong_type_json(http: HTTP, body: bytes, code: int, reason: str, message: str) -> None:
    guard = await stored_sentinels(http)
    status, answer, _ = await http.post(CMS, data=body)
    assert expect_status(status, answer, code, reason)["message"].startswith(message)
    await guard.assert_intact()


@pytest.mark.parametrize(
    ("meta", "field", "message"),
    [
        ({"name": "../x"}, "metadata.name", "a lowercase RFC 1123 subdomain must consist of"),
        ({"name": "x" * 300}, "metadata.name", "must be no more than 253 characters"),
        ({"name": "Caps"}, "metadata.name", "a lowercase RFC 1123 subdomain must consist of"),
        ({"name": "x", "labels": {"a/b/c": "v"}}, "metadata.labels", "a qualified name must consist of"),
        ({"name": "x", "labels": {"k": "v" * 64}}, "metadata.labels", "must be no more than 63 characters"),
        ({"name": "x", "labels": {"k": "sp ace"}}, "metadata.labels", "a valid label must be an empty string or"),
        ({"name": "x", "annotations": {"": "v"}}, "metadata.annotations", "name part must be non-empty"),
    ],
)
async def test_invalid_names_and_labels(http: HTTP, meta: dict[str, Any], field: str, message: str) -> None:
    guard = await stored_sentinels(http)
    status, answer, _ = await http.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
    err = expect_status(status, answer, 422, "Invalid")
    assert err["details"]["causes"][0]["field"] == field
    assert message in err["details"]["causes"][0]["message"]
    await guard.assert_intact()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("labelSelector=a%20in%20(", "unable to parse requirement: found '', expected: ')'"),
        ("resourceVersion=abc", "invalid resource version: 'abc'"),
        ("watch=1&resourceVersion=abc", "invalid resource version: 'abc'"),
        ("watch=yes&timeoutSeconds=abc", "timeoutSeconds: Invalid value: 'abc': must be an integer"),
        ("limit=lots", "limit: Invalid value: 'lots': must be an integer"),
        ("fieldSelector=spec.nope%3Dx", "field label not supported: spec.nope"),
        ("continue=not-a-token", "continue key is not valid"),
    ],
)
async def test_bad_query_parameters(http: HTTP, query: str, message: str) -> None:
    guard = await stored_sentinels(http)
    status, answer, _ = await http.get(f"{CMS}?{query}")
    assert message in expect_status(status, answer, 400, "BadRequest")["message"]
    await guard.assert_intact()


@pytest.mark.parametrize("content_type", ["text/plain", "application/json", "application/x-www-form-urlencoded", ""])
async def test_patches_need_a_patch_content_type(http: HTTP, content_type: str) -> None:
    guard = await stored_sentinels(http)
    async with http.session.patch(
        f"{http.base}{CMS}/sentinel", data=b'{"data": {"k": "changed"}}', headers={"Content-Type": content_type}
    ) as resp:
        answer = await resp.json()
    err = expect_status(resp.status, answer, 415, "UnsupportedMediaType")
    assert err["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: "
    )
    await guard.assert_intact()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1/namespaces/default/configmaps/../secrets", "the server could not find the requested resource"),
        ("/api/v1/namespaces/default/configmaps/..%2Fsecrets", "the server could not find the requested resource"),
        ("/api/v1/namespaces/default/configmaps/%2e%2e", 'configmaps ".." not found'),
        ("/api/v1/namespaces/kube-system/configmaps/%2F..%2Fdefault%2Fconfigmaps%2Fsentinel", None),
        ("/api/v1/namespaces/default/configmaps/sentinel%00", 'configmaps "sentinel\x00" not found'),
    ],
)
async def test_path_traversal_reaches_nothing_else(
    apiserver: EmbeddedAPIServer, http: HTTP, path: str, expected: str | None
) -> None:
    guard = await stored_sentinels(http)
    # sent as written: client libraries would normalise the dots away
    reader, writer = await asyncio.open_connection(apiserver.host, apiserver.port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 10.0)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404"), answer[:300]
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 404
    if expected is not None:
        assert status["message"] == expected
    assert b'"data"' not in body
    await guard.assert_intact()


async def test_concurrent_stale_writers_get_exactly_one_winner(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, created, _ = await http.post(CMS, configmap("contended", data={"v": "0"}))
    assert status == 201, created
    rv = created["metadata"]["resourceVersion"]
    for round_ in range(3):

        async def write(i: int, rv: str = rv, round_: int = round_) -> int:
            body = configmap("contended", data={"v": f"{round_}-{i}"}, resourceVersion=rv)
            status, _, _ = await http.put(f"{CMS}/contended", body)
            return status

        codes = await asyncio.gather(*(write(i) for i in range(50)))
        assert sorted(codes) == [200] + [409] * 49, codes
        status, current, _ = await http.get(f"{CMS}/contended")
        rv = current["metadata"]["resourceVersion"]
    status, answer, _ = await http.put(
        f"{CMS}/contended", configmap("contended", data={"v": "late"}, resourceVersion="2")
    )
    err = expect_status(status, answer, 409, "Conflict")
    assert err["message"] == (
        'Operation cannot be fulfilled on configmaps "contended": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    await guard.assert_intact()


async def test_watch_churn_leaves_nothing_behind(apiserver: EmbeddedAPIServer, http: HTTP) -> None:
    guard = await stored_sentinels(http)
    before = len(apiserver.plane.watchers)
    for _ in range(3):
        async with aiohttp.ClientSession() as session:
            responses = [
                await session.get(f"{apiserver.url}{CMS}?watch=1&allowWatchBookmarks=true") for _ in range(100)
            ]
            assert all(r.status == 200 for r in responses)
            assert len(apiserver.plane.watchers) >= before + 100
            for resp in responses:
                resp.close()

        async def drained() -> bool:
            return len(apiserver.plane.watchers) == before

        for _ in range(200):
            if await drained():
                break
            await asyncio.sleep(0.05)
        assert await drained(), f"{len(apiserver.plane.watchers) - before} watches were left open"
    await guard.assert_intact()
