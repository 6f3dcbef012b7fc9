"""What the cell-mode controllers are told, built by the composition root
(`federation/app.py` `cell_options`) from the CLI's settings; the controllers never see
the settings themselves."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CellOptions:
    workers: int = 2  # concurrent reconciles per controller
    quota_gate: bool = False  # feature gate QuotaGate: ResourceClaims gate Instances
    pod_runtime: bool = False  # feature gate PodRuntime: sandbox Instances run as Pods
    city_code: str = ""  # the only city this cell serves ("" = WDs of every city are run)
