"""Label selectors, parsed once and matched locally (cached lists, predicates,
providers). The text syntax is the API server's: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
`a notin (x,y)`, `a`, `!a`, joined by commas."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "in" | "notin" | "exists" | "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    text: str = ""

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def disjoint_from(self, other: LabelSelector) -> bool:
        """Provably no label set matches both (one requires a key's value in a set the other
        excludes, or a key one requires the other forbids); False when they may overlap."""
        for a in self.requirements:
            for b in other.requirements:
                if a.key != b.key:
                    continue
                if a.op == "in" and b.op == "in" and not (a.values & b.values):
                    return True
                if {a.op, b.op} == {"in", "notin"}:
                    inn, out = (a, b) if a.op == "in" else (b, a)
                    if inn.values <= out.values:
                        return True
                if {a.op, b.op} in ({"exists", "!exists"}, {"in", "!exists"}):
                    return True
        return False

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """Parse the text form; a malformed selector raises ValueError naming the part."""
        if not text or not text.strip():
            return cls((), "")
        reqs: list[Requirement] = []
        for part in _split(text):
            if m := _SET_RE.match(part):
                values = frozenset(v.strip() for v in m["values"].split(",") if v.strip())
                if not values:
                    raise ValueError(f"label selector {text!r}: {part.strip()!r} needs at least one value")
                reqs.append(Requirement(m["key"], m["op"], values))
            elif m := _EQ_RE.match(part):
                reqs.append(Requirement(m["key"], "notin" if m["op"] == "!=" else "in", frozenset([m["value"]])))
            elif m := _EXISTS_RE.match(part):
                reqs.append(Requirement(m["key"], "!exists" if m["neg"] else "exists"))
            else:
                raise ValueError(f"label selector {text!r}: cannot parse {part.strip()!r}")
        return cls(tuple(reqs), text.strip())

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """From a metav1.LabelSelector (`matchLabels`, `matchExpressions`)."""
        if not selector:
            return cls((), "")
        parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
        for expr in selector.get("matchExpressions") or []:
            key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
            if op == "In":
                parts.append(f"{key} in ({','.join(values)})")
            elif op == "NotIn":
                parts.append(f"{key} notin ({','.join(values)})")
            elif op == "Exists":
                parts.append(str(key))
            elif op == "DoesNotExist":
                parts.append(f"!{key}")
            else:
                raise ValueError(f"label selector: unknown operator {op!r}")
        return cls.parse(",".join(parts))


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    if any(not p.strip() for p in parts):
        raise ValueError(f"label selector {text!r}: empty requirement")
    return parts
