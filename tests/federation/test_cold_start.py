"""A cold start over WDs that are already claimed (the federator's finalizer and cell
namespace in place, no status yet: a manager restarted after an upgrade, or the
`bench_manager_memory` fleet): every WD is reconciled once by the federator, though the
status projector writes each one's first status meanwhile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio

from federation.api.constants import Annotation, Finalizer
from federation.app import prepare_manager
from tests.support import Plane, all_idle, eventually, fleet, management_settings, record

from .test_federator import WDs, workload_deployment

WDS_PER_PROJECT = 6


async def test_a_cold_start_reconciles_each_claimed_wd_once(tmp_path: Path) -> None:
    """The projector's status write comes back as an update of the WD that changes nothing
    the federator reads (spec, labels, annotations, finalizers, deletion): the federator's
    watch of project WDs lets it pass (`not_status_only`), so it costs no second reconcile."""
    async with fleet(tmp_path, projects=("acme/web", "acme/shop"), cells=(("dfw-1", "DFW"),)) as f:
        for project in ("web", "shop"):
            namespace_uid = Plane(f.server(project)).get("namespaces", "", "default")["metadata"]["uid"]
            for i in range(WDS_PER_PROJECT):
                wd = workload_deployment(f"wd-{i}", "NOWHERE", 1)  # a city without a cell: no copies to write
                wd["metadata"]["finalizers"] = [str(Finalizer.FEDERATOR)]
                wd["metadata"]["annotations"] = {str(Annotation.FEDERATION_NAMESPACE): f"ns-{namespace_uid}"}
                WDs(f, project).create(wd)

        mgr = await prepare_manager(management_settings(tmp_path / "management.kubeconfig"))
        federator = record(mgr, "federator")  # before the manager runs: every reconcile is seen
        async with anyio.create_task_group() as tg:
            await tg.start(mgr.run)
            try:

                def statuses_written() -> bool:
                    wds = [*WDs(f, "web").list(), *WDs(f, "shop").list()]
                    return len(wds) == 2 * WDS_PER_PROJECT and all("status" in wd for wd in wds)

                await eventually(statuses_written, "every WD's first status, written by the projector")
                assert await all_idle(mgr)
                per_wd = Counter((r.cluster, r.namespace, r.name) for r in federator.requests)
                assert len(per_wd) == 2 * WDS_PER_PROJECT, f"every WD reconciled: {per_wd}"
                assert set(per_wd.values()) == {1}, f"each WD reconciled once: {per_wd}"
            finally:
                mgr.stop()
