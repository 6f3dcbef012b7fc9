"""Cluster providers: where the manager learns which clusters to serve. Each provider's
module loads on first use (PEP 562): a manager imports only the one it runs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import ClusterHost, Provider

if TYPE_CHECKING:
    from .clusterprofile import ClusterProfileProvider
    from .kubeconfig_dir import KubeconfigDirProvider
    from .secrets import KubeconfigSecretProvider

_MODULES = {
    "ClusterProfileProvider": ".clusterprofile",
    "KubeconfigDirProvider": ".kubeconfig_dir",
    "KubeconfigSecretProvider": ".secrets",
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ClusterHost", "ClusterProfileProvider", "KubeconfigDirProvider", "KubeconfigSecretProvider", "Provider"]
