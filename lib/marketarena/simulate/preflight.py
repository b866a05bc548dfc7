"""The cost of a run said where it is decided: the estimate before the first LLM call, and the
stop when it passes ``llm.max_cost_usd`` (issue 56).

Before a simulate run plays (``marketarena simulate``, ``marketarena run``, the DVC stage: all go
through ``simulate.simulate``), :func:`check` estimates what the episodes with LLM seats *left to
play* will cost, with ``marketarena estimate``'s own dry run (``estimate.estimate``: the real
prompts on the mock provider, no endpoint, no key), and prints one line before the first call:
the instance, the episodes left, calls, tokens, dollars (the point and its range) and the cap with
what the instance's spend ledger already holds. It records the same figures in the run log
(``data/run_logs/<instance>/estimate.json``, beside ``complete.json``; not tracked by DVC) and in
the run's summary (``estimate``).

When the point estimate, added to what the ledger holds (every earlier run's spend and a dead run's
reservations, which the run charges at their bound before its first call), passes
``llm.max_cost_usd``, the run stops there (:class:`OverBudget`, one ``error:`` line naming the key,
the estimate and what to do): no request is sent, no episode written, finished episodes stay.

Choices where the issue is silent:

- **The point, not the top of the range, decides.** The point already errs to the side of the
  budget (the stand-in that plays longest, ``estimate.py``); the top adds every margin at once
  (twice the re-ask rate, 15% more tokens, no prompt cache) and would refuse runs that fit. A run
  whose range only reaches past the cap starts, with ``estimate.warnings``' ``warning:`` line; the
  budget's guard (``llm/budget.py``) still stops it before the ledger passes the cap.
- **What is left.** A resumed run estimates only the episodes with LLM seats not on disk; a run
  with none left (every episode finished) estimates nothing. With a stopping rule
  (``markets.<instance>.stop``) the estimate is of every episode left, the rule's cap: it may play
  fewer.
- **What spends nothing is not estimated**: a replay (``llm.cache_only: true``: a cache miss is an
  error, never a call) and free models (every model of the instance at zero prices: the mock
  provider by default, a local model). Such runs print nothing and never stop here. Answers in the
  response cache cannot be told apart before they are asked: a run that would replay most of its
  answers from the cache is estimated as if it asked them all (set ``llm.cache_only: true`` to
  replay it whatever the cap).
- **Out on purpose.** ``llm.stop_on_estimate: false`` keeps the line but starts the run anyway: it
  plays what the cap buys and the guard stops it (the tests of the guard itself use it).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

from marketarena.core.files import write_atomic
from marketarena.core.types import RunAborted
from marketarena.money import usd
from marketarena.simulate.context import RunContext
from marketarena.simulate.limits import ledger_spent

#: the estimate of the last run that had something to spend, in its run log
ESTIMATE = "estimate.json"


class OverBudget(RunAborted):
    """The estimate of what a run has left passes what ``llm.max_cost_usd`` leaves: stopped
    before its first call."""


def priced(run: RunContext) -> bool:
    """Whether any model of the run's LLM seats has a price (else nothing it does is charged)."""
    return any(
        spec.price_in_per_mtok or spec.price_out_per_mtok or spec.price_cached_in_per_mtok
        for spec in (run.params.models[a] for a in run.llm_aliases)
    )


#: episodes the check dry-runs (``marketarena estimate``'s default is 20): the decision to start
#: needs the spend's order of magnitude, and a dry run of crash or lemon plays each sampled
#: episode up to five times (about 2 minutes for 20 on 2 cores); ``marketarena estimate`` gives
#: the full figure
SAMPLE = 6


def left(todo: list[tuple[Any, list[Any]]]) -> set[str]:
    """The ids of the episodes with LLM seats among the units ``todo`` (those left to play)."""
    return {e.episode_id for unit, _ in todo for e in unit.episodes if e.llm}


def check(run: RunContext, todo: list[tuple[Any, list[Any]]]) -> dict[str, Any] | None:
    """The estimate of what ``todo`` will spend, said and recorded, or :class:`OverBudget` when it
    passes the cap (module docstring); None when the run spends nothing (no LLM episode left, a
    replay, free models)."""
    from marketarena import estimate as est

    episodes = left(todo)
    settings = run.params.llm
    if not episodes or settings.cache_only or not priced(run):
        return None
    started = time.perf_counter()
    with _quiet("marketarena.llm"):  # the dry run's mock answers are not the run's calls
        found = est.estimate(
            run.instance,
            run.params,
            run.resources,
            history=est.earlier_usage(run.data_dir / "run_logs"),
            episodes=episodes,
            sample=SAMPLE,
        )
    if found is None:
        return None
    limit = settings.max_cost_usd
    spent = ledger_spent(run.data_dir, run.instance, reserved=True)
    over = limit is not None and spent + found.cost_usd > limit
    record = {
        "instance": run.instance,
        "episodes": found.episodes,
        "calls": round(sum(m.calls for m in found.models)),
        "prompt_tokens": round(sum(m.prompt_tokens for m in found.models)),
        "completion_tokens": round(sum(m.completion_tokens for m in found.models)),
        "cost_usd": found.cost_usd,
        "cost_lo": sum(m.cost_lo for m in found.models),
        "cost_hi": found.cost_hi,
        "max_cost_usd": limit,
        "spent_usd": spent,
        "stopped": bool(over and settings.stop_on_estimate),
        "estimate_s": round(time.perf_counter() - started, 3),
        "at": time.time(),
    }
    run.run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run.run_dir / ESTIMATE, json.dumps(record, indent=1, sort_keys=True) + "\n")
    if record["stopped"]:
        raise OverBudget(stop_message(record))
    if run.progress:
        lines = [line(record)] + est.warnings(found, limit, spent)
        print("\n".join(lines), file=sys.stderr, flush=True)
    return record


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Logger ``name``'s warnings held back for the block (the dry run's mock answers longer than
    a small ``max_tokens`` say "charged the bound", which is about no real call)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _figures(r: dict[str, Any]) -> str:
    return (
        f"{r['episodes']:,} episodes with LLM seats left, {r['calls']:,} calls, "
        f"{r['prompt_tokens']:,} prompt + {r['completion_tokens']:,} completion tokens, "
        f"{usd(r['cost_usd'])} (range {usd(r['cost_lo'])} to {usd(r['cost_hi'])})"
    )


def _cap(r: dict[str, Any]) -> str:
    if r["max_cost_usd"] is None:
        return "llm.max_cost_usd: null (no cap)"
    spent = f", {usd(r['spent_usd'])} of it spent by earlier runs" if r["spent_usd"] else ""
    return f"llm.max_cost_usd {usd(r['max_cost_usd'])}{spent}"


def line(r: dict[str, Any]) -> str:
    """The line a run prints before its first call."""
    return f"{r['instance']}: estimate before the first call: {_figures(r)}; {_cap(r)}"


def stop_message(r: dict[str, Any]) -> str:
    """The one line of a run stopped by its estimate (``faults``: after ``error:``)."""
    return (
        f"{r['instance']}: the estimate of what is left to play passes llm.max_cost_usd: "
        f"{_figures(r)}; {_cap(r)}. Stopped before the first call: nothing was spent and "
        "finished episodes are kept; raise llm.max_cost_usd in the params on purpose (or plan "
        "fewer episodes), play the model on the mock provider or a free local one, replay "
        "cached answers with llm.cache_only: true, or set llm.stop_on_estimate: false to play "
        "what the cap buys"
    )
