"""OpenAPI string `format`s as Kubernetes 1.32 validates them on custom resources.

apiextensions-apiserver keeps only the formats in its supported set (normalized by removing
dashes, so `date-time` is `datetime`) and kube-openapi's strfmt registry checks them; any
other format, and any format on a non-string, is ignored (kube-openapi's type validator
does not range-check int32/int64 either). The checks below follow the strfmt validators
(govalidator, net/mail, net.ParseMAC, netutils' sloppy IP parsing, ...).

The same parsers give CEL its values for `byte`, `date`, `date-time` and `duration` strings."""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import re
import unicodedata
from collections.abc import Callable
from datetime import date

from .ext_net import parse_request_uri
from .timeutil import NANOS, parse_go_duration, parse_rfc3339

SUPPORTED = frozenset(
    {
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
    }
)


def normalize(fmt: str) -> str:
    return fmt.replace("-", "")


def checker_for(fmt: str) -> Callable[[str], bool] | None:
    """The validator for a schema `format`, or None when Kubernetes ignores the format."""
    name = normalize(fmt)
    if name not in SUPPORTED:
        return None
    return _CHECKS[name]


# ------------------------------------------------------------------ byte

_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")


def is_base64(text: str) -> bool:
    return bool(_BASE64.match(text))


def decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"illegal base64 data in {text!r}") from None


# ------------------------------------------------------------------ dates and durations

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")


def is_date(text: str) -> bool:
    """time.Parse("2006-01-02", text)."""
    m = _DATE.match(text)
    if not m:
        return False
    try:
        date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def is_datetime(text: str) -> bool:
    """strfmt.IsDateTime: a date, a `t`, and a time matched case-insensitively."""
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    if not m:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def parse_datetime(text: str) -> int:
    """strfmt.ParseDateTime to nanoseconds since the epoch (RFC 3339 with or without a
    fraction, or a local time read as UTC)."""
    with contextlib.suppress(ValueError):  # not RFC 3339: try the looser local-time form below
        return parse_rfc3339(text)
    m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)$", text)
    if m:
        stamp = m.group(1)
        if stamp.count(":") == 1:
            stamp += ":00"
        return parse_rfc3339(stamp + "Z")
    raise ValueError(f"parsing time {text!r}: not a date-time")


def parse_date(text: str) -> int:
    if not is_date(text):
        raise ValueError(f"parsing time {text!r}: not a date")
    return parse_rfc3339(text + "T00:00:00Z")


_SCALA_VALID = re.compile(r"^\s*(?:\d+\s*[A-Za-zµ]+\s*)+$")
_SCALA_PART = re.compile(r"((\d+)\s*([A-Za-zµ]+))")
_SCALA_UNITS = (
    (("ns", "nano"), 1),
    (("us", "µs", "micro"), 1_000),
    (("ms", "milli"), 1_000_000),
    (("s", "sec"), NANOS),
    (("m", "min"), 60 * NANOS),
    (("h", "hr", "hour"), 3600 * NANOS),
    (("d", "day"), 86400 * NANOS),
    (("w", "wk", "week"), 7 * 86400 * NANOS),
)


def parse_duration(text: str) -> int:
    """strfmt.ParseDuration: Go's duration syntax, else the Scala-like `3 days 4h` form."""
    with contextlib.suppress(ValueError):  # not Go syntax: try the Scala-like form below
        return parse_go_duration(text)
    if not _SCALA_VALID.match(text):
        raise ValueError(f"unable to parse {text} as duration")
    total, ok = 0, False
    for m in _SCALA_PART.finditer(text):
        factor = int(m.group(2))
        unit = m.group(3).strip().lower()
        for variants, multiplier in _SCALA_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or variant.lower() == unit:
                    ok = True
                    total += factor * multiplier
    if not ok:
        raise ValueError(f"unable to parse {text} as duration")
    return total


