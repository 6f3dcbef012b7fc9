"""Feature gates: `--feature-gates=Name=true,Other=false`, validated against the gates
this binary knows. An unknown gate or a value that is not a boolean is an error that
names it, never silently ignored (a typo must not quietly leave a feature off)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema


class Stage(enum.StrEnum):
    ALPHA = "Alpha"
    BETA = "Beta"
    GA = "GA"


@dataclass(frozen=True)
class FeatureSpec:
    default: bool
    stage: Stage
    description: str


QUOTA_GATE = "QuotaGate"
POD_RUNTIME = "PodRuntime"

KNOWN_FEATURES: dict[str, FeatureSpec] = {
    QUOTA_GATE: FeatureSpec(
        False, Stage.ALPHA, "Instances wait for QuotaGranted, requeued on tiers anchored on creationTimestamp"
    ),
    POD_RUNTIME: FeatureSpec(False, Stage.ALPHA, "Cells realise sandbox Instances as Pods"),
}

# Go's strconv.ParseBool, which Kubernetes' --feature-gates parsing uses
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FeatureGateError(ValueError):
    pass


def _known_list(known: Mapping[str, FeatureSpec]) -> str:
    return ", ".join(sorted(known))


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise FeatureGateError(f"invalid value {value!r} for feature gate {name!r}: must be true or false")


class FeatureGates:
    """Effective feature gates: defaults overlaid with explicit settings."""

    __slots__ = ("_known", "_overrides")

    def __init__(
        self, overrides: Mapping[str, Any] | None = None, *, known: Mapping[str, FeatureSpec] = KNOWN_FEATURES
    ):
        self._known = dict(known)
        checked: dict[str, bool] = {}
        for name, value in (overrides or {}).items():
            if name not in self._known:
                raise FeatureGateError(f"unknown feature gate {name!r}; known gates: {_known_list(self._known)}")
            checked[name] = _as_bool(name, value)
        self._overrides = checked

    @classmethod
    def parse(cls, text: str, *, known: Mapping[str, FeatureSpec] = KNOWN_FEATURES) -> FeatureGates:
        """`Name=true,Other=false` (whitespace around items is ignored; empty means none)."""
        overrides: dict[str, Any] = {}
        for raw_item in text.split(","):
            item = raw_item.strip()
            if not item:
                continue
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or not name:
                raise FeatureGateError(f"invalid feature gate {item!r}: expected Name=true or Name=false")
            if name in overrides:
                raise FeatureGateError(f"feature gate {name!r} is set twice")
            overrides[name] = value.strip()
        return cls(overrides, known=known)

    @classmethod
    def coerce(cls, value: Any) -> FeatureGates:
        if isinstance(value, FeatureGates):
            return value
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping):
            return cls(value)
        raise FeatureGateError(
            f"feature gates must be 'Name=true,...' or a mapping of names to booleans, not {value!r}"
        )

    def enabled(self, name: str) -> bool:
        spec = self._known.get(name)
        if spec is None:
            raise FeatureGateError(f"unknown feature gate {name!r}; known gates: {_known_list(self._known)}")
        return self._overrides.get(name, spec.default)

    def as_dict(self) -> dict[str, bool]:
        return {name: self.enabled(name) for name in sorted(self._known)}

    @property
    def overrides(self) -> dict[str, bool]:
        return dict(self._overrides)

    def __str__(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self._overrides.items()))

    def __repr__(self) -> str:
        return f"FeatureGates({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().items()))

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, _handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.coerce, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )


def describe_known(known: Mapping[str, FeatureSpec] = KNOWN_FEATURES) -> str:
    """One line per gate, for --help."""
    return "; ".join(
        f"{n}={'true' if s.default else 'false'} ({s.stage}): {s.description}" for n, s in sorted(known.items())
    )
