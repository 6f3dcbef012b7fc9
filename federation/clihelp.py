"""Every subcommand's `--help` says what it does, each flag's default and its
`FEDERATION_*` environment variable, and shows one example; the variables work too (a flag
on the command line wins over its variable, the variable over the default).

`run` reads its variables through its settings (federation/settings.py: nested ones use
`__`); for the other subcommands this module reads them into the parser's defaults."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from .api.constants import ENV_PREFIX

EXAMPLES: Mapping[str, str] = {
    "apiserver": "federation-manager apiserver --port 6443 --kubeconfig embedded.kubeconfig --data-dir ./embedded-data",
    "run": "federation-manager run --enable-management-controllers --kubeconfig management.kubeconfig",
    "status": "federation-manager status --state-dir .demo -o wide --wait=5m",
    "plan": "federation-manager plan -f docs/examples/api-workloaddeployment.yaml --state-dir .demo",
    "check": "federation-manager check --kubeconfig management.kubeconfig --wait=2m || echo 'not healthy'",
    "up": "federation-manager up --state-dir .demo --cell dfw-1:DFW --cell dfw-2:DFW --cell lhr-1:LHR",
    "crds": "federation-manager crds --out config/crd",
    "trace": "federation-manager trace wd web -n default --state-dir .demo",
    "completion": "federation-manager completion bash > ~/.federation-manager.bash  # then: source it from ~/.bashrc",
    "join": "federation-manager join cell dfw-1 --city DFW --kubeconfig dfw-1.kubeconfig "
    "--management-kubeconfig management.kubeconfig",
    "leave": "federation-manager leave cell dfw-1 --management-kubeconfig management.kubeconfig",
}
EXIT_CODES: Mapping[str, str] = {
    "status": "exit codes: 0 shown (with --wait: converged); 1 --wait ran out; 2 could not read the federation",
    "check": "exit codes: 0 no violation; 1 violations found (or --wait ran out); 2 could not check "
    "(management unreadable, or a project or cell not read)",
    "plan": "exit codes: 0 plan shown; 2 could not plan (bad input, refused by the project's API server in a "
    "dry run, no such project, a cluster unreadable)",
    "run": "tracing (--tracing), the standard OpenTelemetry variables: OTEL_TRACES_EXPORTER (otlp, the default; "
    "console; none), OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or grpc: install "
    "opentelemetry-exporter-otlp-proto-http or -grpc), OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG",
}


def env_var(dest: str) -> str:
    return ENV_PREFIX + dest.replace(".", "__").replace("-", "_").upper()


def finish(subparsers: Mapping[str, argparse.ArgumentParser], helps: Mapping[str, str]) -> None:
    """Descriptions, examples, defaults and environment variables for every subcommand."""
    for name, sub in subparsers.items():
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        if not sub.description:
            sub.description = helps.get(name, "")
        epilog = [f"example:\n  {EXAMPLES[name]}"] if name in EXAMPLES else []
        if name in EXIT_CODES:
            epilog.append(EXIT_CODES[name])
        sub.epilog = "\n\n".join(epilog)
        if name == "run":
            _describe_settings_flags(sub)
        else:
            _environment_flags(sub)


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    skip = (argparse._HelpAction, argparse._VersionAction)
    return [a for a in parser._actions if a.option_strings and not isinstance(a, skip)]


def _annotate(action: argparse.Action, default: Any) -> None:
    text = action.help or ""
    if f"env {env_var(action.dest)}" in text:
        return  # an action shared by several subcommands (--log-level) is annotated once
    extra = []
    if "default" not in text and default not in (None, False, argparse.SUPPRESS, []):
        extra.append(f"default {default}")
    extra.append(f"env {env_var(action.dest)}")
    action.help = f"{text} ({'; '.join(extra)})"


def _describe_settings_flags(parser: argparse.ArgumentParser) -> None:
    from .settings import ManagerSettings  # pydantic: loaded by the processes that describe `run` only

    for action in _options(parser):
        section, _, field = action.dest.partition(".")
        info = ManagerSettings.model_fields.get(section) if not field else None
        default = getattr(info, "default", None) if info is not None else None
        _annotate(action, default)


def _environment_flags(parser: argparse.ArgumentParser) -> None:
    satisfied: set[str] = set()
    for action in _options(parser):
        _annotate(action, action.default)
        raw = os.environ.get(env_var(action.dest))
        if raw is None:
            continue
        action.default = _convert(action, raw)
        action.required = False
        satisfied.add(action.dest)
    for group in parser._mutually_exclusive_groups:
        if any(a.dest in satisfied for a in group._group_actions):
            group.required = False


def _convert(action: argparse.Action, raw: str) -> Any:
    if action.nargs == 0:  # a switch: FEDERATION_EPHEMERAL=true
        return raw.strip().lower() in ("1", "true", "yes", "on")
    convert = action.type if callable(action.type) else str
    if isinstance(action, argparse._AppendAction):
        return [convert(part.strip()) for part in raw.split(",") if part.strip()]
    try:
        value = convert(raw)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise SystemExit(f"federation-manager: {env_var(action.dest)}={raw!r}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise SystemExit(f"federation-manager: {env_var(action.dest)}={raw!r}: choose from {choices}")
    return value
