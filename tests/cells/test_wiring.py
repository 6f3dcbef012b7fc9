"""Cell mode wiring (federation/app.py): which controllers run for which feature gates, and
that every cell controller watches the manager's own cluster (in cell mode: the cell)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cells.options import CellOptions
from federation.api.resources import RESOURCE_BUDGETS, RESOURCE_CLAIMS
from federation.app import cell_options, management_options, register_controllers
from federation.fleet.options import ManagementOptions
from mcruntime import Manager
from tests.support import cell_settings


@pytest.mark.parametrize(
    ("gates", "names"),
    [
        ("", ["cell-workloaddeployment", "instance-controller"]),
        ("PodRuntime=true", ["cell-workloaddeployment", "instance-controller", "pod-runtime"]),
        ("QuotaGate=true", ["cell-workloaddeployment", "instance-controller", "quota-grant"]),
        (
            "PodRuntime=true,QuotaGate=true",
            ["cell-workloaddeployment", "instance-controller", "pod-runtime", "quota-grant"],
        ),
    ],
)
def test_feature_gates_choose_the_cell_controllers(tmp_path: Path, gates: str, names: list[str]) -> None:
    manager = Manager(name="test")
    assert register_controllers(manager, cell_settings(tmp_path / "kubeconfig", feature_gates=gates)) == names
    assert [c.name for c in manager.controllers] == names
    watches = [w for c in manager.controllers for w in c.watches]
    assert all(w.clusters.local and not w.clusters.engaged for w in watches), "cell mode acts on its own cluster only"
    quota_views = {w.resource for w in watches} & {RESOURCE_CLAIMS, RESOURCE_BUDGETS}
    assert bool(quota_views) == ("QuotaGate" in gates), "the claim kinds are only read with QuotaGate on"
    manager.check_views()  # one cache view per resource: the controllers agree on it


def test_the_composition_root_builds_each_modes_frozen_options(tmp_path: Path) -> None:
    settings = cell_settings(
        tmp_path / "kubeconfig", feature_gates="QuotaGate=true,PodRuntime=false", city_code="DFW",
        cell_status_stale_after=7.0, cell_unreachable_grace=9.0,
    )  # fmt: skip
    assert cell_options(settings) == CellOptions(
        workers=settings.controllers.workers, quota_gate=True, pod_runtime=False, city_code="DFW"
    )
    assert management_options(settings) == ManagementOptions(
        workers=settings.controllers.workers,
        status_batch_period=settings.controllers.status_batch_period,
        awaiting_propagation_after=settings.controllers.awaiting_propagation_after,
        cell_status_stale_after=7.0,
        cell_unreachable_grace=9.0,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell_options(settings).city_code = "LHR"  # type: ignore[misc]
