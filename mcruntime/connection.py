"""How to reach one cluster: its URL, TLS context and credentials.

Loading is kubernetes-asyncio's job (kubeconfig files and dicts, contexts, in-cluster
service accounts, exec credential plugins, OIDC/GCP auth providers); this module turns
its result into what the runtime's transport (`transport.py`) needs, and keeps the credentials fresh:
an exec plugin is re-run when its token nears expiry or when the server answers 401."""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
import yaml

from .errors import ConfigError
from .k8sconfig import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    ConfigException,
    Configuration,
    InClusterConfigLoader,
    KubeConfigLoader,
    KubeConfigMerger,
    is_expired,
)

log = logging.getLogger(__name__)

# kubeconfig keys that make a client read local files or run programs: refused for
# kubeconfigs that come from API objects (a Secret author must not run code here).
_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")
_LOAD_ERRORS = (ConfigException, KeyError, AssertionError, ValueError, TypeError, OSError, AttributeError)


class Authenticator(Protocol):
    async def authorization(self) -> str | None:
        """The Authorization header value to send now (None: no credentials)."""

    async def refresh(self) -> bool:
        """The server said 401: get fresh credentials. True when retrying can help."""


class NoAuth:
    async def authorization(self) -> str | None:
        return None

    async def refresh(self) -> bool:
        return False


class _KubeconfigAuth:
    """Credentials from a kubeconfig user entry, refreshed through kubernetes-asyncio."""

    def __init__(self, loader: KubeConfigLoader, header: str | None) -> None:
        self._loader = loader
        self._header = header
        user = loader._user
        self._exec = user is not None and "exec" in user
        self._provider = loader.provider

    async def authorization(self) -> str | None:
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        if self._exec and expiry is not None and is_expired(expiry):
            await self._reload()
        return self._header

    async def refresh(self) -> bool:
        if not (self._exec or self._provider in ("oidc", "gcp")):
            return False
        if hasattr(self._loader, "exec_plugin_expiry"):
            del self._loader.exec_plugin_expiry  # forces the plugin to run again
        before = self._header
        await self._reload()
        return self._header != before

    async def _reload(self) -> None:
        try:
            if self._exec:
                await self._loader.load_from_exec_plugin()
            else:
                await self._loader._load_authentication()
        except _LOAD_ERRORS as exc:
            raise ConfigError(f"refreshing credentials failed: {exc}") from exc
        token = getattr(self._loader, "token", None)
        self._header = str(token) if token else self._header


