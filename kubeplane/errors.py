"""Kubernetes API errors, rendered as `Status` bodies with the reason and code a real
kube-apiserver uses, so clients (kubectl, client-go, kubernetes-asyncio) classify them
the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One entry of `details.causes`; `kind` is the field.ErrorType wording."""

    kind: str  # e.g. "Required value", "Invalid value", "Unsupported value"
    field: str
    detail: str = ""
    value: Any = None
    has_value: bool = False

    REASONS = {
        "Not found": "FieldValueNotFound",
        "Required value": "FieldValueRequired",
        "Duplicate value": "FieldValueDuplicate",
        "Invalid value": "FieldValueInvalid",
        "Unsupported value": "FieldValueNotSupported",
        "Forbidden": "FieldValueForbidden",
        "Too long": "FieldValueTooLong",
        "Too many": "FieldValueTooMany",
        "Internal error": "InternalError",
        "Invalid type": "FieldValueTypeInvalid",
    }

    @property
    def reason(self) -> str:
        return self.REASONS.get(self.kind, "FieldValueInvalid")

    def message(self) -> str:
        text = self.kind
        if self.has_value:
            text += f": {_render_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.message()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("Required value", path, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid value", path, detail, value, True)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("Forbidden", path, detail)


def unsupported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(f'"{s}"' for s in supported)
    return FieldError("Unsupported value", path, detail, value, True)


class GoValue(str):
    """A field error value shown exactly as Go prints it (e.g. `0x0` for an unset uint64)."""


def _render_value(value: Any) -> str:
    if isinstance(value, GoValue):
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "{...}" if isinstance(value, dict) else "[...]"
    return str(value)


@dataclass
class APIError(Exception):
    """An error answered to the client as a `Status` object."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:
            del body["reason"]  # StatusReasonUnknown is omitted from the wire form
        if self.details:
            body["details"] = self.details
        return body


def qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> APIError:
    return APIError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource},
    )


def already_exists(resource: str, group: str, name: str) -> APIError:
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return APIError(409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists', details)


def conflict(resource: str, group: str, name: str, why: str, causes: list[dict[str, str]] | None = None) -> APIError:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    if causes:
        details["causes"] = causes
    return APIError(
        409, "Conflict", f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}', details
    )


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> APIError:
    if len(errors) == 1:
        summary = str(errors[0])
    else:
        summary = "[" + ", ".join(str(e) for e in errors) + "]"
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": e.reason, "message": e.message(), "field": e.field} for e in errors],
    }
    if group:
        details["group"] = group
    return APIError(422, "Invalid", f'{qualified(kind, group)} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_supported(resource: str, group: str, verb: str) -> APIError:
    return APIError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {qualified(resource, group)!r}",
        {"kind": resource, "group": group} if group else {"kind": resource},
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": content_type}]},
    )


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def forbidden_error(resource: str, group: str, name: str, why: str, causes: list[dict[str, str]]) -> APIError:
    details: dict[str, Any] = {"name": name, "kind": resource, "causes": causes}
    if group:
        details["group"] = group
    return APIError(403, "Forbidden", f'{qualified(resource, group)} "{name}" is forbidden: {why}', details)


def no_resource() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})
