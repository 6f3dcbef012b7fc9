from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

REPO = Path(__file__).resolve().parents[3]
OVERLAYS = ("management", "management-sharded", "cell-dfw", "cell-lhr", "all-in-one")


def load_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def dump_docs(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


async def establish_crds(kubectl: Kubectl, crds: list[dict[str, Any]]) -> None:
    """Server-side apply CRDs and wait until the API server serves every one of them."""
    assert crds, "no CRDs to apply"
    await kubectl("apply", "--server-side", "-f", "-", stdin=dump_docs(crds))
    names = [f"crd/{c['metadata']['name']}" for c in crds]
    await kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)


@pytest.fixture
async def compute_cluster(apiserver: EmbeddedAPIServer, kubectl: Kubectl) -> EmbeddedAPIServer:
    """The embedded server with every checked-in CRD (config/crd) established."""
    rendered = await kubectl("kustomize", str(REPO / "config" / "crd"))
    await establish_crds(kubectl, load_docs(rendered))
    return apiserver


@pytest.fixture
async def http(apiserver: EmbeddedAPIServer) -> AsyncIterator[aiohttp.ClientSession]:
    """A raw HTTP client to the embedded server, for asserting status codes and Status bodies."""
    async with aiohttp.ClientSession(base_url=apiserver.url) as session:
        yield session