class _ConfigurationAuth:
    """Credentials kept by a kubernetes-asyncio Configuration (in-cluster token file re-read)."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    async def authorization(self) -> str | None:
        value = await self._configuration.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None

    async def refresh(self) -> bool:
        return False


@dataclass
class ConnectionConfig:
    """Everything needed to open connections to one API server."""

    host: str
    ssl_context: ssl.SSLContext | None
    auth: Authenticator = field(default_factory=NoAuth)
    source: str = ""
    fingerprint: str = ""
    tls_server_name: str | None = None
    proxy: str | None = None
    default_namespace: str = "default"

    def __post_init__(self) -> None:
        if not self.host.startswith(("http://", "https://")):
            raise ConfigError(f"{self.source or 'connection'}: server URL {self.host!r} must start with https://")
        self.host = self.host.rstrip("/")

    @classmethod
    def insecure(cls, host: str, token: str | None = None) -> ConnectionConfig:
        """A plain URL with an optional bearer token (tests, embedded servers)."""
        auth: Authenticator = _StaticAuth(f"Bearer {token}") if token else NoAuth()
        return cls(host=host, ssl_context=None, auth=auth, source=host, fingerprint=_fingerprint(host, token))


class _StaticAuth:
    def __init__(self, header: str) -> None:
        self._header = header

    async def authorization(self) -> str | None:
        return self._header

    async def refresh(self) -> bool:
        return False


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: the problem and where (PyYAML's own text spans lines)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(problem)


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()[:16]


def _ssl_context(configuration: Configuration, host: str) -> ssl.SSLContext | None:
    """The same TLS setup kubernetes-asyncio's REST client builds."""
    if not host.startswith("https://"):
        return None
    ctx = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        ctx.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        # only when the kubeconfig itself asks for it (insecure-skip-tls-verify); said out loud
        log.warning("TLS verification is off for %s: its kubeconfig sets insecure-skip-tls-verify", host)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _check_shape(config: Any, source: str, context: str | None) -> None:
    """Clear errors for the mistakes kubernetes-asyncio reports as bare assertions."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"{source}: a kubeconfig must be a mapping, got {type(config).__name__}")
    for key in ("clusters", "contexts"):
        if not isinstance(config.get(key), list) or not config.get(key):
            raise ConfigError(f"{source}: kubeconfig has no {key!r} list")
    wanted = context or config.get("current-context")
    if not wanted:
        raise ConfigError(f"{source}: kubeconfig sets no current-context and none was given")
    contexts = {c.get("name"): c for c in config["contexts"] if isinstance(c, Mapping)}
    if wanted not in contexts:
        raise ConfigError(f"{source}: context {wanted!r} not found (have: {', '.join(map(str, contexts))})")
    ctx = contexts[wanted].get("context") or {}
    clusters = {c.get("name"): c for c in config["clusters"] if isinstance(c, Mapping)}
    cluster = clusters.get(ctx.get("cluster"))
    if cluster is None:
        raise ConfigError(f"{source}: context {wanted!r} names cluster {ctx.get('cluster')!r}, which is not defined")
    if not (cluster.get("cluster") or {}).get("server"):
        raise ConfigError(f"{source}: cluster {ctx.get('cluster')!r} has no server URL")


def _refuse_local_access(config: Mapping[str, Any], source: str) -> None:
    for entry in config.get("users") or []:
        user = (entry or {}).get("user") or {}
        for key in ("exec", "auth-provider", *_FILE_KEYS):
            if key in user:
                raise ConfigError(
                    f"{source}: user {entry.get('name')!r} uses {key!r}; kubeconfigs read from API objects "
                    "may only carry inline credentials (token, client-certificate-data)"
                )
    for entry in config.get("clusters") or []:
        if "certificate-authority" in ((entry or {}).get("cluster") or {}):
            raise ConfigError(
                f"{source}: cluster {entry.get('name')!r} refers to a CA file; use certificate-authority-data"
            )


async def _from_loader(loader: KubeConfigLoader, source: str, fingerprint: str) -> ConnectionConfig:
    configuration = type.__call__(Configuration)  # a fresh Configuration, not the process default
    try:
        await loader.load_and_set(configuration)
        host = str(configuration.host)
        ctx = _ssl_context(configuration, host)
    except _LOAD_ERRORS as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    except ssl.SSLError as exc:
        raise ConfigError(f"{source}: TLS material is unusable: {exc}") from exc
    header = configuration.api_key.get("BearerToken")
    ns = (loader.current_context or {}).get("context", {}).get("namespace") or "default"
    return ConnectionConfig(
        host=host,
        ssl_context=ctx,
        auth=_KubeconfigAuth(loader, str(header) if header else None),
        source=source,
        fingerprint=fingerprint,
        tls_server_name=configuration.tls_server_name,
        proxy=configuration.proxy,
        default_namespace=str(ns),
    )


async def from_kubeconfig_dict(
    config: Mapping[str, Any],
    *,
    context: str | None = None,
    source: str = "kubeconfig",
    allow_local_access: bool = True,
) -> ConnectionConfig:
    """From a parsed kubeconfig. `allow_local_access=False` refuses exec plugins, auth
    providers and file references (for kubeconfigs stored in Secrets)."""
    _check_shape(config, source, context)
    if not allow_local_access:
        _refuse_local_access(config, source)
    plain = orjson.loads(orjson.dumps(config, default=str))  # the loader mutates what it is given
    try:
        loader = KubeConfigLoader(config_dict=plain, active_context=context, config_base_path=None)
    except _LOAD_ERRORS as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return await _from_loader(loader, source, _fingerprint(plain, context))


async def from_kubeconfig_bytes(
    data: bytes | str, *, context: str | None = None, source: str = "kubeconfig", allow_local_access: bool = True
) -> ConnectionConfig:
    try:
        parsed = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from exc
    return await from_kubeconfig_dict(parsed, context=context, source=source, allow_local_access=allow_local_access)


async def from_kubeconfig_file(path: str | Path, *, context: str | None = None) -> ConnectionConfig:
    """From a kubeconfig file (or a `:`-separated list, merged like kubectl does)."""
    source = f"kubeconfig {path}"
    paths = [Path(p) for p in str(path).split(os.pathsep) if p]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(f"{source}: no such file: {', '.join(missing)}")
    try:
        _check_shape(_merged_for_check(paths), source, context)
        merged = KubeConfigMerger(str(path)).config
        assert merged is not None
        loader = KubeConfigLoader(config_dict=merged, active_context=context, config_base_path=None)
    except ConfigError:
        raise
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from exc
    except _LOAD_ERRORS as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    fingerprint = _fingerprint([p.read_bytes() for p in paths], context)
    return await _from_loader(loader, source, fingerprint)


def _merged_for_check(paths: list[Path]) -> dict[str, Any]:
    """The files merged as kubectl does (lists concatenated, first current-context wins),
    as plain data for the shape check."""
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    for p in paths:
        data = yaml.safe_load(p.read_text()) or {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"kubeconfig {p}: a kubeconfig must be a mapping, got {type(data).__name__}")
        for key in ("clusters", "contexts", "users"):
            merged[key].extend(data.get(key) or [])
        if not merged.get("current-context") and data.get("current-context"):
            merged["current-context"] = data["current-context"]
    return merged


def in_cluster(
    *,
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
    environ: Mapping[str, str] | None = None,
) -> ConnectionConfig:
    """The pod's service account (token re-read periodically, as client-go does)."""
    env = dict(environ if environ is not None else os.environ)
    loader = InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file, environ=env)
    configuration = type.__call__(Configuration)
    try:
        loader.load_and_set(configuration)
        ctx = _ssl_context(configuration, str(configuration.host))
    except _LOAD_ERRORS as exc:
        raise ConfigError(f"in-cluster configuration: {exc}") from exc
    ns_file = Path(token_file).with_name("namespace")
    namespace = ns_file.read_text().strip() if ns_file.is_file() else "default"
    return ConnectionConfig(
        host=str(configuration.host),
        ssl_context=ctx,
        auth=_ConfigurationAuth(configuration),
        source="in-cluster",
        fingerprint=_fingerprint(str(configuration.host), token_file),
        default_namespace=namespace or "default",
    )


def in_cluster_available(environ: Mapping[str, str] | None = None) -> bool:
    env = environ if environ is not None else os.environ
    return bool(env.get("KUBERNETES_SERVICE_HOST")) and Path(SERVICE_TOKEN_FILENAME).is_file()


async def load_default(kubeconfig: str | Path | None = None, *, context: str | None = None) -> ConnectionConfig:
    """client-go's precedence: an explicit path, then $KUBECONFIG, then in-cluster, then ~/.kube/config."""
    if kubeconfig:
        return await from_kubeconfig_file(kubeconfig, context=context)
    env = os.environ.get("KUBECONFIG")
    if env:
        return await from_kubeconfig_file(env, context=context)
    if in_cluster_available():
        return in_cluster()
    home = Path.home() / ".kube" / "config"
    if home.is_file():
        return await from_kubeconfig_file(home, context=context)
    raise ConfigError("no kubeconfig given, $KUBECONFIG unset, not running in a pod and ~/.kube/config missing")
