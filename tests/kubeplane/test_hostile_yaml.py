"""Hostile YAML: an alias bomb sent as server-side apply is refused as kube-apiserver's YAML
decoder refuses it (goyaml's "document contains excessive aliasing"), so nothing is stored
that expands on every read; a self-referencing anchor is refused; ordinary anchors still
work and are stored expanded."""

from __future__ import annotations

import pytest

from .conftest import HTTP, expect_status
from .hostile_support import BLOBS, CMS, stored_sentinels


def alias_bomb(levels: int, fanout: int = 9) -> str:
    """The billion-laughs shape, `fanout`**`levels` leaves from a few hundred bytes (kept
    small here: the point is the refusal, not the blow-up)."""
    lines = ["apiVersion: example.com/v1", "kind: Blob", "metadata: {name: laughs}", "spec:"]
    lines.append('  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]')
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * fanout)
        lines.append(f"  l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("content_type", ["application/apply-patch+yaml", "application/yaml"])
async def test_an_alias_bomb_is_refused_and_not_stored(http: HTTP, content_type: str) -> None:
    guard = await stored_sentinels(http)
    bomb = alias_bomb(5)  # ~600 bytes standing for ~60,000 strings
    assert len(bomb) < 1000
    if content_type == "application/apply-patch+yaml":
        status, body, _ = await http.patch(f"{BLOBS}/laughs?fieldManager=hostile", data=bomb, content_type=content_type)
        prefix = "error decoding YAML: "
    else:
        status, body, _ = await http.post(BLOBS, data=bomb, content_type=content_type)
        prefix = ""
    err = expect_status(status, body, 400, "BadRequest")
    assert err["message"] == f"{prefix}error converting YAML to JSON: yaml: document contains excessive aliasing"
    status, body, _ = await http.get(f"{BLOBS}/laughs")
    expect_status(status, body, 404, "NotFound")
    await guard.assert_intact()


async def test_an_anchor_that_contains_itself_is_refused(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    doc = "apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: ouroboros}\nspec: &loop {self: *loop}\n"
    status, body, _ = await http.patch(
        f"{BLOBS}/ouroboros?fieldManager=hostile", data=doc, content_type="application/apply-patch+yaml"
    )
    err = expect_status(status, body, 400, "BadRequest")
    assert (
        err["message"]
        == "error decoding YAML: error converting YAML to JSON: yaml: anchor 'loop' value contains itself"
    )
    await guard.assert_intact()


async def test_ordinary_anchors_are_accepted_and_stored_expanded(http: HTTP) -> None:
    guard = await stored_sentinels(http)
    doc = (
        "apiVersion: example.com/v1\nkind: Blob\nmetadata:\n  name: anchors\n  labels: &labels {team: a}\n"
        "spec:\n  copyOfLabels: *labels\n  base: &base {cpu: '1', memory: 1Gi}\n"
        "  small: *base\n  large: {<<: *base, cpu: '4'}\n  when: 2024-01-01\n"
    )
    status, body, _ = await http.patch(
        f"{BLOBS}/anchors?fieldManager=yaml-user", data=doc, content_type="application/apply-patch+yaml"
    )
    assert status == 201, body
    status, got, _ = await http.get(f"{BLOBS}/anchors")
    assert got["metadata"]["labels"] == {"team": "a"}
    assert got["spec"] == {
        "copyOfLabels": {"team": "a"},
        "base": {"cpu": "1", "memory": "1Gi"},
        "small": {"cpu": "1", "memory": "1Gi"},
        "large": {"cpu": "4", "memory": "1Gi"},
        "when": "2024-01-01",  # timestamps stay the strings they were written as
    }
    # aliases and non-string keys in a YAML create body
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml-keys}\ndata: &d {a: x}\nbinaryData: {}\n"
    status, body, _ = await http.post(CMS, data=cm, content_type="application/yaml")
    assert status == 201 and body["data"] == {"a": "x"}, body
    await guard.assert_intact()
