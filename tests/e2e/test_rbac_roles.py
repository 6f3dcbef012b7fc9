"""The shipped roles grant no more than each mode needs: with RBAC enforced, each identity
(tests/support/rbac.py) is asked `kubectl auth can-i` about what its mode must do (yes)
and about writes its mode never makes (no). The walk-through under RBAC
(test_walkthrough.py) shows they grant enough."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeplane.testing import Kubectl, kubectl_path
from tests.support.processes import deployed_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

WD = "workloaddeployments.compute.datumapis.com"
INST = "instances.compute.datumapis.com"
PROFILES = "clusterprofiles.multicluster.x-k8s.io"
LOCATIONS = "locations.networking.datumapis.com"


async def can(kubectl: Kubectl, verb: str, resource: str, *where: str) -> bool:
    result = await kubectl.run("auth", "can-i", verb, resource, *where)
    assert result.stdout.strip() in ("yes", "no"), result
    return result.stdout.strip() == "yes"


async def test_each_identity_has_what_its_mode_needs_and_no_more(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    async with deployed_fleet(tmp_path, projects=("acme/web",), cells=(("dfw-1", "DFW"),), rbac=True) as f:

        def as_(cluster: str, kubeconfig: Path) -> Kubectl:
            return Kubectl(kubeconfig, tmp_path / f"kc-{kubeconfig.name}")

        manager = as_("management", f.manager_kubeconfig("management"))
        project = as_("web", f.access_kubeconfig("web"))
        cell_access = as_("dfw-1", f.access_kubeconfig("dfw-1"))
        cell_manager = as_("dfw-1", f.manager_kubeconfig("dfw-1"))
        ns = ("-n", "federation-system")
        expectations = [
            # management mode in the management cluster: reads registrations, holds its Lease
            (manager, "list", PROFILES, ns, True),
            (manager, "watch", "secrets", ns, True),
            (manager, "update", "leases.coordination.k8s.io", ns, True),
            (manager, "list", "secrets", ("-n", "default"), False),
            (manager, "create", PROFILES, ns, False),
            # ... and the Locations placement resolves through (cluster-scoped), read only
            (manager, "get", LOCATIONS, (), True),
            (manager, "list", LOCATIONS, (), True),
            (manager, "watch", LOCATIONS, (), True),
            (manager, "create", LOCATIONS, (), False),
            (manager, "update", LOCATIONS, (), False),
            (manager, "delete", LOCATIONS, (), False),
            (manager, "create", "secrets", ns, False),
            (manager, "create", "namespaces", (), False),
            (manager, "create", "clusterroles.rbac.authorization.k8s.io", (), False),
            # management mode in a project: WDs, projections, status; never namespaces or Secrets
            (project, "create", WD, ("-n", "default"), True),
            (project, "update", f"{WD}/status", ("-n", "default"), True),
            (project, "delete", INST, ("-n", "default"), True),
            (project, "create", "namespaces", (), False),
            (project, "delete", "namespaces", (), False),
            # ... and reads the ConfigMaps and Secrets WDs reference (companions), never writes them
            (project, "get", "secrets", ("-n", "default"), True),
            (project, "watch", "configmaps", ("-n", "default"), True),
            (project, "create", "secrets", ("-n", "default"), False),
            (project, "update", "configmaps", ("-n", "default"), False),
            (project, "create", "pods", ("-n", "default"), False),
            # management mode in a cell: downstream namespaces and copies, reads Instances
            (cell_access, "create", "namespaces", (), True),
            (cell_access, "create", WD, ("-n", "any"), True),
            (cell_access, "create", "secrets", ("-n", "any"), True),
            (cell_access, "delete", "configmaps", ("-n", "any"), True),
            (cell_access, "delete", "namespaces", (), False),
            (cell_access, "delete", INST, ("-n", "any"), False),
            (cell_access, "create", "pods", ("-n", "any"), False),
            (cell_access, "create", "clusterrolebindings.rbac.authorization.k8s.io", (), False),
            # cell mode in its cell: Instances, Pods, HPAs; never creates WDs or namespaces
            (cell_manager, "create", INST, ("-n", "any"), True),
            (cell_manager, "create", "pods", ("-n", "any"), True),
            (cell_manager, "create", "horizontalpodautoscalers.autoscaling", ("-n", "any"), True),
            (cell_manager, "create", WD, ("-n", "any"), False),
            (cell_manager, "create", "namespaces", (), False),
            (cell_manager, "get", "secrets", ("-n", "any"), False),
            (cell_manager, "watch", "secrets", ("-n", "any"), True),  # which companions are there (names kept)
            (cell_manager, "create", "secrets", ("-n", "any"), False),
            (cell_manager, "create", "configmaps", ("-n", "any"), False),
        ]
        wrong = []
        for kubectl, verb, resource, where, expected in expectations:
            if await can(kubectl, verb, resource, *where) != expected:
                wrong.append(f"{kubectl.kubeconfig.name}: can-i {verb} {resource} {' '.join(where)} != {expected}")
        assert not wrong, "\n".join(wrong)
