"""The viewer's lists, shaped for their pages: an instance's episodes (each with its players' LLM
calls, cost, re-asked and invalid decisions), a player's episodes (with its outcome in each: score,
rank in the game), two players' shared episodes, and the players of an instance. Each list is a
frame, filtered, sorted and cut into pages here, on the server, so a list of 90,000 games sorts as
a whole and only the page's 100 rows become Python objects.

Every list is filtered like the instance's (player, setting, seed, id) and can keep only the
episodes with an invalid decision or a re-asked one (``only=invalid`` / ``only=reasked``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd

from marketarena.view.outcomes import COLUMNS, episode_totals, records

PAGE_SIZE = 100
#: what a list can keep (``only``): the episodes where the player (or any player) had ...
ONLY = {"invalid": "an invalid decision", "reasked": "a re-asked decision"}
OUTCOME = ("score", "rank", "players", "seats", "calls", "tokens", "cost_usd", "reasked", "invalid")
USAGE = ("calls", "tokens", "cost_usd", "reasked", "invalid")


@dataclass
class Page:
    """One page of a sorted list: ``rows`` of it, the list's ``total``, the page number and
    count, what it is sorted by (``sort``, ``desc``) and the query to keep in links (``keep``)."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    sort: str
    desc: bool
    keep: dict[str, str]

    def sort_link(self, column: str) -> str:
        """The query that sorts by ``column`` (the other way when it is sorted by it already)."""
        keep = {k: v for k, v in self.keep.items() if k not in ("sort", "desc")}
        desc = "0" if (column == self.sort and self.desc) else "1"
        return "?" + urlencode({**keep, "sort": column, "desc": desc})

    def page_link(self, page: int) -> str:
        return "?" + urlencode({**self.keep, "page": str(page)})

    def mark(self, column: str) -> str:
        return ("▼" if self.desc else "▲") if column == self.sort else ""


def page_number(value: str | int | None, pages: int | None = None) -> int:
    """A ``page=`` query value as a page index (from 0): 0 for anything that is not a whole number
    (or has over 4,300 digits, Python's limit), never below 0, never past the last of ``pages``
    (every number is a page, whatever its size: a 30-digit page does not overflow SQLite)."""
    try:
        page = max(0, int(value or "0"))
    except ValueError:
        page = 0
    return page if pages is None else min(page, max(1, pages) - 1)


