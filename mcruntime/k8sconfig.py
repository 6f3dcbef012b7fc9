"""kubernetes-asyncio's configuration and authentication, without its generated API client.

`import kubernetes_asyncio.config` runs `kubernetes_asyncio/__init__.py` and
`kubernetes_asyncio/client/__init__.py`, which import every API and model class of the
generated client (~60 MiB of a process's peak memory), and its `configuration` module imports
urllib3, which it uses for basic-auth headers only. The loaders need only
`client.configuration.Configuration` (and name `ApiClient` for helpers we never call), so
both packages are registered here as *deferred* packages first: their submodules import
normally, and the package's own `__init__` runs only if something asks it for a name it
does not have yet (a tool that does use the generated client gets all of it then, as usual).

Likewise `kube_config` imports its OpenID Connect token refresher (`config.openid`), which
imports aiohttp (~12 MiB, its client and SSL contexts) for the one request a kubeconfig
with an `oidc` auth-provider makes to refresh its token: that module is registered here with
a stand-in `OpenIDRequestor` that loads it (and aiohttp) when the first one is made.

The rest of the runtime imports kubernetes-asyncio through this module only."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from typing import Any


def _defer(name: str) -> types.ModuleType:
    """Register package `name` without running its `__init__` until a missing attribute is asked for."""
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    module = importlib.util.module_from_spec(spec)
    loaded = False

    def load_fully(attr: str) -> Any:
        nonlocal loaded
        if not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # a submodule: as Python would, nothing more
        if not loaded:
            loaded = True
            del module.__getattr__  # the real __init__ defines what it defines
            assert spec.loader is not None
            spec.loader.exec_module(module)
        return getattr(module, attr) if attr in module.__dict__ else _missing(name, attr)

    module.__getattr__ = load_fully  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def _missing(package: str, attr: str) -> Any:
    raise AttributeError(f"module {package!r} has no attribute {attr!r}")


class _ApiClientOnDemand:
    """Stands in for `kubernetes_asyncio.client.ApiClient` in the loaders' namespace: the
    first instance loads the generated client (only `new_client_from_config*` make one)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from kubernetes_asyncio.client.api_client import ApiClient

        return ApiClient(*args, **kwargs)


class _OpenIDRequestorOnDemand:
    """Stands in for `kubernetes_asyncio.config.openid.OpenIDRequestor` in `kube_config`'s
    namespace: the first instance runs the real module (and imports aiohttp)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        module = sys.modules[_OPENID]
        if module.OpenIDRequestor is cls:
            assert module.__spec__ is not None and module.__spec__.loader is not None
            module.__spec__.loader.exec_module(module)  # defines the real class over the stand-in
        return module.OpenIDRequestor(*args, **kwargs)


def _defer_openid() -> None:
    """Register `config.openid` with the stand-in only, before `kube_config` imports it."""
    if _OPENID in sys.modules:
        return
    # found on its package's path: `find_spec(_OPENID)` would import the package, whose
    # `__init__` imports `kube_config` and with it the real module
    package = importlib.util.find_spec(_OPENID.rpartition(".")[0])
    path = package.submodule_search_locations if package is not None else None
    spec = importlib.machinery.PathFinder.find_spec(_OPENID, path) if path is not None else None
    if spec is None or spec.loader is None:
        raise ImportError(f"{_OPENID} is not installed")
    module = importlib.util.module_from_spec(spec)
    module.OpenIDRequestor = _OpenIDRequestorOnDemand  # type: ignore[attr-defined]
    sys.modules[_OPENID] = module


_OPENID = "kubernetes_asyncio.config.openid"
_defer("kubernetes_asyncio")
_client = _defer("kubernetes_asyncio.client")
# `Configuration` imports urllib3 (~2 MiB) only to name it: its one use, basic-auth headers
# (`urllib3.util.make_headers`), loads the package then, as any other user of it would.
_defer("urllib3")
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402

if "ApiClient" not in _client.__dict__:
    _client.Configuration = Configuration  # type: ignore[attr-defined]
    _client.ApiClient = _ApiClientOnDemand  # type: ignore[attr-defined]

_defer_openid()
from kubernetes_asyncio.config.config_exception import ConfigException  # noqa: E402
from kubernetes_asyncio.config.incluster_config import (  # noqa: E402
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger, _is_expired  # noqa: E402

is_expired = _is_expired

__all__ = [
    "SERVICE_CERT_FILENAME",
    "SERVICE_TOKEN_FILENAME",
    "ConfigException",
    "Configuration",
    "InClusterConfigLoader",
    "KubeConfigLoader",
    "KubeConfigMerger",
    "is_expired",
]
