"""The provider contract: a provider discovers clusters (files, Secrets, ClusterProfiles)
and tells its host to engage or disengage them at run time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio.abc

from ..connection import ConnectionConfig

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..controller import Controller


class ClusterHost(Protocol):
    """What a provider may do with the manager that runs it."""

    @property
    def local(self) -> Cluster: ...

    async def engage(self, name: str, config: ConnectionConfig, labels: Mapping[str, str] | None = None) -> None: ...

    async def disengage(self, name: str) -> bool: ...


class Provider(Protocol):
    name: str

    @property
    def has_synced(self) -> bool:
        """The provider has made its first complete pass (readiness waits for it)."""

    async def run(self, host: ClusterHost, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Engage and disengage clusters until cancelled; report started once running."""


async def run_provider_controller(
    controller: Controller,
    host: ClusterHost,
    engaged: dict[str, Any],
    *,
    task_status: anyio.abc.TaskStatus[None],
) -> None:
    """Run a provider's own controller on the local cluster until cancelled, then disengage
    every cluster the provider engaged (shielded, so cancellation cannot leave one behind)."""
    local = host.local
    controller.engage(local, is_local=True)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(controller.run)
            task_status.started()
            await anyio.sleep_forever()
    finally:
        controller.disengage(local.name)
        with anyio.CancelScope(shield=True):
            for cluster in list(engaged):
                del engaged[cluster]
                await host.disengage(cluster)
