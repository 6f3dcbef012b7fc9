"""Referenced data in a cell: Instances held behind the `ReferencedData` gate until every
companion their copy expects is in the namespace, `ReferencedDataReady` on the Instances
and the WD (read with kubectl), and the kubelet stand-in refusing a container whose
ConfigMap, Secret or key is missing (CreateContainerConfigError), as a kubelet does."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cells.instances import instance_for
from cells.referenceddata import deployment_referenced_data, instance_referenced_data, with_referenced_data
from tests.support import eventually

from .cellbed import NS, cell, workload_deployment

EXPECTED = "compute.datumapis.com/expected-referenced-data"
COMPANION_LABELS = {"compute.datumapis.com/referenced-data": "true"}


def referencing_wd(name: str = "api", replicas: int = 2, *, expected: str | None) -> dict[str, Any]:
    wd = workload_deployment(name, replicas)
    container = wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]
    container["env"] = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    container["envFrom"] = [{"configMapRef": {"name": "cfg"}}]
    if expected is not None:
        wd["metadata"].setdefault("annotations", {})[EXPECTED] = expected
    return wd


def _condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    return {c["type"]: c for c in (obj or {}).get("status", {}).get("conditions", [])}.get(type_) or {}


def _secret(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"metadata": {"name": "db", "namespace": NS, "labels": labels or {}}, "data": encoded}


def _configmap(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "cfg", "namespace": NS, "labels": labels or {}}, "data": {"mode": "fast"}}


async def test_instances_wait_for_their_companions(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.create_wd(referencing_wd(expected='["ConfigMap/cfg","Secret/db"]'))
        await eventually(lambda: set(c.instances()) == {"api-0"}, "the first Instance")

        def waiting() -> bool:
            cond = _condition(c.instances().get("api-0"), "ReferencedDataReady")
            return cond.get("reason") == "AwaitingPropagation"

        await eventually(waiting, "api-0 ReferencedDataReady=False/AwaitingPropagation")
        instance = c.instances()["api-0"]
        assert [g["name"] for g in instance["spec"]["controller"]["schedulingGates"]] == ["ReferencedData"]
        cond = _condition(instance, "ReferencedDataReady")
        assert cond["status"] == "False"
        assert cond["message"] == "waiting for 2 companion(s) to arrive on the cell: ConfigMap/cfg, Secret/db"
        assert c.pods() == {}, "no Pod while the gate holds"
        # the WD says so too, read as a user reads it
        wd_cond = json.loads(await c.kubectl("get", "wd", "api", "-n", NS, "-o", "json"))
        await eventually(lambda: _condition(c.wd("api"), "ReferencedDataReady").get("status") == "False", "WD False")
        assert "ConfigMap/cfg, Secret/db" in _condition(c.wd("api"), "ReferencedDataReady")["message"]
        assert wd_cond["metadata"]["name"] == "api"
        # one companion arrives: only the other is named
        c.plane.create("configmaps", _configmap(COMPANION_LABELS))
        await eventually(
            lambda: (
                _condition(c.instances().get("api-0"), "ReferencedDataReady").get("message", "").endswith(": Secret/db")
            ),
            "only Secret/db missing",
        )
        # a Secret of the right name that is not a companion does not count; the companion does
        c.plane.create("secrets", _secret({"password": "x"}, COMPANION_LABELS))
        await c.converged("api", {"api-0", "api-1"})
        for name in ("api-0", "api-1"):
            cond = _condition(c.instances()[name], "ReferencedDataReady")
            assert (cond["status"], cond["reason"]) == ("True", "Ready")
            assert c.instances()[name]["spec"]["controller"]["schedulingGates"] == []
        out = await c.kubectl(
            "get", "wd", "api", "-n", NS, "-o", "jsonpath={.status.conditions[?(@.type=='ReferencedDataReady')].status}"
        )
        assert out.strip() == "True"


async def test_the_kubelet_refuses_a_missing_secret_or_key(tmp_path: Path) -> None:
    async with cell(tmp_path) as c:
        c.plane.create("configmaps", _configmap())
        c.create_wd(referencing_wd(replicas=1, expected=None))  # a cell used directly: no gate

        def ready() -> dict[str, Any]:
            return _condition(c.instances().get("api-0"), "Ready")

        await eventually(lambda: 'secret "db" not found' in ready().get("message", ""), "secret not found")
        assert (ready()["status"], ready()["reason"]) == ("False", "ConfigurationError")
        pod = c.pods()["api-0"]
        (status,) = pod["status"]["containerStatuses"]
        assert status["state"]["waiting"] == {
            "reason": "CreateContainerConfigError",
            "message": 'secret "db" not found',
        }
        c.plane.create("secrets", _secret({"user": "x"}))
        await eventually(
            lambda: f"couldn't find key password in Secret {NS}/db" in ready().get("message", ""), "key not found"
        )
        row = await c.kubectl("get", "instance", "api-0", "-n", NS, "--no-headers")
        assert row.split()[2:4] == ["False", "ConfigurationError"], row
        secret = c.plane.get("secrets", NS, "db")
        secret["data"]["password"] = base64.b64encode(b"y").decode()
        c.plane.update("secrets", secret)
        await c.converged("api", {"api-0"})


# ---------------------------------------------------------------------- the pure part
GATED = {"spec": {"controller": {"schedulingGates": [{"name": "ReferencedData"}]}}}


def _instance(refs: list[Any], *, gated: bool = True, conditions: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtime": {"sandbox": {"containers": [{"name": "a", "image": "x", "envFrom": refs}]}}}
    if gated:
        spec["controller"] = GATED["spec"]["controller"]
    return {"metadata": {"generation": 3}, "spec": spec, "status": {"conditions": conditions or []}}


@pytest.mark.parametrize(
    ("instance", "present", "expected"),
    [
        (_instance([{"secretRef": {"name": "db"}}], gated=False), set(), None),
        (_instance([{"secretRef": {"name": "db"}}]), set(), ("False", "AwaitingPropagation", "Secret/db")),
        (_instance([{"secretRef": {"name": "db"}}]), {("Secret", "db")}, ("True", "Ready", "all 1")),
        (
            _instance([{"secretRef": {"name": "db"}}]),
            {("ConfigMap", "db")},
            ("False", "AwaitingPropagation", "Secret/db"),
        ),
        (_instance([{"secretRef": {"name": "db", "optional": True}}]), set(), ("True", "Ready", "all 0")),
        (
            _instance(
                [{"secretRef": {"name": "db"}}],
                gated=False,
                conditions=[{"type": "ReferencedDataReady", "status": "True", "reason": "Ready"}],
            ),
            set(),
            ("False", "AwaitingPropagation", "Secret/db"),
        ),
    ],
)
def test_instance_referenced_data(instance: dict[str, Any], present: set[Any], expected: Any) -> None:
    cond = instance_referenced_data(instance, present)
    if expected is None:
        assert cond is None
        return
    assert cond is not None
    assert (cond["status"], cond["reason"]) == expected[:2] and expected[2] in cond["message"]
    assert cond["observedGeneration"] == 3


def test_deployment_referenced_data_reads_the_annotation() -> None:
    wd = {"metadata": {"generation": 2, "annotations": {EXPECTED: '["Secret/db"]'}}}
    assert deployment_referenced_data({"metadata": {"generation": 1}}, set()) is None
    cond = deployment_referenced_data(wd, set())
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "AwaitingPropagation")
    bad = {"metadata": {"generation": 2, "annotations": {EXPECTED: "not json"}}}
    cond = deployment_referenced_data(bad, set())
    assert cond is not None and (cond["reason"], cond["status"]) == ("Resolving", "False")
    assert EXPECTED in cond["message"]
    status = with_referenced_data({"conditions": [{"type": "Available"}]}, wd, {("Secret", "db")}, now="t")
    assert [c["type"] for c in status["conditions"]] == ["Available", "ReferencedDataReady"]
    assert with_referenced_data(status, {"metadata": {"generation": 1}}, set(), now="t")["conditions"] == [
        {"type": "Available"}
    ]


@pytest.mark.parametrize(
    ("annotation", "gates"),
    [(None, []), ("[]", []), ('["Secret/db"]', ["ReferencedData"]), ("garbage", ["ReferencedData"])],
)
def test_a_new_instance_is_gated_when_its_copy_expects_companions(annotation: str | None, gates: list[str]) -> None:
    wd = workload_deployment("api", 1)
    wd["metadata"]["uid"] = "u"
    if annotation is not None:
        wd["metadata"]["annotations"] = {EXPECTED: annotation}
    instance = instance_for(wd, {}, 0, "hash")
    assert [g["name"] for g in instance["spec"]["controller"]["schedulingGates"]] == gates
