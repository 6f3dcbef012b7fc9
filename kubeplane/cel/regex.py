"""RE2 patterns (what cel-go's `matches`, `find` and `findAll` use), matched in linear time.

Patterns whose backtracking could explode (see re2.is_risky) run on re2.py's NFA; the rest
on Python's `re`, translated where the two dialects differ so it means what RE2 means:
`$` and `\\z` only match at the very end of the text, `\\d`/`\\w`/`\\s`/`\\b` are ASCII,
`\\Q...\\E` quotes, POSIX classes expand, `(?<name>` names a group. Perl features RE2
rejects (lookaround, backreferences, atomic groups) are rejected here too, with RE2's
wording."""

from __future__ import annotations

import re
from functools import lru_cache

from .re2 import PatternError, compile_pattern, find, is_risky, search

_POSIX = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": "\\t\\n\\v\\f\\r ",
    "xdigit": "0-9A-Fa-f",
    "word": "0-9A-Za-z_",
    "punct": "!-/:-@\\[-`{-~",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~",
    "graph": "!-~",
    "ascii": "\\x00-\\x7f",
}


class RegexError(ValueError):
    pass


# The re2 VM's answers are remembered per text (short texts only, a bounded number): schema
# patterns meet the same values over and over (quantities such as "500m", names), and the
# pure-Python VM costs tens of microseconds a match where a dict lookup costs tens of ns.
MEMO_TEXT_MAX = 256
MEMO_ENTRIES = 4096


class Matcher:
    """A compiled pattern: Python's `re` where it cannot backtrack badly, else the linear re2 VM."""

    def __init__(self, pattern: str) -> None:
        self._memo: dict[str, bool] = {}
        try:
            self._program = compile_pattern(pattern)  # validates RE2 syntax either way
        except PatternError as exc:
            raise RegexError(f"{exc}") from None
        self._python: re.Pattern[str] | None = None
        if not is_risky(pattern):
            try:
                self._python = re.compile(_translate(pattern), re.ASCII)
            except re.error as exc:
                raise RegexError(f"error parsing regexp: {exc.msg}: `{pattern}`") from None

    def matches(self, text: str) -> bool:
        if self._python is not None:
            return self._python.search(text) is not None
        memo = self._memo
        known = memo.get(text)
        if known is not None:
            return known
        found = search(self._program, text)
        if len(text) <= MEMO_TEXT_MAX:
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()  # a new working set: cheaper than tracking recency
            memo[text] = found
        return found

    def _span(self, text: str, pos: int) -> tuple[int, int] | None:
        if self._python is not None:
            m = self._python.search(text, pos)
            return m.span() if m else None
        return find(self._program, text, pos)

    def find(self, text: str) -> str | None:
        span = self._span(text, 0)
        return text[span[0] : span[1]] if span else None

    def find_all(self, text: str) -> list[str]:
        """Go's FindAllString: successive non-overlapping matches, an empty match right after
        the previous match skipped."""
        out: list[str] = []
        pos, last_end = 0, -1
        while pos <= len(text):
            span = self._span(text, pos)
            if span is None:
                break
            begin, end = span
            if end == begin:
                if begin != last_end:
                    out.append("")
                pos = end + 1
            else:
                out.append(text[begin:end])
                pos = end
            last_end = end
        return out


@lru_cache(maxsize=1024)
def compile_re2(pattern: str) -> Matcher:
    """Compile an RE2 pattern, raising RegexError with Go's `error parsing regexp: ...`."""
    return Matcher(pattern)


def _unsupported(what: str) -> RegexError:
    return RegexError(f"error parsing regexp: invalid or unsupported Perl syntax: `{what}`")


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    multiline = bool(re.search(r"\(\?[a-zA-Z]*m", pattern))
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise RegexError("error parsing regexp: trailing backslash at end of expression: ``")
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if nxt == "z" and not in_class:
                out.append("\\Z")
            elif nxt.isdigit() and nxt != "0" and not in_class:
                raise RegexError(f"error parsing regexp: invalid escape sequence: `\\{nxt}`")
            elif nxt in "pP":
                raise RegexError(f"unsupported regular expression class `\\{nxt}` (Unicode classes)")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2 : end] if end > 0 else ""
                negated = name.startswith("^")
                cls = _POSIX.get(name.lstrip("^"))
                if cls is None or negated:
                    raise RegexError(f"error parsing regexp: invalid character class range: `{pattern[i : end + 2]}`")
                out.append(cls)
                i = end + 2
                continue
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            # a ] right after [ or [^ is a literal
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):
                out.append("\\]")
                i += 1
            continue
        if ch == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2 : i + 4]
            if rest[:1] in ("=", "!", ">") or rest in ("<=", "<!"):
                raise _unsupported(pattern[i : i + 3 + (rest[:1] == "<")])
            if rest[:1] == "<":
                out.append("(?P<")
                i += 3
                continue
        if ch in "*+?}" and pattern.startswith("+", i + 1):
            raise RegexError(f"error parsing regexp: invalid nested repetition operator: `{ch}+`")
        if ch == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)
