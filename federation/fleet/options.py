"""What the management-mode controllers (federator, workload controller, projectors) are
told, built by the composition root (`federation/app.py` `management_options`) from the
CLI's settings; the controllers never see the settings themselves."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ManagementOptions:
    workers: int = 16  # concurrent reconciles per controller (I/O-bound: sized to the servers, not the cores)
    status_batch_period: float = 0.05  # seconds a project WD's status waits for more cell changes
    awaiting_propagation_after: float = 1.0  # seconds a new spec's status waits for the cells to observe it
    cell_status_stale_after: float = 60.0  # an unreachable cell's numbers turn Unknown after this
    cell_unreachable_grace: float = 300.0  # an unreachable cell holds a WD's deletion this long
