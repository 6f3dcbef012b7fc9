"""Hostile nesting: bodies nested past the server's depth limit are refused with a 400 (the
decoders' message shape) and never stored; JSON patches that would nest the object past it
are refused; the deepest accepted object reads back every way a client can ask for it; and a
watch keeps delivering after the refusals."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from kubeplane.limits import MAX_DEPTH, nesting_depth

from .conftest import HTTP, expect_status
from .hostile_support import BLOBS, blob, nested, nested_json, stored_sentinels

DEPTH_MESSAGE = f"invalid character '{{' exceeded max depth of {MAX_DEPTH}"


def deep_blob_text(name: str, levels: int) -> str:
    """A Blob whose spec is `levels` nested objects (the whole body is levels + 1 deep)."""
    head = json.dumps({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name}})[:-1]
    return head + ', "spec": ' + nested_json(levels) + "}"


async def test_a_body_one_level_past_the_limit_is_refused(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    # the object plus a spec of MAX_DEPTH nested objects: one level past the limit
    too_deep = blob("one-too-many", nested(MAX_DEPTH))
    assert nesting_depth(too_deep) == MAX_DEPTH + 1
    status, body, _ = await http.post(BLOBS, too_deep)
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"] == f"couldn't get version/kind; json parse error: {DEPTH_MESSAGE}"
    status, body, _ = await http.get(f"{BLOBS}/one-too-many")
    expect_status(status, body, 404, "NotFound")
    await guard.assert_intact()


@pytest.mark.parametrize("levels", [253, 600, 1022, 1100])
async def test_deep_custom_resources_are_refused_not_stored(http: HTTP, levels: int) -> None:
    # 253-1023 levels used to be stored and then unreadable (GET, LIST and DELETE all 500)
    guard = await stored_sentinels(http)
    status, body, _ = await http.post(BLOBS, data=deep_blob_text("abyss", levels))
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"].startswith("couldn't get version/kind; json parse error: ")
    assert "depth" in err["message"]
    for path in (f"{BLOBS}/abyss", BLOBS):
        status, _, _ = await http.get(path)
        assert status in (200, 404)
    status, listed, _ = await http.get(BLOBS)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["sentinel"]
    await guard.assert_intact()


async def test_the_deepest_accepted_object_reads_back_every_way(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    deepest = blob("deepest", nested(MAX_DEPTH - 1))
    assert nesting_depth(deepest) == MAX_DEPTH
    status, created, _ = await http.post(BLOBS, deepest)
    assert status == 201, created
    status, got, _ = await http.get(f"{BLOBS}/deepest")
    assert status == 200 and got["spec"] == deepest["spec"]
    status, text, _ = await http.get(f"{BLOBS}/deepest", headers={"Accept": "application/yaml"})
    assert status == 200 and yaml.safe_load(text)["spec"] == deepest["spec"]
    status, listed, _ = await http.get(BLOBS, headers={"Accept": "application/yaml"})
    assert status == 200 and len(yaml.safe_load(listed)["items"]) == 2
    status, table, _ = await http.get(BLOBS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert status == 200 and len(table["rows"]) == 2
    events = await http.watch_lines(f"{BLOBS}?watch=1&resourceVersion=0", until=lambda evs: len(evs) >= 2)
    assert {e["object"]["metadata"]["name"] for e in events} == {"sentinel", "deepest"}
    # what was read (managed fields included) goes back as it is
    status, updated, _ = await http.put(f"{BLOBS}/deepest", got)
    assert status == 200, updated
    status, patched, _ = await http.patch(f"{BLOBS}/deepest", {"metadata": {"labels": {"seen": "yes"}}})
    assert status == 200, patched
    status, deleted, _ = await http.delete(f"{BLOBS}/deepest")
    assert status == 200, deleted
    await guard.assert_intact()


async def test_deep_server_side_apply_yaml_is_a_400_not_a_traceback(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    # ~500 levels of YAML flow mappings used to answer 500 with a 200 KB traceback
    doc = "apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: sideways}\nspec: " + "{a: " * 500 + "1" + "}" * 500
    status, body, _ = await http.patch(
        f"{BLOBS}/sideways?fieldManager=hostile", data=doc, content_type="application/apply-patch+yaml"
    )
    err = expect_status(status, body, 400, "BadRequest")
    assert (
        err["message"] == f"error decoding YAML: error converting YAML to JSON: yaml: exceeded max depth of {MAX_DEPTH}"
    )
    # block-style YAML past the limit, as a create body
    block = "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 5)) + "  " * (MAX_DEPTH + 5) + "leaf: 1\n"
    status, body, _ = await http.post(BLOBS, data=block, content_type="application/yaml")
    err = expect_status(status, body, 400, "BadRequest")
    assert "exceeded max depth" in err["message"]
    status, body, _ = await http.get(f"{BLOBS}/sideways")
    expect_status(status, body, 404, "NotFound")
    await guard.assert_intact()


@pytest.mark.parametrize(
    "content_type",
    ["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"],
)
async def test_deep_patch_bodies_are_a_400_not_a_traceback(http: HTTP, content_type: str) -> None:
    guard = await stored_sentinels(http)
    # ~990 levels in a patch used to recurse past the interpreter's stack and answer 500
    if content_type == "application/json-patch+json":
        data = '[{"op": "add", "path": "/spec/deep", "value": ' + nested_json(990) + "}]"
    else:
        data = '{"spec": ' + nested_json(990) + "}"
    target = "/api/v1/namespaces/default/configmaps/sentinel" if "strategic" in content_type else f"{BLOBS}/sentinel"
    status, body, _ = await http.patch(target, data=data, content_type=content_type)
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"] == f"error decoding patch: {DEPTH_MESSAGE}"
    await guard.assert_intact()


async def test_a_json_patch_may_not_nest_the_object_past_the_limit(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, body, _ = await http.post(BLOBS, blob("ladder", nested(150)))
    assert status == 201, body
    before = await guard.raw(f"{BLOBS}/ladder")
    # every operation is shallow, but together they would put 300 levels under spec
    path = "/spec" + "/a" * 150
    ops = [{"op": "add", "path": path + "/more", "value": nested(150)}]
    status, body, _ = await http.patch(f"{BLOBS}/ladder", ops, content_type="application/json-patch+json")
    err = expect_status(status, body, 422, "Invalid")
    assert err["message"] == (
        f"the operation at index 0 would nest the object past the max depth of {MAX_DEPTH} at {path}/more"
    )
    # moving and copying a deep value deeper is bounded the same way
    ops = [{"op": "copy", "from": "/spec", "path": path + "/copy"}]
    status, body, _ = await http.patch(f"{BLOBS}/ladder", ops, content_type="application/json-patch+json")
    expect_status(status, body, 422, "Invalid")
    assert await guard.raw(f"{BLOBS}/ladder") == before
    await guard.assert_intact()


async def test_a_watch_keeps_delivering_after_refused_deep_writes(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    status, listed, _ = await http.get(BLOBS)
    assert status == 200, listed
    rv = listed["metadata"]["resourceVersion"]

    async def later_writes() -> None:
        await asyncio.sleep(0.1)
        status, body, _ = await http.post(BLOBS, data=deep_blob_text("abyss", 400))
        assert status == 400, body
        status, body, _ = await http.post(BLOBS, blob("after", {"fine": True}))
        assert status == 201, body

    writer = asyncio.create_task(later_writes())
    events = await http.watch_lines(
        f"{BLOBS}?watch=1&resourceVersion={rv}", until=lambda evs: any(e["type"] == "ADDED" for e in evs)
    )
    await writer
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after")]
    await guard.assert_intact()
