"""The template hash: which version of a WorkloadDeployment's template an Instance was made from.

Contract:
- `template_hash(template)` covers the WHOLE `spec.template` of a WorkloadDeployment: its
  metadata (labels, annotations, so `compute.datumapis.com/restartedAt` changes the hash and
  rolls every Instance) and its spec. Nothing is left out, so any edit recreates Instances.
- Canonical JSON (keys sorted at every level, no whitespace, UTF-8), so key order and dict
  insertion order never matter; list order does (it is meaningful in the API).
- The result is 10 lowercase base32 characters (50 bits of SHA-256): short enough for a
  label value, stable across processes and Python versions.
- The hash is taken over the template as the API server stores it (defaults applied), which
  is what every cache hands out; two readers of the same object always agree.
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


def template_hash(template: Mapping[str, Any]) -> str:
    """Stable short hash of a WorkloadDeployment's whole template."""
    if not isinstance(template, Mapping):
        raise ValueError(f"spec.template: expected an object, got {type(template).__name__}")
    digest = hashlib.sha256(canonical_json(dict(template))).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:HASH_LENGTH]
