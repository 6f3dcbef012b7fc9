"""The manager's settings: command-line flags, `FEDERATION_`-prefixed environment
variables and a YAML config file (`--config`), in that order of precedence, validated
with pydantic-settings. Bad input is reported per flag (`--feature-gates: unknown
feature gate 'Foo'; known gates: ...`), never as a traceback.

Config file keys may be camelCase (as in config/manager/config.yaml), kebab-case or
snake_case; nested sections are `registration` and `controllers`. Nested environment
variables use `__` (`FEDERATION_REGISTRATION__NAMESPACE`)."""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .api.constants import CLUSTER_ROLE_LABEL, ENV_PREFIX, REGISTRATION_NAMESPACE, Annotation
from .features import FeatureGates, describe_known

IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class SettingsError(ValueError):
    """Settings that cannot be used; the message has one line per problem."""


def _bind_address(value: str) -> str:
    from mcruntime.health import parse_bind_address

    parse_bind_address(value)
    return value


class RegistrationSettings(BaseModel):
    """Where clusters (cells and projects) come from."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["auto", "clusterprofile", "secrets", "kubeconfig-dir", "none"] = Field(
        "auto",
        description="cluster provider: clusterprofile, secrets, kubeconfig-dir, none, or auto (kubeconfig-dir when "
        "a directory is set, clusterprofile with management controllers, else none)",
    )
    namespace: str = Field(
        REGISTRATION_NAMESPACE, description="namespace of cluster registrations (ClusterProfiles, kubeconfig Secrets)"
    )
    kubeconfig_dir: Path | None = Field(None, description="directory of <cluster>.yaml kubeconfig files")
    label_selector: str = Field(
        f"{CLUSTER_ROLE_LABEL} in (cell,project)", description="which ClusterProfiles / Secrets register clusters"
    )
    kubeconfig_secret_annotation: str = str(Annotation.KUBECONFIG_SECRET)
    poll_interval: float = Field(2.0, gt=0, description="rescan period of the kubeconfig directory, seconds")

    @field_validator("kubeconfig_dir", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("label_selector")
    @classmethod
    def _valid_selector(cls, value: str) -> str:
        from mcruntime.selectors import LabelSelector

        LabelSelector.parse(value)
        return value


SHARD_ID_RULE = "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 63"
_SHARD_ID = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")


def valid_shard_id(value: str) -> bool:
    """A shard name is a Lease name and a label value: both rules at once."""
    return bool(_SHARD_ID.match(value))


class ControllerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # reconciles are I/O-bound coroutines (an idle worker costs nothing): the bound is what
    # the API servers take, not the 2 cores; 16 keeps a create burst's writes in flight
    workers: int = Field(16, ge=1, le=256, description="concurrent reconciles per controller")
    status_batch_period: float = Field(
        0.05, ge=0, le=10, description="seconds a project WD's status waits for more cell changes before it is written"
    )
    awaiting_propagation_after: float = Field(
        1.0,
        ge=0,
        le=60,
        description="seconds a WD's status waits for its cells to observe a new spec, once its copies are written, "
        "before saying AwaitingPropagation",
    )


class ManagerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    config: Path | None = Field(None, description="YAML config file (flags and environment take precedence)")
    kubeconfig: Path | None = Field(
        None, description="kubeconfig of the management / local cluster (default: $KUBECONFIG, in-cluster, ~/.kube)"
    )
    enable_management_controllers: bool = Field(False, description="run the federator and projector")
    enable_cell_controllers: bool = Field(False, description="run the cell controllers against the local cluster")
    feature_gates: FeatureGates = Field(default_factory=FeatureGates, description=f"Name=true,... ({describe_known()})")
    leader_elect: bool = Field(False, description="elect a leader on a coordination.k8s.io Lease")
    leader_election_namespace: str = Field("", description="namespace of the Lease (default: own namespace)")
    leader_election_id: str = Field("federation-manager", description="name of the Lease")
    leader_election_lease_duration: float = Field(15.0, gt=0, description="seconds")
    leader_election_renew_deadline: float = Field(10.0, gt=0, description="seconds")
    leader_election_retry_period: float = Field(2.0, gt=0, description="seconds")
    sharding: bool = Field(
        False,
        description="management mode: every replica is a shard holding its own Lease and reconciles only the project "
        "WorkloadDeployments labelled for it; the replica elected on --leader-election-id assigns them (DESIGN.md §5)",
    )
    shard_id: str = Field(
        "",
        description="with --sharding, this replica's shard name: its Lease's name and holder, unique among replicas "
        "(default: $POD_NAME, else the host name)",
    )
    sharder_ring_weight: float | None = Field(
        None,
        ge=0,
        le=1,
        description="with --sharding, the elected sharder's share of the ring as a fraction of every other shard's "
        "(it also assigns every WD): 1 = equal shares, 0 = none while another shard is ready (alone it takes "
        "everything); resolution 0.01; default: derived from the number of available shards N, "
        "(1 - 0.2 (N - 1)) / 1.2 (0.67 of 2, 0.5 of 3, 0.17 of 5, 0 from 6)",
    )
    metrics_bind_address: str = Field(":8080", description="[host]:port for /metrics, 0 to disable")
    health_probe_bind_address: str = Field(":8081", description="[host]:port for /healthz and /readyz, 0 to disable")
    local_cluster_name: str = Field("management", description="cluster name of the local cluster in requests")
    site_name: str = Field("", description="this site's name (cell mode; logged at start)")
    city_code: str = Field(
        "",
        description="this site's city code (cell mode): a WorkloadDeployment of another city is refused "
        "with a ConfigurationError condition",
    )
    graceful_shutdown_timeout: float = Field(30.0, ge=0, description="seconds in-flight reconciles get on shutdown")
    cell_status_stale_after: float = Field(
        60.0, gt=0, description="seconds after which an unreachable cell's numbers show as Unknown in project status"
    )
    cell_unreachable_grace: float = Field(
        300.0,
        gt=0,
        description="seconds an unreachable cell may hold a WorkloadDeployment's deletion (management mode)",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = Field("text", description="text, or json (one object per line)")
    tracing: bool = Field(
        False,
        description="export a span per reconcile and one trace per WorkloadDeployment change, as the standard "
        "OTEL_* environment says (OTEL_TRACES_EXPORTER otlp|console|none, OTEL_EXPORTER_OTLP_ENDPOINT, "
        "OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER); off: nothing loaded, nothing spent",
    )
    traces_file: Path | None = Field(
        None,
        description="with --tracing, also record spans to this JSON-lines file (rotated to FILE.1 past 8 MiB), "
        "the format `federation-manager trace --file` reads",
    )
    registration: RegistrationSettings = Field(default_factory=RegistrationSettings)  # type: ignore[arg-type]
    controllers: ControllerSettings = Field(default_factory=ControllerSettings)  # type: ignore[arg-type]

    @field_validator("shard_id")
    @classmethod
    def _valid_shard_id(cls, value: str) -> str:
        if value and not valid_shard_id(value):
            raise ValueError(f"{value!r} is not a valid shard name: {SHARD_ID_RULE}")
        return value

    @field_validator("metrics_bind_address", "health_probe_bind_address")
    @classmethod
    def _check_bind(cls, value: str) -> str:
        return _bind_address(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> ManagerSettings:
        if not (
            self.leader_election_lease_duration
            > self.leader_election_renew_deadline
            > self.leader_election_retry_period
        ):
            raise ValueError(
                "leader election needs lease duration > renew deadline > retry period "
                f"(got {self.leader_election_lease_duration}, {self.leader_election_renew_deadline}, "
                f"{self.leader_election_retry_period})"
            )
        if self.sharding and not self.enable_management_controllers:
            raise ValueError("--sharding shards the management controllers: it needs --enable-management-controllers")
        if self.sharding and self.effective_shard_id() == self.leader_election_id:
            raise ValueError(
                f"--shard-id {self.effective_shard_id()!r} is the sharder's Lease name (--leader-election-id); "
                "choose another"
            )
        if self.registration.provider == "kubeconfig-dir" and self.registration.kubeconfig_dir is None:
            raise ValueError("--cluster-provider=kubeconfig-dir needs --kubeconfig-dir")
        if self.enable_management_controllers and self.effective_provider() == "none":
            raise ValueError(
                "management mode needs a way to find cells and projects: --cluster-provider=clusterprofile, "
                "secrets or kubeconfig-dir (with --kubeconfig-dir)"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        init_kwargs = getattr(init_settings, "init_kwargs", {}) or {}
        path = init_kwargs.get("config") or os.environ.get(f"{ENV_PREFIX}CONFIG") or None
        return (init_settings, env_settings, ConfigFileSource(settings_cls, Path(path) if path else None))

    # ------------------------------------------------------------------ derived
    def own_namespace(self) -> str:
        pod_ns = os.environ.get("POD_NAMESPACE")
        if pod_ns:
            return pod_ns
        if IN_CLUSTER_NAMESPACE_FILE.is_file():
            return IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or "default"
        return "default"

    def effective_shard_id(self) -> str:
        """This replica's shard name (--shard-id, else the pod name, else the host name)."""
        return self.shard_id or os.environ.get("POD_NAME") or socket.gethostname()

    def effective_provider(self) -> str:
        provider = self.registration.provider
        if provider != "auto":
            return provider
        if self.registration.kubeconfig_dir is not None:
            return "kubeconfig-dir"
        return "clusterprofile" if self.enable_management_controllers else "none"


