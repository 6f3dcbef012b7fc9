"""The conditions one writer owns in a status, merged with what is stored.

Several controllers write one Instance's `status.conditions` (a list-map keyed by `type`):
the Instance controller owns Ready and QuotaGranted, the pod runtime Programmed and
Available. Each applies only its own entries with server-side apply under its own field
manager, so neither overwrites the other and neither needs the other's resourceVersion.

`merge_owned(current, desired, now=...)` returns `(owned, changed)`:
- `owned`: the desired conditions (`type`, `status`, `reason`, `message`,
  `observedGeneration`) as they should be stored, `lastTransitionTime` kept from the
  stored condition unless the status changes (then `now`), as `set_condition_json` does;
- `changed`: whether any of them differs from what is stored. False means: send nothing
  (no write at steady state, no hot loop on one's own writes).
Malformed input (a stored condition that is not an object, a desired one without type,
status or reason) is a `ValueError` naming it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, UNKNOWN, ConditionStatus, find_condition_json, set_condition_json

_STATUSES: dict[str, ConditionStatus] = {TRUE: TRUE, FALSE: FALSE, UNKNOWN: UNKNOWN}


def merge_owned(
    current: Sequence[Any], desired: Sequence[Mapping[str, Any]], *, now: str
) -> tuple[list[dict[str, Any]], bool]:
    """The owned conditions to store, and whether they differ from the stored ones."""
    if not now:
        raise ValueError("now: required (RFC 3339 time for lastTransitionTime)")
    stored: list[dict[str, Any]] = []
    for i, cond in enumerate(current):
        if not isinstance(cond, Mapping):
            raise ValueError(f"status.conditions[{i}]: expected an object, got {type(cond).__name__}")
        stored.append(copy.deepcopy(dict(cond)))
    changed = False
    for want in desired:
        type_, status, reason = want.get("type"), want.get("status"), want.get("reason")
        if not type_ or not reason or status not in _STATUSES:
            raise ValueError(f"desired condition {dict(want)!r}: needs type, reason and a status True/False/Unknown")
        changed |= set_condition_json(
            stored,
            str(type_),
            _STATUSES[str(status)],
            str(reason),
            str(want.get("message") or ""),
            observed_generation=want.get("observedGeneration"),
            now=now,
        )
    owned = [find_condition_json(stored, str(want["type"])) for want in desired]
    return [c for c in owned if c is not None], changed
