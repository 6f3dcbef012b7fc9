"""Workload controller (management mode): a Workload's placements become
WorkloadDeployments in the same project namespace.

Request key: (project cluster, project namespace, Workload name), handed over as the
project `Cluster` and the cached Workload (`ForObject`: a gone Workload gets no call).
Reads (caches): Workloads and WDs of the projects (sharded: its shard's, DESIGN §5; a
wanted WD missing there is read live); the registered cells; the Locations.
Writes, and alone writes: WorkloadDeployments controlled by a Workload (field manager
`workload-controller`; never `spec.replicas`, which the scale subresource owns), the
`compute.datumapis.com/workload-controller` finalizer and the Workload's status.
Never writes: WorkloadDeployments it does not control, anything in cells.
Invariants (DESIGN §2 Workload), pinned by tests/federation/test_workload_controller.py:
- one WD per placement target with a registered cell: by city
  (test_wds_follow_placements_and_registered_cells) or Location
  (test_placements_by_location_make_location_deployments);
- WDs no longer wanted are deleted, the finalizer released once they are gone
  (test_deleting_the_workload_waits_for_its_deployments);
- status sums the WDs and is written only when it changes (test_zero_writes_when_converged);
- sharded, a Workload and its WDs are its shard's alone (tests/federation/test_sharding.py
  test_workloads_and_companions_follow_the_shards)."""

from __future__ import annotations

import logging
from typing import Any

from federation.api.conditionjson import rfc3339_now
from federation.api.constants import Finalizer
from federation.api.reasons import WorkloadDeploymentAvailableReason
from federation.api.resources import LOCATIONS, WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.controllers.deployments import desired_deployments, newly_unplaced, workload_status
from federation.fleet.fleetview import CELLS, PROJECTS, known_locations, registered_cells
from federation.fleet.locations import KnownLocation
from federation.fleet.options import ManagementOptions
from federation.fleet.routing import WORKLOAD_INDEXERS, Routes
from mcruntime import controllerutil
from mcruntime.cluster import Cluster
from mcruntime.errors import ClusterNotReadyError
from mcruntime.fields import get_str, is_deleting
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.indexers import CONTROLLER_UID, controller_uid
from mcruntime.manager import Manager
from mcruntime.objectreconciler import ForObject
from mcruntime.reconciler import Result, TemporaryError
from mcruntime.recorder import ControllerEvents
from mcruntime.source import LOCAL

log = logging.getLogger(__name__)

FIELD_MANAGER = "workload-controller"


