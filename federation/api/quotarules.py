"""The QuotaGate feature's rules as plain data: the instance type catalog a claim is sized
from, the claim's name, and how often a gated Instance is looked at again. Apart from the
claim/budget models (`quota.py`), so the cell controllers that apply them do not build the
API models (issue 22, "a small process")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

# The instance type catalog a claim is sized from when nothing more specific is stated.
# `datumcloud/d1-standard-2` = 1 vCPU / 2 GiB is the platform's published size; the two
# bigger ones are this project's extrapolation along the same 1:2 ratio.
INSTANCE_TYPES: Mapping[str, Mapping[str, str]] = {
    "datumcloud/d1-standard-2": {"cpu": "1", "memory": "2Gi"},
    "datumcloud/d1-standard-4": {"cpu": "2", "memory": "4Gi"},
    "datumcloud/d1-standard-8": {"cpu": "4", "memory": "8Gi"},
}

# A gated Instance's claim is `instance-<instance name>`.
CLAIM_NAME_PREFIX = "instance-"

# While QuotaGranted is not True an Instance is looked at again after an interval that
# grows with its age (anchored on creationTimestamp): (exclusive upper bound on age,
# interval), in order; older than the last bound: REQUEUE_MAX.
REQUEUE_TIERS: tuple[tuple[timedelta, timedelta], ...] = (
    (timedelta(seconds=60), timedelta(seconds=1)),
    (timedelta(minutes=5), timedelta(seconds=15)),
    (timedelta(minutes=10), timedelta(seconds=60)),
)
REQUEUE_MAX = timedelta(seconds=300)
