"""Kubernetes' lists library (isSorted, sum, min, max, indexOf, lastIndexOf) and cel-go's
sets extension (sets.contains, sets.equivalent, sets.intersects)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .registry import Registry
from .timeutil import duration_of
from .values import CelError, check_int, check_uint, compare, equals, kind_of

Cost = Callable[[int], None]


def _charge(cost: Cost, size: int) -> None:
    cost(1 + size)


def _is_sorted(items: list[Any], *, cost: Cost) -> bool:
    _charge(cost, len(items))
    for a, b in itertools.pairwise(items):
        c = compare(a, b)
        if c is not None and c > 0:
            return False
    return True


def _sum(items: list[Any], *, cost: Cost) -> Any:
    _charge(cost, len(items))
    if not items:
        return 0
    kind = kind_of(items[0])
    if kind == "int":
        return check_int(sum(items))
    if kind == "uint":
        return check_uint(sum(int(i) for i in items))
    if kind == "double":
        return float(sum(items))
    if kind == "duration":
        return duration_of(sum(d.nanos for d in items))
    raise CelError("no such overload: sum")


def _extreme(pick_max: bool) -> Callable[..., Any]:
    name = "max" if pick_max else "min"

    def impl(items: list[Any], *, cost: Cost) -> Any:
        _charge(cost, len(items))
        if not items:
            raise CelError(f"{name}(list) argument must not be empty")
        best = items[0]
        for item in items[1:]:
            c = compare(item, best)
            if c is not None and (c > 0 if pick_max else c < 0):
                best = item
        return best

    return impl


def _index_of(items: list[Any], value: Any, *, cost: Cost) -> int:
    _charge(cost, len(items))
    for i, item in enumerate(items):
        if equals(item, value):
            return i
    return -1


def _last_index_of(items: list[Any], value: Any, *, cost: Cost) -> int:
    _charge(cost, len(items))
    for i in range(len(items) - 1, -1, -1):
        if equals(items[i], value):
            return i
    return -1


def _sets_contains(items: list[Any], subset: list[Any], *, cost: Cost) -> bool:
    _charge(cost, len(items) * max(1, len(subset)))
    return all(any(equals(x, y) for y in items) for x in subset)


def _sets_equivalent(a: list[Any], b: list[Any], *, cost: Cost) -> bool:
    return _sets_contains(a, b, cost=cost) and _sets_contains(b, a, cost=cost)


def _sets_intersects(a: list[Any], b: list[Any], *, cost: Cost) -> bool:
    _charge(cost, len(a) * max(1, len(b)))
    return any(any(equals(x, y) for y in b) for x in a)


def register(r: Registry) -> None:
    r.member("isSorted", "list(A)", "bool", _is_sorted, charged=True)
    for t in ("int", "uint", "double", "duration"):
        r.member("sum", f"list({t})", t, _sum, charged=True)
    r.member("min", "list(A)", "A", _extreme(pick_max=False), charged=True)
    r.member("max", "list(A)", "A", _extreme(pick_max=True), charged=True)
    r.member("indexOf", "list(A), A", "int", _index_of, charged=True)
    r.member("lastIndexOf", "list(A), A", "int", _last_index_of, charged=True)
    r.add("sets.contains", "list(A), list(A)", "bool", _sets_contains, charged=True)
    r.add("sets.equivalent", "list(A), list(A)", "bool", _sets_equivalent, charged=True)
    r.add("sets.intersects", "list(A), list(A)", "bool", _sets_intersects, charged=True)
