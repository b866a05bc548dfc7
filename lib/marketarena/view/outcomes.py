"""Each player's outcome in each episode of an instance, for the viewer's lists: one row per
(episode, player) with the market's score, the rank in the game, the player's LLM calls, tokens and
cost, and its re-asked and invalid decisions.

Built once per instance (and again when its episodes or metrics change) from what the pipeline
already wrote, never by reading every episode whole:

- who sits where and the score: the metrics stage's ``data/metrics/<instance>/agents.parquet``
  (one row per seat; the score is the market's ranking metric, ``MarketAnalysis.rank_by``, combined over
  a player's seats as its board does, ``seat_score``); episodes it does not hold (no
  metrics stage yet, or episodes played since) take their seats from their unit's ``agents``
  table and have no score;
- re-asked and invalid decisions: only the rows of ``decisions`` that matter (an invalid answer or
  a re-ask: ``valid`` false or ``attempt`` > 0, a pyarrow filter) and the ``llm_calls`` rows with
  their answer count (``attempts`` > 1 is a re-ask by the LLM client), unit by unit;
- cost: the run log's ``llm_costs`` (what was spent; cached answers cost nothing), for the units
  with LLM calls only.

A decision point (step, round, phase, seat) is *re-asked* when it took more than one answer (the
market asked again after a broken rule, or the client after an answer that did not parse) and
*invalid* when its last answer was still invalid, so the market's fallback applied. The rank in
the game is 1 for the highest score among the episode's players (ties share the better rank).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from marketarena.core import run_logs
from marketarena.report.headtohead import combined

KEYS = ["episode_id", "step", "round", "phase", "agent_id"]
COLUMNS = [
    "episode_id",
    "player",
    "seats",
    "score",
    "rank",
    "players",
    "calls",
    "tokens",
    "cost_usd",
    "reasked",
    "invalid",
]


@functools.cache
def scoring(market: str) -> tuple[str | None, str]:
    """(the market's per-seat ranking metric, how seats combine: "sum" or "mean"); (None, "sum")
    for a market that is not installed."""
    from marketarena.core.registry import market_kind

    try:
        analysis = market_kind(market).analysis
    except (KeyError, ImportError):
        return None, "sum"
    return getattr(analysis, "rank_by", None), getattr(analysis, "seat_score", "sum")


def metrics_file(root: Path) -> Path | None:
    """``data/metrics/<instance>/agents.parquet`` for episodes under ``data/episodes/<instance>``."""
    root = Path(root)
    if root.parent.name != "episodes":
        return None
    return root.parent.parent / "metrics" / root.name / "agents.parquet"


def unit_table(path: Path, columns: list[str], filters=None) -> pd.DataFrame:
    """``columns`` of a unit's table (those it has), ``episode_id`` first: a shard's own column,
    or the folder's name for an episode folder; empty when the file is missing or unreadable."""
    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException):
        return pd.DataFrame(columns=["episode_id", *columns])
    wanted = [c for c in columns if c in names]
    if filters and any(c not in names for group in filters for c, _, _ in group):
        return pd.DataFrame(columns=["episode_id", *columns])
    sharded = bool(names) and names[0] == "episode_id"
    try:
        table = pq.read_table(
            path, columns=(["episode_id"] if sharded else []) + wanted, filters=filters
        )
    except (OSError, pa.ArrowException):
        return pd.DataFrame(columns=["episode_id", *columns])
    df = table.to_pandas()
    if not sharded:
        df.insert(0, "episode_id", path.parent.name)
    return df


