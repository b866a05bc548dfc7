"""Run information: how a run went (wall time, dollars actually spent, cache hits, HTTP retries,
latencies), as opposed to its results. The results site and the episode viewer read it through
these three functions and nowhere else, so that where it is kept can change in one place:
:func:`run_info` (an instance's run, summed), :func:`episode_run_info` (one episode's) and
:func:`call_costs` (how each LLM call of an episode was obtained).

Today it lives in the episode logs: ``meta.json["run"]`` of each episode folder (or each game's
entry in a shard's ``meta.json``) and ``llm_costs.parquet`` (per call: cost, latency, cache hit,
retries; row for row beside ``llm_calls``). It is not a result: it differs between two runs that
write identical tables, which is why the site keeps it out of its tracked pages (``report.site``
writes it to ``run-info.js``, which ``.dvcignore`` keeps out of the site's hash).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from marketarena.core.reader import EpisodeReader

COST_COLUMNS = ["cost_usd", "latency_s", "cached", "retries"]


def run_info(reader: EpisodeReader) -> dict[str, Any]:
    """The instance's run summed over its finished episodes: ``wall_time_s`` (episodes' own wall
    times added up; with workers, more than the time the run took), ``cost_usd`` (dollars spent:
    answers from the cache cost nothing), and per model alias ``calls``, ``cached_calls`` and
    ``retries``. ``episodes`` counts the episodes that recorded any."""
    total: dict[str, Any] = {"episodes": 0, "wall_time_s": 0.0, "cost_usd": 0.0, "llm": {}}
    for episode_id in reader.episode_ids():
        run = episode_run_info(reader.meta(episode_id))
        if run is None:
            continue
        total["episodes"] += 1
        total["wall_time_s"] += float(run.get("wall_time_s") or 0.0)
        total["cost_usd"] += float(run.get("cost_usd") or 0.0)
        for alias, usage in sorted((run.get("llm") or {}).items()):
            into = total["llm"].setdefault(alias, {"calls": 0, "cached_calls": 0, "retries": 0})
            for key in into:
                into[key] += int(usage.get(key) or 0)
    return total


def episode_run_info(meta: dict[str, Any]) -> dict[str, Any] | None:
    """How one episode's run went (``wall_time_s``, ``cost_usd``, ``llm`` usage per model alias),
    from its meta; None when not recorded."""
    run = meta.get("run")
    return run if isinstance(run, dict) else None


def call_costs(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """How each LLM call of one episode was obtained (``cost_usd``, ``latency_s``, ``cached``,
    ``retries``), row for row beside ``tables["llm_calls"]``; empty columns when not recorded."""
    costs = tables.get("llm_costs")
    n = len(tables.get("llm_calls", ()))
    if costs is None or len(costs) != n:
        return pd.DataFrame({c: [None] * n for c in COST_COLUMNS})
    return costs[COST_COLUMNS].reset_index(drop=True)
