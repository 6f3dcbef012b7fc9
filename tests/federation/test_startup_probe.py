"""A manager's start-up probe of its own cluster (`app.local_config`): a cluster that
cannot be reached, or that refuses the manager's credentials, stops it at once with one
line; an answer that only says "not now" (429, 5xx) does not. A cell manager started
during such a fault (the fault matrix's 20% of 500s) once exited on its first request,
and every copy in that cell then stayed unobserved: the project WDs of its city never
got their observedGeneration."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.api.resources import WORKLOAD_DEPLOYMENTS
from federation.app import StartupError, local_config
from kubeplane import EmbeddedAPIServer
from tests.cells.cellbed import GROUP, NS, UPSTREAM_LABELS, VERSION, workload_deployment
from tests.support import Plane, cell_settings, eventually, install_project_crds, running


@pytest.mark.parametrize("code", [500, 503, 429])
async def test_a_cell_manager_starts_while_its_cluster_answers_not_now(tmp_path: Path, code: int) -> None:
    kubeconfig = tmp_path / "cell.kubeconfig"
    async with EmbeddedAPIServer(name="dfw-1", kubeconfig=kubeconfig, bookmark_interval=1.0) as server:
        await install_project_crds(server)
        plane = Plane(server)
        plane.create("namespaces", {"metadata": {"name": NS, "labels": dict(UPSTREAM_LABELS)}})
        # every start-up probe answered "not now" (429/503 after the transport's own retries)
        server.plane.faults.configure(error_rate=1.0, error_code=code, retry_after_seconds=0, path_contains="/version")
        settings = cell_settings(kubeconfig, site_name="dfw-1", city_code="DFW", local_cluster_name="dfw-1")
        async with running(settings) as manager:
            assert server.plane.faults.injected >= 1, "the probe met the fault"
            copy = plane.create(WORKLOAD_DEPLOYMENTS.plural, workload_deployment("api", 1), group=GROUP,
                                version=VERSION)  # fmt: skip

            def observed() -> bool:
                stored = plane.get(WORKLOAD_DEPLOYMENTS.plural, NS, "api", group=GROUP, version=VERSION)
                return (stored.get("status") or {}).get("observedGeneration") == copy["metadata"]["generation"]

            await eventually(observed, "the cell manager runs and observes the copy")
            assert manager.running


async def test_a_manager_the_cluster_refuses_stops_with_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "management.kubeconfig"
    async with EmbeddedAPIServer(name="management", kubeconfig=kubeconfig, token="the-token") as server:
        wrong = tmp_path / "wrong-token.kubeconfig"
        wrong.write_text(kubeconfig.read_text().replace("the-token", "not-the-token"))
        with pytest.raises(StartupError, match=r"the management cluster at .* refused us: 401"):
            await local_config(cell_settings(wrong, local_cluster_name="management"))
        # a fault that only says "not now" is no refusal: the right credentials start
        server.plane.faults.configure(error_rate=1.0, error_code=500, path_contains="/version")
        assert (await local_config(cell_settings(kubeconfig, local_cluster_name="management"))).host
