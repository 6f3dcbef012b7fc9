"""A deletion never waits on a cell's operator (issue 20 point 4): with the cell's API up
and its controllers stopped, a project WD deletion and a project namespace deletion both
finish (the federator releases its finalizer once its copy is accepted for deletion:
deletionTimestamp set, held by the cell controller's finalizer); when the cell's operator
is back it finalizes the copy and nothing is left in the cell.

Management, project `acme/web`, cell dfw-1 (DFW) running the cell controllers in this
process (`federation-manager run --enable-cell-controllers` as app.py composes it)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from federation.api.constants import Finalizer
from tests.federation.test_federator import GROUP, VERSION, WDs, workload_deployment
from tests.support import Fleet, Plane, cell_settings, eventually, fleet, management_settings, running

CELL_FINALIZER = str(Finalizer.WORKLOAD_DEPLOYMENT_CONTROLLER)


def copies(f: Fleet, name: str) -> list[dict[str, Any]]:
    return [c for c in WDs(f, "dfw-1").list() if c["metadata"]["name"] == name]


def cell_instances(f: Fleet) -> list[dict[str, Any]]:
    return Plane(f.server("dfw-1")).list("instances", None, group=GROUP, version=VERSION)


async def _deploy(f: Fleet, namespace: str, name: str) -> None:
    """WD `name` in `namespace`, federated and run by dfw-1's operator (its finalizer on the
    copy, its Instance made)."""
    wd = workload_deployment(name, "DFW", 1)
    wd["metadata"]["namespace"] = namespace
    WDs(f, "web").create(wd)

    def run_by_the_operator() -> bool:
        found = copies(f, name)
        return (
            bool(found)
            and CELL_FINALIZER in (found[0]["metadata"].get("finalizers") or [])
            and bool([i for i in cell_instances(f) if i["metadata"]["name"] == f"{name}-0"])
        )

    await eventually(run_by_the_operator, "the copy finalized by dfw-1's operator, its Instance made")


async def test_a_wd_deletion_and_a_namespace_deletion_finish_without_the_cells_operator(tmp_path: Path) -> None:
    async with (
        fleet(tmp_path, projects=("acme/web",), cells=(("dfw-1", "DFW"),)) as f,
        running(management_settings(tmp_path / "management.kubeconfig")),
    ):
        project = Plane(f.server("web"))
        project.create("namespaces", {"metadata": {"name": "team"}})
        operator = AsyncExitStack()
        await operator.enter_async_context(running(cell_settings(tmp_path / "dfw-1.kubeconfig", city_code="DFW")))
        await _deploy(f, "default", "api")
        await _deploy(f, "team", "worker")
        await operator.aclose()  # the cell's operator is down; its API answers

        # 1. a project WD deletion finishes: its copy is accepted (deletionTimestamp), not gone
        WDs(f, "web").delete("default", "api")
        await eventually(lambda: WDs(f, "web").get("default", "api") is None, "the project WD gone")
        (held,) = copies(f, "api")
        assert held["metadata"].get("deletionTimestamp") and CELL_FINALIZER in held["metadata"]["finalizers"]

        # 2. a project namespace deletion finishes too
        project.delete("namespaces", "", "team")

        def namespace_gone() -> bool:
            return all(ns["metadata"]["name"] != "team" for ns in project.list("namespaces", None))

        await eventually(namespace_gone, "the project namespace gone")
        (held,) = copies(f, "worker")
        assert held["metadata"].get("deletionTimestamp")

        # 3. the operator is back: it finalizes both copies; nothing is left in the cell
        async with running(cell_settings(tmp_path / "dfw-1.kubeconfig", city_code="DFW")):
            await eventually(lambda: copies(f, "api") == [] and copies(f, "worker") == [], "both copies finalized")
            await eventually(lambda: cell_instances(f) == [], "no Instance left in dfw-1")
