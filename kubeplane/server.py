"""The embedded Kubernetes control plane: `ControlPlane` is one cluster's state and
semantics (API objects, CRDs, namespace lifecycle, ...); `EmbeddedAPIServer` serves it
over HTTP(S) on a port, writes a kubeconfig for kubectl and kubernetes-asyncio, and can be
paused and resumed with its state intact. Several run side by side in one process.

By default every request is allowed (with `tls=True`, every request that carries a token
the server knows). `authorization="RBAC"` enforces Roles and bindings: the kubeconfig's
admin token is a `system:masters` superuser, `plane.auth` issues tokens for other users and
ServiceAccounts, and `token_auth_file` reads kube-apiserver's static token file."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import yaml

from .accounting import RequestCounters
from .admin import AdminEndpoints
from .auth import Authenticator, parse_token_file
from .builtins import register_builtins
from .builtins_apps import register_apps
from .crds import CRDController, crd_resource_type
from .discovery import Discovery
from .faults import Faults
from .gc import GarbageCollector
from .hpa import install_hpa
from .http import HTTPFront
from .http11 import HTTPServer
from .kubelet import Kubelet, KubeletSettings
from .limits import COMPACTION_INTERVAL, IDLE_TIMEOUT, MAX_REQUEST_BODY_BYTES, REQUEST_TIMEOUT
from .namespaces import NamespaceController, install_namespace_semantics
from .objectapi import ObjectAPI, WriteOptions
from .persist import SQLiteStore
from .rbac import RBACAuthorizer
from .rbac_bootstrap import bootstrap_objects
from .registry import Registry
from .reviews import register_review_types
from .store import Database, Waker
from .tls import ServingCert, make_serving_cert

log = logging.getLogger(__name__)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ALWAYS_ALLOW = "AlwaysAllow"
RBAC = "RBAC"
AUTHORIZATION_MODES = (ALWAYS_ALLOW, RBAC)  # kube-apiserver --authorization-mode values served here


def positive_seconds(name: str, value: float) -> float:
    """A duration setting, refused unless it is a finite number of seconds above zero (a zero
    bookmark interval would turn every bookmark-enabled watch into a busy loop)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


