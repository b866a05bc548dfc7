"""A page per model on the results site (issue 54: "which LLM is good at what"), and the models x
studies matrix of the index that links to them.

A model is an identity of the overall stage (``overall.py``, ``identity.py``): every LLM row of
every instance, imported or played, under its model's key. The stage writes what this reads:
``reports/overall/matrix.csv`` (per model and instance: its rank among the instance's models, of
how many, its percentile on the board, the board rows it holds) and
``reports/overall/models.csv`` (per board row: the name as its study wrote it, the harness, the
identity it was read as). A model's page (``model-<slug>.html``) lists, per instance it played:
its rank among that instance's models, its board row (rank on its side, the instance's headline
score with its 95% interval, named under the table, games, the validity of its answers) and how
it played there (the harness; on a board of published games, whether the games are the study's
or new, and whose prompts it saw).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from marketarena.overall import matrix_wide
from marketarena.ratings import GAMES_COLUMNS
from marketarena.report.board import MARKS, MISSING, Board, headline_text, number
from marketarena.report.board import mark as mark_cell
from marketarena.report.captions import Headline

#: board columns a model's page carries from each of its rows, where the board has them
CARRIED = (
    "role",
    "origin",
    "prompts",
    "flagged",
    "valid_first",
    "fallback",
    "format_failures",
    "rule_failures",
    "decisions",
)


def _cell(row: pd.Series, column: str) -> str:
    """A carried board cell as shown: a mark (:data:`~marketarena.report.board.MARKS`) or a
    number, ``–`` where the board has no such column."""
    if column not in row:
        return MISSING
    return mark_cell(row[column], MARKS[column]) if column in MARKS else number(row[column])


def slug(key: str) -> str:
    """The page of a model key (``claude-opus-4 [16K]`` -> ``model-claude-opus-4-16k``)."""
    return "model-" + (re.sub(r"[^a-z0-9.+]+", "-", key.lower()).strip("-") or "unnamed")


@dataclass
class ModelPage:
    key: str
    slug: str
    facts: dict[str, str]
    board: Board
    studies: int
    #: (instance, what its score column is): each instance's headline, named in words
    headlines: list[tuple[str, str]]


def _read(path) -> pd.DataFrame | None:
    """A CSV of the overall stage, every blank cell an empty string (an identity's missing
    variant or date), or None when the stage did not write it."""
    return pd.read_csv(path, keep_default_na=False) if path.is_file() else None


def _score(row: dict, headline: Headline | None) -> str:
    """A board row's headline score with its interval; where the row has none (lemon's sellers,
    ranked by TrueSkill on a board read by the buyers' EAS), its TrueSkill μ, so marked."""
    for column, mark in ((headline.column if headline else None, ""), ("mu", "μ ")):
        value = row.get(column) if column else None
        if isinstance(value, (int, float)) and value == value:
            return mark + headline_text(row, column)
    return MISSING


def model_pages(
    reports, headlines: Mapping[str, Headline], nav: set[str]
) -> tuple[list[ModelPage], pd.DataFrame]:
    """Every model's page, and the matrix of the index (models x instances, cells by
    ``overall.matrix_cell``), from ``reports/overall`` and the boards. ``headlines``: each instance's headline column;
    ``nav``: the instances' page names, which a model's page must not take."""
    folder = reports / "overall"
    matrix, names = _read(folder / "matrix.csv"), _read(folder / "models.csv")
    if matrix is None or names is None or matrix.empty:
        return [], pd.DataFrame()
    boards = {
        i: pd.read_csv(reports / "leaderboards" / f"{i}.csv") for i in sorted(set(matrix["market"]))
    }
    pages, seen = [], set(nav)
    for key, rows in matrix.groupby("player", sort=True):
        page = slug(str(key))
        while page in seen:  # two keys that spell alike, or an instance of that name
            page += "-"
        seen.add(page)
        written = names[names["key"] == key]
        first = written.iloc[0] if len(written) else {}
        facts = {
            c: str(first.get(c, "") or MISSING) for c in ("model", "variant", "provider", "family")
        }
        facts["date"] = str(first.get("date", "") or MISSING)
        facts["names as written"] = ", ".join(sorted(set(written["written"].astype(str))))
        facts["placed by"] = ", ".join(sorted(set(written["placed"].astype(str))))
        table = []
        for r in rows.itertuples(index=False):
            board = boards[r.market]
            headline = headlines.get(r.market)
            for name in str(r.names).split(","):
                hit = board[board["name"].astype(str) == name]
                if hit.empty:
                    continue
                row = hit.iloc[0].to_dict()
                harness = written.loc[
                    (written["instance"] == r.market) & (written["name"] == name), "harness"
                ]
                games = next((row[c] for c in GAMES_COLUMNS if c in row), None)
                table.append(
                    {
                        "instance": r.market,
                        "among models": f"{r.rank} of {r.n_models}",
                        "board row": name,
                        "rank on the board": number(row.get("rank")),
                        "score (95% interval)": _score(row, headline),
                        "games": number(games),
                        "harness": str(harness.iloc[0]) if len(harness) else MISSING,
                        **{c: _cell(row, c) for c in CARRIED},
                    }
                )
        frame = pd.DataFrame(table)
        frame = frame.loc[:, [c for c in frame.columns if (frame[c] != MISSING).any()]]
        played = sorted(set(rows["market"]))
        pages.append(
            ModelPage(
                str(key),
                page,
                facts,
                Board.of(frame),
                len(played),
                [(i, headlines[i].label) for i in played if i in headlines],
            )
        )
    return pages, matrix_wide(matrix)
