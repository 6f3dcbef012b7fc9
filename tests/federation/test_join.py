"""`federation-manager join` and `leave`, as a platform team runs them (the real CLI in a
subprocess, kubectl to look): a cell without the CRDs is refused unless `--install-crds`;
the Secret and ClusterProfile land as docs/api.md describes; a second join changes
nothing; a cluster that does not answer is refused; `leave` removes the registration."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
from pathlib import Path

import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path
from tests.federation.inspecting import Ran

pytestmark = pytest.mark.kubectl


async def cli(*args: str) -> Ran:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def test_join_and_leave_a_cell_and_a_project(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with (
        EmbeddedAPIServer(name="management", kubeconfig=tmp_path / "mgmt.kubeconfig"),
        EmbeddedAPIServer(name="dfw-9", kubeconfig=tmp_path / "dfw-9.kubeconfig"),
        EmbeddedAPIServer(name="shop", kubeconfig=tmp_path / "shop.kubeconfig"),
    ):
        mgmt = ["--management-kubeconfig", str(tmp_path / "mgmt.kubeconfig")]
        cell = ["join", "cell", "dfw-9", "--city", "dfw", "--kubeconfig", str(tmp_path / "dfw-9.kubeconfig"), *mgmt]
        refused = await cli(*cell)
        assert refused.code == 2 and "cell dfw-9 does not serve " in refused.err
        assert "workloaddeployments.compute.datumapis.com" in refused.err
        assert "--install-crds" in refused.err
        joined = await cli(*cell, "--install-crds")
        assert joined.code == 0, joined.err
        assert "ClusterProfile federation-system/dfw-9 and Secret federation-system/dfw-9-kubeconfig" in joined.out
        assert "federation-manager run --enable-cell-controllers" in joined.out and "--city-code DFW" in joined.out

        kubectl = Kubectl(tmp_path / "mgmt.kubeconfig", tmp_path / "kc")
        profile = json.loads(
            await kubectl(
                "get", "clusterprofile", "dfw-9", "-n", "federation-system", "-o", "json", "--show-managed-fields"
            )
        )
        labels = profile["metadata"]["labels"]
        assert labels["compute.datumapis.com/cluster-role"] == "cell"
        assert labels["topology.datum.net/city-code"] == "DFW"
        assert profile["metadata"]["annotations"]["compute.datumapis.com/kubeconfig-secret"] == "dfw-9-kubeconfig"
        secret = json.loads(await kubectl("get", "secret", "dfw-9-kubeconfig", "-n", "federation-system", "-o", "json"))
        stored = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
        assert stored == yaml.safe_load((tmp_path / "dfw-9.kubeconfig").read_text())
        managers = {m["manager"] for m in profile["metadata"]["managedFields"]}
        assert managers == {"federation-manager-join"}, "written by server-side apply"

        # again: nothing changes (the same resourceVersions)
        again = await cli(*cell)
        assert again.code == 0, again.err
        for kind, name in (("clusterprofile", "dfw-9"), ("secret", "dfw-9-kubeconfig")):
            live = json.loads(await kubectl("get", kind, name, "-n", "federation-system", "-o", "json"))
            was = profile if kind == "clusterprofile" else secret
            assert live["metadata"]["resourceVersion"] == was["metadata"]["resourceVersion"], kind

        project = await cli("join", "project", "acme/shop", "--kubeconfig", str(tmp_path / "shop.kubeconfig"), *mgmt,
                            "--install-crds")  # fmt: skip
        assert project.code == 0, project.err
        shop = json.loads(await kubectl("get", "clusterprofile", "shop", "-n", "federation-system", "-o", "json"))
        assert shop["metadata"]["labels"]["meta.datumapis.com/upstream-cluster-name"] == "cluster-acme_shop"

        # a cluster that does not answer, a cell without a city: refused, nothing written
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead_port = s.getsockname()[1]
        dead = tmp_path / "dead.kubeconfig"
        conf = yaml.safe_load((tmp_path / "dfw-9.kubeconfig").read_text())
        conf["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{dead_port}"
        dead.write_text(yaml.safe_dump(conf))
        gone = await cli("join", "cell", "lhr-9", "--city", "LHR", "--kubeconfig", str(dead), *mgmt)
        assert gone.code == 2 and "cell lhr-9 does not answer with" in gone.err, gone.err
        cityless = await cli("join", "cell", "x-1", "--kubeconfig", str(tmp_path / "dfw-9.kubeconfig"), *mgmt)
        assert cityless.code == 2 and "--city" in cityless.err
        names = (await kubectl("get", "clusterprofiles", "-n", "federation-system", "-o", "name")).split()
        assert sorted(names) == [
            "clusterprofile.multicluster.x-k8s.io/dfw-9",
            "clusterprofile.multicluster.x-k8s.io/shop",
        ]

        left = await cli("leave", "cell", "dfw-9", *mgmt)
        assert left.code == 0 and "cell dfw-9 left" in left.out, left.err
        assert (await kubectl.run("get", "secret", "dfw-9-kubeconfig", "-n", "federation-system")).returncode == 1
        assert (await cli("leave", "cell", "dfw-9", *mgmt)).out.startswith("cell dfw-9 was not registered")
