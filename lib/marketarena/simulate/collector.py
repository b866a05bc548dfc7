"""Python's cyclic garbage collector kept off what a run holds for long: the objects alive when
episodes start (:func:`heap_frozen`) and a shard's log rows while it plays
(:func:`collector_paused`). Neither changes a log: they only spare full collections that walk
objects that cannot be garbage yet (docs/speed.md, docs/execution.md)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Every object alive when the episodes start (the modules, the market's inputs,
    supply_chain's embedding model) out of the cyclic collector's sight while they play
    (``gc.freeze``): they live as long as the run, and each full collection walked them all,
    0.2-0.5 s with the embedding model loaded, stalling every episode in flight (0.4 s of an LLM
    supply_chain episode's 1.5 s above its ideal). Given back to the collector afterwards
    (``gc.unfreeze``), so that a process running many simulations (the tests) keeps no garbage."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """Python's cyclic garbage collector paused while a shard of scripted games plays (``pause``:
    the unit is a shard): the shard keeps its games' log rows (millions of small objects) alive
    until it is written, and every full collection walks them all (a fifth of a tournament's
    time). The games themselves leave almost no cyclic garbage (553 objects in 1,200 games),
    collected after the shard."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
