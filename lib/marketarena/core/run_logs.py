"""Run logs read back: where an instance's run log lives (:func:`run_dir_for`), each unit's
``run.json`` (:func:`read_unit_run_log`, :func:`run_logs`), one row per episode
(:func:`read_run_log`), a run table over every unit (:func:`read_run_table`), and the pruning of
units no longer on disk (:func:`prune_run_logs`). ``logs.py`` writes them (its module docstring
gives the layout); DVC tracks none of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marketarena.core.logs import RUN_META, TMP_PREFIX

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def run_dir_for(episodes_dir: Path) -> Path:
    """The run log of the episodes under ``episodes_dir``: ``data/run_logs/<instance>`` for
    ``data/episodes/<instance>``, else ``<episodes_dir>.runs`` beside it."""
    episodes_dir = Path(episodes_dir)
    if episodes_dir.parent.name == "episodes":
        return episodes_dir.parent.parent / "run_logs" / episodes_dir.name
    return episodes_dir.with_name(episodes_dir.name + ".runs")


def read_unit_run_log(run_dir: Path, unit: str) -> tuple[dict[str, Any] | None, Path]:
    """(``run.json`` of one unit's run log or None when it has none, its folder)."""
    folder = Path(run_dir) / unit
    try:
        return json.loads((folder / RUN_META).read_text(encoding="utf-8")), folder
    except (OSError, ValueError):
        return None, folder


def prune_run_logs(run_dir: Path, keep: set[str]) -> None:
    """Remove the run logs of units not in ``keep`` (units no longer on disk, or about to replay),
    and temporaries of a run killed mid-write."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    for child in run_dir.iterdir():
        if child.name not in keep:
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def run_logs(run_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, ``run.json``) of every unit's run log under ``run_dir`` that has a readable one,
    sorted by name (temporaries of a run killed mid-write left out)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [
        read_unit_run_log(run_dir, p.name)
        for p in sorted(run_dir.iterdir())
        if p.is_dir() and not p.name.startswith(TMP_PREFIX)
    ]
    return [(folder, log) for log, folder in found if log is not None]


RUN_LOG_COLUMNS = [
    "unit",
    "episode_id",
    "fingerprint",
    "finished_at",
    "wall_time_s",
    "cost_usd",
    "calls",
    "cached_calls",
    "invalid_calls",
    "attempts",
    "retries",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
]


def read_run_log(run_dir: Path) -> pd.DataFrame:
    """One row per episode of the run log under ``run_dir`` (``RUN_LOG_COLUMNS``): its unit, when
    that unit finished, its wall time (a shard's episodes: each its own), its LLM cost and usage
    summed over models (zeros for scripted episodes), in unit and episode order."""
    import pandas as pd

    usage = RUN_LOG_COLUMNS[6:]
    rows = []
    for _, log in run_logs(run_dir):
        for e in log.get("episodes", []):
            totals = {k: sum(m.get(k, 0) for m in e.get("llm", {}).values()) for k in usage}
            rows.append(
                {
                    "unit": log.get("unit"),
                    "episode_id": e.get("episode_id"),
                    "fingerprint": e.get("fingerprint"),
                    "finished_at": log.get("finished_at"),
                    "wall_time_s": e.get("wall_time_s"),
                    **totals,
                    "cost_usd": float(e.get("cost_usd", 0.0)),
                }
            )
    return pd.DataFrame(rows, columns=RUN_LOG_COLUMNS)


def read_run_table(run_dir: Path, name: str = "llm_costs") -> pd.DataFrame:
    """A run table (``llm_costs``) over every unit of the run log, ``episode_id`` first."""
    import pandas as pd

    frames = [
        pd.read_parquet(p / f"{name}.parquet")
        for p, _ in run_logs(run_dir)
        if (p / f"{name}.parquet").is_file()
    ]
    rows = [f for f in frames if len(f)]
    return pd.concat(rows, ignore_index=True) if rows else (frames[0] if frames else pd.DataFrame())
