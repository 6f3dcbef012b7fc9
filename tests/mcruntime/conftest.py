from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import Cluster
from tests.support import WIDGET_CRD, Background, Plane, cluster_for, install_crd


@pytest.fixture
def plane(apiserver: EmbeddedAPIServer) -> Plane:
    return Plane(apiserver)


@pytest.fixture
async def cluster(apiserver: EmbeddedAPIServer) -> AsyncIterator[Cluster]:
    """A running Cluster on the `apiserver` fixture."""
    c = cluster_for(apiserver, "test")
    async with Background(c.run):
        yield c


@pytest.fixture
async def second_server(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(name="second", kubeconfig=tmp_path / "second.kubeconfig", bookmark_interval=1.0) as s:
        yield s


@pytest.fixture
async def widgets(apiserver: EmbeddedAPIServer) -> None:
    await install_crd(apiserver, WIDGET_CRD)
