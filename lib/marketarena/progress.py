"""The live progress line of a ``simulate`` run (rich), or nothing when stderr is not a terminal,
and the summary a run ends with.

One line per instance (a run simulates one instance; ``dvc repro`` runs them one stage at a
time)::

    crash ━━━━━━━╸━━━━━━━━  41/96 · 28 in flight · 2,313 calls (12 re-asked, 3 invalid) ·
        1.9M+46k tok (1.2M cached) · $0.31, budget 62% of $0.50 · 120 cache hits 0:00:37

(on one line): episodes done of those to play, LLM calls in flight, calls made, how many of them
were re-asked after an answer that did not parse and how many stayed invalid (the market's
fallback applied), prompt + completion tokens with the prompt tokens the provider served from its
prompt cache (shown once an endpoint reports any: ``llm/prompt_cache.py``), the dollars this run spent
and, with ``llm.max_cost_usd``, how much of that limit the instance's spend ledger has used (this
run and the earlier ones it sums), and the answers replayed from the response cache.

Every process of the run (the main one, each worker) counts into its own slot of a shared array
(:class:`Counters`: episodes finished, LLM calls, calls in flight, tokens, dollars, cache hits,
answers, invalid calls, cached prompt tokens); a worker's event loop copies its LLM client's
totals there every quarter second (:func:`publish`, and once more when its episodes end, so the
last frame counts every call), the main process sums the slots and rich redraws the line. Ray
tasks do not report (a cluster's processes share no memory with the driver): the line then counts
nothing until the run ends. When stderr is not a terminal (DVC's logs, a CI job) no line is drawn
and ``simulate`` prints one plain line per finished unit instead, as before.

However the run is shown, it ends with :func:`summary_lines`, read from the run log of the units
it played (so workers and Ray tasks count): episodes played, calls, re-asks, invalid calls,
tokens (cached among them), dollars; ``marketarena simulate`` adds the next command to run.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import threading
from contextlib import contextmanager

from marketarena.money import usd

FIELDS = (
    "episodes",
    "calls",
    "in_flight",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_hits",
    "attempts",
    "invalid_calls",
    "cached_prompt_tokens",
)
(EPISODES, CALLS, IN_FLIGHT, PROMPT, COMPLETION, COST, HITS, ATTEMPTS, INVALID, CACHED_PROMPT) = (
    range(len(FIELDS))
)


class Counters:
    """``slots`` rows of :data:`FIELDS` in shared memory (a ``multiprocessing.Array``, lock-free:
    each slot has one writer). Picklable into spawned workers as an initializer argument."""

    def __init__(self, slots: int = 1, array=None):
        self.slots = slots
        self.array = (
            array
            if array is not None
            else multiprocessing.get_context("spawn").Array("d", slots * len(FIELDS), lock=False)
        )

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


def _describe(total: list[float], llm: bool, budget: tuple[float, float] | None = None) -> str:
    """The line's LLM part (module docstring); ``budget``: (dollars the instance's ledger held
    when the run started, ``llm.max_cost_usd``)."""
    if not llm:
        return ""
    reasks = total[ATTEMPTS] - total[CALLS]
    cached = f" ({_short(total[CACHED_PROMPT])} cached)" if total[CACHED_PROMPT] else ""
    money = usd(total[COST])
    if budget is not None:
        before, limit = budget
        used = (before + total[COST]) / limit if limit > 0 else 1.0
        money += f", budget {used:.0%} of {usd(limit)}"
    return (
        f"{total[IN_FLIGHT]:,.0f} in flight · {total[CALLS]:,.0f} calls "
        f"({reasks:,.0f} re-asked, {total[INVALID]:,.0f} invalid) · "
        f"{_short(total[PROMPT])}+{_short(total[COMPLETION])} tok{cached} · {money} · "
        f"{total[HITS]:,.0f} cache hits"
    )


def _short(n: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


@contextmanager
def display(
    instance: str,
    episodes: int,
    counters: Counters,
    llm: bool,
    enabled: bool = True,
    budget: tuple[float, float] | None = None,
):
    """The live line while the block runs (redrawn four times a second from ``counters``);
    nothing when not ``enabled`` or stderr is not a terminal. ``budget``: see :func:`_describe`."""
    if not (enabled and live()):
        yield
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=16),
        MofNCompleteColumn(),
        TextColumn("{task.fields[llm]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        refresh_per_second=4,
    )
    task = bar.add_task(instance, total=episodes, llm="")
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(0.25):
            total = counters.total()
            line = _describe(total, llm, budget)
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
            line = _describe(total, llm, budget)
            bar.update(task, completed=total[EPISODES], llm=f"· {line}" if line else "")


def totals_of(client) -> dict[int, float]:
    """An LLM client's totals in the counters' fields."""
    totals = client.usage()
    return {
        CALLS: totals.calls,
        IN_FLIGHT: client.in_flight,
        PROMPT: totals.prompt_tokens,
        COMPLETION: totals.completion_tokens,
        COST: totals.cost_usd,
        HITS: client.cache.stats.hits,
        ATTEMPTS: totals.attempts,
        INVALID: totals.invalid_calls,
        CACHED_PROMPT: totals.cached_prompt_tokens,
    }


async def publish(counters: Counters, slot: int, llm) -> None:
    """In a worker's event loop: copy the LLM client's totals into ``slot`` every quarter second
    (until cancelled; the caller copies them once more at the end: :func:`totals_of`). ``llm``:
    the run's ``LLMRuntime``."""
    while True:
        counters.set(slot, totals_of(llm.client))
        await asyncio.sleep(0.25)


