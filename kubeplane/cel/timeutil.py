"""Timestamps and durations the way cel-go handles them: Go's time.ParseDuration and
RFC 3339 parsing, nanosecond precision, the year 1..9999 range, and the `getX()`
accessors with an optional time zone argument."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .gostr import go_format_f, go_quote
from .values import INT64_MAX, INT64_MIN, CelError, Duration, Timestamp

NANOS = 1_000_000_000
# CEL timestamps span 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z
MIN_TS = -62135596800 * NANOS
MAX_TS = 253402300799 * NANOS + NANOS - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5
    "μs": 1_000,  # U+03BC
    "ms": 1_000_000,
    "s": NANOS,
    "m": 60 * NANOS,
    "h": 3600 * NANOS,
}


def parse_go_duration(text: str) -> int:
    """time.ParseDuration, returning nanoseconds; ValueError with Go's message on failure."""
    invalid = ValueError(f"time: invalid duration {go_quote(text)}")
    rest, neg = text, False
    if rest[:1] in ("-", "+"):
        neg, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if not (rest[0] == "." or rest[0].isdigit()):
            raise invalid
        i = 0
        while i < len(rest) and rest[i] in "0123456789":
            i += 1
        whole, rest = rest[:i], rest[i:]
        frac = ""
        if rest[:1] == ".":
            j = 1
            while j < len(rest) and rest[j] in "0123456789":
                j += 1
            frac, rest = rest[1:j], rest[j:]
            if not whole and not frac:
                raise invalid
        elif not whole:
            raise invalid
        k = 0
        while k < len(rest) and not (rest[k] == "." or rest[k] in "0123456789"):
            k += 1
        if k == 0:
            raise ValueError(f"time: missing unit in duration {go_quote(text)}")
        unit, rest = rest[:k], rest[k:]
        scale = _UNITS.get(unit)
        if scale is None:
            raise ValueError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(text)}")
        total += int(whole or "0") * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
        if total > 2**63:
            raise invalid
    if neg:
        total = -total
    if total > INT64_MAX or total < INT64_MIN:
        raise invalid
    return total


def duration_of(nanos: int) -> Duration:
    if nanos > INT64_MAX or nanos < INT64_MIN:
        raise CelError("integer overflow")
    return Duration(nanos)


def timestamp_of(nanos: int) -> Timestamp:
    if nanos < MIN_TS or nanos > MAX_TS:
        raise CelError("timestamp overflow")
    return Timestamp(nanos)


def format_duration(d: Duration) -> str:
    """string(duration): seconds with the shortest decimal form, as cel-go prints it."""
    return go_format_f(d.nanos / NANOS) + "s"


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$"
)


def parse_rfc3339(text: str) -> int:
    """time.Parse(time.RFC3339, text) to nanoseconds since the epoch; ValueError when invalid."""
    m = _RFC3339.match(text)
    if m is None:
        raise ValueError(f"parsing time {go_quote(text)} as RFC3339: cannot parse")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7) or ""
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"parsing time {go_quote(text)}: {exc}") from None
    offset = 0
    if m.group(8):
        oh, om = int(m.group(9)), int(m.group(10))
        if oh > 23 or om > 59:
            raise ValueError(f"parsing time {go_quote(text)}: time zone offset out of range")
        offset = (oh * 3600 + om * 60) * (1 if m.group(8) == "+" else -1)
    seconds = (moment - _EPOCH) // timedelta(seconds=1) - offset
    return seconds * NANOS + (int(frac.ljust(9, "0")) if frac else 0)


def format_timestamp(ts: Timestamp) -> str:
    """string(timestamp): RFC 3339 in UTC with trailing zero fraction digits trimmed."""
    seconds, nanos = divmod(ts.nanos, NANOS)
    moment = _EPOCH + timedelta(seconds=seconds)
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


_OFFSET = re.compile(r"^([+-]?)(\d{1,2}):(\d{2})$")


@lru_cache(maxsize=128)
def _zone(name: str) -> tzinfo:
    m = _OFFSET.match(name)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return timezone(-delta if m.group(1) == "-" else delta)
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {go_quote(name)}") from None


def local_time(ts: Timestamp, zone: str | None) -> tuple[datetime, int]:
    """The timestamp as a wall-clock datetime in `zone` (UTC by default) and its nanoseconds."""
    seconds, nanos = divmod(ts.nanos, NANOS)
    moment = _EPOCH + timedelta(seconds=seconds)
    if zone is not None:
        moment = moment.astimezone(_zone(zone))
    return moment, nanos


def timestamp_part(part: str, ts: Timestamp, zone: str | None = None) -> int:
    moment, nanos = local_time(ts, zone)
    match part:
        case "getFullYear":
            return moment.year
        case "getMonth":
            return moment.month - 1
        case "getDate":
            return moment.day
        case "getDayOfMonth":
            return moment.day - 1
        case "getDayOfYear":
            return moment.timetuple().tm_yday - 1
        case "getDayOfWeek":
            return (moment.weekday() + 1) % 7  # Sunday is 0
        case "getHours":
            return moment.hour
        case "getMinutes":
            return moment.minute
        case "getSeconds":
            return moment.second
        case "getMilliseconds":
            return nanos // 1_000_000
    raise CelError(f"unknown timestamp accessor {part}")


def duration_part(part: str, d: Duration) -> int:
    # totals truncated toward zero, as Go's Duration.Hours()/Minutes()/... conversions are
    units = {"getHours": 3600 * NANOS, "getMinutes": 60 * NANOS, "getSeconds": NANOS, "getMilliseconds": 1_000_000}
    scale = units.get(part)
    if scale is None:
        raise CelError(f"unknown duration accessor {part}")
    q = abs(d.nanos) // scale
    return -q if d.nanos < 0 else q
