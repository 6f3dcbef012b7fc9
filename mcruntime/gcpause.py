"""The cyclic garbage collector paused around bulk decoding, and tuned for a serving process.

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


# The cyclic collector's thresholds while a manager runs: (generation-0 allocations, collections
# of 0 per collection of 1, of 1 per 2). An event or a reconcile allocates hundreds of dicts and
# lists (decoded JSON, desired objects), nearly all freed by reference counting when it ends;
# with Python's 700 a collection runs every few events, walks what is in flight at that moment
# and promotes it, so the older generations fill with dead work and get walked too. 10,000 lets
# most work finish between two collections; the rarer collections of the older generations
# still free what cycles there are (a caught exception's traceback, a finished task's).
# bench_fanout --shape kopf --cells echo, the management manager: ~570-590 collections taking
# 0.21-0.30 CPU-s of its 3.1-4.4 -> 13 taking 0.02-0.03 (gc.callbacks).
SERVING_THRESHOLDS = (10_000, 20, 20)


def tune_for_serving() -> None:
    """For a process about to serve: what start-up built (modules, classes, the wired manager)
    lives as long as the process, so it goes out of the collector's sight (a full collection
    walks only what the work allocates; before, each walked every module, class and function,
    a pause of tens of ms that every change in flight waited out); then SERVING_THRESHOLDS."""
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
