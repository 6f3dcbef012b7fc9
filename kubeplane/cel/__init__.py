"""A CEL (Common Expression Language) interpreter for the embedded API server, covering what
Kubernetes 1.32 CRD validation rules (`x-kubernetes-validations`) use, plus the OpenAPI
string formats apiextensions validates.

Entry points for the server:
- `crd_rule_errors(schema, path)`: CRD-time compilation of every rule of a version's schema;
- `validate_object(schema, obj, old, prior, warnings)`: evaluate the rules on a create/update
  (or, when the `prior` errors block them, report that they were not checked);
- `evaluate_object(schema, obj, old, prior, old_cost=...)`: the same, with its warnings and a
  bound of its cost; given a clean old object's bound, values left unchanged are not evaluated;
- `format_checker(fmt)`: the validator for a string `format` (None when it is ignored).

And for tests and tools: `compile_expr(source, variables)` -> Program."""

from __future__ import annotations

from .formats import checker_for as format_checker
from .program import CompileError, Program, compile_expr
from .validator import Outcome, crd_rule_errors, evaluate_object, validate_object
from .values import CelError, CostExceeded

__all__ = [
    "CelError",
    "CompileError",
    "CostExceeded",
    "Outcome",
    "Program",
    "compile_expr",
    "crd_rule_errors",
    "evaluate_object",
    "format_checker",
    "validate_object",
]
