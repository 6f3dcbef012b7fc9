"""Compiling an expression: parse, type check against declared variables, plan. Compile
errors are rendered the way cel-go's `Issues.String()` renders them, which is what the
CRD validator puts in its message:

    ERROR: <input>:1:6: undeclared reference to 'foo' (in container '')
     | self.foo(1)
     | .....^"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .celtypes import CelT
from .checker import Checker, CheckError
from .interp import Activation, Eval, plan
from .lexer import CelSyntaxError
from .library import default_registry
from .parser import parse
from .registry import Registry

PER_CALL_LIMIT = 1_000_000  # celconfig.PerCallLimit


class CompileError(Exception):
    def __init__(self, source: str, errors: list[CheckError]) -> None:
        self.source = source
        self.errors = sorted(errors, key=lambda e: e.pos)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(_display(self.source, e) for e in self.errors)


def _display(source: str, err: CheckError) -> str:
    line_start = source.rfind("\n", 0, err.pos) + 1
    line_no = source.count("\n", 0, err.pos) + 1
    column = err.pos - line_start
    line_end = source.find("\n", err.pos)
    snippet = source[line_start : line_end if line_end >= 0 else len(source)].replace("\t", " ")
    return f"ERROR: <input>:{line_no}:{column + 1}: {err.message}\n | {snippet}\n | {'.' * column}^"


@dataclass
class Program:
    source: str
    result_type: CelT
    references: frozenset[str]  # declared variables the expression reads (oldSelf -> a transition rule)
    evaluate: Eval

    def eval(self, variables: dict[str, Any], limit: int = PER_CALL_LIMIT) -> tuple[Any, int]:
        """The value and the cost of one evaluation (CelError / CostExceeded propagate)."""
        act = Activation(dict(variables), limit)
        return self.evaluate(act), act.cost


def compile_expr(source: str, variables: dict[str, CelT], registry: Registry | None = None) -> Program:
    registry = registry or default_registry()
    try:
        tree = parse(source)
    except CelSyntaxError as exc:
        raise CompileError(source, [CheckError(exc.pos, exc.message)]) from None
    checker = Checker(registry, variables)
    result = checker.check(tree)
    if checker.errors:
        raise CompileError(source, checker.errors)
    return Program(source, result, frozenset(checker.referenced), plan(tree, registry))
