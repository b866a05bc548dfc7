"""The viewer's lists, shaped for their pages: an instance's episodes (each with its players' LLM
calls, cost, re-asked and invalid decisions), a player's episodes (with its outcome in each: score,
rank in the game), two players' shared episodes, and the players of an instance. Sorted and cut
into pages here, on the server, so a list of 90,000 games sorts as a whole and sends 100 rows.

Every list is filtered like the instance's (player, setting, seed, id) and can keep only the
episodes with an invalid decision or a re-asked one (``only=invalid`` / ``only=reasked``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from marketarena.view.outcomes import episode_totals, records

PAGE_SIZE = 100
#: what a list can keep (``only``): the episodes where the player (or any player) had ...
ONLY = {"invalid": "an invalid decision", "reasked": "a re-asked decision"}
OUTCOME = ("score", "rank", "players", "seats", "calls", "tokens", "cost_usd", "reasked", "invalid")


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
        from urllib.parse import urlencode

        keep = {k: v for k, v in self.keep.items() if k not in ("sort", "desc")}
        desc = "0" if (column == self.sort and self.desc) else "1"
        return "?" + urlencode({**keep, "sort": column, "desc": desc})

    def page_link(self, page: int) -> str:
        from urllib.parse import urlencode

        return "?" + urlencode({**self.keep, "page": str(page)})

    def mark(self, column: str) -> str:
        return ("▼" if self.desc else "▲") if column == self.sort else ""


def _key(value: Any) -> tuple:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (2, 0)
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def page_of(rows: list[dict[str, Any]], query, sortable: tuple[str, ...], default: str,
            default_desc: bool = False) -> Page:
    """``rows`` sorted by ``query["sort"]`` (one of ``sortable``; missing values last either way)
    and cut to the page ``query["page"]``."""
    sort = query.get("sort", default)
    sort = sort if sort in sortable else default
    desc = query.get("desc", "1" if default_desc else "0") == "1"
    present = [r for r in rows if _key(r.get(sort))[0] < 2]
    absent = [r for r in rows if _key(r.get(sort))[0] == 2]
    present.sort(key=lambda r: _key(r.get(sort)), reverse=desc)
    rows = present + absent
    try:
        page = max(0, int(query.get("page", "0")))
    except ValueError:
        page = 0
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    page = min(page, pages - 1)
    keep = {k: v for k, v in query.items() if k != "page" and v}
    return Page(rows[page * PAGE_SIZE:(page + 1) * PAGE_SIZE], len(rows), page, pages, sort, desc,
                keep)


def _entry(e) -> dict[str, Any]:
    return {"episode_id": e.episode_id, "run": e.run, "seed": e.seed, "lineup": list(e.lineup),
            "setting": ", ".join(f"{k}={v}" for k, v in e.setting)}


def _kept(rows: list[dict[str, Any]], only: str) -> list[dict[str, Any]]:
    return [r for r in rows if (r.get(only) or 0) > 0] if only in ONLY else rows


def episode_rows(index, found, only: str = "") -> list[dict[str, Any]]:
    """The episodes ``found`` (index entries), each with its players' totals."""
    totals = episode_totals(index.outcomes())
    empty = dict.fromkeys(("calls", "tokens", "cost_usd", "reasked", "invalid"))
    return _kept([{**_entry(e), **totals.get(e.episode_id, empty)} for e in found], only)


def player_rows(index, player: str, found, only: str = "") -> list[dict[str, Any]]:
    """The episodes ``found`` that ``player`` played, each with its outcome in it (``OUTCOME``)."""
    outcomes = index.outcomes()
    mine = {r["episode_id"]: r for r in records(outcomes[outcomes["player"] == player])}
    rows = []
    for e in found:
        if player in e.lineup:
            got = mine.get(e.episode_id, {})
            rows.append({**_entry(e), **{k: got.get(k) for k in OUTCOME},
                         "opponents": [p for p in e.lineup if p != player]})
    return _kept(rows, only)


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A player's list summed up: episodes, mean score and rank, games won, LLM calls, tokens,
    cost, re-asked and invalid decisions."""
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return sum(values) / len(values) if values else None

    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    return {"episodes": len(rows), "score": mean("score"), "rank": mean("rank"),
            "won": sum(1 for r in rows if r.get("rank") == 1),
            "cost_usd": sum(costs) if costs else None,
            **{k: sum(r.get(k) or 0 for r in rows) for k in ("calls", "tokens", "reasked", "invalid")}}


def shared_rows(index, a: str, b: str, found) -> list[dict[str, Any]]:
    """The episodes ``found`` that both ``a`` and ``b`` played, with both outcomes."""
    outcomes = index.outcomes()
    of = {p: {r["episode_id"]: r for r in records(outcomes[outcomes["player"] == p])} for p in (a, b)}
    rows = []
    for e in found:
        if a in e.lineup and b in e.lineup:
            ra, rb = of[a].get(e.episode_id, {}), of[b].get(e.episode_id, {})
            sa, sb = ra.get("score"), rb.get("score")
            rows.append({**_entry(e), "a_score": sa, "a_rank": ra.get("rank"), "b_score": sb,
                         "b_rank": rb.get("rank"), "players": ra.get("players"),
                         "difference": None if sa is None or sb is None else sa - sb})
    return rows


def versus(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Games met, the first player's win share (a tie half) and mean score difference."""
    diffs = [r["difference"] for r in rows if r["difference"] is not None]
    if not diffs:
        return {"games": len(rows), "scored": 0, "win_share": None, "mean_difference": None}
    wins = sum(1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in diffs)
    return {"games": len(rows), "scored": len(diffs), "win_share": wins / len(diffs),
            "mean_difference": sum(diffs) / len(diffs)}


def players(index) -> list[dict[str, Any]]:
    """Every player of the instance (from the games' lineups, so imported games' players too):
    episodes, mean score and rank, games won (rank 1), LLM calls, cost, re-asked and invalid."""
    outcomes = index.outcomes()
    counts: dict[str, int] = {}
    for e in index.entries:
        for p in set(e.lineup):
            counts[p] = counts.get(p, 0) + 1
    summary: dict[str, dict[str, Any]] = {}
    if not outcomes.empty:
        g = outcomes.groupby("player")
        frame = pd.DataFrame({
            "score": g["score"].mean(), "rank": g["rank"].mean(),
            "won": g["rank"].agg(lambda r: int((r == 1).sum())),
            "calls": g["calls"].sum(), "tokens": g["tokens"].sum(),
            "cost_usd": g["cost_usd"].sum(min_count=1),
            "reasked": g["reasked"].sum(), "invalid": g["invalid"].sum()})
        summary = {r.pop("player"): r for r in records(frame.reset_index())}
    return [{"player": p, "episodes": n, **summary.get(p, {})} for p, n in sorted(counts.items())]


def board_rows(reports: Path, instance: str, names: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(columns, {name: cells}) of the players ``names`` on the instance's board
    (``reports/leaderboards/<instance>.csv``, intervals folded as on the site); empty without a
    board."""
    from marketarena.report.site import Board

    path = reports / "leaderboards" / f"{instance}.csv"
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return [], {}
    who = next((c for c in ("name", "player") if c in frame.columns), None)
    if who is None:
        return [], {}
    board = Board.of(frame)
    return board.columns, {str(n): row for n, row in zip(frame[who], board.rows) if str(n) in names}
