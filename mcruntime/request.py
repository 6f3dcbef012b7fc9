"""A reconcile request names one object in one cluster. The cluster name is part of the
key: the same namespace/name in two clusters are two requests, and a request without
a cluster name is refused rather than routed to some default cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fields import get_str


@dataclass(frozen=True, slots=True, order=True)
class Request:
    cluster: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.cluster}:{self.namespace}/{self.name}" if self.namespace else f"{self.cluster}:{self.name}"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, cluster: str, obj: Mapping[str, Any]) -> Request:
        return cls(
            cluster, get_str(obj, "metadata.namespace", required=False), get_str(obj, "metadata.name", required=False)
        )
