"""The template hash: which version of a WorkloadDeployment's template an Instance was made from.

Contract:
- `template_hash(template)` covers the WHOLE `spec.template` of a WorkloadDeployment: its
  metadata (labels, annotations, so `compute.datumapis.com/restartedAt` changes the hash and
  rolls every Instance) and its spec. Nothing is left out, so any edit recreates Instances.
- Canonical JSON (keys sorted at every level, no whitespace, UTF-8), so key order and dict
  insertion order never matter; list order does (it is meaningful in the API).
- The result is 10 lowercase base32 characters (50 bits of SHA-256): short enough for a
  label value, stable across processes and Python versions.
- The hash is taken over the template as the API server stores it, which is what every
  cache hands out; two readers of the same object always agree. Except for the defaults the
  CRD gained with the newer template fields (`networkInterfaces[].name: eth0`,
  `ipFamilies: [IPv6]`, `reclaimPolicy: Delete`): `without_server_defaults` drops them
  before hashing, so a template stored before the CRD upgrade and the same template
  defaulted after it hash the same and no Instance rolls on the upgrade. Writing a default
  value by hand is the same template, so it hashes the same too.
- Input that is not a JSON object of JSON values (non-string keys, NaN, sets...) is a
  `ValueError` naming `spec.template`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any

HASH_LENGTH = 10


def canonical_json(value: Any, *, field: str = "spec.template") -> bytes:
    """`value` as canonical JSON bytes: sorted keys, no whitespace, UTF-8."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field}: not plain JSON: {exc}") from exc
    return text.encode()


# What the CRD defaults in each `spec.networkInterfaces[]` item (federation/api/instance.py
# ServerDefault), and the value it writes.
INTERFACE_SERVER_DEFAULTS: Mapping[str, Any] = {"name": "eth0", "ipFamilies": ["IPv6"], "reclaimPolicy": "Delete"}


def without_server_defaults(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template with each network interface's server-defaulted fields left out where
    they hold the default (a copy; anything unexpected in shape is left as it is)."""
    out = dict(template)
    spec = out.get("spec")
    interfaces = spec.get("networkInterfaces") if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(interfaces, list):
        return out
    out["spec"] = {
        **spec,
        "networkInterfaces": [
            {k: v for k, v in item.items() if INTERFACE_SERVER_DEFAULTS.get(k, _ABSENT) != v}
            if isinstance(item, Mapping)
            else item
            for item in interfaces
        ],
    }
    return out


_ABSENT = object()


def template_hash(template: Mapping[str, Any]) -> str:
    """Stable short hash of a WorkloadDeployment's whole template (server defaults of the
    newer interface fields left out: `without_server_defaults`)."""
    if not isinstance(template, Mapping):
        raise ValueError(f"spec.template: expected an object, got {type(template).__name__}")
    digest = hashlib.sha256(canonical_json(without_server_defaults(template))).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:HASH_LENGTH]
