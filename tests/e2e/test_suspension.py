"""Suspension as a user does it (issue 20 point 3): against `federation-manager up` with two
cells in DFW, `kubectl annotate wd api compute.datumapis.com/suspended=true` in the project
stops every Pod in both cells while the Instances stay, and the project WD says
`status.suspended: true` with the reason Suspended (`kubectl get wd`), as do its Instance
projections; nothing is written while it stays suspended (the embedded servers' request
counters over an idle window); removing the annotation brings every Pod back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
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

SUSPENDED = "compute.datumapis.com/suspended"
CELLS = ("dfw-1", "dfw-2")
IDLE_WINDOW = 10.0  # seconds of silence measured once the fleet has settled
LEASES = "leases.coordination.k8s.io"  # leader election renews its Lease on a timer: not a reconcile


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in (obj.get("status") or {}).get("conditions") or []}


def servers(state: Path) -> dict[str, str]:
    """Every embedded server of the state dir, by kubeconfig name."""
    return {
        kubeconfig.stem: yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        for kubeconfig in sorted(state.glob("*.kubeconfig"))
    }


async def writes(endpoints: dict[str, str]) -> dict[str, dict[str, int]]:
    """Every embedded server's write requests so far (Lease renewals left out), by resource and verb."""
    out: dict[str, dict[str, int]] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        for name, server in endpoints.items():
            async with session.get(f"{server}/_embedded/counters") as resp:
                counts: dict[str, dict[str, int]] = await resp.json()
            out[name] = {
                f"{resource} {verb}": n
                for resource, verbs in counts.items()
                for verb, n in verbs.items()
                if verb in WRITE_VERBS and resource != LEASES
            }
    return out


async def settled(endpoints: dict[str, str], quiet: float = 3.0) -> dict[str, dict[str, int]]:
    """The write counters once they stop moving for `quiet` seconds (the last status writes done)."""
    last = await writes(endpoints)

    async def still() -> bool:
        nonlocal last
        await asyncio.sleep(quiet)
        now = await writes(endpoints)
        same, last = now == last, now
        return same

    await eventually(still, "the fleet stops writing", within=60)
    return last


async def test_kubectl_annotate_suspends_and_resumes_a_project_wd(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await start_up(state, "--cell", "dfw-1:DFW", "--cell", "dfw-2:DFW", "--project", "acme/web")
    try:
        await wait_ready(proc, state, within=120)
        web = Kubectl(state / "web.kubeconfig", tmp_path / "kc-web")
        cells = {name: Kubectl(state / f"{name}.kubeconfig", tmp_path / f"kc-{name}") for name in CELLS}
        await web("apply", "-f", str(REPO / "docs/examples/api-workloaddeployment.yaml"))

        async def wd() -> dict[str, Any]:
            found: dict[str, Any] = json.loads(await web("get", "wd", "api", "-o", "json"))
            return found

        async def api_pods() -> set[str]:
            names: set[str] = set()
            for kubectl in cells.values():
                listed = json.loads(await kubectl("get", "pods", "-A", "-o", "json"))["items"]
                names |= {p["metadata"]["name"] for p in listed if p["metadata"]["name"].startswith("api-")}
            return names

        async def running() -> bool:
            return (await wd()).get("status", {}).get("readyReplicas") == 3 and len(await api_pods()) == 3

        await eventually(running, "api: 3 Instances ready over dfw-1 and dfw-2", within=120)
        projections = json.loads(await web("get", "instances", "-o", "json"))["items"]
        uids = {i["metadata"]["name"]: i["metadata"]["uid"] for i in projections if i["metadata"]["name"][:4] == "api-"}
        assert set(uids) == {"api-0", "api-1", "api-2"}

        # suspend: the annotation on the project WD, as upstream's suspend hook writes it
        await web("annotate", "wd", "api", f"{SUSPENDED}=true")

        async def suspended() -> bool:
            status = (await wd()).get("status") or {}
            if status.get("suspended") is not True or await api_pods():
                return False
            said = conditions(await wd())
            return said.get("Available") == ("False", "Suspended") and said.get("ReplicasReady") == (
                "False",
                "Suspended",
            )

        await eventually(suspended, "project WD suspended, no api Pod in either cell", within=90)
        row = (await web("get", "wd", "api", "--no-headers")).split()
        assert row[2:4] == ["False", "Suspended"], row

        async def projections_suspended() -> bool:
            items = json.loads(await web("get", "instances", "-o", "json"))["items"]
            api = {i["metadata"]["name"]: i for i in items if i["metadata"]["name"].startswith("api-")}
            return set(api) == set(uids) and all(
                i["status"].get("suspended") is True and conditions(i).get("Ready") == ("False", "Suspended")
                for i in api.values()
            )

        await eventually(projections_suspended, "the Instances stay, each suspended, Ready False/Suspended")
        items = json.loads(await web("get", "instances", "-o", "json"))["items"]
        assert {i["metadata"]["name"]: i["metadata"]["uid"] for i in items if i["metadata"]["name"][:4] == "api-"} == (
            uids
        ), "the projections (and so the Instances) were never deleted"
        for name, kubectl in cells.items():
            copy = json.loads(await kubectl("get", "wd", "-A", "-o", "json"))["items"]
            (api_copy,) = [c for c in copy if c["metadata"]["name"] == "api"]
            assert api_copy["metadata"]["annotations"][SUSPENDED] == "true", name
            assert api_copy["status"]["suspended"] is True, name

        # suspended is a steady state: not one write anywhere over an idle window
        endpoints = servers(state)
        assert {"management", "web", *CELLS} <= set(endpoints), endpoints
        before = await settled(endpoints)
        assert all(before[cell] for cell in CELLS), f"the counters see the cells' writes: {before}"
        await asyncio.sleep(IDLE_WINDOW)
        after = await writes(endpoints)
        moved = {
            cluster: {
                key: n - before[cluster].get(key, 0) for key, n in counts.items() if n != before[cluster].get(key)
            }
            for cluster, counts in after.items()
        }
        assert not any(moved.values()), f"writes while suspended: {moved}"

        # resume: removing the annotation brings every Pod back, and the status says so
        await web("annotate", "wd", "api", f"{SUSPENDED}-")

        async def resumed() -> bool:
            status = (await wd()).get("status") or {}
            return (
                await running()
                and status.get("suspended") is False
                and conditions(await wd()).get("Available") == ("True", "StableInstanceFound")
            )

        await eventually(resumed, "api: 3 Instances ready again, status.suspended false", within=120)
        check: Callable[[], Awaitable[bool]] = projections_resumed(web, uids)
        await eventually(check, "the same Instances, resumed")
    finally:
        if proc.returncode is None:
            proc.terminate()
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()


def projections_resumed(web: Kubectl, uids: dict[str, str]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        items = json.loads(await web("get", "instances", "-o", "json"))["items"]
        api = {i["metadata"]["name"]: i for i in items if i["metadata"]["name"].startswith("api-")}
        return {n: i["metadata"]["uid"] for n, i in api.items()} == uids and all(
            i["status"].get("suspended") is False and conditions(i).get("Ready", ("", ""))[0] == "True"
            for i in api.values()
        )

    return check
