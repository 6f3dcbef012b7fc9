"""The CEL syntax tree. Operators are calls to their cel-go names (`_+_`, `_==_`, `@in`,
...); the logical operators, the conditional and the macros get nodes of their own because
they do not evaluate all their operands strictly. Every node records its source offset
for error messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Node:
    pos: int


@dataclass(eq=False)
class Literal(Node):
    value: Any


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Select(Node):
    operand: Node
    field: str
    optional: bool = False  # a.?b


@dataclass(eq=False)
class Index(Node):
    operand: Node
    index: Node
    optional: bool = False  # a[?b]


@dataclass(eq=False)
class Call(Node):
    function: str
    target: Node | None  # receiver for member calls (x.f(...))
    args: list[Node] = field(default_factory=list)
    # the overloads the checker found applicable (None: not checked); dispatch picks among them
    overloads: list[Any] | None = None


@dataclass(eq=False)
class ListLit(Node):
    elements: list[Node]
    optional: frozenset[int] = frozenset()  # indices written [?e]


@dataclass(eq=False)
class MapLit(Node):
    entries: list[tuple[Node, Node, bool]]  # key, value, optional ({?k: v})


@dataclass(eq=False)
class And(Node):
    left: Node
    right: Node


@dataclass(eq=False)
class Or(Node):
    left: Node
    right: Node


@dataclass(eq=False)
class Conditional(Node):
    cond: Node
    then: Node
    otherwise: Node


@dataclass(eq=False)
class Has(Node):
    operand: Node  # the Select whose presence is tested
    field: str


@dataclass(eq=False)
class Comprehension(Node):
    """The iteration macros: all, exists, exists_one, map (with an optional filter), filter,
    and optMap/optFlatMap (whose range is an optional)."""

    macro: str
    range: Node
    var: str
    body: Node  # predicate (all/exists/exists_one/filter) or transform (map, optMap)
    filter: Node | None = None  # map(x, filter, transform)
