"""Referenced data on `federation-manager up`, driven with kubectl as a user drives it: a
ConfigMap and a Secret in the project, a WorkloadDeployment referencing them in every form
(env, envFrom, a volume, an image pull secret); the companions reach the DFW cell, the
Instances start only with them, ReferencedDataReady is True up to the project; a source
edit reaches the cell; a missing source is ReferencedDataReady=False naming it with an
Event; removing the reference reclaims the companion; the Secret's value is in no log and
no Event."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane.testing import Kubectl, kubectl_path
from tests.federation.test_demo import start_up, wait_ready
from tests.support import eventually
from tests.support.processes import REPO

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

EXAMPLE = REPO / "docs" / "examples" / "configured-workloaddeployment.yaml"  # the README's
DOCS: list[dict[str, Any]] = list(yaml.safe_load_all(EXAMPLE.read_text()))
PASSWORD = next(d for d in DOCS if d["metadata"]["name"] == "db")["stringData"]["password"]


def broken_wd() -> dict[str, Any]:
    """The example's WD, renamed, with its Secret key reference pointing at a Secret that does not exist."""
    wd = copy.deepcopy(DOCS[-1])
    wd["metadata"]["name"] = "broken"
    container = wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["env"][0]["valueFrom"]["secretKeyRef"]["name"] = "missing"
    return wd


def other_forms_wd() -> dict[str, Any]:
    """The example's WD, renamed, reaching the same sources through the forms the example
    does not use: `configMapKeyRef`, `envFrom[].secretRef`, a `secret` volume."""
    wd = copy.deepcopy(DOCS[-1])
    wd["metadata"]["name"] = "other-forms"
    spec = wd["spec"]["template"]["spec"]
    container = spec["runtime"]["sandbox"]["containers"][0]
    container["env"] = [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "MODE"}}}]
    container["envFrom"] = [{"secretRef": {"name": "db"}}]
    spec["runtime"]["sandbox"].pop("imagePullSecrets")
    spec["volumes"] = [{"name": "creds", "secret": {"secretName": "db"}}]
    return wd


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}.get(type_) or {}


async def test_referenced_data_on_up(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    state = tmp_path / "demo"
    proc = await start_up(state, "--log-level=DEBUG")  # every log line, for the leak check
    out = err = b""
    try:
        await wait_ready(proc, state)
        project = Kubectl(state / "web.kubeconfig", tmp_path / "c1")
        dfw = Kubectl(state / "cell-dfw.kubeconfig", tmp_path / "c2")
        lhr = Kubectl(state / "cell-lhr.kubeconfig", tmp_path / "c3")
        await project("apply", "-f", str(EXAMPLE))

        async def wd(name: str) -> dict[str, Any]:
            result: dict[str, Any] = json.loads(await project("get", "wd", name, "-o", "json"))
            return result

        async def ready() -> bool:
            obj = await wd("configured")
            return (
                condition(obj, "ReferencedDataReady").get("status") == "True"
                and condition(obj, "Available").get("status") == "True"
            )

        await eventually(ready, "ReferencedDataReady and Available True on the project WD", within=60)
        (tmp_path / "other-forms.yaml").write_text(yaml.safe_dump(other_forms_wd()))
        await project("apply", "-f", str(tmp_path / "other-forms.yaml"))

        async def other_forms_ready() -> bool:
            obj = await wd("other-forms")
            return condition(obj, "ReferencedDataReady").get("status") == "True" and (
                condition(obj, "Available").get("status") == "True"
            )

        await eventually(other_forms_ready, "the other reference forms ready too", within=60)
        ns = (
            await dfw("get", "wd", "-A", "-o", "jsonpath={.items[?(@.metadata.name=='configured')].metadata.namespace}")
        ).strip()
        selector = "compute.datumapis.com/referenced-data=true"
        companions = json.loads(await dfw("get", "configmaps,secrets", "-n", ns, "-l", selector, "-o", "json"))["items"]
        assert {(o["kind"], o["metadata"]["name"]) for o in companions} == {
            ("ConfigMap", "app-config"), ("Secret", "db"), ("Secret", "regcred")
        }  # fmt: skip
        assert (
            await lhr("get", "secrets", "-A", "-l", "compute.datumapis.com/referenced-data=true", "-o", "name")
        ).strip() == ""
        instance = json.loads(await dfw("get", "instance", "configured-0", "-n", ns, "-o", "json"))
        assert condition(instance, "ReferencedDataReady")["status"] == "True"
        assert instance["spec"]["controller"]["schedulingGates"] == []

        # a source edit reaches the cell
        await project("patch", "configmap", "app-config", "--type=merge", "-p", '{"data":{"MODE":"slow"}}')

        async def edited() -> bool:
            cm = json.loads(await dfw("get", "configmap", "app-config", "-n", ns, "-o", "json"))
            return bool(cm["data"] == {"MODE": "slow"})

        await eventually(edited, "the edit in the cell's companion", within=30)

        # a missing source: ReferencedDataReady=False naming it, and an Event
        (tmp_path / "broken.yaml").write_text(yaml.safe_dump(broken_wd()))
        await project("apply", "-f", str(tmp_path / "broken.yaml"))

        async def names_missing() -> bool:
            cond = condition(await wd("broken"), "ReferencedDataReady")
            return cond.get("status") == "False" and "Secret/missing" in cond.get("message", "")

        await eventually(names_missing, "ReferencedDataReady=False naming Secret/missing", within=60)
        events = await project("get", "events", "--field-selector", "involvedObject.name=broken,reason=SourceNotFound",
                               "-o", "jsonpath={.items[*].message}")  # fmt: skip
        assert 'Secret "missing" not found in namespace "default"' in events
        # the Instance of broken waits behind the gate: no Pod is started without its Secret
        gated = json.loads(await dfw("get", "instance", "broken-0", "-n", ns, "-o", "json"))
        assert [g["name"] for g in gated["spec"]["controller"]["schedulingGates"]] == ["ReferencedData"]

        # the reference removed: the companion no WD references any more is reclaimed
        await project("delete", "wd", "broken", "configured", "other-forms")

        async def reclaimed() -> bool:
            left = await dfw("get", "configmaps,secrets", "-n", ns, "-l", "compute.datumapis.com/referenced-data=true",
                             "-o", "name")  # fmt: skip
            return left.strip() == ""

        await eventually(reclaimed, "every companion reclaimed", within=60)
        # the Secret's value is in no Event, anywhere
        for kubectl in (project, dfw, lhr):
            assert PASSWORD not in await kubectl("get", "events", "-A", "-o", "json")
            assert base64.b64encode(PASSWORD.encode()).decode() not in await kubectl(
                "get", "events", "-A", "-o", "json"
            )
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    logs = out.decode() + err.decode()
    assert proc.returncode == 0, logs[-3000:]
    assert "app-config" in logs, "the companions' writes are logged (by name), so the leak check reads real logs"
    assert PASSWORD not in logs and base64.b64encode(PASSWORD.encode()).decode() not in logs
