"""Recursive-descent parser for the CEL grammar, with the precedence of cel-spec's
langdef.md:

    Expr    = Or ["?" Or ":" Expr]
    Or      = And {"||" And}            And = Rel {"&&" Rel}
    Rel     = Add {("<"|"<="|">="|">"|"=="|"!="|"in") Add}
    Add     = Mul {("+"|"-") Mul}       Mul = Unary {("*"|"/"|"%") Unary}
    Unary   = Member | "!"{"!"} Member | "-"{"-"} Member
    Member  = Primary {"." ["?"] IDENT ["(" args ")"] | "[" ["?"] Expr "]"}
    Primary = ["."] IDENT ["(" args ")"] | "(" Expr ")" | "[" list "]" | "{" map "}" | literal

Macros (has, all, exists, exists_one, map, filter, optMap, optFlatMap) are expanded here,
as cel-go's parser does, so a malformed macro call is a syntax error."""

from __future__ import annotations

from .lexer import RESERVED, CelSyntaxError, Token, tokenize
from .nodes import (
    And,
    Call,
    Comprehension,
    Conditional,
    Has,
    Ident,
    Index,
    ListLit,
    Literal,
    MapLit,
    Node,
    Or,
    Select,
)
from .values import INT64_MIN

MAX_DEPTH = 250  # cel-go's default parser recursion limit

_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}
_LITERAL_WORDS = {"true": True, "false": False, "null": None}
_ITERATION_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2, "map": (2, 3), "optMap": 2, "optFlatMap": 2}


