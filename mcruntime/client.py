"""Client helpers over plain dicts: cached reads (through the cluster's informer cache)
and API writes (create, update, merge/JSON patch, server-side apply with a field
manager, status, delete with preconditions and propagation policy), plus
`retry_on_conflict` for read-modify-write loops."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
import orjson
from opentelemetry import trace

from .backoff import Backoff
from .cache import InformerCache
from .errors import APIError, is_conflict, is_not_found
from .fields import get_str
from .objects import Obj, Objs
from .resources import Resource
from .tracing import note_conflict
from .transport import Transport

log = logging.getLogger(__name__)

T = TypeVar("T")
PatchType = Literal["merge", "json", "strategic"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Preconditions:
    """Delete only if the object still has this UID and/or resourceVersion."""

    uid: str | None = None
    resource_version: str | None = None


class Client:
    def __init__(self, transport: Transport, cache: InformerCache | None = None, *, field_manager: str = "mcruntime"):
        self.transport = transport
        self.cache = cache
        self.field_manager = field_manager

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _namespace(resource: Resource, obj: Mapping[str, Any] | None, namespace: str | None) -> str | None:
        ns = namespace or (get_str(obj, "metadata.namespace", required=False) if obj is not None else "") or None
        if resource.namespaced and not ns:
            raise ValueError(f"{resource} is namespaced: give a namespace (argument or metadata.namespace)")
        if not resource.namespaced:
            return None
        return ns

    @staticmethod
    def _name(resource: Resource, obj: Mapping[str, Any]) -> str:
        name = get_str(obj, "metadata.name", required=False)
        if not name:
            raise ValueError(f"{resource}: the object has no metadata.name")
        return str(name)

    @staticmethod
    def _with_type(resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        body = dict(obj)
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        if body["apiVersion"] != resource.api_version or body["kind"] != resource.kind:
            raise ValueError(
                f"object is {body['apiVersion']}/{body['kind']} but the call is for {resource.api_version}/"
                f"{resource.kind}"
            )
        return body

    def _query(self, field_manager: str | None, dry_run: bool = False, **extra: str) -> dict[str, str]:
        query = {"fieldManager": field_manager or self.field_manager}
        if dry_run:
            query["dryRun"] = "All"
        query.update(extra)
        return query

    @staticmethod
    def _obj(result: Any, what: str) -> Obj:
        if not isinstance(result, dict):
            raise APIError(500, "InternalError", f"{what}: the server answered with something that is not an object")
        return result

    # ------------------------------------------------------------------ reads
    async def get(self, resource: Resource, name: str, *, namespace: str | None = None, alias: str = "") -> Obj:
        """From the cache: the declared view of `resource` (under `alias`, see `view.py`); a
        client built without a cache reads live."""
        if self.cache is not None:
            return await self.cache.get(resource, name, namespace=namespace, alias=alias)
        return await self.get_live(resource, name, namespace=namespace)

    async def get_or_none(
        self, resource: Resource, name: str, *, namespace: str | None = None, alias: str = ""
    ) -> Obj | None:
        """`get`, with NotFound as None (any other error is raised); from the cache, no
        NotFound error is made at all (see `InformerCache.get_or_none`)."""
        if self.cache is not None:
            return await self.cache.get_or_none(resource, name, namespace=namespace, alias=alias)
        try:
            return await self.get_live(resource, name, namespace=namespace)
        except APIError as exc:
            if is_not_found(exc):
                return None
            raise

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        index: tuple[str, str] | None = None,
        alias: str = "",
    ) -> Objs:
        if self.cache is not None:
            return await self.cache.list(
                resource, namespace=namespace, label_selector=label_selector, index=index, alias=alias
            )
        if index is not None:
            raise ValueError("index lookups need a cache")
        return await self.list_live(resource, namespace=namespace, label_selector=label_selector)

    async def get_live(self, resource: Resource, name: str, *, namespace: str | None = None) -> Obj:
        """An uncached GET (explicit: reads outside any declared view go through here)."""
        path = resource.path(self._namespace(resource, None, namespace), name)
        return self._obj(await self.transport.request_json("GET", path, verb="get"), f"GET {path}")

    async def get_live_or_none(self, resource: Resource, name: str, *, namespace: str | None = None) -> Obj | None:
        """`get_live`, with NotFound as None (any other error is raised)."""
        try:
            return await self.get_live(resource, name, namespace=namespace)
        except APIError as exc:
            if is_not_found(exc):
                return None
            raise

    async def list_live(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> Objs:
        path = resource.path(namespace if resource.namespaced else None)
        items: list[Obj] = []
        token = ""
        while True:
            query = {"limit": str(page_size)}
            if label_selector:
                query["labelSelector"] = label_selector
            if field_selector:
                query["fieldSelector"] = field_selector
            if token:
                query["continue"] = token
            page = self._obj(await self.transport.request_json("GET", path, verb="list", query=query), path)
            items.extend(i for i in page.get("items") or [] if isinstance(i, dict))
            token = get_str(page, "metadata.continue", required=False)
            if not token:
                return items

    # ------------------------------------------------------------------ writes
    async def create(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Obj:
        """POST a new object. `dry_run` stores nothing; `strict` has unknown or duplicate
        fields refused (fieldValidation=Strict) instead of dropped with a warning."""
        path = resource.path(self._namespace(resource, obj, namespace))
        query = self._query(field_manager, dry_run, **({"fieldValidation": "Strict"} if strict else {}))
        result = await self.transport.request_json(
            "POST", path, verb="create", query=query, body=self._with_type(resource, obj)
        )
        return self._obj(result, f"POST {path}")

    async def update(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
        strict: bool = False,
    ) -> Obj:
        """PUT the whole object; its metadata.resourceVersion makes the write conditional.
        `dry_run` and `strict` as for `create`."""
        path = resource.path(self._namespace(resource, obj, None), self._name(resource, obj), subresource or None)
        query = self._query(field_manager, dry_run, **({"fieldValidation": "Strict"} if strict else {}))
        result = await self.transport.request_json(
            "PUT", path, verb="update", query=query, body=self._with_type(resource, obj)
        )
        return self._obj(result, f"PUT {path}")

    async def update_status(
        self, resource: Resource, obj: Mapping[str, Any], *, field_manager: str | None = None
    ) -> Obj:
        return await self.update(resource, obj, field_manager=field_manager, subresource="status")

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str | None = None,
    ) -> Obj:
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}, got {patch_type!r}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type != "json" and not isinstance(patch, Mapping):
            raise ValueError(f"a {patch_type} patch is a JSON object")
        path = resource.path(self._namespace(resource, None, namespace), name, subresource or None)
        result = await self.transport.request_json(
            "PATCH",
            path,
            verb="patch",
            query=self._query(field_manager),
            body=orjson.dumps(patch),
            content_type=content_type,
        )
        return self._obj(result, f"PATCH {path}")

    async def apply(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        force: bool = False,
        subresource: str = "",
    ) -> Obj:
        """Server-side apply: `obj` is this manager's whole intent for the fields it owns."""
        body = self._with_type(resource, obj)
        path = resource.path(self._namespace(resource, obj, None), self._name(resource, obj), subresource or None)
        extra = {"force": "true"} if force else {}
        result = await self.transport.request_json(
            "PATCH",
            path,
            verb="patch",
            query={**self._query(field_manager), **extra},
            body=orjson.dumps(body),
            content_type=APPLY_CONTENT_TYPE,
        )
        return self._obj(result, f"APPLY {path}")

    async def apply_status(
        self, resource: Resource, obj: Mapping[str, Any], *, field_manager: str | None = None, force: bool = False
    ) -> Obj:
        return await self.apply(resource, obj, field_manager=field_manager, force=force, subresource="status")

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: Preconditions | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        ignore_not_found: bool = False,
    ) -> Obj | None:
        """Delete (or mark for deletion). Returns what the server answered, or None when
        `ignore_not_found` and the object was already gone."""
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise ValueError(f"propagation_policy must be Background, Foreground or Orphan, not {propagation_policy!r}")
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions is not None:
            pre = {"uid": preconditions.uid, "resourceVersion": preconditions.resource_version}
            body["preconditions"] = {k: v for k, v in pre.items() if v is not None}
        path = resource.path(self._namespace(resource, None, namespace), name)
        try:
            result = await self.transport.request_json("DELETE", path, verb="delete", body=body)
        except APIError as exc:
            if ignore_not_found and is_not_found(exc):
                return None
            raise
        return result if isinstance(result, dict) else None


async def retry_on_conflict(
    attempt: Callable[[], Awaitable[T]], *, attempts: int = 5, backoff: Backoff | None = None
) -> T:
    """client-go's RetryOnConflict: run a read-modify-write `attempt` again while the
    write loses an optimistic-concurrency race (409 Conflict), up to `attempts` times.
    The attempt must re-read the object each time (a live read, or the cache)."""
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    delays = backoff or Backoff(0.01, 1.0, jitter=0.1)
    for n in range(1, attempts + 1):
        try:
            return await attempt()
        except APIError as exc:
            if not is_conflict(exc) or n == attempts:
                raise
            note_conflict(trace.get_current_span(), exc, **{"retry.attempt": n})
            log.debug("conflict on attempt %d/%d, retrying: %s", n, attempts, exc)
        await anyio.sleep(delays.next())
    raise AssertionError("unreachable")
