"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).

client-go's typed clients, and so most `kubectl create <kind>` commands, send built-in
kinds as protobuf: the 4 magic bytes `k8s\\x00`, then a `runtime.Unknown` message
(typeMeta=1 {apiVersion=1, kind=2}, raw=2, contentEncoding=3, contentType=4) whose `raw`
is the object's own message. `decode` turns such a body into exactly the JSON object a
JSON client would have sent for the same Go object, so everything after the HTTP front
(defaulting, validation, field management, storage) sees one representation.

Only decoding is implemented: the server always answers JSON, which every client that
sends protobuf also accepts."""

from __future__ import annotations

from typing import Any

from ..errors import APIError, bad_request
from .decoder import MAGIC, WIRE_REGISTRY, Decoder, ProtobufError, collect, scalar
from .descriptors import Registry
from .tables_api import (
    APIEXTENSIONS,
    APPS,
    AUTHENTICATION,
    AUTHORIZATION,
    AUTOSCALING_V1,
    AUTOSCALING_V2,
    COORDINATION,
    EVENTS,
    META,
    RBAC,
)
from .tables_core import CORE

__all__ = ["KINDS", "PROTOBUF", "REGISTRY", "decode", "supports"]

PROTOBUF = "application/vnd.kubernetes.protobuf"

REGISTRY = Registry()
for _package, _table in (
    ("core", CORE),
    ("meta", META),
    ("apps", APPS),
    ("autoscaling1", AUTOSCALING_V1),
    ("autoscaling", AUTOSCALING_V2),
    ("coordination", COORDINATION),
    ("events", EVENTS),
    ("rbac", RBAC),
    ("apiextensions", APIEXTENSIONS),
    ("authentication", AUTHENTICATION),
    ("authorization", AUTHORIZATION),
):
    REGISTRY.add_table(_package, _table)
REGISTRY.check()

# (apiVersion, kind) of every envelope this server can decode -> its message.
KINDS: dict[tuple[str, str], str] = {
    **{
        ("v1", kind): f"core.{kind}"
        for kind in (
            "Namespace",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "ResourceQuota",
            "LimitRange",
            "Pod",
            "Node",
            "Event",
            "Service",
        )
    },
    ("apps/v1", "Deployment"): "apps.Deployment",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "autoscaling1.HorizontalPodAutoscaler",
    ("autoscaling/v1", "Scale"): "autoscaling1.Scale",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "autoscaling.HorizontalPodAutoscaler",
    ("coordination.k8s.io/v1", "Lease"): "coordination.Lease",
    ("events.k8s.io/v1", "Event"): "events.Event",
    **{
        ("rbac.authorization.k8s.io/v1", kind): f"rbac.{kind}"
        for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    },
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): "apiextensions.CustomResourceDefinition",
    ("authentication.k8s.io/v1", "TokenRequest"): "authentication.TokenRequest",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "authentication.SelfSubjectReview",
    **{
        ("authorization.k8s.io/v1", kind): f"authorization.{kind}"
        for kind in ("SelfSubjectAccessReview", "SelfSubjectRulesReview")
    },
}
# meta/v1 option kinds are registered in every group version, so a typed client's
# DeleteOptions carries the apiVersion of whichever group it was deleting from.
ANY_VERSION_KINDS = {"DeleteOptions": "meta.DeleteOptions"}


def supports(api_version: str, kind: str) -> bool:
    return (api_version, kind) in KINDS or kind in ANY_VERSION_KINDS


def _unsupported(what: str) -> APIError:
    message = f"the body of the request was in an unknown format - {what}"
    return APIError(
        415,
        "UnsupportedMediaType",
        message + "; accepted media types include: application/json, application/yaml, " + PROTOBUF,
        {"causes": [{"reason": "UnexpectedServerResponse", "message": PROTOBUF}]},
    )


def decode(raw: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object.

    Raises a 400 BadRequest APIError for a malformed body or a field the message does not
    declare, and a 415 UnsupportedMediaType for a kind this server cannot decode."""
    try:
        return _decode(raw)
    except ProtobufError as exc:
        raise bad_request(f"unable to decode protobuf request body: {exc}") from None


def _decode(raw: bytes, depth: int = 0) -> dict[str, Any]:
    if not raw.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf prefix k8s\\x00")
    unknown = WIRE_REGISTRY.get("wire.Unknown")
    found = collect(unknown, raw[len(MAGIC) :], "")
    type_meta = WIRE_REGISTRY.get("wire.TypeMeta")
    tm = collect(type_meta, b"".join(v for v in found.get(1, []) if isinstance(v, bytes)), "typeMeta")

    def text(msg_found: dict[int, list[int | bytes]], fields: dict[int, Any], number: int) -> str:
        values = msg_found.get(number)
        return str(scalar(fields[number], values[-1], "envelope")) if values else ""

    api_version = text(tm, type_meta.fields, 1)
    kind = text(tm, type_meta.fields, 2)
    encoding = text(found, unknown.fields, 3)
    content_type = text(found, unknown.fields, 4)
    if encoding:
        raise _unsupported(f"protobuf bodies with content encoding {encoding!r} are not supported")
    if content_type and content_type.split(";")[0].strip() != PROTOBUF:
        raise _unsupported(f"protobuf envelope around content type {content_type!r}")
    if not kind:
        raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
    if not api_version:
        raise ProtobufError("Object 'apiVersion' is missing in the protobuf envelope")
    name = KINDS.get((api_version, kind)) or ANY_VERSION_KINDS.get(kind)
    if name is None:
        raise _unsupported(f"protobuf decoding of {api_version}, Kind={kind} is not supported by this server")
    payload = found.get(2)
    body = payload[-1] if payload else b""
    assert isinstance(body, bytes)
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    obj.update(_DECODER.message(REGISTRY.get(name), body, "", depth))
    return obj


_DECODER = Decoder(REGISTRY, _decode)
