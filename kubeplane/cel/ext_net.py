"""Kubernetes' ip, cidr and url libraries: `ip('10.0.0.1').family()`,
`cidr('10.0.0.0/8').containsIP('10.1.2.3')`, `url('https://x.io:8443/p').getPort()`, ...
with Go's netip rules (no zones, no IPv4-mapped IPv6 addresses) and url.ParseRequestURI's."""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

from .gostr import go_quote
from .registry import Registry
from .values import CelError, Opaque

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class IP(Opaque):
    kind = "ip"
    type_name = "net.IP"
    __slots__ = ("addr",)

    def __init__(self, addr: Address) -> None:
        self.addr = addr

    def cel_equals(self, other: Any) -> bool:
        return isinstance(other, IP) and self.addr == other.addr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and self.addr == other.addr

    def __hash__(self) -> int:
        return hash(self.addr)


class CIDR(Opaque):
    kind = "cidr"
    type_name = "net.CIDR"
    __slots__ = ("addr", "bits")

    def __init__(self, addr: Address, bits: int) -> None:
        self.addr = addr
        self.bits = bits

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def cel_equals(self, other: Any) -> bool:
        return isinstance(other, CIDR) and (self.addr, self.bits) == (other.addr, other.bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and (self.addr, self.bits) == (other.addr, other.bits)

    def __hash__(self) -> int:
        return hash((self.addr, self.bits))

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"


def parse_addr(text: str) -> Address:
    """netip.ParseAddr plus the Kubernetes restrictions; ValueError with the library's wording."""
    if "%" in text:
        raise ValueError(f"IP address {go_quote(text)} with zone value is not allowed")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"IP Address {go_quote(text)} parse error during conversion from string") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return addr


_BITS = re.compile(r"^(0|[1-9][0-9]*)$")


def parse_cidr(text: str) -> CIDR:
    addr_text, slash, bits_text = text.partition("/")
    if not slash or not _BITS.match(bits_text):
        raise ValueError(f"network address parse error during conversion from string: bad CIDR {go_quote(text)}")
    try:
        addr = parse_addr(addr_text)
    except ValueError as exc:
        raise ValueError(f"network address parse error during conversion from string: {exc}") from None
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise ValueError(f"network address parse error during conversion from string: bad bits in {go_quote(text)}")
    return CIDR(addr, bits)


