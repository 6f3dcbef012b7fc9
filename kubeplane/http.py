"""HTTP front of the embedded API server: URL routing like kube-apiserver's
(`/api/v1/...`, `/apis/<group>/<version>/...`, `namespaces/<ns>/` scoping, subresources,
legacy `/watch/` paths), content negotiation (JSON, YAML, Table, PartialObjectMetadata),
request decoding, authentication and (with --authorization-mode=RBAC) authorization of
every request, and Status responses for every error. A bad request never escapes as a
500: unexpected exceptions are logged and answered as InternalError."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from . import errors, yamlbody
from .auth import ANONYMOUS
from .discovery import AGGREGATED_V2, KUBE_VERSION, Discovery
from .errors import APIError
from .http11 import AnyResponse, BodyIncomplete, BodyTimeout, BodyTooLarge, Request, Response
from .limits import (
    MAX_DEPTH,
    body_depth_overflow,
    body_too_large,
    depth_message,
    may_exceed_depth,
    request_timeout,
)
from .objectapi import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_PATCH,
    DeleteOptions,
    ListResult,
    ObjectAPI,
    WriteOptions,
)
from .openapiv2 import PROTOBUF_V2, wants_protobuf
from .ownerrefs import OwnerReferencesAdmission
from .rbac import UserInfo, forbidden, forbidden_create_on_apply, unauthorized
from .registry import Obj, Registry, ResourceType
from .requestinfo import RequestAttributes, request_attributes
from .reviews import AlwaysAllow, access_review, rules_review, self_subject_review, token_request
from .selectors import parse_field_selector, parse_label_selector
from .store import Entry
from .table import partial_metadata, table
from .watch import WatchRequest, WatchStream, default_timeout, encode_list_item

if TYPE_CHECKING:
    from .server import ControlPlane

log = logging.getLogger(__name__)

JSON = "application/json"
YAML = "application/yaml"
# client-go's typed clients send built-in kinds as Kubernetes protobuf (kubeplane.protobuf)
PROTOBUF = "application/vnd.kubernetes.protobuf"
BODY_TYPES = (JSON, YAML, PROTOBUF, *PATCH_TYPES)
ALWAYS_ALLOW = AlwaysAllow()


@dataclass
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool


@dataclass(frozen=True)
class Output:
    kind: str  # "json" | "yaml" | "table" | "metadata"
    table_version: str = "v1"


def negotiate(accept: str) -> Output:
    """The representation an Accept header asks for (406 when none is served). Remembered per
    short header value: a client sends the same one with every request (a refusal is not)."""
    return _negotiate_remembered(accept) if len(accept) <= REMEMBERED_HEADER else _negotiate(accept)


REMEMBERED_HEADER = 256  # (longer values are parsed each time: the memory holds a few KB at most)


@functools.lru_cache(maxsize=64)
def _negotiate_remembered(accept: str) -> Output:
    return _negotiate(accept)


def _negotiate(accept: str) -> Output:
    if not accept:
        return Output("json")
    fallback: Output | None = None
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mime = fields[0].lower()
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        as_ = params.get("as")
        if as_ == "Table" and params.get("g") == "meta.k8s.io" and mime in (JSON, "*/*"):
            return Output("table", params.get("v", "v1"))
        if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList") and mime == JSON:
            return Output("metadata", params.get("v", "v1"))
        if as_:
            continue
        if mime in (JSON, "*/*", "application/*", "application/json-patch+json", "application/merge-patch+json"):
            return Output("json")
        if mime in (YAML, "application/x-yaml", "text/yaml"):
            fallback = fallback or Output("yaml")
    if fallback is not None:
        return fallback
    raise APIError(406, "NotAcceptable", f"only the following media types are accepted: {JSON}, {YAML}")


def warning_header(text: str) -> str:
    """A `Warning` header value as kube-apiserver writes it (code 299, no agent)."""
    return '299 - "' + text.replace('"', '\\"') + '"'


def json_response(body: bytes, status: int = 200, warnings: list[str] | None = None) -> Response:
    headers = [("Content-Type", JSON), ("Cache-Control", "no-cache, private")]
    if warnings:
        headers.extend(("Warning", warning_header(w)) for w in warnings)
    return Response(body, status=status, headers=headers)


def text_response(text: str, content_type: str, status: int = 200) -> Response:
    return Response(text.encode(), status=status, content_type=content_type + "; charset=utf-8")


def status_response(err: APIError) -> Response:
    resp = json_response(orjson.dumps(err.status()), err.code)
    for key, value in err.headers.items():
        resp.set_header(key, value)
    return resp


class HTTPFront:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.api: ObjectAPI = plane.api
        self.registry: Registry = plane.registry
        self.discovery: Discovery = plane.discovery
        self.admin: Callable[[Request], Awaitable[AnyResponse]] | None = None

    # ------------------------------------------------------------------ entry
    async def handle(self, request: Request) -> AnyResponse:
        plane = self.plane
        try:
            # the admin endpoints too: they can pause the server or inject errors
            if plane.authorizer is not None:
                refused = self._authorize(request)
                if refused is not None:
                    return status_response(refused)
            elif plane.token is not None:
                auth = request.headers.get("Authorization", "")
                if auth != f"Bearer {plane.token}":
                    # any other token the server knows is good too (everything is allowed)
                    user = plane.auth.authenticate(auth)
                    if user is None or user is ANONYMOUS:
                        return status_response(unauthorized())
            if request.path.startswith("/_embedded/") and self.admin is not None:
                return await self.admin(request)
            early = await plane.faults.before(request)
            if early is not None:
                return early
            return await self._route(request)
        except APIError as err:
            return status_response(err)
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            return status_response(errors.internal(f"{type(exc).__name__}: {exc}"))

    def _authorize(self, request: Request) -> APIError | None:
        """RBAC mode: authenticate, then authorize the request as kube-apiserver's filters do
        (401 for an unknown token, 403 with the authorizer's reason)."""
        plane = self.plane
        assert plane.authorizer is not None
        user = plane.auth.authenticate(request.headers.get("Authorization", ""))
        if user is None:
            return unauthorized()
        request.user = user
        attrs = request_attributes(request.method, request.path, request.query)
        decision = plane.authorizer.authorize(user, attrs)
        if decision.allowed:
            return None
        return forbidden(user, attrs, decision.reason)

    def _user(self, request: Request) -> UserInfo:
        user = request.user
        if isinstance(user, UserInfo):
            return user
        return self.plane.auth.authenticate(request.headers.get("Authorization", "")) or ANONYMOUS

    async def _route(self, request: Request) -> AnyResponse:
        path = request.path
        if path.startswith("/api/") or path.startswith("/apis/") or path in ("/api", "/apis"):
            return await self._api(request, path)
        if path in ("/healthz", "/livez", "/readyz"):
            return text_response("ok", "text/plain")
        if path in ("/version", "/version/"):  # clients generated from the OpenAPI spec ask for /version/
            return json_response(orjson.dumps(KUBE_VERSION))
        if path == "/openapi/v2":
            if wants_protobuf(request.headers.get("Accept", "")):
                return Response(self.discovery.openapi_v2(protobuf=True), content_type=PROTOBUF_V2)
            return json_response(self.discovery.openapi_v2(protobuf=False))
        if path == "/openapi/v3":
            return json_response(self.discovery.openapi_root())
        if path.startswith("/openapi/v3/"):
            rel = path[len("/openapi/v3/") :].strip("/").split("/")
            doc = None
            if len(rel) == 2 and rel[0] == "api":
                doc = self.discovery.openapi_gv("", rel[1])
            elif len(rel) == 3 and rel[0] == "apis":
                doc = self.discovery.openapi_gv(rel[1], rel[2])
            if doc is None:
                raise errors.no_resource()
            return json_response(doc)
        return text_response("404 page not found\n", "text/plain", 404)

    # ------------------------------------------------------------------ /api, /apis
    async def _api(self, request: Request, path: str) -> AnyResponse:
        parts = [p for p in path.split("/") if p]
        if parts[0] == "api":
            if len(parts) == 1:
                return self._discovery_doc(request, legacy=True)
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return self._discovery_doc(request, legacy=False)
            if len(parts) == 2:
                doc = self.discovery.group(parts[1])
                if doc is None:
                    raise errors.no_resource()
                return json_response(doc)
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            doc = self.discovery.resource_list(group, version)
            if doc is None:
                raise errors.no_resource()
            return json_response(doc)
        target = self._target(group, version, rest)
        deprecation = target.rt.deprecation_warning
        if deprecation is None:
            return await self._dispatch(request, target)
        # apiextensions adds the warning to every request to a deprecated version, errors included
        try:
            resp = await self._dispatch(request, target)
        except APIError as err:
            err.headers["Warning"] = warning_header(deprecation)
            raise
        if not resp.prepared:
            resp.add_header("Warning", warning_header(deprecation))
        return resp

    def _discovery_doc(self, request: Request, *, legacy: bool) -> Response:
        if "as=APIGroupDiscoveryList" in request.headers.get("Accept", "") and "v=v2" in request.headers.get(
            "Accept", ""
        ):
            resp = json_response(self.discovery.aggregated(legacy))
            resp.set_header("Content-Type", AGGREGATED_V2)
            return resp
        return json_response(self.discovery.core_versions() if legacy else self.discovery.group_list())

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_path = False
        if rest[0] == "watch":
            watch_path = True
            rest = rest[1:]
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace = rest[1]
            rest = rest[2:]
        if not rest or len(rest) > 3:
            raise errors.no_resource()
        rt = self.registry.get(group, version, rest[0])
        if rt is None:
            raise errors.no_resource()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if namespace is not None and not rt.namespaced:
            raise errors.no_resource()
        if rt.namespaced and name is not None and namespace is None:
            raise errors.no_resource()
        if sub is not None and sub not in rt.subresources:
            raise errors.no_resource()
        return Target(rt, namespace, name, sub, watch_path)

    # ------------------------------------------------------------------ verbs
    async def _dispatch(self, request: Request, t: Target) -> AnyResponse:
        method = request.method
        query = request.query
        rt = t.rt
        if rt.virtual or t.subresource == "token":
            return await self._answer(request, t)
        ns = t.namespace or ""
        user = request.user
        # bound once: every verb below counts under the authenticated user (RBAC mode) too
        count = functools.partial(self.plane.counters.count, user=user.name if isinstance(user, UserInfo) else None)
        if method == "GET":
            if t.name is None or t.watch_path:
                # the legacy /watch/ prefix also watches a single named object
                watch = t.watch_path or bool_param(query, "watch")
                count("watch" if watch else "list", rt, t.subresource)
                if watch:
                    return await self._watch(request, t)
                return self._list(request, t)
            count("get", rt, t.subresource)
            if t.subresource == "scale":
                return json_response(orjson.dumps(self.api.get_scale(rt, ns, t.name)))
            entry = self.api.get(rt, ns, t.name)
            return self._object_response(request, rt, entry.obj, entry.raw)
        if method == "POST":
            count("create", rt, t.subresource)
            if t.name is not None:
                raise errors.method_not_supported(rt.plural, rt.group, "create")
            opts = self._write_options(request)
            entry = self.api.create(rt, ns, await self._body(request), opts)
            return self._write_response(request, rt, entry, 201, opts)
        if method == "PUT":
            count("update", rt, t.subresource)
            if t.name is None:
                raise errors.method_not_supported(rt.plural, rt.group, "update")
            opts = self._write_options(request)
            body = await self._body(request)
            if t.subresource == "scale":
                return json_response(
                    orjson.dumps(self.api.update_scale(rt, ns, t.name, body, opts)), warnings=opts.warnings
                )
            if t.subresource == "finalize":
                entry = self._finalize(rt, t.name, body, opts)
            else:
                entry = self.api.update(rt, ns, t.name, body, opts, subresource=t.subresource or "")
            return self._write_response(request, rt, entry, 200, opts)
        if method == "PATCH":
            count("patch", rt, t.subresource)
            if t.name is None:
                raise errors.method_not_supported(rt.plural, rt.group, "patch")
            return await self._patch(request, t)
        if method == "DELETE":
            if t.name is None:
                count("deletecollection", rt, t.subresource)
                return await self._delete_collection(request, t)
            count("delete", rt, t.subresource)
            return await self._delete(request, t)
        raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    async def _answer(self, request: Request, t: Target) -> Response:
        """The create-only kinds answered and never stored (kubeplane.reviews)."""
        rt = t.rt
        named = t.subresource == "token"  # POST .../serviceaccounts/<name>/token; the reviews have no name
        if request.method != "POST" or (t.name is not None) != named:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        self.plane.counters.count("create", rt, t.subresource)
        body = await self._body(request)
        plane = self.plane
        authorizer = plane.authorizer if plane.authorizer is not None else ALWAYS_ALLOW
        if t.subresource == "token":
            assert t.name is not None
            answer = token_request(plane.auth, t.namespace or "", t.name, body, plane.uid_of)
        elif rt.plural == "selfsubjectaccessreviews":
            answer = access_review(authorizer, self._user(request), body)
        elif rt.plural == "selfsubjectrulesreviews":
            answer = rules_review(authorizer, self._user(request), body)
        else:
            answer = self_subject_review(self._user(request))
        return json_response(orjson.dumps(answer), 201)

    # ------------------------------------------------------------------ reads
    def _object_response(self, request: Request, rt: ResourceType, obj: Obj, raw: bytes | None) -> Response:
        out = negotiate(request.headers.get("Accept", ""))
        served = rt.served(obj)
        if out.kind == "json":
            body = raw if raw is not None and served is obj else orjson.dumps(served)
            return json_response(body)
        if out.kind == "yaml":
            return text_response(yaml.safe_dump(served, sort_keys=False), YAML)
        if out.kind == "metadata":
            return json_response(orjson.dumps(partial_metadata(served, out.table_version)))
        include = request.query.get("includeObject", "Metadata")
        tbl = table(
            rt,
            [served],
            resource_version=served["metadata"].get("resourceVersion", ""),
            include_object=include,
            table_version=out.table_version,
        )
        return json_response(orjson.dumps(tbl))

    def _list(self, request: Request, t: Target) -> Response:
        q = request.query
        rt = t.rt
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"), rt.field_selectors)
        _validate_list_options(q)
        # a negative limit means no limit, as in the apiserver's storage
        limit = max(_int_param(q, "limit", 0, minimum=None), 0)
        _int_param(q, "timeoutSeconds", 0, minimum=None)  # decoded (and so checked) though a list ignores it
        result = self.api.list_objects(
            rt,
            t.namespace,
            labels,
            fields,
            limit=limit,
            continue_token=q.get("continue", ""),
            resource_version=q.get("resourceVersion", ""),
            resource_version_match=q.get("resourceVersionMatch", ""),
        )
        out = negotiate(request.headers.get("Accept", ""))
        self.plane.counters.count_as(out.kind, "list", rt)
        if out.kind == "table":
            tbl = table(
                rt,
                [rt.served(e.obj) for e in result.items],
                resource_version=str(result.resource_version),
                include_object=q.get("includeObject", "Metadata"),
                table_version=out.table_version,
                continue_token=result.continue_token,
                remaining=result.remaining,
            )
            return json_response(orjson.dumps(tbl))
        meta = _list_meta(result)
        if out.kind == "metadata":
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{out.table_version}",
                "metadata": meta,
                "items": [partial_metadata(rt.served(e.obj)) for e in result.items],
            }
            return json_response(orjson.dumps(body))
        if out.kind == "yaml":
            body = {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": meta,
                "items": [rt.served(e.obj) for e in result.items],
            }
            return text_response(yaml.safe_dump(body, sort_keys=False), YAML)
        head = orjson.dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta})
        items = b",".join(encode_list_item(rt, e) for e in result.items)
        return json_response(head[:-1] + b',"items":[' + items + b"]}")

    async def _watch(self, request: Request, t: Target) -> AnyResponse:
        q = request.query
        rt = t.rt
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"), rt.field_selectors)
        if t.name is not None:
            fields = parse_field_selector(f"metadata.name={t.name}", rt.field_selectors)
        out = negotiate(request.headers.get("Accept", ""))
        self.plane.counters.count_as(out.kind, "watch", rt)
        timeout = float(_int_param(q, "timeoutSeconds", 0)) or default_timeout()
        req = WatchRequest(
            rt=rt,
            namespace=t.namespace if rt.namespaced else None,
            match=self.api.matcher(rt, labels, fields),
            filtered=not (labels.empty() and fields.empty()),
            resource_version=q.get("resourceVersion", ""),
            send_initial_events=bool_param(q, "sendInitialEvents"),
            bookmarks=bool_param(q, "allowWatchBookmarks"),
            timeout=timeout,
            output={"json": "object", "yaml": "object", "table": "table", "metadata": "metadata"}[out.kind],
            include_object=q.get("includeObject", "Metadata"),
            table_version=out.table_version,
            warnings=(rt.deprecation_warning,) if rt.deprecation_warning else (),
        )
        stream = WatchStream(
            self.api.db,
            self.api.store_for(rt),
            req,
            bookmark_interval=self.plane.bookmark_interval,
            registry_waker=self.plane.watchers,
        )
        return await stream.serve(request)

    # ------------------------------------------------------------------ writes
    def _write_options(self, request: Request) -> WriteOptions:
        # kube-apiserver validates Create/Update/PatchOptions and answers 422 Invalid for them
        q = request.query
        kind = {"POST": "CreateOptions", "PUT": "UpdateOptions"}.get(request.method, "PatchOptions")
        errs: list[errors.FieldError] = []
        dry = q.getall("dryRun", [])
        if any(value != "All" for value in dry):
            errs.append(errors.unsupported("dryRun", dry, ["All"]))
        explicit = q.get("fieldManager", "")
        manager = explicit or _manager_from_agent(request.headers.get("User-Agent", ""))
        if len(explicit) > 128:
            errs.append(errors.FieldError("Too long", "fieldManager", "may not be more than 128 bytes"))
        if not explicit.isprintable():  # (the common case, a printable name, in one call)
            errs.extend(
                errors.invalid("fieldManager", explicit, f"invalid character {ch!r} (at position {i})")
                for i, ch in enumerate(explicit)
                if not ch.isprintable()
            )
        validation = q.get("fieldValidation", "") or "Warn"
        if validation not in ("Ignore", "Warn", "Strict"):
            errs.append(errors.unsupported("fieldValidation", validation, ["", "Ignore", "Strict", "Warn"]))
        force = bool_param(q, "force")
        is_apply = request.headers.get("Content-Type", "").split(";")[0].strip().lower() == APPLY_PATCH
        if kind == "PatchOptions":
            if not is_apply and "force" in q:
                errs.append(errors.forbidden("force", "may not be specified for non-apply patch"))
            if is_apply and not explicit:
                errs.append(errors.required("fieldManager", "is required for apply patch"))
        if errs:
            raise errors.invalid_object(kind, "meta.k8s.io", "", errs)
        opts = WriteOptions(dry_run=bool(dry), field_manager=manager, field_validation=validation, force=force)
        authorizer = self.plane.authorizer
        if authorizer is not None:
            opts.admit = OwnerReferencesAdmission(authorizer, self.registry, self._user(request))
        return opts

    def _write_response(
        self, request: Request, rt: ResourceType, entry: Entry, status: int, opts: WriteOptions
    ) -> Response:
        # a committed entry carries the bytes it was stored as (a dry run's are made on demand)
        resp = self._object_response(request, rt, entry.obj, entry.raw)
        resp.status = status
        for w in opts.warnings:
            resp.add_header("Warning", warning_header(w))
        return resp

    async def _body(self, request: Request, *, content_type: str | None = None) -> Any:
        ctype = content_type or request.headers.get("Content-Type", JSON).split(";")[0].strip().lower() or JSON
        if ctype not in BODY_TYPES:
            raise errors.unsupported_media_type(ctype, [JSON, YAML])
        raw = await read_body(request, self.plane.request_timeout)
        if not raw.strip():
            raise errors.bad_request("the request body is empty")
        return decode_body(raw, ctype)

    async def _patch(self, request: Request, t: Target) -> Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        rt = t.rt
        ns = t.namespace or ""
        assert t.name is not None
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype, list(PATCH_TYPES))
        opts = self._write_options(request)
        body = await self._body(request, content_type=ctype)
        if t.subresource == "scale":
            from .patches import json_patch, merge_patch

            scale = self.api.get_scale(rt, ns, t.name)
            if ctype == "application/json-patch+json":
                patched = json_patch(scale, body)
            elif isinstance(body, dict):
                patched = merge_patch(scale, body)
            else:
                raise errors.bad_request("patch body must be a JSON object")
            return json_response(
                orjson.dumps(self.api.update_scale(rt, ns, t.name, patched, opts)), warnings=opts.warnings
            )
        # an apply that creates the object answers 201, as kube-apiserver's patch handler does
        creates = ctype == APPLY_PATCH and self.api.store_for(rt).get(ns if rt.namespaced else "", t.name) is None
        authorizer = self.plane.authorizer
        if creates and authorizer is not None:
            # ... and it is authorized as a create as well as a patch
            asked = RequestAttributes(
                "create", "", True, rt.group, rt.version, rt.plural, t.subresource or "", ns, t.name
            )
            decision = authorizer.authorize(self._user(request), asked)
            if not decision.allowed:
                raise forbidden_create_on_apply(asked, decision.reason)
        entry = self.api.patch(rt, ns, t.name, ctype, body, opts, subresource=t.subresource or "")
        return self._write_response(request, rt, entry, 201 if creates else 200, opts)

    def _finalize(self, rt: ResourceType, name: str, body: Any, opts: WriteOptions) -> Any:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a Namespace")
        old = self.api.get(rt, "", name)
        new = old.copy()
        new.setdefault("spec", {})["finalizers"] = list((body.get("spec") or {}).get("finalizers") or [])
        return self.api.finalize(rt, old, new, opts)

    async def _delete_options(self, request: Request) -> DeleteOptions:
        q = request.query
        body: Obj = {}
        raw = await read_body(request, self.plane.request_timeout)
        if raw.strip():
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype == PROTOBUF:
                from .protobuf import decode

                # typed clients (client-go) send their DeleteOptions body as protobuf
                parsed = decode(raw)
                if parsed.get("kind") != "DeleteOptions":
                    raise errors.bad_request(f"expected a DeleteOptions body, got kind {parsed.get('kind')!r}")
            else:
                try:
                    parsed = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise errors.bad_request(f"couldn't decode DeleteOptions: {exc}") from None
            if not isinstance(parsed, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
            body = parsed
        policy = q.get("propagationPolicy") or body.get("propagationPolicy")
        orphan_raw = q.get("orphanDependents") if "orphanDependents" in q else body.get("orphanDependents")
        orphan = None if orphan_raw is None else orphan_raw in (True, "true", "True", "1")
        # kube-apiserver validates DeleteOptions and answers 422 Invalid for them
        problems: list[errors.FieldError] = []
        if orphan is not None and policy is not None:
            problems.append(
                errors.invalid(
                    "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"
                )
            )
        if policy not in (None, "Background", "Foreground", "Orphan"):
            problems.append(errors.unsupported("propagationPolicy", policy, ["Background", "Foreground", "Orphan"]))
        dry = q.getall("dryRun", []) or body.get("dryRun") or []
        problems.extend(errors.unsupported("dryRun", v, ["All"]) for v in dry if v != "All")
        if problems:
            raise errors.invalid_object("DeleteOptions", "meta.k8s.io", "", problems)
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        grace = q.get("gracePeriodSeconds", body.get("gracePeriodSeconds"))
        try:
            grace_i = int(grace) if grace is not None else None
        except (TypeError, ValueError):
            raise errors.bad_request(f"gracePeriodSeconds must be an integer, got {grace!r}") from None
        pre = body.get("preconditions") or {}
        return DeleteOptions(
            propagation=policy,
            grace_period=grace_i,
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            dry_run=bool(dry),
            orphan_dependents=orphan,
        )

    async def _delete(self, request: Request, t: Target) -> Response:
        rt = t.rt
        assert t.name is not None
        opts = await self._delete_options(request)
        entry, deleted = self.api.delete(rt, t.namespace or "", t.name, opts)
        if deleted and not rt.return_deleted_object:
            meta = entry.obj["metadata"]
            details: Obj = {"name": meta["name"], "kind": rt.plural, "uid": meta.get("uid")}
            if rt.group:
                details["group"] = rt.group
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
            return json_response(orjson.dumps(status))
        resp = self._object_response(request, rt, entry.obj, entry.raw)
        if not deleted and opts.orphan_dependents is False:
            # kube-apiserver's one 202: a pending deletion asked for with orphanDependents=false
            resp.status = 202
        return resp

    async def _delete_collection(self, request: Request, t: Target) -> Response:
        rt = t.rt
        q = request.query
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"), rt.field_selectors)
        opts = await self._delete_options(request)
        deleted = self.api.delete_collection(rt, t.namespace, labels, fields, opts)
        body = {
            "kind": f"{rt.kind}List",
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.api.db.rev)},
            "items": [rt.served(e.obj) for e in deleted],
        }
        return json_response(orjson.dumps(body))


