"""Counting calls: how a test shows work done once, or not at all."""

from __future__ import annotations

from typing import Any

import pytest


def calls_to(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[tuple[Any, ...]]:
    """The positional arguments of every call of `owner.name` from now on (the function
    still runs and answers as before); `owner` is the module or class the caller looks
    the name up in."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(owner, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls
