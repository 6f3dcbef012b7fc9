"""Cell mode wiring (federation/app.py): which controllers run for which feature gates, and
that every cell controller watches the manager's own cluster (in cell mode: the cell)."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.api.resources import RESOURCE_BUDGETS, RESOURCE_CLAIMS
from federation.app import register_controllers
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
