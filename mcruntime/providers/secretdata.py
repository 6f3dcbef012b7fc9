"""Reading a kubeconfig out of a Secret, for the providers that find clusters in the API."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ..connection import ConnectionConfig, from_kubeconfig_bytes
from ..errors import ConfigError
from ..fields import get_str


async def config_from_secret(secret: Mapping[str, Any], key: str) -> ConnectionConfig:
    """The kubeconfig under `data[key]` (base64) or `stringData[key]`. Exec plugins and
    file references are refused: whoever can write that Secret must not run code here."""
    namespace, name = (
        get_str(secret, "metadata.namespace", required=False),
        get_str(secret, "metadata.name", required=False),
    )
    where = f"Secret {namespace}/{name}"
    data = secret.get("data") or {}
    raw: bytes
    if isinstance(data, Mapping) and isinstance(data.get(key), str):
        try:
            raw = base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(f"{where}: data[{key!r}] is not valid base64: {exc}") from exc
    elif isinstance(secret.get("stringData"), Mapping) and isinstance(secret["stringData"].get(key), str):
        raw = secret["stringData"][key].encode()
    else:
        raise ConfigError(f"{where}: has no {key!r} entry holding a kubeconfig")
    return await from_kubeconfig_bytes(raw, source=f"{where} key {key!r}", allow_local_access=False)
