"""Jittered exponential backoff, as client-go's reflector uses between failed LIST/WATCH
attempts (800 ms doubling to 30 s, up to 100 % jitter, reset after two quiet minutes)."""

from __future__ import annotations

import random
import time


class Backoff:
    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or maximum < initial or factor < 1 or jitter < 0:
            raise ValueError("backoff needs 0 < initial <= maximum, factor >= 1 and jitter >= 0")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self._current = initial
        self._last = 0.0

    def next(self) -> float:
        """The next delay to sleep; each call grows the base delay up to `maximum`."""
        now = time.monotonic()
        if self._last and now - self._last > self.reset_after:
            self._current = self.initial
        self._last = now
        base = self._current
        self._current = min(self._current * self.factor, self.maximum)
        return base + self._rng.random() * base * self.jitter

    def reset(self) -> None:
        self._current = self.initial
        self._last = 0.0