def page_of(
    frame: pd.DataFrame, query, sortable: tuple[str, ...], default: str, default_desc: bool = False
) -> Page:
    """``frame``'s rows sorted by ``query["sort"]`` (one of ``sortable``; missing values last
    either way), cut to the page ``query["page"]``, as plain rows."""
    sort = query.get("sort", default)
    sort = sort if sort in sortable and sort in frame.columns else default
    desc = query.get("desc", "1" if default_desc else "0") == "1"
    if len(frame) and sort in frame.columns:
        frame = frame.sort_values(sort, ascending=not desc, na_position="last", kind="stable")
    pages = max(1, -(-len(frame) // PAGE_SIZE))
    page = page_number(query.get("page"), pages)
    keep = {k: v for k, v in query.items() if k != "page" and v}
    rows = records(frame.iloc[page * PAGE_SIZE : (page + 1) * PAGE_SIZE])
    return Page(rows, len(frame), page, pages, sort, desc, keep)


def _episodes(index) -> pd.DataFrame:
    """Every episode of the index (id, run, seed, setting as text, lineup) with its players'
    totals (``USAGE``), built once per outcomes build."""

    def make(outcomes: pd.DataFrame) -> pd.DataFrame:
        frame = pd.DataFrame(
            {
                "episode_id": [e.episode_id for e in index.entries],
                "run": pd.array([e.run for e in index.entries], dtype="Int64"),
                "seed": pd.array([e.seed for e in index.entries], dtype="Int64"),
                "setting": [", ".join(f"{k}={v}" for k, v in e.setting) for e in index.entries],
                "lineup": [list(e.lineup) for e in index.entries],
            }
        )
        return frame.merge(
            episode_totals(outcomes)[list(USAGE)],
            left_on="episode_id",
            right_index=True,
            how="left",
        )

    return index.derived("episodes", make)


def _found(frame: pd.DataFrame, index, found) -> pd.DataFrame:
    if len(found) == len(index.entries):
        return frame
    return frame[frame["episode_id"].isin({e.episode_id for e in found})]


def _kept(frame: pd.DataFrame, only: str) -> pd.DataFrame:
    return frame[frame[only].fillna(0) > 0] if only in ONLY else frame


def episode_rows(index, found, only: str = "") -> pd.DataFrame:
    """The episodes ``found`` (index entries), each with its players' totals."""
    return _kept(_found(_episodes(index), index, found), only)


def _mine(index, player: str) -> pd.DataFrame:
    outcomes = index.outcomes()
    return outcomes.loc[outcomes["player"] == player, [c for c in COLUMNS if c != "player"]]


def player_rows(index, player: str, found, only: str = "") -> pd.DataFrame:
    """The episodes ``found`` that ``player`` played, each with its outcome in it (``OUTCOME``)."""
    episodes = _found(_episodes(index), index, found).drop(columns=list(USAGE))
    frame = episodes.merge(_mine(index, player), on="episode_id", how="inner")
    return _kept(frame, only)


def totals(frame: pd.DataFrame) -> dict[str, Any]:
    """A player's list summed up: episodes, mean score and rank, games won, LLM calls, tokens,
    cost, re-asked and invalid decisions."""

    def mean(column: str) -> float | None:
        value = frame[column].mean() if len(frame) else None
        return None if value is None or pd.isna(value) else float(value)

    cost = frame["cost_usd"].sum(min_count=1) if len(frame) else None
    return {
        "episodes": len(frame),
        "score": mean("score"),
        "rank": mean("rank"),
        "won": int((frame["rank"] == 1).sum()),
        "cost_usd": None if cost is None or pd.isna(cost) else float(cost),
        **{k: int(frame[k].fillna(0).sum()) for k in ("calls", "tokens", "reasked", "invalid")},
    }


def shared_rows(index, a: str, b: str, found) -> pd.DataFrame:
    """The episodes ``found`` that both ``a`` and ``b`` played, with both outcomes."""
    episodes = _found(_episodes(index), index, found)[["episode_id", "run", "seed", "setting"]]
    for who, prefix in ((a, "a_"), (b, "b_")):
        mine = _mine(index, who)[["episode_id", "score", "rank", "players"]]
        mine = mine.rename(
            columns={
                "score": f"{prefix}score",
                "rank": f"{prefix}rank",
                "players": f"{prefix}players",
            }
        )
        episodes = episodes.merge(mine, on="episode_id", how="inner")
    episodes["players"] = episodes.pop("a_players")
    episodes = episodes.drop(columns="b_players")
    episodes["difference"] = episodes["a_score"] - episodes["b_score"]
    return episodes


def versus(frame: pd.DataFrame) -> dict[str, Any]:
    """Games met, the first player's win share (a tie half) and mean score difference."""
    diffs = frame["difference"].dropna()
    if diffs.empty:
        return {"games": len(frame), "scored": 0, "win_share": None, "mean_difference": None}
    wins = float((diffs > 0).sum() + 0.5 * (diffs == 0).sum())
    return {
        "games": len(frame),
        "scored": len(diffs),
        "win_share": wins / len(diffs),
        "mean_difference": float(diffs.mean()),
    }


def players(index) -> list[dict[str, Any]]:
    """Every player of the instance (from the games' lineups, so imported games' players too):
    episodes, mean score and rank, games won (rank 1), LLM calls, cost, re-asked and invalid."""
    return index.derived("players", lambda outcomes: _players(index, outcomes))


def _players(index, outcomes: pd.DataFrame) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for e in index.entries:
        for p in set(e.lineup):
            counts[p] = counts.get(p, 0) + 1
    summary: dict[str, dict[str, Any]] = {}
    if not outcomes.empty:
        g = outcomes.groupby("player")
        frame = pd.DataFrame(
            {
                "score": g["score"].mean(),
                "rank": g["rank"].mean(),
                "won": (outcomes["rank"] == 1).groupby(outcomes["player"]).sum(),
                "calls": g["calls"].sum(),
                "tokens": g["tokens"].sum(),
                "cost_usd": g["cost_usd"].sum(min_count=1),
                "reasked": g["reasked"].sum(),
                "invalid": g["invalid"].sum(),
            }
        )
        summary = {r.pop("player"): r for r in records(frame.reset_index())}
    return [{"player": p, "episodes": n, **summary.get(p, {})} for p, n in sorted(counts.items())]


def board_rows(
    reports: Path, instance: str, names: list[str]
) -> tuple[list[str], dict[str, list[str]]]:
    """(columns, {name: cells}) of the players ``names`` on the instance's board
    (``reports/leaderboards/<instance>.csv``, intervals folded as on the site); empty without a
    board."""
    from marketarena.report.board import Board, who_column

    path = reports / "leaderboards" / f"{instance}.csv"
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return [], {}
    who = who_column(frame)
    if who is None:
        return [], {}
    board = Board.of(frame)
    return board.columns, {str(n): row for n, row in zip(frame[who], board.rows) if str(n) in names}
