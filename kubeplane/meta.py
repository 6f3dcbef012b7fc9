"""Small metadata helpers: timestamps in the API's RFC 3339 form, UIDs, generated name
suffixes, and the human-readable ages kubectl shows."""

from __future__ import annotations

import random
import secrets
import time
import uuid
from datetime import UTC, datetime

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.String alphabet (no vowels)


_stamp_second = -1
_stamp_text = ""


def now_rfc3339() -> str:
    """Current time with second precision (the API's metav1.Time), formatted once per second."""
    global _stamp_second, _stamp_text
    second = int(time.time())
    if second != _stamp_second:
        _stamp_text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
        _stamp_second = second
    return _stamp_text


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_in(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


_uid_random = random.Random(secrets.randbits(64))


def new_uid() -> str:
    """A random (version 4) UUID. Drawn from a seeded PRNG rather than os.urandom: UIDs
    must be unique, not unpredictable, and this is on every create's path."""
    value = _uid_random.getrandbits(128)
    value = (value & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
    return str(uuid.UUID(int=value))


def generated_suffix(length: int = 5) -> str:
    return "".join(secrets.choice(_ALPHANUMS) for _ in range(length))


def human_age(timestamp: str | None) -> str:
    ts = parse_time(timestamp)
    if ts is None:
        return "<unknown>"
    return human_duration(time.time() - ts)


def human_duration(seconds_f: float) -> str:
    seconds = int(seconds_f)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d{h}h" if h else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        d = (hours // 24) % 365
        return f"{hours // 24 // 365}y{d}d" if d else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"
