"""Tokens of the CEL grammar (cel-spec langdef.md, "Syntax"): numbers with the int/uint/
double distinction, the string and bytes literal forms (quoted, triple quoted, raw) with
their escapes, identifiers and reserved words, operators, and `//` comments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .values import UInt


class CelSyntaxError(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


@dataclass(frozen=True)
class Token:
    kind: str  # INT UINT DOUBLE STRING BYTES IDENT OP EOF
    value: Any
    pos: int
    text: str


RESERVED = frozenset(
    {
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",")
_BRACKETS = "()[]{}"
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "?": "?",
    '"': '"',
    "'": "'",
    "`": "`",
}


def tokenize(src: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        ch = src[i]
        if ch in " \t\n\r\f":
            i += 1
            continue
        if src.startswith("//", i):
            end = src.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        start = i
        if ch.isdigit() or (ch == "." and i + 1 < n and src[i + 1].isdigit()):
            tok, i = _number(src, i)
            tokens.append(tok)
            continue
        if ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] == "_") and src[j].isascii():
                j += 1
            word = src[i:j]
            if j < n and src[j] in "'\"" and word.lower() in ("r", "b", "rb", "br"):
                tok, i = _string(src, j, raw="r" in word.lower(), is_bytes="b" in word.lower(), start=start)
                tokens.append(tok)
                continue
            if not word.isascii():
                raise CelSyntaxError(start, f"Syntax error: token recognition error at: '{ch}'")
            tokens.append(Token("IDENT", word, start, word))
            i = j
            continue
        if ch in "'\"":
            tok, i = _string(src, i, raw=False, is_bytes=False, start=start)
            tokens.append(tok)
            continue
        if ch in _BRACKETS:
            tokens.append(Token("OP", ch, start, ch))
            i += 1
            continue
        for op in _OPERATORS:
            if src.startswith(op, i):
                tokens.append(Token("OP", op, start, op))
                i += len(op)
                break
        else:
            if ch == "`":
                raise CelSyntaxError(start, "Syntax error: quoted identifiers (`...`) are not supported")
            raise CelSyntaxError(start, f"Syntax error: token recognition error at: '{ch}'")
    tokens.append(Token("EOF", None, n, "<EOF>"))
    return tokens


def _number(src: str, i: int) -> tuple[Token, int]:
    start, n = i, len(src)
    if src.startswith(("0x", "0X"), i):
        j = i + 2
        while j < n and src[j] in "0123456789abcdefABCDEF":
            j += 1
        if j == i + 2:
            raise CelSyntaxError(start, f"Syntax error: token recognition error at: '{src[i : i + 2]}'")
        value = int(src[i + 2 : j], 16)
        if j < n and src[j] in "uU":
            return Token("UINT", UInt(value), start, src[start : j + 1]), j + 1
        return Token("INT", value, start, src[start:j]), j
    j = i
    while j < n and src[j].isdigit():
        j += 1
    is_float = False
    if j < n and src[j] == "." and j + 1 < n and src[j + 1].isdigit():
        is_float = True
        j += 1
        while j < n and src[j].isdigit():
            j += 1
    if j < n and src[j] in "eE":
        k = j + 1
        if k < n and src[k] in "+-":
            k += 1
        if k < n and src[k].isdigit():
            is_float = True
            j = k
            while j < n and src[j].isdigit():
                j += 1
    text = src[start:j]
    if is_float:
        return Token("DOUBLE", float(text), start, text), j
    if j < n and src[j] in "uU":
        return Token("UINT", UInt(int(text)), start, src[start : j + 1]), j + 1
    return Token("INT", int(text), start, text), j


def _string(src: str, i: int, *, raw: bool, is_bytes: bool, start: int) -> tuple[Token, int]:
    quote = src[i]
    triple = src.startswith(quote * 3, i)
    delim = quote * 3 if triple else quote
    j = i + len(delim)
    n = len(src)
    out: list[str] = []
    out_bytes = bytearray()

    def emit_text(text: str) -> None:
        if is_bytes:
            out_bytes.extend(text.encode())
        else:
            out.append(text)

    while True:
        if j >= n:
            raise CelSyntaxError(start, f"Syntax error: token recognition error at: '{src[start:]}'")
        if src.startswith(delim, j):
            j += len(delim)
            break
        ch = src[j]
        if ch in "\r\n" and not triple:
            raise CelSyntaxError(start, f"Syntax error: token recognition error at: '{src[start:j]}'")
        if ch == "\\" and not raw:
            j, piece = _escape(src, j, start, is_bytes)
            if isinstance(piece, int):
                out_bytes.append(piece)
            else:
                emit_text(piece)
            continue
        emit_text(ch)
        j += 1
    text = src[start:j]
    if is_bytes:
        return Token("BYTES", bytes(out_bytes), start, text), j
    return Token("STRING", "".join(out), start, text), j


def _escape(src: str, j: int, start: int, is_bytes: bool) -> tuple[int, str | int]:
    """One backslash escape at src[j]; bytes literals take \\x and octal escapes as raw bytes."""
    bad = CelSyntaxError(start, f"Syntax error: token recognition error at: '{src[start : j + 2]}'")
    if j + 1 >= len(src):
        raise bad
    c = src[j + 1]
    if c in _ESCAPES:
        return j + 2, _ESCAPES[c]
    if c in "xX":
        digits = src[j + 2 : j + 4]
        if len(digits) != 2 or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise bad
        code = int(digits, 16)
        return j + 4, code if is_bytes else chr(code)
    if c in "uU":
        width = 4 if c == "u" else 8
        digits = src[j + 2 : j + 2 + width]
        if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise bad
        code = int(digits, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise CelSyntaxError(start, "Syntax error: invalid unicode code point")
        if is_bytes:
            raise bad
        return j + 2 + width, chr(code)
    if c in "0123":
        digits = src[j + 1 : j + 4]
        if len(digits) != 3 or not all(d in "01234567" for d in digits):
            raise bad
        code = int(digits, 8)
        return j + 4, code if is_bytes else chr(code)
    raise bad
