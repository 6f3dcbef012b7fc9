"""A linear-time matcher for RE2 syntax (what cel-go's `matches`, `find`, `findAll` use).

Python's `re` backtracks: `'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'.matches('^(a+)+$')` would take
minutes and hold the server. RE2 guarantees time linear in the input; so does this: the
pattern is compiled to an NFA and simulated (Thompson's construction; a Pike VM with
thread priorities for leftmost-first match extents), costing O(len(text) * len(pattern)).
regex.py uses Python's `re` for patterns that cannot blow up and this for the others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_REPEAT = 1000  # RE2 rejects larger repeat counts


class PatternError(ValueError):
    pass


# ------------------------------------------------------------------ syntax tree


@dataclass
class _Char:
    test: Callable[[str], bool]


@dataclass
class _Assert:
    kind: str  # ^ $ A z b B (multiline ^/$ are "mbol"/"meol")


@dataclass
class _Cat:
    items: list[object] = field(default_factory=list)


@dataclass
class _Alt:
    options: list[object]


@dataclass
class _Repeat:
    node: object
    low: int
    high: int | None
    greedy: bool


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGIT = frozenset("0123456789")
_SPACE = frozenset("\t\n\f\r ")
_POSIX = {
    "alpha": [("a", "z"), ("A", "Z")],
    "digit": [("0", "9")],
    "alnum": [("a", "z"), ("A", "Z"), ("0", "9")],
    "upper": [("A", "Z")],
    "lower": [("a", "z")],
    "space": [("\t", "\r"), (" ", " ")],
    "xdigit": [("0", "9"), ("a", "f"), ("A", "F")],
    "word": [("0", "9"), ("a", "z"), ("A", "Z"), ("_", "_")],
    "punct": [("!", "/"), (":", "@"), ("[", "`"), ("{", "~")],
    "blank": [("\t", "\t"), (" ", " ")],
    "cntrl": [("\x00", "\x1f"), ("\x7f", "\x7f")],
    "print": [(" ", "~")],
    "graph": [("!", "~")],
    "ascii": [("\x00", "\x7f")],
}
_SIMPLE_ESCAPES = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_PERL_CLASSES = {"d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True)}
_PERL_CLASSES |= {"s": (_SPACE, False), "S": (_SPACE, True)}


def _in_ranges(ranges: list[tuple[str, str]], ch: str, fold: bool) -> bool:
    candidates = {ch, ch.lower(), ch.upper()} if fold else (ch,)
    return any(lo <= c <= hi for c in candidates for lo, hi in ranges)


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.flags = {"i": False, "s": False, "m": False, "U": False}

    def error(self, what: str) -> PatternError:
        return PatternError(f"error parsing regexp: {what}")

    def parse(self) -> object:
        node = self.alternation()
        if self.i < len(self.p):
            raise self.error(f"unexpected ): `{self.p}`")
        return node

    def alternation(self) -> object:
        options = [self.concatenation()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self.concatenation())
        return options[0] if len(options) == 1 else _Alt(options)

    def concatenation(self) -> object:
        cat = _Cat()
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.atom()
            if atom is not None:  # (None: a flag setting like (?i))
                cat.items.append(self.quantified(atom))
        return cat

    def quantified(self, atom: object) -> object:
        p = self.p
        if self.i >= len(p):
            return atom
        ch = p[self.i]
        low: int
        high: int | None
        if ch in "*+?":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
            self.i += 1
        elif ch == "{":
            bounds = self.repeat_bounds()
            if bounds is None:
                return atom
            low, high = bounds
        else:
            return atom
        greedy = True
        if self.i < len(p) and p[self.i] == "?":
            greedy = False
            self.i += 1
        if self.flags["U"]:
            greedy = not greedy
        if self.i < len(p) and p[self.i] in "*+?{" and (p[self.i] != "{" or self.peek_repeat()):
            raise self.error(f"invalid nested repetition operator: `{p[self.i - 1]}{p[self.i]}`")
        return _Repeat(atom, low, high, greedy)

    def peek_repeat(self) -> bool:
        saved = self.i
        try:
            return self.repeat_bounds() is not None
        finally:
            self.i = saved

    def repeat_bounds(self) -> tuple[int, int | None] | None:
        p, start = self.p, self.i
        end = p.find("}", start)
        if end < 0:
            return None
        body = p[start + 1 : end]
        low_text, comma, high_text = body.partition(",")
        if not low_text.isdigit() or (high_text and not high_text.isdigit()):
            return None
        low = int(low_text)
        high = (int(high_text) if high_text else None) if comma else low
        if low > MAX_REPEAT or (high is not None and (high > MAX_REPEAT or high < low)):
            raise self.error(f"invalid repeat count: `{p[start : end + 1]}`")
        self.i = end + 1
        return low, high

    def atom(self) -> object | None:
        p = self.p
        ch = p[self.i]
        if ch == "(":
            return self.group()
        if ch == "[":
            return self.char_class()
        if ch in "*+?":
            raise self.error(f"missing argument to repetition operator: `{ch}`")
        self.i += 1
        if ch == ".":
            dotall = self.flags["s"]
            return _Char(lambda c: True) if dotall else _Char(lambda c: c != "\n")
        if ch == "^":
            return _Assert("mbol" if self.flags["m"] else "A")
        if ch == "$":
            return _Assert("meol" if self.flags["m"] else "z")
        if ch == "\\":
            return self.escape()
        return self.literal(ch)

    def literal(self, ch: str) -> _Char:
        if self.flags["i"] and ch.lower() != ch.upper():
            folded = {ch, ch.lower(), ch.upper()}
            return _Char(lambda c: c in folded)
        return _Char(lambda c: c == ch)

    def group(self) -> object | None:
        p = self.p
        self.i += 1
        if p.startswith("?", self.i):
            self.i += 1
            if p.startswith(("P<", "<"), self.i):
                end = p.find(">", self.i)
                if end < 0:
                    raise self.error(f"invalid named capture: `{p}`")
                self.i = end + 1
            elif p.startswith(("=", "!", "<=", "<!", ">"), self.i):
                raise self.error(f"invalid or unsupported Perl syntax: `(?{p[self.i]}`")
            else:
                return self.flag_group()
        return self.group_body()

    def group_body(self) -> object:
        saved = dict(self.flags)
        node = self.alternation()
        self.flags = saved
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise self.error(f"missing closing ): `{self.p}`")
        self.i += 1
        return node

    def flag_group(self) -> object | None:
        p = self.p
        on = True
        new = dict(self.flags)
        while self.i < len(p) and p[self.i] not in ":)":
            c = p[self.i]
            if c == "-":
                on = False
            elif c in new:
                new[c] = on
            else:
                raise self.error(f"invalid or unsupported Perl syntax: `(?{c}`")
            self.i += 1
        if self.i >= len(p):
            raise self.error(f"missing closing ): `{p}`")
        if p[self.i] == ")":  # (?i) applies to the rest of the enclosing group
            self.i += 1
            self.flags = new
            return None
        self.i += 1  # ":"
        saved = self.flags
        self.flags = new
        node = self.alternation()
        self.flags = saved
        if self.i >= len(p) or p[self.i] != ")":
            raise self.error(f"missing closing ): `{p}`")
        self.i += 1
        return node

    def escape(self) -> object:
        p = self.p
        if self.i >= len(p):
            raise self.error("trailing backslash at end of expression: ``")
        c = p[self.i]
        self.i += 1
        if c in _PERL_CLASSES:
            chars, negated = _PERL_CLASSES[c]
            return _Char(lambda ch: (ch in chars) != negated)
        if c in "bB":
            return _Assert(c)
        if c == "A":
            return _Assert("A")
        if c == "z":
            return _Assert("z")
        if c == "Q":
            end = p.find("\\E", self.i)
            text = p[self.i :] if end < 0 else p[self.i : end]
            self.i = len(p) if end < 0 else end + 2
            return _Cat([self.literal(t) for t in text])
        return self.literal(self.escaped_char(c))

    def escaped_char(self, c: str) -> str:
        p = self.p
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c == "x":
            if p.startswith("{", self.i):
                end = p.find("}", self.i)
                digits = p[self.i + 1 : end] if end > 0 else ""
                self.i = end + 1
            else:
                digits = p[self.i : self.i + 2]
                self.i += 2
            try:
                return chr(int(digits, 16))
            except ValueError:
                raise self.error(f"invalid escape sequence: `\\x{digits}`") from None
        if c in "01234567":
            digits = c
            while len(digits) < 3 and self.i < len(p) and p[self.i] in "01234567":
                digits += p[self.i]
                self.i += 1
            if c != "0" and len(digits) == 1:
                raise self.error(f"invalid escape sequence: `\\{c}`")
            return chr(int(digits, 8))
        if c in "pP":
            raise self.error(f"unsupported Unicode class escape: `\\{c}`")
        if c.isascii() and not c.isalnum():
            return c  # escaped punctuation
        raise self.error(f"invalid escape sequence: `\\{c}`")

    def char_class(self) -> _Char:
        p = self.p
        start = self.i
        self.i += 1
        negated = p.startswith("^", self.i)
        if negated:
            self.i += 1
        ranges: list[tuple[str, str]] = []
        sets: list[tuple[frozenset[str], bool]] = []
        first = True
        while True:
            if self.i >= len(p):
                raise self.error(f"missing closing ]: `{p[start:]}`")
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if p.startswith("[:", self.i):
                end = p.find(":]", self.i)
                name = p[self.i + 2 : end] if end > 0 else ""
                if name not in _POSIX:
                    raise self.error(f"invalid character class range: `{p[self.i : end + 2]}`")
                ranges.extend(_POSIX[name])
                self.i = end + 2
                continue
            self.i += 1
            if c == "\\":
                e = p[self.i] if self.i < len(p) else ""
                if e in _PERL_CLASSES:
                    self.i += 1
                    sets.append(_PERL_CLASSES[e])
                    continue
                self.i += 1
                c = self.escaped_char(e)
            lo = c
            if p.startswith("-", self.i) and self.i + 1 < len(p) and p[self.i + 1] != "]":
                self.i += 1
                hi = p[self.i]
                self.i += 1
                if hi == "\\":
                    hi = self.escaped_char(p[self.i])
                    self.i += 1
                if hi < lo:
                    raise self.error(f"invalid character class range: `{lo}-{hi}`")
                ranges.append((lo, hi))
            else:
                ranges.append((lo, lo))
        fold = self.flags["i"]

        def test(ch: str) -> bool:
            hit = _in_ranges(ranges, ch, fold) or any((ch in chars) != neg for chars, neg in sets)
            return hit != negated

        return _Char(test)


# ------------------------------------------------------------------ program


@dataclass
class Program:
    # ("char", test, _), ("split", first, second), ("jmp", to, _), ("assert", kind, _), ("match", _, _)
    ops: list[tuple[str, object, object]]


def _emit(node: object, ops: list[tuple[str, object, object]]) -> None:
    if isinstance(node, _Char):
        ops.append(("char", node.test, None))
    elif isinstance(node, _Assert):
        ops.append(("assert", node.kind, None))
    elif isinstance(node, _Cat):
        for item in node.items:
            _emit(item, ops)
    elif isinstance(node, _Alt):
        jumps = []
        for k, option in enumerate(node.options):
            if k < len(node.options) - 1:
                split = len(ops)
                ops.append(("split", split + 1, None))
                _emit(option, ops)
                jumps.append(len(ops))
                ops.append(("jmp", None, None))
                ops[split] = ("split", split + 1, len(ops))
            else:
                _emit(option, ops)
        for j in jumps:
            ops[j] = ("jmp", len(ops), None)
    elif isinstance(node, _Repeat):
        for _ in range(node.low):
            _emit(node.node, ops)
        if node.high is None:
            loop = len(ops)
            ops.append(("split", None, None))
            _emit(node.node, ops)
            ops.append(("jmp", loop, None))
            body, after = loop + 1, len(ops)
            ops[loop] = ("split", body, after) if node.greedy else ("split", after, body)
        else:
            holes = []
            for _ in range(node.high - node.low):
                holes.append(len(ops))
                ops.append(("split", None, None))
                _emit(node.node, ops)
            end = len(ops)
            for h in holes:
                ops[h] = ("split", h + 1, end) if node.greedy else ("split", end, h + 1)


def compile_pattern(pattern: str) -> Program:
    tree = _Parser(pattern).parse()
    ops: list[tuple[str, object, object]] = []
    _emit(tree, ops)
    ops.append(("match", None, None))
    if len(ops) > 100_000:
        raise PatternError("error parsing regexp: expression too large")
    return Program(ops)


def is_risky(pattern: str) -> bool:
    """Whether Python's backtracking engine could take super-linear time on this pattern:
    a repetition inside a repetition, or more than one unbounded repetition."""
    try:
        tree = _Parser(pattern).parse()
    except PatternError:
        return False
    unbounded = 0
    stack: list[tuple[object, bool]] = [(tree, False)]
    while stack:
        node, inside_repeat = stack.pop()
        if isinstance(node, _Repeat):
            if inside_repeat:
                return True
            if node.high is None or node.high > 1:
                unbounded += 1
            stack.append((node.node, node.high is None or node.high > 1))
        elif isinstance(node, _Cat):
            stack.extend((n, inside_repeat) for n in node.items)
        elif isinstance(node, _Alt):
            if inside_repeat:
                return True
            stack.extend((n, inside_repeat) for n in node.options)
    return unbounded > 1


# ------------------------------------------------------------------ simulation


def _assert_ok(kind: object, text: str, i: int) -> bool:
    n = len(text)
    if kind == "A":
        return i == 0
    if kind == "z":
        return i == n
    if kind == "mbol":
        return i == 0 or text[i - 1] == "\n"
    if kind == "meol":
        return i == n or text[i] == "\n"
    before = i > 0 and text[i - 1] in _WORD
    after = i < n and text[i] in _WORD
    return (before != after) == (kind == "b")


def _closure(prog: Program, pcs: list[int], text: str, i: int) -> list[int]:
    """The states reachable from `pcs` without consuming input, in priority order."""
    ops = prog.ops
    out: list[int] = []
    seen: set[int] = set()
    stack = list(reversed(pcs))
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op, a, b = ops[pc]
        if op == "jmp":
            stack.append(a)  # type: ignore[arg-type]
        elif op == "split":
            stack.append(b)  # type: ignore[arg-type]
            stack.append(a)  # type: ignore[arg-type]
        elif op == "assert":
            if _assert_ok(a, text, i):
                stack.append(pc + 1)
        else:
            out.append(pc)
    return out


def find(prog: Program, text: str, start: int = 0) -> tuple[int, int] | None:
    """The leftmost-first match at or after `start` (RE2/Perl semantics), as (start, end)."""
    ops = prog.ops
    threads: list[tuple[int, int]] = []  # (pc, match start) in priority order
    matched: tuple[int, int] | None = None
    for i in range(start, len(text) + 1):
        if matched is None:
            threads = threads + [(pc, i) for pc in _closure(prog, [0], text, i) if (pc, i) not in threads]
        if not threads:
            if matched is not None:
                break
            continue
        following: list[tuple[int, int]] = []
        seen: set[int] = set()
        for pc, begin in threads:
            op, test, _ = ops[pc]
            if op == "match":
                matched = (begin, i)
                break  # lower-priority threads lose to this match
            if i < len(text) and test(text[i]):  # type: ignore[operator]
                for nxt in _closure(prog, [pc + 1], text, i + 1):
                    if nxt not in seen:
                        seen.add(nxt)
                        following.append((nxt, begin))
        threads = following
    return matched


def search(prog: Program, text: str) -> bool:
    """Whether the pattern matches anywhere in `text` (Thompson simulation, no priorities)."""
    ops = prog.ops
    current: set[int] = set()
    for i in range(len(text) + 1):
        current |= set(_closure(prog, [0], text, i))
        if any(ops[pc][0] == "match" for pc in current):
            return True
        if i == len(text):
            return False
        ch = text[i]
        following: set[int] = set()
        for pc in current:
            op, test, _ = ops[pc]
            if op == "char" and test(ch):  # type: ignore[operator]
                following.update(_closure(prog, [pc + 1], text, i + 1))
        current = following
    return False
