"""Hostile sizes: request bodies are read up to kube-apiserver's 3 MiB and refused past it
with a 413 Status (not aiohttp's text at 1 MiB); objects larger than etcd stores (1.5 MiB)
are refused with etcd's error as kube-apiserver passes it on, whichever verb builds them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from kubeplane.limits import MAX_OBJECT_BYTES, MAX_REQUEST_BODY_BYTES

from .conftest import HTTP, configmap, expect_status
from .hostile_support import BLOBS, CMS, blob, stored_sentinels

TOO_LARGE = f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"


def expect_etcd_too_large(status: int, body: Any) -> None:
    """kube-apiserver passes etcd's refusal on as a 500 Status without a reason."""
    assert status == 500, body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == 500, body
    assert "reason" not in body
    assert body["message"] == "etcdserver: request is too large"


def padded_configmap(name: str, total: int) -> bytes:
    """A ConfigMap body of exactly `total` bytes."""
    empty = json.dumps(configmap(name, data={"pad": ""})).encode()
    body = json.dumps(configmap(name, data={"pad": "x" * (total - len(empty))})).encode()
    assert len(body) == total
    return body


async def test_a_body_past_3_mib_is_a_413_status(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, body, resp = await http.post(CMS, data=padded_configmap("huge", MAX_REQUEST_BODY_BYTES + 1))
    err = expect_status(status, body, 413, "RequestEntityTooLarge")
    assert err["message"] == TOO_LARGE
    assert resp.headers["Content-Type"] == "application/json"

    # streamed without a Content-Length, the limit holds the same way
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b" " * (1024 * 1024)

    async with http.session.post(
        http.base + CMS, data=chunks(), headers={"Content-Type": "application/json"}
    ) as streamed:
        assert streamed.status == 413
        assert (await streamed.json())["message"] == TOO_LARGE
    await guard.assert_intact()


async def test_bodies_between_1_and_1_5_mib_are_accepted(http: HTTP) -> None:
    # aiohttp's default used to refuse anything past 1 MiB; kube-apiserver reads 3 MiB
    guard = await stored_sentinels(http)
    status, body, _ = await http.post(CMS, data=padded_configmap("large", 1_400_000))
    assert status == 201, body
    status, got, _ = await http.get(f"{CMS}/large")
    assert status == 200 and len(got["data"]["pad"]) > 1_300_000
    await guard.assert_intact()


async def test_objects_larger_than_etcd_stores_are_refused(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    # a 2 MiB body is readable, but the object it makes is larger than etcd takes
    status, body, _ = await http.post(CMS, data=padded_configmap("jumbo", 2 * 1024 * 1024))
    expect_etcd_too_large(status, body)
    status, body, _ = await http.get(f"{CMS}/jumbo")
    expect_status(status, body, 404, "NotFound")
    # growing an existing object past the limit is refused the same way, leaving it as it was
    status, created, _ = await http.post(BLOBS, blob("grows", {"part": "a" * 1_000_000}))
    assert status == 201, created
    before = await guard.raw(f"{BLOBS}/grows")
    status, body, _ = await http.patch(f"{BLOBS}/grows", {"spec": {"more": "b" * 700_000}})
    expect_etcd_too_large(status, body)
    assert await guard.raw(f"{BLOBS}/grows") == before
    # a dry run never reaches storage, as with etcd behind kube-apiserver
    status, body, _ = await http.post(f"{CMS}?dryRun=All", data=padded_configmap("dry", MAX_OBJECT_BYTES + 10))
    assert status == 201, body
    await guard.assert_intact()


async def test_admin_bodies_are_bounded_too(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    huge = b'{"error_rate": 0, "pad": "' + b"x" * MAX_REQUEST_BODY_BYTES + b'"}'
    async with http.session.put(
        http.base + "/_embedded/faults", data=huge, headers={"Content-Type": "application/json"}
    ) as resp:
        assert resp.status == 413
        assert (await resp.json())["message"] == TOO_LARGE
    await guard.assert_intact()


async def test_the_limit_is_exact(http: HTTP) -> None:
    # exactly 3 MiB is read (and then refused for its size in storage, not as a request)
    guard = await stored_sentinels(http)
    status, body, _ = await http.post(CMS, data=padded_configmap("exact", MAX_REQUEST_BODY_BYTES))
    expect_etcd_too_large(status, body)
    try:
        status, body, _ = await http.post(CMS, data=padded_configmap("over", MAX_REQUEST_BODY_BYTES + 1))
    except aiohttp.ClientError as exc:  # pragma: no cover - the server answers before reading it all
        raise AssertionError(f"the server dropped the connection instead of answering: {exc}") from None
    assert status == 413, body
    await guard.assert_intact()