async def read_body(request: Request, within: float) -> bytes:
    """The request body, at most MAX_REQUEST_BODY_BYTES (kube-apiserver's limitedReadBody: 413
    past it; the HTTP server keeps no more) and read within `within` seconds (its request
    timeout: 504 for a body that trickles)."""
    try:
        return await request.read(within)
    except BodyTooLarge:
        raise body_too_large() from None
    except BodyTimeout:
        raise request_timeout() from None
    except BodyIncomplete:
        raise errors.bad_request("the request body ended before its declared length") from None


def decode_body(raw: bytes, ctype: str) -> Any:
    """A request body as JSON data, refused (400) past the nesting and YAML alias limits with
    the message kube-apiserver's decoder for that kind of body gives."""
    is_patch = ctype in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH)
    if ctype == PROTOBUF:
        from .protobuf import decode

        # decoded into the object's JSON form, so nothing downstream needs to know
        body: Any = decode(raw)
        prefix = "unable to decode protobuf request body: "
        check = len(raw) > 2 * MAX_DEPTH  # each level of protobuf nesting takes at least two bytes
    else:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if ctype not in (YAML, APPLY_PATCH):
                prefix = "error decoding patch: " if is_patch else "couldn't get version/kind; json parse error: "
                raise errors.bad_request(f"{prefix}{exc}") from None
            body = _yaml_body(raw, ctype)
            check = True
        else:
            check = may_exceed_depth(raw)
        if ctype == APPLY_PATCH:
            prefix = "error decoding YAML: error converting YAML to JSON: yaml: "
        elif ctype == YAML:
            prefix = "error converting YAML to JSON: yaml: "
        elif is_patch:
            prefix = "error decoding patch: "
        else:
            prefix = "couldn't get version/kind; json parse error: "
    if check and (opening := body_depth_overflow(body)):
        raise errors.bad_request(prefix + depth_message(opening))
    return body