class WorkloadController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.events = ControllerEvents(mgr, FIELD_MANAGER)

    async def reconcile(self, project: Cluster, workload: dict[str, Any]) -> Result:
        # 1-2. the project and the cached Workload (`ForObject`: a cluster not engaged, or a
        # Workload gone, gets no call; its WDs are reclaimed through their owner reference)
        owned = await self._owned(project, workload)
        # 3. deleting: delete the deployments, release the finalizer when they are gone
        if is_deleting(workload):
            return await self._finalize(project, workload, owned)
        # 4. first sighting
        workload = await controllerutil.add_finalizer(
            project.client, WORKLOADS, workload, Finalizer.WORKLOAD_CONTROLLER
        )
        # 5. desired state from the pure function
        cities = {cell.city_code for cell in registered_cells(self.mgr)}
        try:
            locations = known_locations(self.mgr)
        except ClusterNotReadyError as exc:
            raise TemporaryError(str(exc)) from exc
        try:
            wanted = desired_deployments(workload, cities, locations)
        except ValueError as exc:
            await self.events.event(project.name, workload, "Warning", "InvalidWorkload", str(exc))
            return Result()
        # 6. write only the difference
        remaining: list[dict[str, Any]] = []
        for wd in wanted.values():
            current = await self._ensure(project, workload, wd, owned.get(get_str(wd, "metadata.name")))
            if current is not None:
                remaining.append(current)
        for name, wd in owned.items():
            if name not in wanted:
                await self._delete(project, wd)
        # 7. status
        await self._status(project, workload, remaining, cities, locations)
        return Result()

    async def _owned(self, project: Cluster, workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
        uid = get_str(workload, "metadata.uid", required=False)
        found = await project.client.list(
            WORKLOAD_DEPLOYMENTS,
            namespace=get_str(workload, "metadata.namespace", required=False),
            index=(CONTROLLER_UID, uid),
        )
        return {get_str(wd, "metadata.name", required=False): wd for wd in found}

    async def _ensure(
        self, project: Cluster, workload: dict[str, Any], desired: dict[str, Any], current: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """One apply when the WD is missing or differs; none otherwise. Returns the WD as
        read (None when it was missing or is not this Workload's)."""
        controllerutil.set_controller_reference(workload, desired)
        if current is None:
            name, namespace = get_str(desired, "metadata.name"), get_str(desired, "metadata.namespace")
            existing = await self._read(project, name, namespace)
            if existing is not None and not controllerutil.is_controlled_by(existing, workload):
                await self.events.event(project.name, workload, "Warning", "DeploymentNameTaken",
                                  f"WorkloadDeployment {get_str(desired, 'metadata.name')} exists and is not "
                                  "controlled by this Workload; it is left alone")  # fmt: skip
                return None
            current = existing
        await controllerutil.apply_if_differs(
            project.client, WORKLOAD_DEPLOYMENTS, desired, cached=current, field_manager=FIELD_MANAGER
        )
        return current

    @staticmethod
    async def _read(project: Cluster, name: str, namespace: str) -> dict[str, Any] | None:
        """A WD not among the Workload's cached ones: from the cache, or, where the cache
        holds only this shard's WDs (`--sharding`), live (the sharder has not labelled it
        yet, or it is being handed over with its Workload; never taken for missing)."""
        found = await project.client.get_or_none(WORKLOAD_DEPLOYMENTS, name, namespace=namespace)
        if found is None and project.cache.narrows(WORKLOAD_DEPLOYMENTS):
            found = await project.client.get_live_or_none(WORKLOAD_DEPLOYMENTS, name, namespace=namespace)
        return found

    async def _delete(self, project: Cluster, wd: dict[str, Any]) -> None:
        if is_deleting(wd):
            return
        await controllerutil.delete_exact(project.client, WORKLOAD_DEPLOYMENTS, wd)

    async def _finalize(self, project: Cluster, workload: dict[str, Any], owned: dict[str, dict[str, Any]]) -> Result:
        for wd in owned.values():
            await self._delete(project, wd)
        if owned:
            # their deletion events bring the Workload back (owner handler), no timer needed
            raise TemporaryError(f"waiting for {len(owned)} WorkloadDeployments to be deleted")
        await controllerutil.remove_finalizer(project.client, WORKLOADS, workload, Finalizer.WORKLOAD_CONTROLLER)
        return Result()

    async def _status(
        self,
        project: Cluster,
        workload: dict[str, Any],
        deployments: list[dict[str, Any]],
        cities: set[str],
        locations: list[KnownLocation],
    ) -> None:
        status = workload_status(workload, deployments, cities, now=rfc3339_now(), locations=locations)
        if status == (workload.get("status") or {}):
            return
        await controllerutil.write_status(project.client, WORKLOADS, workload, status, field_manager=FIELD_MANAGER)
        # a placement newly without a cell for one of its cities: said once, with this write
        reason = str(WorkloadDeploymentAvailableReason.NO_MATCHING_LOCATION)
        for placement, message in newly_unplaced(workload.get("status") or {}, status).items():
            await self.events.event(project.name, workload, "Warning", reason, f"placement {placement}: {message}")


def register(mgr: Manager, options: ManagementOptions) -> None:
    """Wire the watches: Workloads and their WDs in every project, cell registrations."""
    controller = WorkloadController(mgr)
    ctrl = mgr.new_controller("workload-controller", ForObject(mgr, WORKLOADS, controller), workers=options.workers)
    ctrl.for_(WORKLOADS, clusters=PROJECTS, indexers=WORKLOAD_INDEXERS)
    ctrl.owns(WORKLOAD_DEPLOYMENTS, owner=WORKLOADS, clusters=PROJECTS, indexers={CONTROLLER_UID: controller_uid})
    routes = Routes(mgr)
    ctrl.watch_clusters(routes.workloads_of_cell, clusters=CELLS)
    # a Location added, relabelled or moved to another city: the Workloads placing by location
    ctrl.watch(
        LOCATIONS,
        EnqueueRequestsFromMapFunc(routes.workloads_of_location, cluster_name=ClusterName.PRESERVE_MAPPED),
        clusters=LOCAL,
    )