def _seats_from_metrics(path: Path | None, score: str | None) -> pd.DataFrame:
    """The metrics stage's seats and scores; none (so the units' own seats, without scores) when
    it has not run or its file cannot be read (said once in the viewer's log)."""
    none = pd.DataFrame(columns=["episode_id", "agent_id", "player", "score"])
    if path is None or not path.is_file():
        return none
    try:
        names = pq.read_schema(path).names
        columns = ["episode_id", "agent_id", "name"] + ([score] if score in names else [])
        df = pd.read_parquet(path, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        print(
            f"warning: {path} cannot be read ({type(exc).__name__}); the viewer shows no "
            "scores until the metrics stage writes it again",
            file=sys.stderr,
            flush=True,
        )
        return none
    df = df.rename(columns={"name": "player", score: "score"})
    if "score" not in df:
        df["score"] = np.nan
    return df


def _decision_points(frames: list[pd.DataFrame], calls: list[pd.DataFrame]) -> pd.DataFrame:
    """Per seat (episode_id, agent_id): decision points re-asked, and invalid (see the module)."""
    out = []
    if frames:
        d = pd.concat(frames, ignore_index=True)
        if len(d):
            d = d.sort_values("attempt", kind="stable")
            last = d.groupby(KEYS, sort=False).agg(
                attempt=("attempt", "max"), valid=("valid", "last")
            )
            last["reasked"] = last["attempt"] > 0
            last["invalid"] = ~last["valid"].astype(bool)
            out.append(last[["reasked", "invalid"]].reset_index())
    if calls:
        c = pd.concat(calls, ignore_index=True)
        if len(c):
            again = c[c["attempts"] > 1][KEYS].drop_duplicates()
            again["reasked"], again["invalid"] = True, False
            out.append(again)
    if not out:
        return pd.DataFrame(columns=["episode_id", "agent_id", "reasked", "invalid"])
    points = pd.concat(out, ignore_index=True).groupby(KEYS, sort=False)[["reasked", "invalid"]]
    points = points.max()
    return points.groupby(level=["episode_id", "agent_id"]).sum().astype(int).reset_index()


def build(root: Path, market: str, units: dict[str, list[str]]) -> pd.DataFrame:
    """The outcomes (``COLUMNS``) of the finished episodes under ``root``: ``units`` maps each
    finished unit's folder name to its episode ids (``InstanceIndex``)."""
    root = Path(root)
    rank_by, combine = scoring(market)
    seats = _seats_from_metrics(metrics_file(root), rank_by)
    playing = {e for episodes in units.values() for e in episodes}
    seats = seats[seats["episode_id"].isin(playing)]  # metrics of episodes since replaced: out
    known = set(seats["episode_id"].unique())
    extra, decisions, calls, costs = [], [], [], []
    run_dir = run_logs.run_dir_for(root)
    for unit, episodes in units.items():
        folder = root / unit
        if not known.issuperset(episodes):
            a = unit_table(folder / "agents.parquet", ["agent_id", "name"])
            extra.append(a[~a["episode_id"].isin(known)].rename(columns={"name": "player"}))
        decisions.append(
            unit_table(
                folder / "decisions.parquet",
                ["step", "round", "phase", "agent_id", "attempt", "valid"],
                filters=[[("valid", "=", False)], [("attempt", ">", 0)]],
            )
        )
        c = unit_table(
            folder / "llm_calls.parquet",
            [
                "step",
                "round",
                "phase",
                "agent_id",
                "attempts",
                "prompt_tokens",
                "completion_tokens",
            ],
        )
        if len(c):
            calls.append(c)
            costs.append(unit_table(run_dir / unit / "llm_costs.parquet", ["agent_id", "cost_usd"]))
    if extra:
        seats = pd.concat(
            [seats, *[e.assign(score=np.nan) for e in extra if len(e)]], ignore_index=True
        )
    if seats.empty:
        return pd.DataFrame(columns=COLUMNS)
    seat_keys = ["episode_id", "agent_id"]
    per_seat = seats[seat_keys + ["player", "score"]].copy()
    usage = pd.DataFrame(columns=seat_keys + ["calls", "tokens"])
    if calls:
        c = pd.concat(calls, ignore_index=True)
        c["tokens"] = c["prompt_tokens"].fillna(0) + c["completion_tokens"].fillna(0)
        usage = (
            c.groupby(seat_keys)
            .agg(calls=("attempts", "size"), tokens=("tokens", "sum"))
            .reset_index()
        )
    spent = pd.DataFrame(columns=seat_keys + ["cost_usd"])
    costs = [x for x in costs if len(x)]
    if costs:
        spent = (
            pd.concat(costs, ignore_index=True).groupby(seat_keys)["cost_usd"].sum().reset_index()
        )
    for frame in (usage, spent, _decision_points([d for d in decisions if len(d)], calls)):
        per_seat = per_seat.merge(frame, on=seat_keys, how="left")
    for col in ("calls", "tokens", "reasked", "invalid"):
        per_seat[col] = per_seat[col].fillna(0).astype(int)
    g = per_seat.groupby(["episode_id", "player"], sort=False)
    out = g.agg(
        seats=("agent_id", "size"),
        calls=("calls", "sum"),
        tokens=("tokens", "sum"),
        reasked=("reasked", "sum"),
        invalid=("invalid", "sum"),
    ).reset_index()
    out["score"] = combined(g["score"], combine).to_numpy()
    out["cost_usd"] = g["cost_usd"].sum(min_count=1).to_numpy()
    out["rank"] = out.groupby("episode_id")["score"].rank(ascending=False, method="min")
    out["players"] = out.groupby("episode_id")["player"].transform("size")
    return out[COLUMNS]


def episode_totals(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per episode id (the index): its players' LLM calls, tokens, cost, re-asked and invalid
    decisions."""
    g = outcomes.groupby("episode_id", sort=False)
    totals = g[["calls", "tokens", "reasked", "invalid"]].sum()
    totals["cost_usd"] = g["cost_usd"].sum(min_count=1)
    return totals


def _plain(value: Any) -> Any:
    if value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain Python values (NaN as None), for the templates."""
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
