"""An embedded server with a data directory keeps its objects across a restart: the same
objects and UIDs come back (custom resources too, their CRD served again), resourceVersions
keep increasing, a watch from before the restart gets 410 Expired, and a second server on
the same directory is refused while the first holds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.persist import DataDirInUse
from tests.support.waiting import eventually

from .plane_support import CHAIN_CRDS


async def request(server: EmbeddedAPIServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.request(method, server.url + path, json=body) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if text and text[0] == "{" else text


async def test_objects_uids_and_custom_resources_come_back_and_revisions_keep_increasing(tmp_path: Path) -> None:
    import yaml

    data = tmp_path / "data"
    async with EmbeddedAPIServer(data_dir=data) as first:
        code, cm = await request(first, "POST", "/api/v1/namespaces/default/configmaps",
                                 {"metadata": {"name": "kept"}, "data": {"k": "v"}})  # fmt: skip
        assert code == 201
        cms = "/api/v1/namespaces/default/configmaps"
        code, gone = await request(first, "POST", cms, {"metadata": {"name": "gone"}})
        assert code == 201
        assert (await request(first, "DELETE", "/api/v1/namespaces/default/configmaps/gone"))[0] == 200
        crd = next(d for d in yaml.safe_load_all(CHAIN_CRDS) if d["spec"]["names"]["plural"] == "deployments")
        assert (await request(first, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd))[0] == 201

        async def served() -> bool:
            return (await request(first, "GET", "/apis/chain.example.com/v1/namespaces/default/deployments"))[0] == 200

        await eventually(served, "the CRD served")
        code, dep = await request(first, "POST", "/apis/chain.example.com/v1/namespaces/default/deployments",
                                  {"apiVersion": "chain.example.com/v1", "kind": "Deployment",
                                   "metadata": {"name": "d"}, "spec": {"x": 1}})  # fmt: skip
        assert code == 201, dep
        _, before = await request(first, "GET", "/api/v1/namespaces/default/configmaps")
        last_rv = int(before["metadata"]["resourceVersion"])

    async with EmbeddedAPIServer(data_dir=data) as second:
        code, again = await request(second, "GET", "/api/v1/namespaces/default/configmaps/kept")
        assert code == 200 and again["metadata"]["uid"] == cm["metadata"]["uid"] and again["data"] == {"k": "v"}
        assert again["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
        assert (await request(second, "GET", "/api/v1/namespaces/default/configmaps/gone"))[0] == 404

        async def served_again() -> bool:
            code, got = await request(second, "GET", "/apis/chain.example.com/v1/namespaces/default/deployments/d")
            return code == 200 and got["metadata"]["uid"] == dep["metadata"]["uid"]

        await eventually(served_again, "the custom resource back, its CRD served again")
        # a watch from before the restart: 410 Expired (the client re-lists)
        code, status = await request(
            second, "GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={last_rv}&timeoutSeconds=1"
        )
        assert status["type"] == "ERROR" and status["object"]["code"] == 410, status
        _, listed = await request(second, "GET", "/api/v1/namespaces/default/configmaps")
        assert int(listed["metadata"]["resourceVersion"]) > last_rv
        code, new = await request(second, "POST", cms, {"metadata": {"name": "new"}})
        assert code == 201 and int(new["metadata"]["resourceVersion"]) > last_rv
        assert new["metadata"]["uid"] not in (cm["metadata"]["uid"], gone["metadata"]["uid"])


async def test_a_second_server_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(data_dir=tmp_path):
        with pytest.raises(DataDirInUse, match="in use by another process"):
            EmbeddedAPIServer(data_dir=tmp_path)
    async with EmbeddedAPIServer(data_dir=tmp_path):  # released on stop
        pass


async def test_without_a_data_dir_nothing_is_kept() -> None:
    async with EmbeddedAPIServer() as first:
        assert (await request(first, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "x"}}))[0]
    async with EmbeddedAPIServer() as second:
        assert (await request(second, "GET", "/api/v1/namespaces/default/configmaps/x"))[0] == 404