def is_duration(text: str) -> bool:
    try:
        parse_duration(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ network


def _parse_ip_sloppy(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: net.ParseIP that tolerates leading zeros in IPv4 octets."""
    if "%" in text:
        return None
    candidate = text
    if "." in text and ":" not in text:
        octets = text.split(".")
        if len(octets) != 4 or not all(o.isdigit() and o.isascii() and len(o) > 0 for o in octets):
            return None
        candidate = ".".join(str(int(o)) for o in octets)
    elif "." in text:
        head, _, tail = text.rpartition(":")
        octets = tail.split(".")
        if len(octets) == 4 and all(o.isdigit() and o.isascii() for o in octets):
            candidate = head + ":" + ".".join(str(int(o)) for o in octets)
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def is_ipv4(text: str) -> bool:
    return _parse_ip_sloppy(text) is not None and "." in text


def is_ipv6(text: str) -> bool:
    return _parse_ip_sloppy(text) is not None and ":" in text


def is_cidr(text: str) -> bool:
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or not bits.isascii() or len(bits) > 3:
        return False
    ip = _parse_ip_sloppy(addr)
    return ip is not None and int(bits) <= ip.max_prefixlen


_MAC_SEPARATED = re.compile(r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(?:\1[0-9a-fA-F]{2})*$")
_MAC_DOTTED = re.compile(r"^[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4})*$")


def is_mac(text: str) -> bool:
    """net.ParseMAC: 6, 8 or 20 octets, colon or dash separated pairs or dotted quads."""
    if _MAC_SEPARATED.match(text):
        return len(text) + 1 in (6 * 3, 8 * 3, 20 * 3)
    if _MAC_DOTTED.match(text):
        return len(text) + 1 in (6 * 5 // 2, 8 * 5 // 2, 20 * 5 // 2)
    return False


def _hostname_shape(text: str) -> str:
    # strfmt's pattern uses \p{S} and \p{L}; map other code points onto stand-ins Python's re handles
    out = []
    for ch in text:
        if ch.isascii() and (ch.isalnum() or ch in "-."):
            out.append(ch)
        else:
            cat = unicodedata.category(ch)
            out.append("a" if cat.startswith("L") else "#" if cat.startswith("S") else "!")
    return "".join(out)


_X = r"[a-zA-Z0-9#a]"
_HOSTNAME = re.compile(
    rf"^({_X}((-?{_X}{{0,62}})?)|({_X}(([a-zA-Z0-9\-#]{{0,61}}{_X})?)(\.)){{1,}}([a-zA-Z]){{2,63}})$"
)


def is_hostname(text: str) -> bool:
    if not _HOSTNAME.match(_hostname_shape(text)) or len(text.encode()) > 255:
        return False
    return all(len(p.encode()) <= 63 for p in text.split("."))


def is_request_uri(text: str) -> bool:
    """url.ParseRequestURI: an absolute URI or an absolute path."""
    try:
        parse_request_uri(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ mail


_ATEXT = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\U0010ffff]"
_DOT_ATOM = rf"{_ATEXT}+(?:\.{_ATEXT}+)*"
_QUOTED = r'"(?:[^"\\\r\n]|\\.)*"'
_ADDR_SPEC = rf"(?:{_DOT_ATOM}|{_QUOTED})@(?:{_DOT_ATOM}|\[[^\[\]\\\r\n]*\])"
_WORD = rf"(?:{_DOT_ATOM}|{_QUOTED})"
_EMAIL = re.compile(rf"^\s*(?:{_ADDR_SPEC}|(?:{_WORD}(?:\s+{_WORD})*\s*)?<{_ADDR_SPEC}>)\s*$")


def is_email(text: str) -> bool:
    """net/mail.ParseAddress accepts `user@host` and `Name <user@host>`."""
    return bool(_EMAIL.match(text))


# ------------------------------------------------------------------ identifiers


def _uuid(version: str) -> re.Pattern[str]:
    third = f"{version}[0-9a-f]{{3}}" if version else "[0-9a-f]{4}"
    fourth = "[89ab][0-9a-f]{3}" if version in ("4", "5") else "[0-9a-f]{4}"
    return re.compile(rf"^[0-9a-f]{{8}}-?[0-9a-f]{{4}}-?{third}-?{fourth}-?[0-9a-f]{{12}}$", re.IGNORECASE)


def _isbn10(text: str) -> bool:
    s = re.sub(r"[\s-]", "", text)
    if not re.match(r"^(?:[0-9]{9}X|[0-9]{10})$", s):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(s))
    return total % 11 == 0


def _isbn13(text: str) -> bool:
    s = re.sub(r"[\s-]", "", text)
    if not re.match(r"^(?:[0-9]{13})$", s):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s[:12]))
    return (10 - total % 10) % 10 == int(s[12])


_CARD = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}"
    r"|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}"
    r"|6[27][0-9]{14})$"
)


def _creditcard(text: str) -> bool:
    digits = re.sub(r"[^0-9]", "", text)
    if not _CARD.match(digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        d = int(c)
        if double:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        double = not double
    return total % 10 == 0


_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGB = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)$")

_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(re.fullmatch(r"[0-9a-fA-F]{24}", s)),
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": is_mac,
    "uuid": lambda s: bool(_uuid("").match(s)),
    "uuid3": lambda s: bool(_uuid("3").match(s)),
    "uuid4": lambda s: bool(_uuid("4").match(s)),
    "uuid5": lambda s: bool(_uuid("5").match(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": lambda s: len(s) == 11 and bool(re.match(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", s)),
    "hexcolor": lambda s: bool(re.match(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s)),
    "rgbcolor": lambda s: bool(_RGB.match(s)),
    "byte": is_base64,
    "password": lambda s: True,
    "date": is_date,
    "duration": is_duration,
    "datetime": is_datetime,
}
