"""Unknown fields, found as the API server's strict field validation finds them
(`kubectl --validate=strict`, `fieldValidation=Strict`): against the very structural schema
the CRD is generated from, so what `plan -f` accepts offline is what the server accepts.
Pure; the server's wording (`unknown field "spec.replica"`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from .crds import WORKLOAD_DEPLOYMENT_CRD, crd_manifest

PRESERVE = "x-kubernetes-preserve-unknown-fields"
# metadata is ObjectMeta, checked by the server's own rules, not the CRD's schema
_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


@cache
def workload_deployment_schema() -> Mapping[str, Any]:
    manifest = crd_manifest(WORKLOAD_DEPLOYMENT_CRD)
    (version,) = [v for v in manifest["spec"]["versions"] if v.get("storage")]
    schema: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def unknown_fields(obj: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Dotted paths of the fields `obj` has that `schema` does not declare."""
    out: list[str] = []
    if schema.get(PRESERVE):
        return out
    if isinstance(obj, Mapping):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, value in obj.items():
            here = f"{path}.{key}" if path else str(key)
            if not path and key in _ROOT_FIELDS:
                continue
            if isinstance(properties, Mapping) and key in properties:
                out += unknown_fields(value, properties[key], here)
            elif isinstance(extra, Mapping):
                out += unknown_fields(value, extra, here)
            elif properties is not None or extra is False:
                out.append(here)
    elif isinstance(obj, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(obj):
            out += unknown_fields(item, schema["items"], f"{path}[{i}]")
    return out


def strict_decoding_error(obj: Any) -> str | None:
    """The server's strict-validation refusal of a WorkloadDeployment, or None."""
    found = unknown_fields(obj, workload_deployment_schema())
    if not found:
        return None
    return "strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in found)
