"""The bounds on what the embedded API server accepts and keeps, each taken from
kube-apiserver (or etcd behind it) with its source, and the checks that apply them.

The invariant they protect: whatever is committed can be served back. A request is bounded
on the way in (body size, nesting depth, JSON patch size), and every commit serialises the
final object first (`encode_for_storage`), so an object the server could not write out, or
one larger than etcd would store, is refused instead of stored."""

from __future__ import annotations

from typing import Any

import orjson

from .errors import APIError

# k8s.io/apiserver/pkg/server/config.go, MaxRequestBodyBytes: "1.5MB is the recommended client
# request size in byte the etcd server should accept ... we allow 2x as the largest request body
# size to be accepted and decoded in a write request". kube-apiserver reads at most this much
# of a body (handlers/rest.go limitedReadBody) and answers 413 RequestEntityTooLarge past it.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024

# etcd's --max-request-bytes default (server/embed/config.go DefaultMaxRequestBytes, 1.5 MiB):
# a write carrying a larger value fails in etcd with "etcdserver: request is too large", which
# kube-apiserver passes on as a 500 without a reason (kubernetes/kubernetes#112152 is open about
# mapping it to a 4xx). Measured here on the object's JSON form, which is what etcd holds for
# custom resources (built-ins are stored as protobuf, a little smaller).
MAX_OBJECT_BYTES = 1536 * 1024
ETCD_TOO_LARGE = "etcdserver: request is too large"

# k8s.io/apiserver/pkg/endpoints/handlers/patch.go maxJSONPatchOperations: a JSON patch with
# more operations is answered 413.
MAX_JSON_PATCH_OPERATIONS = 10_000

# k8s.io/apiserver/pkg/server/config.go JSONPatchMaxCopyBytes (3 MiB): the most the "copy"
# operations of one JSON patch may add in total (json-patch's AccumulatedCopySizeLimit); without
# it, a few dozen copies of a value into itself double the document each time.
JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024

# Nesting depth (objects and arrays inside one another). kube-apiserver's decoders stop at
# 10000 (encoding/json's maxNestingDepth, goyaml's max depth). This server cannot go that far:
# orjson writes at most 254 levels, and the Python code that walks objects (YAML output,
# deep copies, schema pruning, field management) needs a few interpreter frames per level of
# a 1000-frame stack. So bodies nested deeper than this are refused on the way in, with the
# decoders' message shape; real objects stay far below it (a CRD with a 40-level schema is
# about 90 deep).
MAX_DEPTH = 200
# metadata.managedFields[].fieldsV1 mirrors the object's fields this many levels deeper than
# the fields themselves (metadata, managedFields, the entry and fieldsV1 above `f:spec`, and an
# empty object for each leaf value), so they
# are measured apart: an object that was accepted can always be sent back as it was read.
MANAGED_FIELDS_EXTRA_DEPTH = 5

# k8s.io/apiserver/pkg/server/secure_serving.go: IdleTimeout 90s ("matches
# http.DefaultTransport keep-alive timeout"). Applied here to idle keep-alive connections and
# to connections that never complete a request's headers (kube-apiserver cuts those sooner,
# with a 32s ReadHeaderTimeout; kubeplane/http11.py has one timer for both).
IDLE_TIMEOUT = 90.0

# kube-apiserver --request-timeout (default 1m0s): the longest a non-watch request may take.
# Here it bounds reading a request body, the one step a slow client can stretch out.
REQUEST_TIMEOUT = 60.0

# kube-apiserver --etcd-compaction-interval (default 5m0s): every interval the apiserver
# compacts etcd to the revision it saw one interval earlier, so watch history reaches back
# between one and two intervals.
COMPACTION_INTERVAL = 300.0


def request_entity_too_large(detail: str) -> APIError:
    """apimachinery's NewRequestEntityTooLargeError."""
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: {detail}")


def body_too_large() -> APIError:
    return request_entity_too_large(f"limit is {MAX_REQUEST_BODY_BYTES}")


def request_timeout() -> APIError:
    """apimachinery's NewTimeoutError, as the apiserver's timeout filter raises it."""
    return APIError(
        504,
        "Timeout",
        "Timeout: request did not complete within requested timeout - context deadline exceeded",
        # the rest of the body may never come: the connection is not reused
        headers={"Connection": "close"},
    )


def may_exceed_depth(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text could nest deeper than `limit`: each level opens a `{` or `[`, so a
    text with fewer of them cannot (brackets inside strings only make this answer yes more
    often). Two C-speed scans, so typical bodies skip the walk in `depth_overflow`."""
    return raw.count(b"{") + raw.count(b"[") > limit


def depth_overflow(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The opening character (`{` or `[`) of the first container nested deeper than `limit`
    levels in `value`, or None when it stays within. Iterative, so any depth is safe to ask."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return "{" if isinstance(node, dict) else "["
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def body_depth_overflow(body: Any) -> str | None:
    """`depth_overflow` for a request body or object: MAX_DEPTH levels, with
    metadata.managedFields allowed MANAGED_FIELDS_EXTRA_DEPTH more."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return depth_overflow(body)
    rest = dict(body)
    rest["metadata"] = {key: value for key, value in meta.items() if key != "managedFields"}
    # the managedFields list sits at level 3 (the object, metadata, the list)
    return depth_overflow(rest) or depth_overflow(meta["managedFields"], MAX_DEPTH + MANAGED_FIELDS_EXTRA_DEPTH - 2)


def nesting_depth(value: Any) -> int:
    """Levels of objects and arrays in `value` (0 for a scalar); iterative."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def depth_message(opening: str) -> str:
    """encoding/json's scanner error for a document past the depth limit, naming this server's limit."""
    return f"invalid character '{opening}' exceeded max depth of {MAX_DEPTH}"


def encode_for_storage(obj: Any) -> bytes:
    """The JSON form an object is stored and served as, or the refusal kube-apiserver would
    give for it: what cannot be written out is never committed, and what is larger than etcd
    accepts fails as etcd's error does."""
    try:
        raw = orjson.dumps(obj)
    except (orjson.JSONEncodeError, TypeError, RecursionError) as exc:
        name = ((obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None) or ""
        raise APIError(
            500,
            "InternalError",
            f"Internal error occurred: the object {name!r} cannot be stored: it cannot be serialized ({exc})",
            {"causes": [{"message": str(exc)}]},
        ) from None
    if len(raw) > MAX_OBJECT_BYTES:
        # kube-apiserver's answer for an error that is not a Status: code 500, no reason
        raise APIError(500, "", ETCD_TOO_LARGE)
    return raw
