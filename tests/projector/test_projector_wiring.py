"""How the projectors' controllers are built: their workers follow the work (a change
waits on one write to its project, so while changes queue up behind busy workers, more
reconcile at once, up to what one cluster's transport keeps in flight)."""

from __future__ import annotations

import pytest

from federation.fleet.options import ManagementOptions
from mcruntime import Manager, TransportOptions
from projector import instances, status


@pytest.mark.parametrize("workers", [2, 16, 100])
def test_the_projectors_grow_beyond_their_workers_up_to_the_transports_requests_in_flight(workers: int) -> None:
    manager = Manager(name="test")
    options = ManagementOptions(workers=workers)
    status.register(manager, options)
    instances.register(manager, options)
    bound = TransportOptions.max_concurrent_requests
    assert {c.name: (c.workers, c.max_workers) for c in manager.controllers} == {
        "status-projector": (workers, max(workers, bound)),
        "instance-projector": (workers, max(workers, bound)),
    }
