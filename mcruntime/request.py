"""A reconcile request names one object in one cluster. The cluster name is part of the
key: the same namespace/name in two clusters are two requests, and a request without
a cluster name is refused rather than routed to some default cluster."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .fields import get_str


@dataclass(frozen=True, slots=True, order=True)
class Request:
    cluster: str
    namespace: str
    name: str
    # the hash of the three fields, computed once: a request is hashed about a dozen times
    # between its event and its reconcile (the queue's dirty and processing sets, its
    # timestamps, the rate limiters, the handlers' de-duplication), and the generated
    # `__hash__` built and hashed a tuple each time
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # one string object per distinct namespace and name, however many requests (and the
        # controllers' per-object memos keyed by them) name it: each event and each read of
        # the cache decodes fresh strings, and a memo kept every WD's own copies of them
        # (only a plain str can be interned: a value of another type, which the typed callers
        # never pass, is kept as it is rather than failing here)
        if type(self.namespace) is str:
            object.__setattr__(self, "namespace", sys.intern(self.namespace))
        if type(self.name) is str:
            object.__setattr__(self, "name", sys.intern(self.name))
        object.__setattr__(self, "_hash", hash((self.cluster, self.namespace, self.name)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Request], tuple[str, str, str]]:
        # rebuilt from the fields, never the stored hash: a string's hash differs between
        # processes (PYTHONHASHSEED)
        return Request, (self.cluster, self.namespace, self.name)

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
