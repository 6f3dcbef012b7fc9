"""One schema node's `x-kubernetes-validations`, compiled for that node's type, and the
CRD-time checks of those rules with the errors apiextensions' CRD validation gives
(`...x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{...}:
compilation failed: ERROR: <input>:1:1: ...`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import FieldError, GoValue, invalid, required, unsupported
from .celtypes import BOOL, DYN, STRING, CelT, OptT
from .fieldpath import FieldPathError, normalize_field_path
from .gostr import go_rule_struct
from .program import CompileError, Program, compile_expr
from .schema_types import decl_type

REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")


@dataclass
class CompiledRule:
    spec: dict[str, Any]
    program: Program | None  # None: empty rule, or it failed to compile (error says why)
    message_program: Program | None
    error: str = ""  # "compilation failed: ..." / "cel expression must evaluate to a bool"
    message_error: str = ""
    field_path: str = ""  # normalized
    # derived from the above once, as rules are evaluated on every write
    text: str = field(init=False)
    transition: bool = field(init=False)  # uses oldSelf
    optional_old_self: bool = field(init=False)
    reason: str | None = field(init=False)
    message: str = field(init=False)

    def __post_init__(self) -> None:
        self.text = str(self.spec.get("rule") or "")
        self.transition = self.program is not None and "oldSelf" in self.program.references
        self.optional_old_self = bool(self.spec.get("optionalOldSelf"))
        reason = self.spec.get("reason")
        self.reason = str(reason) if reason else None
        self.message = str(self.spec.get("message") or "").strip()

    def error_string(self) -> str:
        """ruleErrorString: the message when there is one, else the rule."""
        return self.message or self.text.strip()


def variables(schema: dict[str, Any], resource_root: bool, *, optional_old: bool) -> dict[str, CelT] | None:
    t = decl_type(schema, resource_root)
    if t is None:
        return None
    return {"self": t, "oldSelf": OptT(t) if optional_old else t}


def compile_rule(spec: dict[str, Any], schema: dict[str, Any], resource_root: bool) -> CompiledRule:
    text = str(spec.get("rule") or "")
    field_path = ""
    if spec.get("fieldPath"):
        try:
            field_path = normalize_field_path(str(spec["fieldPath"]).strip(), schema)
        except FieldPathError:
            field_path = ""
    if not text.strip():
        return CompiledRule(spec, None, None, field_path=field_path)
    env = variables(schema, resource_root, optional_old=bool(spec.get("optionalOldSelf")))
    if env is None:
        kind = schema.get("type") or ""
        preserve = "true" if schema.get("x-kubernetes-preserve-unknown-fields") else "false"
        why = (
            "rule declared on schema that does not support validation rules "
            f"type: '{kind}' x-kubernetes-preserve-unknown-fields: '{preserve}'"
        )
        return CompiledRule(spec, None, None, error=why, field_path=field_path)
    program: Program | None = None
    error = ""
    try:
        program = compile_expr(text, env)
        if program.result_type not in (BOOL, DYN):
            program, error = None, "cel expression must evaluate to a bool"
    except CompileError as exc:
        error = "compilation failed: " + exc.render()
    message_program: Program | None = None
    message_error = ""
    message_expr = str(spec.get("messageExpression") or "")
    if message_expr.strip():
        message_env = variables(schema, resource_root, optional_old=False) or {}
        try:
            message_program = compile_expr(message_expr, message_env)
            if message_program.result_type not in (STRING, DYN):
                message_program, message_error = None, "messageExpression must evaluate to a string"
        except CompileError as exc:
            message_error = "messageExpression compilation failed: " + exc.render()
    return CompiledRule(spec, program, message_program, error, message_error, field_path)


def _has_newline(text: str) -> bool:
    return "\n" in text or "\r" in text


def spec_errors(rules: Any, schema: dict[str, Any], path: str) -> list[FieldError]:
    """The checks of the rule objects themselves (apiextensions' "schema errors")."""
    if not isinstance(rules, list):
        return [invalid(f"{path}.x-kubernetes-validations", rules, "must be a list of validation rules")]
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rpath = f"{path}.x-kubernetes-validations[{i}]"
        if not isinstance(rule, dict):
            errs.append(invalid(rpath, rule, "must be an object"))
            continue
        text = str(rule.get("rule") or "").strip()
        raw_message = str(rule.get("message") or "")
        message = raw_message.strip()
        if not text:
            errs.append(required(f"{rpath}.rule", "rule is not specified"))
        elif raw_message and not message:
            errs.append(invalid(f"{rpath}.message", raw_message, "message must be non-empty if specified"))
        elif _has_newline(message):
            errs.append(invalid(f"{rpath}.message", raw_message, "message must not contain line breaks"))
        elif _has_newline(text) and not message:
            errs.append(required(f"{rpath}.message", "message must be specified if rule contains line breaks"))
        message_expr = str(rule.get("messageExpression") or "")
        if message_expr and not message_expr.strip():
            errs.append(required(f"{rpath}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in REASONS:
            errs.append(unsupported(f"{rpath}.reason", reason, list(REASONS)))
        raw_path = rule.get("fieldPath")
        if raw_path:
            field_path = str(raw_path)
            if not field_path.strip():
                errs.append(invalid(f"{rpath}.fieldPath", field_path, "fieldPath must be non-empty if specified"))
            if _has_newline(field_path):
                errs.append(invalid(f"{rpath}.fieldPath", field_path, "fieldPath must not contain line breaks"))
            try:
                normalize_field_path(field_path.strip(), schema)
            except FieldPathError:
                errs.append(invalid(f"{rpath}.fieldPath", field_path, "fieldPath must be a valid path"))
    return errs


def compile_errors(
    rules: list[dict[str, Any]], schema: dict[str, Any], path: str, *, resource_root: bool, uncorrelatable: str | None
) -> list[FieldError]:
    """The CEL errors: rules and messageExpressions that do not compile or have the wrong type,
    transition rules where old values cannot be correlated, a needless optionalOldSelf."""
    errs: list[FieldError] = []
    for i, spec in enumerate(rules):
        rpath = f"{path}.x-kubernetes-validations[{i}]"
        compiled = compile_rule(spec, schema, resource_root)
        shown = GoValue(go_rule_struct(spec))
        if compiled.error:
            errs.append(invalid(f"{rpath}.rule", shown, compiled.error))
        if compiled.message_error:
            errs.append(invalid(f"{rpath}.messageExpression", shown, compiled.message_error))
        if compiled.program is None:
            continue
        if compiled.transition:
            if uncorrelatable is not None:
                detail = f"oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}"
                errs.append(invalid(f"{rpath}.rule", compiled.text, detail))
        elif spec.get("optionalOldSelf") is not None:
            detail = "may not be set if oldSelf is not used in rule"
            errs.append(invalid(f"{rpath}.optionalOldSelf", spec["optionalOldSelf"], detail))
    return errs
