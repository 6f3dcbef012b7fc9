"""Function declarations: every overload with its signature (for the checker) and its
implementation (for the interpreter), looked up by name, call style and arity.

Implementations take evaluated arguments (the receiver first for member calls) and may
accept a `cost` keyword to charge size-proportional work to the evaluation budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .celtypes import CelT, parse_type, parse_types, runtime_kind
from .values import kind_of


@dataclass(frozen=True)
class Overload:
    name: str
    member: bool
    params: tuple[CelT, ...]  # receiver first for member overloads
    result: CelT
    impl: Callable[..., Any]
    kinds: tuple[str | None, ...]
    charged: bool = False  # impl takes a `cost` callback

    def accepts(self, args: tuple[Any, ...]) -> bool:
        return all(kind is None or kind_of(arg) == kind for kind, arg in zip(self.kinds, args, strict=True))


@dataclass
class Registry:
    overloads: dict[str, list[Overload]] = field(default_factory=dict)

    def add(
        self,
        name: str,
        params: str,
        result: str,
        impl: Callable[..., Any],
        *,
        member: bool = False,
        charged: bool = False,
    ) -> None:
        types = parse_types(params)
        self.overloads.setdefault(name, []).append(
            Overload(name, member, types, parse_type(result), impl, tuple(runtime_kind(t) for t in types), charged)
        )

    def member(self, name: str, params: str, result: str, impl: Callable[..., Any], *, charged: bool = False) -> None:
        """A receiver-style overload: `params` lists the receiver type first."""
        self.add(name, params, result, impl, member=True, charged=charged)

    def find(self, name: str, *, member: bool, arity: int) -> list[Overload]:
        return [o for o in self.overloads.get(name, ()) if o.member == member and len(o.params) == arity]

    def has_function(self, name: str) -> bool:
        return name in self.overloads

    def has_global(self, name: str) -> bool:
        return any(not o.member for o in self.overloads.get(name, ()))
