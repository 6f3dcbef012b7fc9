"""A cell whose CRD is a version ahead of the project's (an upgrade in progress) defaults a
field inside a list item that the project's CRD does not have. "The copy already says what
the intent says" is one rule everywhere (`controllerutil.is_subset`: list items of equal
length compare as subsets), so the federator, the status projector and `check` agree: the
federator writes the copy and every later spec change, the projector claims
observedGeneration, and `check` reports no drift."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from federation.ops.invariants import check
from federation.ops.snapshot import load_snapshot
from tests.federation.test_federator import STORED_TEMPLATE, WDs, workload_deployment
from tests.projector.cellsim import settle
from tests.support import eventually, fleet, management_settings, running
from tests.support.fleet import compute_crds

DEFAULTED = {"type": "integer", "default": 1460}  # a field only the cell's CRD version has


def skewed_crds() -> list[dict[str, Any]]:
    """The compute CRDs with WorkloadDeployment's network interface items defaulting `mtu`."""
    crds = copy.deepcopy(compute_crds())
    for crd in crds:
        if crd["spec"]["names"]["kind"] == "WorkloadDeployment":
            for version in crd["spec"]["versions"]:
                spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                item = spec["template"]["properties"]["spec"]["properties"]["networkInterfaces"]["items"]
                item["properties"]["mtu"] = DEFAULTED
    return crds


def the_copy(f: Any) -> dict[str, Any] | None:
    found = [c for c in WDs(f, "dfw-1").list() if c["metadata"]["name"] == "api"]
    return found[0] if found else None


def image_of(obj: dict[str, Any] | None) -> str | None:
    if obj is None:
        return None
    return str(obj["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["image"])


def observed(f: Any) -> int | None:
    wd = WDs(f, "web").get("default", "api") or {}
    return (wd.get("status") or {}).get("observedGeneration")


async def test_a_cell_defaulting_a_list_item_field_is_not_drift(tmp_path: Path) -> None:
    async with fleet(tmp_path, projects=("acme/web",), cells=()) as f:
        await f.add_cell("dfw-1", "DFW", crds=skewed_crds())
        async with running(management_settings(tmp_path / "management.kubeconfig")):
            created = WDs(f, "web").create(workload_deployment("api", "DFW", 2))
            # the federator writes the copy, and the cell defaults the field inside the list item
            await eventually(lambda: the_copy(f) is not None, "the copy in dfw-1")
            interface = the_copy(f)["spec"]["template"]["spec"]["networkInterfaces"][0]  # type: ignore[index]
            assert interface == {**STORED_TEMPLATE["spec"]["networkInterfaces"][0], "mtu": 1460}
            assert "mtu" not in created["spec"]["template"]["spec"]["networkInterfaces"][0]
            settle(f, "dfw-1")
            # the projector claims observedGeneration for the spec the cell observed
            generation = created["metadata"]["generation"]
            await eventually(lambda: observed(f) == generation, f"observedGeneration {generation}")

            # a spec change still reaches the skewed cell (the federator writes) and is claimed
            def new_image(wd: dict[str, Any]) -> None:
                wd["spec"]["template"]["spec"]["runtime"]["sandbox"]["containers"][0]["image"] = "nginx:1.28"

            edited = WDs(f, "web").edit("default", "api", new_image)
            await eventually(lambda: image_of(the_copy(f)) == "nginx:1.28", "the new image in dfw-1")
            settle(f, "dfw-1")
            generation = edited["metadata"]["generation"]
            await eventually(lambda: observed(f) == generation, f"observedGeneration {generation}")
            report = check(await load_snapshot(f.config()))
            assert report.ok, [str(v) for v in report.violations]
            assert not report.unchecked, report.unchecked