def _snake(key: str) -> str:
    key = key.replace("-", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    """Setting names to snake_case, at the top and inside the nested sections only
    (feature gate names and other free-form keys keep their spelling)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = _snake(str(key))
        nested = name in _NESTED_MODELS and isinstance(value, Mapping)
        out[name] = {_snake(str(k)): v for k, v in value.items()} if nested else value
    return out


class ConfigFileSource(PydanticBaseSettingsSource):
    """The YAML config file, keys normalised to the settings' field names."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self.path = path

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = yaml.safe_load(self.path.read_text())
        except OSError as exc:
            raise SettingsError(f"--config: cannot read {self.path}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise SettingsError(f"--config: {self.path} is not valid YAML: {exc}") from exc
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise SettingsError(f"--config: {self.path} must hold a mapping of settings, not {type(data).__name__}")
        return _normalise(data)


# ---------------------------------------------------------------------- flags
# flags that set a nested setting: flag → (section, field)
NESTED_FLAGS: dict[str, tuple[str, str]] = {
    "cluster-provider": ("registration", "provider"),
    "kubeconfig-dir": ("registration", "kubeconfig_dir"),
    "registration-namespace": ("registration", "namespace"),
    "cluster-selector": ("registration", "label_selector"),
    "workers": ("controllers", "workers"),
    "status-batch-period": ("controllers", "status_batch_period"),
    "awaiting-propagation-after": ("controllers", "awaiting_propagation_after"),
}
_NESTED_MODELS: dict[str, type[BaseModel]] = {"registration": RegistrationSettings, "controllers": ControllerSettings}


# settings whose flag the top-level `federation-manager` parser already defines
_GLOBAL_FLAGS = frozenset({"log_level"})


def _flag(field_name: str) -> str:
    return field_name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting. Only flags given on the command line reach the settings
    (argparse defaults are suppressed), so environment and config file still apply."""
    for name, info in ManagerSettings.model_fields.items():
        if name in _NESTED_MODELS or name in _GLOBAL_FLAGS:
            continue
        _add_flag(parser, _flag(name), name, info)
    for flag, (section, field) in NESTED_FLAGS.items():
        info = _NESTED_MODELS[section].model_fields[field]
        _add_flag(parser, flag, f"{section}.{field}", info)


def _add_flag(parser: argparse.ArgumentParser, flag: str, dest: str, info: FieldInfo) -> None:
    help_text = info.description or ""
    metavar = flag.upper().replace("-", "_")
    if info.annotation is bool:
        parser.add_argument(
            f"--{flag}", dest=dest, nargs="?", const="true", default=argparse.SUPPRESS, metavar="BOOL", help=help_text
        )
    else:
        parser.add_argument(f"--{flag}", dest=dest, default=argparse.SUPPRESS, metavar=metavar, help=help_text)


def _cli_values(args: argparse.Namespace) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if dest in ManagerSettings.model_fields and dest not in _NESTED_MODELS and dest not in _GLOBAL_FLAGS:
            values[dest] = value
        elif "." in dest:
            section, field = dest.split(".", 1)
            if section in _NESTED_MODELS:
                values.setdefault(section, {})[field] = value
    return values


def _flag_for(parts: Sequence[str]) -> str | None:
    if len(parts) >= 2 and parts[0] in _NESTED_MODELS:
        for flag, path in NESTED_FLAGS.items():
            if path == (parts[0], parts[1]):
                return f"--{flag}"
        return None
    if parts and parts[0] in ManagerSettings.model_fields and parts[0] not in _GLOBAL_FLAGS:
        return f"--{_flag(parts[0])}"
    return None


def _env_var_for(parts: Sequence[str]) -> str:
    return ENV_PREFIX + "__".join(p.upper() for p in parts[:2])


def _home_of(key: str) -> str | None:
    """Where a misplaced setting belongs: the section holding it, or the top level."""
    for section, model in _NESTED_MODELS.items():
        if key in model.model_fields:
            return f"under '{section}:'"
    if key in ManagerSettings.model_fields:
        return "at the top level"
    return None


class _Sources:
    """Which source gave each setting, so an error names what the user actually wrote."""

    def __init__(self, cli: Mapping[str, Any], environ: Mapping[str, str], config: Path | None) -> None:
        self.cli = cli
        self.environ = environ
        self.config = config

    def _from_cli(self, parts: Sequence[str]) -> bool:
        value: Any = self.cli
        for part in parts[:2]:
            if not isinstance(value, Mapping) or part not in value:
                return False
            value = value[part]
        return True

    def where(self, parts: Sequence[str]) -> str:
        if not parts:
            return "settings"  # a check across several settings; the message names them
        flag = _flag_for(parts)
        if flag and self._from_cli(parts):
            return flag
        env = _env_var_for(parts)
        if env in self.environ:
            return f"environment variable {env}"
        if len(parts) >= 2 and parts[0] in _NESTED_MODELS and f"{ENV_PREFIX}{parts[0].upper()}" in self.environ:
            return f"environment variable {ENV_PREFIX}{parts[0].upper()} ({parts[1]})"
        if self.config is not None:
            return f"config file {self.config}: key {'.'.join(parts)}"
        return flag or ".".join(parts)

    def unknown(self, parts: Sequence[str]) -> str:
        where = f"config file {self.config}: key {'.'.join(parts)}" if self.config else ".".join(parts)
        home = _home_of(parts[-1])
        if home and not (len(parts) == 1 and home == "at the top level"):
            return f"{where}: unknown here; '{parts[-1]}' belongs {home}"
        return f"{where}: unknown setting"


def _explain(exc: ValidationError, sources: _Sources) -> SettingsError:
    lines = []
    for err in exc.errors():
        parts = [str(p) for p in err.get("loc", ())]
        if err.get("type") == "extra_forbidden":
            lines.append(sources.unknown(parts))
            continue
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{sources.where(parts)}: {message}")
    return SettingsError("\n".join(lines))


def load_settings(args: argparse.Namespace | None = None, **overrides: Any) -> ManagerSettings:
    """Settings from parsed flags (plus keyword overrides), the environment and the config file."""
    values = _cli_values(args) if args is not None else {}
    cli = dict(values)
    values.update(overrides)
    config = values.get("config") or os.environ.get(f"{ENV_PREFIX}CONFIG") or None
    sources = _Sources(cli, os.environ, Path(config) if config else None)
    try:
        return ManagerSettings(**values)
    except ValidationError as exc:
        raise _explain(exc, sources) from None
