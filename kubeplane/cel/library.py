"""The function environment of a Kubernetes 1.32 CRD validation rule (the CEL base
environment at compatibility version 1.31): the standard definitions plus the strings,
lists, sets, regex, optional, quantity, ip, cidr and url libraries.

A few functions of that environment are not implemented here; a rule using one of them is
rejected when the CRD is written, naming the function, rather than being skipped."""

from __future__ import annotations

from functools import cache

from . import ext_lists, ext_net, ext_quantity, ext_strings, stdlib
from .registry import Registry

# In Kubernetes' environment, not in this interpreter: string formatting (`'%s'.format(...)`)
# and the named-format library (`format.dns1123Label()...`).
UNSUPPORTED_FUNCTIONS = frozenset({"format"})
UNSUPPORTED_NAMESPACES = frozenset({"format"})

# identifiers that evaluate to type values
TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})

NAMESPACES = frozenset({"optional", "sets", "strings", "ip"})


@cache
def default_registry() -> Registry:
    r = Registry()
    stdlib.register(r)
    ext_strings.register(r)
    ext_lists.register(r)
    ext_quantity.register(r)
    ext_net.register(r)
    return r