class ControlPlane:
    """State and behaviour of one embedded cluster, independent of the network."""

    def __init__(
        self,
        *,
        history: int = 10_000,
        bookmark_interval: float = 60.0,
        token: str | None = None,
        kubelet: bool | KubeletSettings = True,
        garbage_collector: bool = True,
        request_timeout: float = REQUEST_TIMEOUT,
        compaction_interval: float = COMPACTION_INTERVAL,
        authorization: str = ALWAYS_ALLOW,
        token_auth_file: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        if authorization not in AUTHORIZATION_MODES:
            raise ValueError(f"authorization must be one of {', '.join(AUTHORIZATION_MODES)}, got {authorization!r}")
        if isinstance(history, bool) or not isinstance(history, int) or history < 1:
            raise ValueError(f"history must be a positive number of events, got {history!r}")
        self.bookmark_interval = positive_seconds("bookmark_interval", bookmark_interval)
        self.request_timeout = positive_seconds("request_timeout", request_timeout)
        self.compaction_interval = positive_seconds("compaction_interval", compaction_interval)
        self.registry = Registry()
        register_builtins(self.registry)
        register_apps(self.registry)
        install_hpa(self.registry)
        self.registry.add(crd_resource_type())
        install_namespace_semantics(self.registry)
        register_review_types(self.registry)
        # data_dir: objects in SQLite there (kubeplane/persist.py), back after a restart; else memory only
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.db = Database(history, SQLiteStore(self.data_dir) if self.data_dir is not None else None)
        self.api = ObjectAPI(self.db, self.registry)
        self.discovery = Discovery(self.registry)
        self.counters = RequestCounters()
        self.faults = Faults()
        self.watchers: set[Waker] = set()
        # who a request is (admin token, --token-auth-file, issued and ServiceAccount tokens) ...
        self.auth = Authenticator(
            admin_token=token,
            static_tokens=parse_token_file(token_auth_file) if token_auth_file is not None else None,
            uid_of=self.uid_of,
        )
        # ... and, with RBAC, what it may do; None (the default) allows everything at no cost
        self.authorization = authorization
        self.authorizer: RBACAuthorizer | None = RBACAuthorizer(self.db) if authorization == RBAC else None
        self._task_group: anyio.abc.TaskGroup | None = None
        self.crds = CRDController(self.api, self.registry)
        self.api.delete_hooks[self.crds.crd_rt.storage_key] = self.crds.mark_deleted
        self.namespaces = NamespaceController(self.api, self.registry)
        self.gc = GarbageCollector(self.api, self.registry) if garbage_collector else None
        self.kubelet: Kubelet | None = None
        if kubelet:
            self.kubelet = Kubelet(self.api, self.registry, kubelet if isinstance(kubelet, KubeletSettings) else None)
            self.api.delete_hooks[self.kubelet.pods_rt.storage_key] = self.kubelet.graceful_delete
        ns_rt = self.registry.get("", "v1", "namespaces")
        assert ns_rt is not None
        # what kube-apiserver creates at start, unless a restart brought it back from storage
        for name in INITIAL_NAMESPACES:
            if self.api.store_for(ns_rt).get("", name) is None:
                self.api.create(ns_rt, "", {"metadata": {"name": name}}, WriteOptions(field_manager="kube-apiserver"))
        if self.authorizer is not None:
            for plural, obj in bootstrap_objects():
                rt = self.registry.get("rbac.authorization.k8s.io", "v1", plural)
                assert rt is not None
                if self.api.store_for(rt).get("", obj["metadata"]["name"]) is None:
                    self.api.create(rt, "", obj, WriteOptions(field_manager="kube-apiserver"))

    @property
    def token(self) -> str | None:
        """The admin (system:masters) bearer token; None when requests need none."""
        return self.auth.admin_token

    @token.setter
    def token(self, value: str | None) -> None:
        self.auth.set_admin_token(value)

    def uid_of(self, kind: str, namespace: str, name: str) -> str | None:
        """The uid of a core/v1 object (ServiceAccount, Pod, Secret, Node), None if it does not exist."""
        rt = self.registry.get("", "v1", kind.lower() + "s")
        if rt is None:
            return None
        entry = self.api.store_for(rt).get(namespace if rt.namespaced else "", name)
        return None if entry is None else str(entry.obj["metadata"].get("uid") or "")

    def drop_watches(self) -> int:
        """Close every open watch stream (clients see the connection end and must resume)."""
        wakers = list(self.watchers)
        for waker in wakers:
            waker.close()
        return len(wakers)

    def expire_history(self) -> None:
        """Forget all watch history (like etcd compaction): resuming watches get 410 Expired."""
        self.db.compact_all()

    async def compact_periodically(self) -> None:
        """Compact the watch history as kube-apiserver compacts etcd: every interval, up to the
        revision seen one interval before, so history is bounded by age as well as by count."""
        previous = self.db.rev
        while True:
            await anyio.sleep(self.compaction_interval)
            self.db.compact(previous)
            previous = self.db.rev

    async def run_controllers(self) -> None:
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(self.compact_periodically)
            tg.start_soon(self.crds.run, tg)
            tg.start_soon(self.namespaces.run, tg)
            if self.gc is not None:
                tg.start_soon(self.gc.run)
            if self.kubelet is not None:
                tg.start_soon(self.kubelet.run)

    def spawn(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run a background job (e.g. an admin-requested pause) under the controllers' task group."""
        if self._task_group is None:
            raise RuntimeError("the control plane's controllers are not running")
        self._task_group.start_soon(job)

    def close_storage(self) -> None:
        """Close the data directory's database (after the controllers and the listener stopped)."""
        self.db.close()

    def stop_controllers(self) -> None:
        self.crds.close()
        self.namespaces.close()
        if self.gc is not None:
            self.gc.close()
        if self.kubelet is not None:
            self.kubelet.close()


class EmbeddedAPIServer:
    """An embedded API server on a TCP port. Use as `async with EmbeddedAPIServer() as s:`."""

    def __init__(
        self,
        *,
        name: str = "embedded",
        host: str = "127.0.0.1",
        port: int = 0,
        kubeconfig: str | Path | None = None,
        tls: bool = False,
        token: str | None = None,
        bookmark_interval: float = 60.0,
        history: int = 10_000,
        kubelet: bool | KubeletSettings = True,
        garbage_collector: bool = True,
        idle_timeout: float = IDLE_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
        compaction_interval: float = COMPACTION_INTERVAL,
        authorization: str = ALWAYS_ALLOW,
        token_auth_file: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        self.idle_timeout = positive_seconds("idle_timeout", idle_timeout)
        self.name = name
        self.host = host
        self.port = port
        self.kubeconfig_path = Path(kubeconfig) if kubeconfig else None
        self.tls = tls
        # with TLS or RBAC the kubeconfig carries an admin token (a system:masters superuser)
        needs_token = tls or authorization == RBAC
        self.token = token if token is not None else (secrets.token_hex(16) if needs_token else None)
        self.plane = ControlPlane(
            history=history,
            bookmark_interval=bookmark_interval,
            token=self.token,
            kubelet=kubelet,
            garbage_collector=garbage_collector,
            request_timeout=request_timeout,
            compaction_interval=compaction_interval,
            authorization=authorization,
            token_auth_file=token_auth_file,
            data_dir=data_dir,
        )
        self.front = HTTPFront(self.plane)
        self.front.admin = AdminEndpoints(self, self.plane.spawn).handle
        self._cert: ServingCert | None = make_serving_cert([host, "localhost"]) if tls else None
        self._http: HTTPServer | None = None
        self._supervisor: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> EmbeddedAPIServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        self._supervisor = asyncio.create_task(self.plane.run_controllers(), name=f"{self.name}-controllers")
        try:
            await self._listen()
            if self.kubeconfig_path is not None:
                self.write_kubeconfig(self.kubeconfig_path)
        except BaseException:
            await self.stop()  # a half-started server must not keep its port or tasks
            raise

    async def _listen(self) -> None:
        # kubeplane/http11.py: a client that disconnects ends its request (a watch above all) at
        # once, as with kube-apiserver (writes are safe to cancel: they commit synchronously); a
        # connection idle for idle_timeout, or one that has not completed a request's headers by
        # then, is closed (a slow or silent client holds nothing forever)
        http = HTTPServer(self.front.handle, idle_timeout=self.idle_timeout, max_body=MAX_REQUEST_BODY_BYTES)
        ssl_ctx = self._cert.server_context() if self._cert else None
        self.port = await http.listen(self.host, self.port, ssl_ctx)
        self._http = http
        self.plane.discovery.address = f"{self.host}:{self.port}"

    async def pause(self) -> None:
        """Stop accepting connections and close open ones; state stays in memory."""
        self.plane.drop_watches()
        if self._http is not None:
            http, self._http = self._http, None
            await http.close()

    async def resume(self) -> None:
        if self._http is None:
            await self._listen()

    @property
    def paused(self) -> bool:
        return self._http is None

    async def stop(self) -> None:
        await self.pause()
        self.plane.stop_controllers()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        self.plane.close_storage()

    # ------------------------------------------------------------------ client config
    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def kubeconfig(self, *, namespace: str = "default", token: str | None = None) -> dict[str, Any]:
        """A kubeconfig for this server, with the admin token unless another `token` is given
        (one from `plane.auth.issue_token` or a ServiceAccount's, to act as that identity)."""
        import base64

        cluster: dict[str, Any] = {"server": self.url}
        if self._cert is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self._cert.ca_pem).decode()
        bearer = token if token is not None else self.token
        user: dict[str, Any] = {"token": bearer} if bearer else {}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.name, "cluster": cluster}],
            "users": [{"name": self.name, "user": user}],
            "contexts": [
                {"name": self.name, "context": {"cluster": self.name, "user": self.name, "namespace": namespace}}
            ],
            "current-context": self.name,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, *, token: str | None = None) -> Path:
        """Write `kubeconfig(token=token)` to `path`; the admin one becomes `kubeconfig_path`."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(token=token), sort_keys=False))
        target.chmod(0o600)
        if token is None:
            self.kubeconfig_path = target
        return target
