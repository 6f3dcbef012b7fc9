"""`up` keeps its state, as a user meets it with kubectl: an applied WorkloadDeployment
survives a SIGKILL of `up`; after a restart every object comes back with its UID, new
resourceVersions are above every old one, a watch from before the restart gets 410, and
the controllers resume without writing anything (the servers' request counters); with
`--ephemeral` nothing is kept."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubeplane.accounting import WRITE_VERBS
from kubeplane.testing import Kubectl, kubectl_path
from tests.federation.test_demo import REPO, start_up, wait_ready
from tests.support import eventually

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

CLUSTERS = ("management", "web", "cell-dfw", "cell-lhr")
KINDS = {
    "management": "clusterprofiles,secrets,namespaces,customresourcedefinitions",
    "web": "workloads,wd,instances,namespaces,customresourcedefinitions",
    "cell-dfw": "wd,instances,pods,namespaces",
    "cell-lhr": "wd,instances,pods,namespaces",
}
# what `up` itself applies at every start (CRDs, the registration namespace, Secrets and
# ClusterProfiles): server-side applies that change nothing when nothing changed
UP_APPLIES = {"customresourcedefinitions.apiextensions.k8s.io", "namespaces", "secrets",
              "clusterprofiles.multicluster.x-k8s.io"}  # fmt: skip


def need_kubectl() -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")


async def objects(kubectl: Kubectl, kinds: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    listed = json.loads(await kubectl("get", kinds, "-A", "-o", "json"))["items"]
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"] for o in listed}


async def world(state: Path, tmp: Path) -> dict[str, dict[tuple[str, str, str], dict[str, Any]]]:
    return {c: await objects(Kubectl(state / f"{c}.kubeconfig", tmp / f"kc-{c}"), KINDS[c]) for c in CLUSTERS}


async def counters(state: Path, cluster: str) -> dict[str, dict[str, int]]:
    server = yaml.safe_load((state / f"{cluster}.kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
    async with aiohttp.ClientSession() as session, session.get(f"{server}/_embedded/counters") as resp:
        found: dict[str, dict[str, int]] = await resp.json()
        return found


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()


async def first_lines(proc: asyncio.subprocess.Process, n: int) -> str:
    assert proc.stdout is not None
    return "".join([(await asyncio.wait_for(proc.stdout.readline(), 60)).decode() for _ in range(n)])


async def test_an_applied_wd_survives_sigkill_and_a_restart_resumes_without_writes(tmp_path: Path) -> None:
    need_kubectl()
    state = tmp_path / "demo"
    proc = await start_up(state)
    try:
        await wait_ready(proc, state)
        assert "state: persisted in" in await first_lines(proc, 2)
        web = Kubectl(state / "web.kubeconfig", tmp_path / "kc-web")
        dfw = Kubectl(state / "cell-dfw.kubeconfig", tmp_path / "kc-dfw")

        async def sample_running() -> bool:
            return len(json.loads(await dfw("get", "pods", "-A", "-o", "json"))["items"]) == 2

        await eventually(sample_running, "the sample's DFW pods", within=60)
        # acknowledged by the server, then the process is killed at once
        applied = json.loads(
            await web("apply", "-o", "json", "-f", str(REPO / "docs/examples/api-workloaddeployment.yaml"))
        )
        before = await world(state, tmp_path)
        # the project server's own: each server counts its resourceVersions apart, and a
        # revision taken from another server may lie in this one's future (no 410 for it)
        old_rv = max(int(m["resourceVersion"]) for m in before["web"].values())
        proc.kill()
        await proc.wait()

        proc = await start_up(state)
        banner = await first_lines(proc, 3)  # "took over --state-dir ... from pid N": the killed one's lock
        assert f"took over --state-dir {state} from pid" in banner, banner
        assert f"state: restored from {state / 'data'}" in banner, banner
        await wait_ready(proc, state)
        after = await world(state, tmp_path)
        api = after["web"][("WorkloadDeployment", "default", "api")]
        assert api["uid"] == applied["metadata"]["uid"], "the acknowledged write survived the SIGKILL"
        for cluster in CLUSTERS:
            for key, meta in before[cluster].items():
                assert key in after[cluster], f"{cluster}: {key} lost in the restart"
                assert after[cluster][key]["uid"] == meta["uid"], f"{cluster}: {key} recreated"
        # a watch from before the restart: 410 Expired; new writes get higher resourceVersions
        stale = await web.run("get", "--raw", f"/api/v1/namespaces?watch=1&resourceVersion={old_rv}&timeoutSeconds=2")
        assert '"code":410' in stale.stdout.replace(" ", ""), stale
        created = json.loads(await web("create", "configmap", "after-restart", "-o", "json"))
        assert int(created["metadata"]["resourceVersion"]) > old_rv

        async def api_running() -> bool:
            wd = json.loads(await web("get", "wd", "api", "-o", "json"))
            return (wd.get("status") or {}).get("readyReplicas") == 3

        await eventually(api_running, "the WD applied before the SIGKILL converges after the restart", within=90)
        await asyncio.sleep(5)  # let the status of everything settle
        settled = await world(state, tmp_path)
        await stop(proc)

        # a clean restart with nothing changed: the same objects at the same resourceVersions,
        # and no controller writes anything (only up's own idempotent applies are counted)
        proc = await start_up(state)
        await wait_ready(proc, state)
        await asyncio.sleep(10)  # the controllers' resync and a quiet window after it
        again = await world(state, tmp_path)
        for cluster in CLUSTERS:
            assert again[cluster].keys() == settled[cluster].keys(), cluster
            for key, meta in settled[cluster].items():
                assert again[cluster][key]["resourceVersion"] == meta["resourceVersion"], f"{cluster}: {key} rewritten"
            writes = {
                f"{resource} {verb}": n
                for resource, verbs in (await counters(state, cluster)).items()
                for verb, n in verbs.items()
                if verb in WRITE_VERBS and resource not in UP_APPLIES
            }
            assert writes == {}, f"{cluster}: writes after a restart with nothing changed: {writes}"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_ephemeral_keeps_nothing(tmp_path: Path) -> None:
    need_kubectl()
    state = tmp_path / "demo"
    for run in range(2):
        proc = await start_up(state, "--ephemeral", "--cell", "dfw:DFW")
        try:
            assert "state: in memory (--ephemeral)" in await first_lines(proc, 2)
            await wait_ready(proc, state)
            web = Kubectl(state / "web.kubeconfig", tmp_path / "kc-web")
            if run == 0:
                await web("create", "configmap", "gone-after-restart")
            else:
                assert (await web.run("get", "configmap", "gone-after-restart")).returncode == 1
        finally:
            await stop(proc)
    assert not (state / "data").exists()
