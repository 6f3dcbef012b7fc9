"""The cyclic garbage collector paused around bulk decoding.

A LIST page of 500 objects decodes into tens of thousands of dicts and lists at once.
While they are alive, every generation-0 collection their allocation triggers traverses
them, and they survive into the older generations, whose growth then triggers full
collections of the whole heap: measured on a cold start of 30k objects, the collector
took ~45% of the manager's CPU until its caches synced (bench/bench_manager_memory.py).
Decoded JSON holds no reference cycles, so reference counting alone frees all of it and
the collector has nothing to find there. `paused()` turns it off for a synchronous
section (no `await` inside: no other task runs meanwhile) and back on after, only if it
was on (a process that turned it off keeps it off)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
