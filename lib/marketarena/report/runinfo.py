"""Run information: how a run went (wall time, dollars actually spent, cache hits, HTTP retries,
latencies), as opposed to its results. The results site and the episode viewer read it through
these three functions and nowhere else: :func:`run_info` (an instance's run, summed),
:func:`episode_run_info` (one episode's) and :func:`call_costs` (how each LLM call of an episode
was obtained).

It lives in the run log beside the episode logs (``core.logs``: ``data/run_logs/<instance>/<unit>/``
with ``run.json`` and ``llm_costs.parquet``; :func:`~marketarena.core.run_logs.run_dir_for` finds
it from the episodes folder), which DVC does not track: it differs between two runs that write
identical tables. The site likewise keeps it out of its tracked pages (``report.site`` writes it to
``run-info.js``, which ``.dvcignore`` keeps out of the site's hash). Episodes played before the run
log existed, or copied without it, simply have no run information.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from marketarena.core import run_logs

COST_COLUMNS = ["cost_usd", "latency_s", "cached", "retries"]


def run_info(episodes_dir: Path) -> dict[str, Any]:
    """The instance's run summed over the episodes of its run log: ``wall_time_s`` (episodes' own
    wall times added up; with workers, more than the time the run took), ``cost_usd`` (dollars
    spent: answers from the cache cost nothing), and per model alias ``calls``, ``cached_calls``
    and ``retries``. ``episodes`` counts the episodes that recorded any."""
    total: dict[str, Any] = {"episodes": 0, "wall_time_s": 0.0, "cost_usd": 0.0, "llm": {}}
    for _, log in run_logs.run_logs(run_logs.run_dir_for(episodes_dir)):
        for run in log.get("episodes", []):
            total["episodes"] += 1
            total["wall_time_s"] += float(run.get("wall_time_s") or 0.0)
            total["cost_usd"] += float(run.get("cost_usd") or 0.0)
            for alias, usage in sorted((run.get("llm") or {}).items()):
                into = total["llm"].setdefault(alias, {"calls": 0, "cached_calls": 0, "retries": 0})
                for key in into:
                    into[key] += int(usage.get(key) or 0)
    return total


def episode_run_info(episodes_dir: Path, unit: str, episode_id: str) -> dict[str, Any] | None:
    """How one episode's run went (``wall_time_s``, ``cost_usd``, ``llm`` usage per model alias),
    from the run log of its unit (episode folder or shard); None when not recorded."""
    log, _ = run_logs.read_unit_run_log(run_logs.run_dir_for(episodes_dir), unit)
    for run in (log or {}).get("episodes", []):
        if run.get("episode_id") == episode_id:
            return {k: v for k, v in run.items() if k not in ("episode_id", "fingerprint")}
    return None


def call_costs(episodes_dir: Path, unit: str, episode_id: str, n_calls: int) -> pd.DataFrame:
    """How each of the ``n_calls`` LLM calls of one episode was obtained (``cost_usd``,
    ``latency_s``, ``cached``, ``retries``), row for row beside its ``llm_calls``; empty columns
    when not recorded (or its run log cannot be read: it is not a result)."""
    _, folder = run_logs.read_unit_run_log(run_logs.run_dir_for(episodes_dir), unit)
    path = folder / "llm_costs.parquet"
    if n_calls and path.is_file():
        try:
            costs = pd.read_parquet(path, filters=[("episode_id", "=", episode_id)])
        except (OSError, pa.ArrowException):
            costs = pd.DataFrame()
        if len(costs) == n_calls:
            return costs[COST_COLUMNS].reset_index(drop=True)
    return pd.DataFrame({c: [None] * n_calls for c in COST_COLUMNS})
