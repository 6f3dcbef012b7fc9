"""Hostile patches: no patch type may turn an object into another kind or API version (a
ConfigMap used to become a Secret through a merge or JSON patch); the answer is the one PUT
gives for the same change. JSON patches are bounded as kube-apiserver bounds them: at most
10,000 operations, and at most 3 MiB added by "copy" operations."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import HTTP, Obj, expect_status, widget
from .hostile_support import BLOBS, CMS, WIDGETS, blob, stored_sentinels

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

KIND_CHANGES: list[tuple[str, str, Any, str]] = [
    (CMS, MERGE, {"kind": "Secret"}, "the kind in the data (Secret) does not match the expected kind (ConfigMap)"),
    (CMS, STRATEGIC, {"kind": "Secret"}, "the kind in the data (Secret) does not match the expected kind (ConfigMap)"),
    (
        CMS,
        JSON_PATCH,
        [{"op": "replace", "path": "/kind", "value": "Secret"}],
        "the kind in the data (Secret) does not match the expected kind (ConfigMap)",
    ),
    (
        CMS,
        MERGE,
        {"apiVersion": "v2"},
        "the API version in the data (v2) does not match the expected API version (v1)",
    ),
    (
        WIDGETS,
        MERGE,
        {"kind": "Gadget"},
        "the kind in the data (Gadget) does not match the expected kind (Widget)",
    ),
    (
        WIDGETS,
        JSON_PATCH,
        [{"op": "replace", "path": "/apiVersion", "value": "example.com/v2"}],
        "the API version in the data (example.com/v2) does not match the expected API version (example.com/v1)",
    ),
]


@pytest.mark.parametrize(("collection", "content_type", "patch", "message"), KIND_CHANGES)
async def test_a_patch_cannot_change_kind_or_api_version(
    http: HTTP, collection: str, content_type: str, patch: Any, message: str
) -> None:
    guard = await stored_sentinels(http)
    status, body, _ = await http.patch(f"{collection}/sentinel", patch, content_type=content_type)
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"] == message
    # PUT answers the same change the same way
    status, current, _ = await http.get(f"{collection}/sentinel")
    changed = dict(current)
    if isinstance(patch, dict):
        changed.update(patch)
    else:
        changed[patch[0]["path"].strip("/")] = patch[0]["value"]
    status, body, _ = await http.put(f"{collection}/sentinel", changed)
    assert expect_status(status, body, 400, "BadRequest")["message"] == message
    status, body, _ = await http.get("/api/v1/namespaces/default/secrets/sentinel")
    expect_status(status, body, 404, "NotFound")
    await guard.assert_intact()


async def test_a_custom_resource_patch_cannot_drop_its_kind(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, body, _ = await http.patch(f"{WIDGETS}/sentinel", {"kind": None}, content_type=MERGE)
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"].startswith("Object 'Kind' is missing in")
    await guard.assert_intact()


async def test_a_json_patch_has_at_most_10000_operations(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    ops = [{"op": "test", "path": "/metadata/name", "value": "sentinel"}] * 10_001
    status, body, _ = await http.patch(f"{CMS}/sentinel", ops, content_type=JSON_PATCH)
    err = expect_status(status, body, 413, "RequestEntityTooLarge")
    assert err["message"] == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    )
    ops = ops[:10_000]
    status, body, _ = await http.patch(f"{CMS}/sentinel", ops, content_type=JSON_PATCH)
    assert status == 200, body
    await guard.assert_intact()


async def test_json_patch_copies_are_bounded(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, body, _ = await http.post(BLOBS, blob("seed", {"x": "s" * 200_000}))
    assert status == 201, body
    # 16 copies of a 200 KB value would add 3.2 MB; each doubling copy would reach far more
    ops: list[Obj] = [{"op": "copy", "from": "/spec/x", "path": f"/spec/x{i}"} for i in range(16)]
    status, body, _ = await http.patch(f"{BLOBS}/seed", ops, content_type=JSON_PATCH)
    err = expect_status(status, body, 422, "Invalid")
    assert err["message"].startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert err["message"].endswith(", exceeding the limit 3145728")
    doubling: list[Obj] = [{"op": "copy", "from": "/spec", "path": "/spec/again"}] * 40
    status, body, _ = await http.patch(f"{BLOBS}/seed", doubling, content_type=JSON_PATCH)
    expect_status(status, body, 422, "Invalid")
    status, got, _ = await http.get(f"{BLOBS}/seed")
    assert list(got["spec"]) == ["x"]
    await guard.assert_intact()


async def test_patches_that_keep_kind_and_version_still_apply(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, created, _ = await http.post(WIDGETS, widget("plain"))
    assert status == 201, created
    patch = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"color": "red"}}
    status, body, _ = await http.patch(f"{WIDGETS}/plain", patch, content_type=MERGE)
    assert status == 200 and body["spec"]["color"] == "red", body
    await guard.assert_intact()
