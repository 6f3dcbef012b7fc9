"""LIST through kubectl: label and field selectors, chunking (limit/continue), cluster-wide
lists of namespaced kinds, and the list resourceVersion (including reads at a revision)."""

from __future__ import annotations

import json
from urllib.parse import quote

from kubeplane.testing import Kubectl

from .conftest import configmap, manifests, namespace


async def _names(kubectl: Kubectl, *args: str) -> list[str]:
    out = await kubectl("get", "cm", "-o", "jsonpath={.items[*].metadata.name}", *args)
    return out.split()


async def test_label_selectors(kubectl: Kubectl) -> None:
    objs = [
        configmap("a", labels={"tier": "web", "env": "prod"}),
        configmap("b", labels={"tier": "web", "env": "dev"}),
        configmap("c", labels={"tier": "db"}),
        configmap("d"),
    ]
    await kubectl("create", "-f", "-", stdin=manifests(*objs))
    assert await _names(kubectl, "-l", "tier=web") == ["a", "b"]
    assert await _names(kubectl, "-l", "tier==db") == ["c"]
    assert await _names(kubectl, "-l", "tier!=web") == ["c", "d"]
    assert await _names(kubectl, "-l", "env in (prod,staging)") == ["a"]
    assert await _names(kubectl, "-l", "tier notin (web)") == ["c", "d"]
    assert await _names(kubectl, "-l", "env") == ["a", "b"]
    assert await _names(kubectl, "-l", "!env") == ["c", "d"]
    assert await _names(kubectl, "-l", "tier=web,env!=prod") == ["b"]
    assert await _names(kubectl, "-l", "tier in (web,db),!env") == ["c"]
    assert await _names(kubectl, "-l", "nothing=here") == []
    res = await kubectl.run("get", "cm", "-l", "tier in web")
    assert res.returncode == 1
    assert "Error from server (BadRequest)" in res.stderr
    assert "unable to parse requirement: found 'web' expected: '('" in res.stderr
    res = await kubectl.run("get", "--raw", "/api/v1/namespaces/default/configmaps?labelSelector=" + quote("a b c"))
    assert res.returncode == 1 and "BadRequest" in res.stderr and "unable to parse requirement" in res.stderr


async def test_field_selectors_and_cluster_wide_lists(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(namespace("other")))
    await kubectl("create", "-f", "-", stdin=manifests(configmap("x"), configmap("y")))
    await kubectl("create", "-n", "other", "-f", "-", stdin=manifests(configmap("x"), configmap("z")))
    assert await _names(kubectl, "--field-selector", "metadata.name=x") == ["x"]
    assert await _names(kubectl, "--field-selector", "metadata.name!=x") == ["y"]
    everywhere = await kubectl(
        "get", "cm", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}"
    )
    assert everywhere.split() == ["default/x", "default/y", "other/x", "other/z"]
    pick = await kubectl(
        "get",
        "cm",
        "-A",
        "--field-selector",
        "metadata.namespace=other,metadata.name!=z",
        "-o",
        "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}",
    )
    assert pick.split() == ["other/x"]
    both = await kubectl("get", "cm", "-A", "-l", "!missing", "--field-selector", "metadata.name=x", "-o", "name")
    assert both.split() == ["configmap/x", "configmap/x"]
    assert (await kubectl("get", "ns", "--field-selector", "metadata.name=other", "-o", "name")).strip() == (
        "namespace/other"
    )
    res = await kubectl.run("get", "cm", "--field-selector", "data.key=1")
    assert res.returncode == 1
    assert "Error from server (BadRequest)" in res.stderr and "field label not supported: data.key" in res.stderr
    raw = json.loads(await kubectl("get", "--raw", "/api/v1/configmaps"))
    assert raw["kind"] == "ConfigMapList" and len(raw["items"]) == 4


async def test_chunked_lists_and_list_resource_versions(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=manifests(*(configmap(f"cm-{i}") for i in range(5))))
    # kubectl pages with limit/continue and stitches the result together
    assert await _names(kubectl, "--chunk-size=2") == [f"cm-{i}" for i in range(5)]

    base = "/api/v1/namespaces/default/configmaps"
    first = json.loads(await kubectl("get", "--raw", f"{base}?limit=2"))
    assert [i["metadata"]["name"] for i in first["items"]] == ["cm-0", "cm-1"]
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 3
    snapshot_rv = first["metadata"]["resourceVersion"]
    # changes after the first page do not show up in later pages (one consistent snapshot)
    await kubectl("delete", "cm", "cm-3")
    await kubectl("create", "-f", "-", stdin=manifests(configmap("cm-9")))
    second = json.loads(await kubectl("get", "--raw", f"{base}?limit=2&continue={token}"))
    assert [i["metadata"]["name"] for i in second["items"]] == ["cm-2", "cm-3"]
    assert second["metadata"]["resourceVersion"] == snapshot_rv
    last = json.loads(await kubectl("get", "--raw", f"{base}?limit=2&continue={second['metadata']['continue']}"))
    assert [i["metadata"]["name"] for i in last["items"]] == ["cm-4"]
    assert "continue" not in last["metadata"]

    # a fresh list reports the current revision and the current objects
    now = json.loads(await kubectl("get", "--raw", base))
    assert int(now["metadata"]["resourceVersion"]) > int(snapshot_rv)
    assert [i["metadata"]["name"] for i in now["items"]] == ["cm-0", "cm-1", "cm-2", "cm-4", "cm-9"]
    # an exact read at an older revision sees the objects as they were then
    then = json.loads(await kubectl("get", "--raw", f"{base}?resourceVersion={snapshot_rv}&resourceVersionMatch=Exact"))
    assert [i["metadata"]["name"] for i in then["items"]] == [f"cm-{i}" for i in range(5)]
    assert then["metadata"]["resourceVersion"] == snapshot_rv
    # resourceVersion=0 (any) and a not-older-than read both answer
    assert len(json.loads(await kubectl("get", "--raw", f"{base}?resourceVersion=0"))["items"]) == 5
    assert len(json.loads(await kubectl("get", "--raw", f"{base}?resourceVersion={snapshot_rv}"))["items"]) == 5
    # a bad continue token is a 400
    res = await kubectl.run("get", "--raw", f"{base}?limit=1&continue=garbage")
    assert res.returncode == 1 and "BadRequest" in res.stderr
