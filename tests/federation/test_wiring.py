"""Management mode wiring (federation/app.py): the status projector takes its turn behind
the federator (DESIGN §4 "Spec before status")."""

from __future__ import annotations

from pathlib import Path

from federation.app import register_controllers
from mcruntime import Manager
from tests.support import cell_settings


def test_the_status_projector_yields_to_the_federator_and_nothing_else_yields(tmp_path: Path) -> None:
    manager = Manager(name="test")
    settings = cell_settings(tmp_path / "kubeconfig", enable_cell_controllers=False, enable_management_controllers=True)
    register_controllers(manager, settings)
    yields = {c.name: (c.yielding_to[0].name, c.yielding_to[1]) for c in manager.controllers if c.yielding_to}
    assert yields == {"status-projector": ("federator", 1.0)}