def _lift(parse: Any) -> Any:
    def impl(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise CelError(str(exc)) from None

    return impl


def _test(parse: Any) -> Any:
    def impl(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    return impl


def _is_link_local_multicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return (int(a) >> 112) & 0xFF0F == 0xFF02


def _is_global_unicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address) and str(a) in ("0.0.0.0", "255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


def _is_loopback(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("127.0.0.0/8")
    return a == ipaddress.IPv6Address("::1")


def _contains_ip(c: CIDR, other: Any) -> bool:
    addr = other.addr if isinstance(other, IP) else _lift(parse_addr)(other)
    return addr.version == c.addr.version and addr in c.network


def _contains_cidr(c: CIDR, other: Any) -> bool:
    inner = other if isinstance(other, CIDR) else _lift(parse_cidr)(other)
    if inner.addr.version != c.addr.version or inner.bits < c.bits:
        return False
    return inner.network.network_address in c.network


def _register_ip(r: Registry) -> None:
    r.add("ip", "string", "ip", lambda s: IP(_lift(parse_addr)(s)))
    r.add("isIP", "string", "bool", _test(parse_addr))
    r.add("ip.isCanonical", "string", "bool", lambda s: str(_lift(parse_addr)(s)) == s)
    r.add("string", "ip", "string", lambda ip: str(ip.addr))
    r.member("family", "ip", "int", lambda ip: ip.addr.version)
    r.member("isUnspecified", "ip", "bool", lambda ip: ip.addr.is_unspecified)
    r.member("isLoopback", "ip", "bool", lambda ip: _is_loopback(ip.addr))
    r.member("isLinkLocalMulticast", "ip", "bool", lambda ip: _is_link_local_multicast(ip.addr))
    r.member("isLinkLocalUnicast", "ip", "bool", lambda ip: ip.addr.is_link_local)
    r.member("isGlobalUnicast", "ip", "bool", lambda ip: _is_global_unicast(ip.addr))


def _register_cidr(r: Registry) -> None:
    r.add("cidr", "string", "cidr", _lift(parse_cidr))
    r.add("isCIDR", "string", "bool", _test(parse_cidr))
    r.add("string", "cidr", "string", str)
    r.member("containsIP", "cidr, ip", "bool", _contains_ip)
    r.member("containsIP", "cidr, string", "bool", _contains_ip)
    r.member("containsCIDR", "cidr, cidr", "bool", _contains_cidr)
    r.member("containsCIDR", "cidr, string", "bool", _contains_cidr)
    r.member("ip", "cidr", "ip", lambda c: IP(c.addr))
    r.member("masked", "cidr", "cidr", lambda c: CIDR(c.network.network_address, c.bits))
    r.member("prefixLength", "cidr", "int", lambda c: c.bits)


# ------------------------------------------------------------------ urls


class URL(Opaque):
    kind = "url"
    type_name = "kubernetes.URL"
    __slots__ = ("host", "path", "query", "raw", "scheme")

    def __init__(self, raw: str, scheme: str, host: str, path: str, query: str) -> None:
        self.raw, self.scheme, self.host, self.path, self.query = raw, scheme, host, path, query

    def cel_equals(self, other: Any) -> bool:
        return isinstance(other, URL) and self.raw == other.raw

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)


_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$", re.DOTALL)
_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^\[\]/?#@\s]*)(:[0-9]*)?$")


def parse_request_uri(text: str) -> URL:
    """url.ParseRequestURI: an absolute URI or an absolute path, no fragment handling."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ValueError(f"parse {go_quote(text)}: net/url: invalid control character in URL")
    rest, scheme = text, ""
    m = _SCHEME.match(text)
    if m:
        scheme, rest = m.group(1).lower(), m.group(2)
    elif not text.startswith("/"):
        raise ValueError(f"parse {go_quote(text)}: invalid URI for request")
    rest, _, query = rest.partition("?")
    host = ""
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        path = slash + path
        _, at, hostport = authority.rpartition("@")
        if not at:
            hostport = authority
        if not _HOST.match(hostport):
            raise ValueError(f"parse {go_quote(text)}: invalid character in host name")
        host = hostport
    elif scheme and not rest.startswith("/"):
        path = ""  # opaque, e.g. mailto:someone
    else:
        path = rest
    return URL(text, scheme, host, unquote(path), query)


def _hostname(u: URL) -> str:
    host = u.host
    if host.startswith("["):
        return host[1 : host.index("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(u: URL) -> str:
    host = u.host
    if host.startswith("["):
        after = host[host.index("]") + 1 :] if "]" in host else ""
        return after[1:] if after.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


def _query(u: URL) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in parse_qsl(u.query, keep_blank_values=True):
        out.setdefault(key, []).append(value)
    return out


def _register_url(r: Registry) -> None:
    r.add("url", "string", "url", _lift(parse_request_uri))
    r.add("isURL", "string", "bool", _test(parse_request_uri))
    r.member("getScheme", "url", "string", lambda u: u.scheme)
    r.member("getHost", "url", "string", lambda u: u.host)
    r.member("getHostname", "url", "string", _hostname)
    r.member("getPort", "url", "string", _port)
    r.member("getEscapedPath", "url", "string", lambda u: quote(u.path, safe="/:@!$&'()*+,;=-._~"))
    r.member("getQuery", "url", "map(string, list(string))", _query)


def register(r: Registry) -> None:
    _register_ip(r)
    _register_cidr(r)
    _register_url(r)
