"""Embedded servers in tests: runtime clusters pointed at them, direct writes to their
plane (synchronous, so a test can change state between two network events without
racing the code under test), socket counting, and running `run(task_status=...)`
coroutines in the background from fixtures."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anyio

from kubeplane import EmbeddedAPIServer
from kubeplane.objectapi import DeleteOptions, WriteOptions
from mcruntime import Cluster, ConnectionConfig


def config_for(server: EmbeddedAPIServer) -> ConnectionConfig:
    return ConnectionConfig.insecure(server.url, server.token)


def cluster_for(server: EmbeddedAPIServer, name: str = "test", **kwargs: Any) -> Cluster:
    return Cluster(name, config_for(server), **kwargs)


class Plane:
    """Direct object writes on an embedded server (no HTTP, no await)."""

    def __init__(self, server: EmbeddedAPIServer) -> None:
        self.server = server
        self.api = server.plane.api

    def rt(self, group: str, version: str, plural: str) -> Any:
        rt = self.server.plane.registry.get(group, version, plural)
        assert rt is not None, f"{group}/{version}/{plural} is not served"
        return rt

    def create(self, plural: str, obj: dict[str, Any], *, group: str = "", version: str = "v1") -> dict[str, Any]:
        ns = obj["metadata"].get("namespace", "")
        # copies: the stored object must never be edited in place by a test
        return self.api.create(self.rt(group, version, plural), ns, obj, WriteOptions(field_manager="test")).copy()

    def update(self, plural: str, obj: dict[str, Any], *, group: str = "", version: str = "v1") -> dict[str, Any]:
        meta = obj["metadata"]
        rt = self.rt(group, version, plural)
        return self.api.update(
            rt, meta.get("namespace", ""), meta["name"], obj, WriteOptions(field_manager="test")
        ).copy()

    def update_status(
        self, plural: str, obj: dict[str, Any], *, group: str = "", version: str = "v1"
    ) -> dict[str, Any]:
        """Write `obj`'s status through the status subresource (what a controller does)."""
        meta = obj["metadata"]
        rt = self.rt(group, version, plural)
        opts = WriteOptions(field_manager="test")
        return self.api.update(rt, meta.get("namespace", ""), meta["name"], obj, opts, subresource="status").copy()

    def delete(self, plural: str, namespace: str, name: str, *, group: str = "", version: str = "v1") -> None:
        self.api.delete(self.rt(group, version, plural), namespace, name, DeleteOptions())

    def get(self, plural: str, namespace: str, name: str, *, group: str = "", version: str = "v1") -> dict[str, Any]:
        return self.api.get(self.rt(group, version, plural), namespace, name).copy()

    def list(
        self, plural: str, namespace: str | None = None, *, group: str = "", version: str = "v1"
    ) -> list[dict[str, Any]]:
        """Every stored object (in one namespace, or all), as copies."""
        store = self.api.store_for(self.rt(group, version, plural))
        entries = (store.get(*key) for key in store.sorted_keys(namespace))
        return [entry.copy() for entry in entries if entry is not None]

    def names(self, plural: str, namespace: str | None = None, *, group: str = "", version: str = "v1") -> set[str]:
        return {o["metadata"]["name"] for o in self.list(plural, namespace, group=group, version=version)}


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def open_sockets() -> int:
    """Sockets this process holds (client and server ends alike)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            continue
    return count


class Background:
    """Runs `cluster.run` (or any `run(task_status=...)` coroutine) in its own task, for
    fixtures: pytest-asyncio sets fixtures up and tears them down in different tasks, so a
    fixture cannot hold a task group open across its `yield`."""

    def __init__(self, run: Callable[..., Any]) -> None:
        self._run = run
        self._task: Any = None

    async def __aenter__(self) -> Background:
        import asyncio

        started = asyncio.get_running_loop().create_future()

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                await tg.start(self._run)
                started.set_result(None)
                await anyio.sleep_forever()

        self._task = asyncio.create_task(main())
        done, _ = await asyncio.wait({self._task, started}, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            self._task.result()
        return self

    async def __aexit__(self, *exc: object) -> None:
        import asyncio
        import contextlib

        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
