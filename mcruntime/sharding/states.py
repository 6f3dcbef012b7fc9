"""A shard's state, derived from its membership Lease the same way by every replica.

The Lease is named after the shard and held by it (holder = its name). With
`expires = renewTime + leaseDurationSeconds` (a Lease missing either counts as expiring
now, with the default 15 s duration):

| state | when | in the ring |
|---|---|---|
| ready | held by the shard, `now < expires` | yes |
| expired | held by the shard, `expires <= now < expires + duration / 4` | yes |
| uncertain | held by the shard, `now >= expires + duration / 4` (the sharder then acquires it) | yes |
| dead | released (empty holder) or acquired by another (the sharder) | no |
| orphaned | dead and `now >= expires + 60 s` (the Lease may be deleted) | no |

An expired or uncertain shard may only be slow: it keeps its objects until the sharder
has acquired its Lease (dead), and a shard renewing in time stays ready. A shard stops
reconciling and writing once it has not renewed for its renew deadline (shorter than the
duration, on its monotonic clock: `ShardGate`), so by the time its Lease turns uncertain
it has stopped: the quarter duration of `expired` is margin for clock skew and a write
already in flight, as client-go's leader election has none (a candidate takes a Lease
over at its expiry). kubernetes-controller-sharding waits a whole duration there; a
quarter keeps a dead shard's objects moving within two durations of its last renewal. Times are wall
clock (renewTime is written by the shard's clock); skew between replicas shifts the
states by the skew, as in client-go's leader election."""

from __future__ import annotations

import datetime
import enum
import functools
from collections.abc import Mapping
from typing import Any

from ..fields import get_mapping, get_str

DEFAULT_LEASE_DURATION = 15.0
ORPHANED_AFTER = 60.0
UNCERTAIN_AFTER = 0.25  # of the duration, past expiry (see the table)


class ShardState(enum.StrEnum):
    READY = "ready"
    EXPIRED = "expired"
    UNCERTAIN = "uncertain"
    DEAD = "dead"
    ORPHANED = "orphaned"


def is_available(state: ShardState | None) -> bool:
    """Whether objects may be assigned to (and stay with) a shard in this state."""
    return state in (ShardState.READY, ShardState.EXPIRED, ShardState.UNCERTAIN)


def parse_time(value: object) -> float | None:
    """An RFC 3339 (micro)time as epoch seconds; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    return _parse_time(value)


@functools.lru_cache(maxsize=256)
def _parse_time(value: str) -> float | None:
    # a Lease's renewTime is read by every sharder reconcile (once per WD decided) and
    # changes once per renewal: parsed once per value
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


def format_time(epoch: float) -> str:
    """Epoch seconds as a Lease's MicroTime."""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _times(lease: Mapping[str, Any], now: float) -> tuple[float, float]:
    """(expires, duration) of a Lease."""
    spec = lease.get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    seconds = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(seconds, int) or isinstance(seconds, bool) or seconds <= 0:
        return now, DEFAULT_LEASE_DURATION
    return renewed + seconds, float(seconds)


def _held_by_shard(lease: Mapping[str, Any]) -> bool:
    name = get_str(lease, "metadata.name", required=False)
    holder = get_mapping(lease, "spec").get("holderIdentity") or ""
    return bool(holder) and holder == name


def shard_state(lease: Mapping[str, Any], now: float) -> ShardState:
    """The state of the shard whose Lease this is, at epoch time `now`."""
    expires, duration = _times(lease, now)
    if not _held_by_shard(lease):
        return ShardState.ORPHANED if now >= expires + ORPHANED_AFTER else ShardState.DEAD
    if now >= expires + duration * UNCERTAIN_AFTER:
        return ShardState.UNCERTAIN
    if now >= expires:
        return ShardState.EXPIRED
    return ShardState.READY


def seconds_to_next_state(lease: Mapping[str, Any], now: float) -> float | None:
    """How long until the Lease's state changes by time alone (None: never, orphaned is
    the last). A renewal, release or acquisition changes it sooner, as a Lease event."""
    expires, duration = _times(lease, now)
    if not _held_by_shard(lease):
        boundary = expires + ORPHANED_AFTER
    else:
        boundaries = [b for b in (expires, expires + duration * UNCERTAIN_AFTER) if b > now]
        if not boundaries:
            return None
        boundary = boundaries[0]
    return boundary - now if boundary > now else None