def _yaml_body(raw: bytes, ctype: str) -> Any:
    # sigs.k8s.io/yaml's messages; apply wraps them as the apply patcher does
    prefix = "error decoding YAML: " if ctype == APPLY_PATCH else ""
    try:
        return yamlbody.load(raw)
    except (yaml.YAMLError, ValueError) as exc:
        raise errors.bad_request(f"{prefix}error converting YAML to JSON: {exc}") from None


def _list_meta(result: ListResult) -> Obj:
    meta: Obj = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    return meta


def bool_param(q: Any, name: str) -> bool:
    """Query booleans the way apimachinery converts them: present and not "0"/"false" means true."""
    if name not in q:
        return False
    value = str(q.get(name))
    return value != "0" and value.lower() != "false"


def _validate_list_options(q: Any) -> None:
    """apimachinery's ValidateListOptions for resourceVersionMatch (422 Invalid ListOptions)."""
    match = q.get("resourceVersionMatch", "")
    if not match:
        return
    errs: list[errors.FieldError] = []
    path = "resourceVersionMatch"
    rv = q.get("resourceVersion", "")
    if not rv:
        errs.append(errors.forbidden(path, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
    if q.get("continue"):
        errs.append(errors.forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
    if match not in ("Exact", "NotOlderThan"):
        errs.append(errors.unsupported(path, match, ["Exact", "NotOlderThan", ""]))
    if match == "Exact" and rv == "0":
        errs.append(errors.forbidden(path, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if errs:
        raise errors.invalid_object("ListOptions", "meta.k8s.io", "", errs)


def _int_param(q: Any, name: str, default: int, *, minimum: int | None = 0) -> int:
    value = q.get(name)
    if value is None or value == "":
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise errors.bad_request(f"{name}: Invalid value: {value!r}: must be an integer") from None
    if minimum is not None and parsed < minimum:
        raise errors.bad_request(f"{name}: Invalid value: {parsed}: must be greater than or equal to 0")
    return parsed


def _manager_from_agent(agent: str) -> str:
    head = agent.split("/", 1)[0].strip()
    return head[:128] or "unknown"
