"""The live progress line of a ``simulate`` run (rich), or nothing when stderr is not a terminal.

One line per instance (a run simulates one instance; ``dvc repro`` runs them one stage at a
time)::

    crash ━━━━━━━╸━━━━━━━━  41/96 · 28 in flight · 2,313 calls · 1.9M+46k tok · $0.31 · 120 cached 0:00:37

Every process of the run (the main one, each worker) counts into its own slot of a shared array
(:class:`Counters`: episodes finished, LLM calls, calls in flight, tokens, dollars, cache hits);
a worker's event loop copies its LLM client's totals there every quarter second
(:func:`publish`), the main process sums the slots and rich redraws the line. Ray tasks do not
report (a cluster's processes share no memory with the driver): the line then counts nothing
until the run ends. When stderr is not a terminal (DVC's logs, a CI job) no line is drawn and
``simulate`` prints one plain line per finished unit instead, as before.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import threading
from contextlib import contextmanager

FIELDS = ("episodes", "calls", "in_flight", "prompt_tokens", "completion_tokens", "cost_usd",
          "cache_hits")
EPISODES, CALLS, IN_FLIGHT, PROMPT, COMPLETION, COST, HITS = range(len(FIELDS))


class Counters:
    """``slots`` rows of :data:`FIELDS` in shared memory (a ``multiprocessing.Array``, lock-free:
    each slot has one writer). Picklable into spawned workers as an initializer argument."""

    def __init__(self, slots: int = 1, array=None):
        self.slots = slots
        self.array = array if array is not None else multiprocessing.get_context("spawn").Array(
            "d", slots * len(FIELDS), lock=False)

    def add(self, slot: int, field: int, value: float) -> None:
        self.array[slot * len(FIELDS) + field] += value

    def set(self, slot: int, values: dict[int, float]) -> None:
        for field, value in values.items():
            self.array[slot * len(FIELDS) + field] = value

    def total(self) -> list[float]:
        n = len(FIELDS)
        return [sum(self.array[s * n + f] for s in range(self.slots)) for f in range(n)]


def live(stream=None) -> bool:
    """Whether a live line belongs on ``stream`` (stderr): a terminal, not a DVC log."""
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def _describe(total: list[float], llm: bool) -> str:
    if not llm:
        return ""
    return (f"{total[IN_FLIGHT]:,.0f} in flight · {total[CALLS]:,.0f} calls · "
            f"{_short(total[PROMPT])}+{_short(total[COMPLETION])} tok · ${total[COST]:,.2f} · "
            f"{total[HITS]:,.0f} cached")


def _short(n: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


@contextmanager
def display(instance: str, episodes: int, counters: Counters, llm: bool, enabled: bool = True):
    """The live line while the block runs (redrawn four times a second from ``counters``);
    nothing when not ``enabled`` or stderr is not a terminal."""
    if not (enabled and live()):
        yield
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeRemainingColumn)

    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=16),
                   MofNCompleteColumn(), TextColumn("{task.fields[llm]}"), TimeRemainingColumn(),
                   console=Console(stderr=True), refresh_per_second=4)
    task = bar.add_task(instance, total=episodes, llm="")
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(0.25):
            total = counters.total()
            line = _describe(total, llm)
            bar.update(task, completed=total[EPISODES], llm=f"· {line}" if line else "")

    with bar:
        thread = threading.Thread(target=refresh, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            total = counters.total()
            line = _describe(total, llm)
            bar.update(task, completed=total[EPISODES], llm=f"· {line}" if line else "")


async def publish(counters: Counters, slot: int, llm) -> None:
    """In a worker's event loop: copy the LLM client's totals into ``slot`` every quarter second
    (until cancelled). ``llm``: the run's ``LLMRuntime``."""
    client = llm.client
    while True:
        totals = client.usage()
        counters.set(slot, {CALLS: totals.calls, IN_FLIGHT: client.in_flight,
                            PROMPT: totals.prompt_tokens, COMPLETION: totals.completion_tokens,
                            COST: totals.cost_usd, HITS: client.cache.stats.hits})
        await asyncio.sleep(0.25)
