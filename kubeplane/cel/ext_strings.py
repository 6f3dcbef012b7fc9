"""cel-go's strings extension at the version Kubernetes 1.32 enables (ext.Strings v2:
charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim,
join, strings.quote) and Kubernetes' regex library (find, findAll). Indexes count code
points, as in cel-go."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .regex import RegexError, compile_re2
from .registry import Registry
from .values import CelError

Cost = Callable[[int], None]


def _charge(cost: Cost, size: int) -> None:
    cost(1 + size // 10)


def _char_at(text: str, i: int, *, cost: Cost) -> str:
    _charge(cost, len(text))
    if i < 0 or i > len(text):
        raise CelError(f"index out of range: {i}")
    return text[i : i + 1]


def _index_of(text: str, sub: str, offset: int | None = None, *, cost: Cost) -> int:
    _charge(cost, len(text))
    if offset is None:
        return text.find(sub)
    if sub == "":
        return offset
    if offset < 0 or offset >= len(text):
        raise CelError(f"index out of range: {offset}")
    return text.find(sub, offset)


def _last_index_of(text: str, sub: str, offset: int | None = None, *, cost: Cost) -> int:
    _charge(cost, len(text))
    if offset is None:
        return text.rfind(sub)
    if sub == "":
        return offset
    if offset < 0 or offset >= len(text):
        raise CelError(f"index out of range: {offset}")
    return text.rfind(sub, 0, offset + len(sub))


def _ascii_case(upper: bool) -> Callable[..., str]:
    table = str.maketrans(
        "abcdefghijklmnopqrstuvwxyz" if upper else "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if upper else "abcdefghijklmnopqrstuvwxyz",
    )

    def impl(text: str, *, cost: Cost) -> str:
        _charge(cost, len(text))
        return text.translate(table)

    return impl


def _replace(text: str, old: str, new: str, n: int = -1, *, cost: Cost) -> str:
    _charge(cost, len(text) + len(new))
    if n == 0:
        return text
    if old == "":
        # Go's strings.Replace with an empty `old` inserts `new` around every code point
        parts = list(text)
        limit = len(parts) + 1 if n < 0 else min(n, len(parts) + 1)
        out = []
        for i in range(len(parts) + 1):
            if i < limit:
                out.append(new)
            if i < len(parts):
                out.append(parts[i])
        return "".join(out)
    return text.replace(old, new, n if n >= 0 else -1)


def _split(text: str, sep: str, n: int = -1, *, cost: Cost) -> list[str]:
    _charge(cost, len(text))
    if n == 0:
        return []
    if sep == "":
        chars = list(text)
        if 0 < n < len(chars):
            return [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    if n < 0:
        return text.split(sep)
    return text.split(sep, n - 1)


def _substring(text: str, start: int, end: int | None = None, *, cost: Cost) -> str:
    _charge(cost, len(text))
    stop = len(text) if end is None else end
    if start < 0 or start > len(text):
        raise CelError(f"index out of range: {start}")
    if stop < 0 or stop > len(text):
        raise CelError(f"index out of range: {stop}")
    if start > stop:
        raise CelError(f"invalid substring range. start: {start}, end: {stop}")
    return text[start:stop]


# unicode.IsSpace, which Go's strings.TrimSpace uses
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def _trim(text: str, *, cost: Cost) -> str:
    _charge(cost, len(text))
    return text.strip(_GO_SPACE)


def _join(items: list[Any], sep: str = "", *, cost: Cost) -> str:
    _charge(cost, sum(len(s) for s in items if isinstance(s, str)))
    if not all(isinstance(s, str) for s in items):
        raise CelError("join: list elements must be strings")
    return sep.join(items)


_QUOTE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _quote(text: str, *, cost: Cost) -> str:
    _charge(cost, len(text))
    return '"' + "".join(_QUOTE_ESCAPES.get(ch, ch) for ch in text) + '"'


def _find(text: str, pattern: str, *, cost: Cost) -> str:
    _charge(cost, len(text))
    try:
        found = compile_re2(pattern).find(text)
    except RegexError as exc:
        raise CelError(str(exc)) from None
    return found or ""


def _find_all(text: str, pattern: str, n: int = -1, *, cost: Cost) -> list[str]:
    _charge(cost, len(text))
    try:
        found = compile_re2(pattern).find_all(text)
    except RegexError as exc:
        raise CelError(str(exc)) from None
    if n == 0:
        return []
    return found if n < 0 else found[:n]


def register(r: Registry) -> None:
    r.member("charAt", "string, int", "string", _char_at, charged=True)
    r.member("indexOf", "string, string", "int", _index_of, charged=True)
    r.member("indexOf", "string, string, int", "int", _index_of, charged=True)
    r.member("lastIndexOf", "string, string", "int", _last_index_of, charged=True)
    r.member("lastIndexOf", "string, string, int", "int", _last_index_of, charged=True)
    r.member("lowerAscii", "string", "string", _ascii_case(upper=False), charged=True)
    r.member("upperAscii", "string", "string", _ascii_case(upper=True), charged=True)
    r.member("replace", "string, string, string", "string", _replace, charged=True)
    r.member("replace", "string, string, string, int", "string", _replace, charged=True)
    r.member("split", "string, string", "list(string)", _split, charged=True)
    r.member("split", "string, string, int", "list(string)", _split, charged=True)
    r.member("substring", "string, int", "string", _substring, charged=True)
    r.member("substring", "string, int, int", "string", _substring, charged=True)
    r.member("trim", "string", "string", _trim, charged=True)
    r.member("join", "list(string)", "string", _join, charged=True)
    r.member("join", "list(string), string", "string", _join, charged=True)
    r.add("strings.quote", "string", "string", _quote, charged=True)
    r.member("find", "string, string", "string", _find, charged=True)
    r.member("findAll", "string, string", "list(string)", _find_all, charged=True)
    r.member("findAll", "string, string, int", "list(string)", _find_all, charged=True)