def parse(src: str) -> Node:
    return _Parser(src).parse()


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.tokens = tokenize(src)
        self.i = 0
        self.depth = 0

    # ----------------------------------------------------------------- helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def at(self, op: str) -> bool:
        t = self.tokens[self.i]
        return t.kind == "OP" and t.value == op

    def advance(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def expect(self, op: str) -> Token:
        if not self.at(op):
            self.fail_mismatch(f"'{op}'")
        return self.advance()

    def fail_mismatch(self, expecting: str) -> None:
        t = self.tok
        text = t.text if t.kind != "EOF" else "<EOF>"
        raise CelSyntaxError(t.pos, f"Syntax error: mismatched input '{text}' expecting {expecting}")

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CelSyntaxError(pos, f"expression recursion limit exceeded: {MAX_DEPTH}")

    # ----------------------------------------------------------------- grammar
    def parse(self) -> Node:
        node = self.expr()
        if self.tok.kind != "EOF":
            self.fail_mismatch("<EOF>")
        return node

    def expr(self) -> Node:
        self.enter(self.tok.pos)
        try:
            cond = self.or_expr()
            if self.at("?"):
                pos = self.advance().pos
                then = self.or_expr()
                self.expect(":")
                otherwise = self.expr()
                return Conditional(pos, cond, then, otherwise)
            return cond
        finally:
            self.depth -= 1

    def or_expr(self) -> Node:
        left = self.and_expr()
        while self.at("||"):
            pos = self.advance().pos
            left = Or(pos, left, self.and_expr())
        return left

    def and_expr(self) -> Node:
        left = self.relation()
        while self.at("&&"):
            pos = self.advance().pos
            left = And(pos, left, self.relation())
        return left

    def relation(self) -> Node:
        left = self.addition()
        while True:
            t = self.tok
            if t.kind == "OP" and t.value in _RELATIONS:
                self.advance()
                left = Call(t.pos, _RELATIONS[t.value], None, [left, self.addition()])
            elif t.kind == "IDENT" and t.value == "in":
                self.advance()
                left = Call(t.pos, "@in", None, [left, self.addition()])
            else:
                return left

    def addition(self) -> Node:
        left = self.multiplication()
        while self.tok.kind == "OP" and self.tok.value in _ADDITIVE:
            t = self.advance()
            left = Call(t.pos, _ADDITIVE[t.value], None, [left, self.multiplication()])
        return left

    def multiplication(self) -> Node:
        left = self.unary()
        while self.tok.kind == "OP" and self.tok.value in _MULTIPLICATIVE:
            t = self.advance()
            left = Call(t.pos, _MULTIPLICATIVE[t.value], None, [left, self.unary()])
        return left

    def unary(self) -> Node:
        if self.at("!"):
            ops = []
            while self.at("!"):
                ops.append(self.advance().pos)
            operand = self.member()
            for pos in reversed(ops):
                operand = Call(pos, "!_", None, [operand])
            return operand
        if self.at("-"):
            ops = []
            while self.at("-"):
                ops.append(self.advance().pos)
            # `-` directly before a number literal is part of the literal (so -9223372036854775808 is an int)
            t = self.tok
            if t.kind in ("INT", "DOUBLE"):
                self.advance()
                value = -t.value
                ops.pop()
                node: Node = self._number_literal(t, value)
                node = self.member_suffix(node)
            else:
                node = self.member()
            for pos in reversed(ops):
                node = Call(pos, "-_", None, [node])
            return node
        return self.member()

    def _number_literal(self, t: Token, value: object) -> Node:
        if t.kind == "INT" and not INT64_MIN <= int(value) <= 2**63 - 1:  # type: ignore[call-overload]
            raise CelSyntaxError(t.pos, f"error parsing int literal: value out of range: {t.text}")
        return Literal(t.pos, value)

    def member(self) -> Node:
        return self.member_suffix(self.primary())

    def member_suffix(self, node: Node) -> Node:
        while True:
            if self.at("."):
                dot = self.advance()
                optional = False
                if self.at("?"):
                    self.advance()
                    optional = True
                name_tok = self.tok
                if name_tok.kind != "IDENT":
                    self.fail_mismatch("IDENTIFIER")
                self.advance()
                name = name_tok.value
                if self.at("(") and not optional:
                    self._check_ident(name_tok)
                    call_pos = self.advance().pos
                    args = self.args(")")
                    node = self.member_call(name, node, args, call_pos)
                else:
                    self._check_ident(name_tok)
                    node = Select(dot.pos, node, name, optional)
            elif self.at("["):
                pos = self.advance().pos
                optional = False
                if self.at("?"):
                    self.advance()
                    optional = True
                index = self.expr()
                self.expect("]")
                node = Index(pos, node, index, optional)
            else:
                return node

    def primary(self) -> Node:
        t = self.tok
        if t.kind in ("INT", "DOUBLE"):
            self.advance()
            return self._number_literal(t, t.value)
        if t.kind in ("UINT", "STRING", "BYTES"):
            self.advance()
            return Literal(t.pos, t.value)
        if t.kind == "IDENT" or self.at("."):
            leading_dot = False
            if self.at("."):
                self.advance()
                leading_dot = True
                t = self.tok
                if t.kind != "IDENT":
                    self.fail_mismatch("IDENTIFIER")
            self.advance()
            if t.value in _LITERAL_WORDS and not leading_dot:
                return Literal(t.pos, _LITERAL_WORDS[t.value])
            self._check_ident(t)
            if self.at("("):
                call_pos = self.advance().pos
                args = self.args(")")
                return self.global_call(t.value, args, call_pos)
            if self.at("{"):
                raise CelSyntaxError(self.tok.pos, "message construction (Type{...}) is not supported in CRD rules")
            return Ident(t.pos, t.value)
        if self.at("("):
            self.advance()
            node = self.expr()
            self.expect(")")
            return node
        if self.at("["):
            return self.list_literal()
        if self.at("{"):
            return self.map_literal()
        self.fail_mismatch("an expression")
        raise AssertionError("unreachable")

    def _check_ident(self, t: Token) -> None:
        if t.value in RESERVED or t.value == "in" or t.value in _LITERAL_WORDS:
            raise CelSyntaxError(t.pos, f"Syntax error: reserved identifier: {t.value}")

    def args(self, close: str) -> list[Node]:
        out: list[Node] = []
        if self.at(close):
            self.advance()
            return out
        while True:
            out.append(self.expr())
            if self.at(","):
                self.advance()
                continue
            self.expect(close)
            return out

    def list_literal(self) -> Node:
        pos = self.expect("[").pos
        elements: list[Node] = []
        optional: set[int] = set()
        while not self.at("]"):
            if self.at("?"):
                self.advance()
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.at(","):
                break
            self.advance()
        self.expect("]")
        return ListLit(pos, elements, frozenset(optional))

    def map_literal(self) -> Node:
        pos = self.expect("{").pos
        entries: list[tuple[Node, Node, bool]] = []
        while not self.at("}"):
            optional = False
            if self.at("?"):
                self.advance()
                optional = True
            key = self.expr()
            self.expect(":")
            value = self.expr()
            entries.append((key, value, optional))
            if not self.at(","):
                break
            self.advance()
        self.expect("}")
        return MapLit(pos, entries)

    # ----------------------------------------------------------------- macros
    # (calls are positioned at their "(", as cel-go reports them)
    def global_call(self, name: str, args: list[Node], call_pos: int) -> Node:
        if name == "has" and len(args) == 1:
            arg = args[0]
            if not isinstance(arg, Select) or arg.optional:
                raise CelSyntaxError(arg.pos, "invalid argument to has() macro")
            return Has(call_pos, arg.operand, arg.field)
        return Call(call_pos, name, None, args)

    def member_call(self, name: str, target: Node, args: list[Node], call_pos: int) -> Node:
        arity = _ITERATION_MACROS.get(name)
        if arity is not None and (len(args) == arity or (isinstance(arity, tuple) and len(args) in arity)):
            var = args[0]
            if not isinstance(var, Ident):
                raise CelSyntaxError(var.pos, "argument must be a simple name")
            if name == "map" and len(args) == 3:
                return Comprehension(call_pos, "map", target, var.name, args[2], filter=args[1])
            return Comprehension(call_pos, name, target, var.name, args[1])
        return Call(call_pos, name, target, args)
