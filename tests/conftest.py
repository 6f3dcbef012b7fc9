from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path


@pytest.fixture
async def apiserver(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    """One embedded API server on a free port, with a kubeconfig at tmp_path/kubeconfig."""
    async with EmbeddedAPIServer(kubeconfig=tmp_path / "kubeconfig", bookmark_interval=1.0) as server:
        yield server


@pytest.fixture
def kubectl(apiserver: EmbeddedAPIServer, tmp_path: Path) -> Kubectl:
    """The real kubectl pointed at `apiserver` (skips only when kubectl is not installed)."""
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    assert apiserver.kubeconfig_path is not None
    return Kubectl(apiserver.kubeconfig_path, tmp_path / "kubectl-cache")