def run_totals(run_dir, units: set[str]) -> dict[str, float]:
    """The LLM usage of the units named ``units`` summed from their run logs (``core.run_logs``):
    calls, attempts, invalid_calls, prompt_tokens, cached_prompt_tokens, completion_tokens,
    cost_usd and cached_calls (answers replayed from the response cache)."""
    from marketarena.core.run_logs import run_logs

    keys = (
        "calls",
        "cached_calls",
        "invalid_calls",
        "attempts",
        "prompt_tokens",
        "cached_prompt_tokens",
        "completion_tokens",
        "cost_usd",
    )
    out = dict.fromkeys(keys, 0.0)
    for folder, log in run_logs(run_dir):
        if folder.name not in units:
            continue
        for episode in log.get("episodes", []):
            for usage in (episode.get("llm") or {}).values():
                for key in keys:
                    out[key] += float(usage.get(key) or 0)
    return out


def summary_lines(summary: dict) -> list[str]:
    """What a finished ``simulate`` run says (module docstring), from its summary (``simulate``:
    ``market``, ``played``, ``skipped``, ``wall_time_s`` and, with LLM seats, ``llm``:
    :func:`run_totals`, and ``budget``: (spent in the ledger, limit) when a limit is set)."""
    lines = [
        f"{summary['market']}: {summary['played']:,} episodes played"
        + (f", {summary['skipped']:,} already on disk" if summary.get("skipped") else "")
        + f" in {summary.get('wall_time_s', 0.0):.1f} s"
    ]
    if summary.get("stop_lines"):  # the stopping rule's decisions (``stopping.Batches``)
        lines.append("  stopping rule:")
        lines += ["  " + line for line in summary["stop_lines"]]
    llm = summary.get("llm")
    if llm:
        reasks = llm["attempts"] - llm["calls"]
        cached = llm["cached_prompt_tokens"]
        prompt = f"{llm['prompt_tokens']:,.0f} prompt tokens" + (
            f" ({cached:,.0f} served from the provider's prompt cache)" if cached else ""
        )
        replayed = (
            f"; {llm['cached_calls']:,.0f} answers replayed from the response cache"
            if llm["cached_calls"]
            else ""
        )
        lines.append(
            f"  LLM: {llm['calls']:,.0f} calls ({reasks:,.0f} re-asked, "
            f"{llm['invalid_calls']:,.0f} invalid), {prompt} + "
            f"{llm['completion_tokens']:,.0f} completion, "
            f"{usd(llm['cost_usd'])}{replayed}"
        )
        if summary.get("budget"):
            spent, limit = summary["budget"]
            lines.append(
                f"  budget: {usd(spent)} of llm.max_cost_usd {usd(limit)} spent "
                "(this instance, every run)"
            )
    return lines
