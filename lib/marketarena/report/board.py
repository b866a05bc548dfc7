"""The board as the results site shows it, and the instance's result in a sentence.

:class:`Board`: a leaderboard's CSV as a table of cells (an ``x`` column and its ``x_lo`` /
``x_hi`` pair folded into one ``x [lo, hi]`` cell, the default columns and the rest behind a switch,
a sort key per cell, each player linked to its page in the episode viewer at :data:`VIEWER`);
:func:`summary`: who leads, by how much, whether first place is settled, and where the LLM
players stand. Shared by the site (``report.site``) and the viewer's lists (``view.lists``).
Every name on a board is hostile text: escaped here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import quote, urlencode

import pandas as pd
from markupsafe import Markup, escape

from marketarena.report import captions as captions_mod

MISSING = "–"


def number(value: Any) -> str:
    """A number as the site prints it: integers as such, others with 3 significant-ish digits
    (3 decimals below 10, 2 below 100, 1 below 1,000, none above); NaN / None as ``–``."""
    if value is None or isinstance(value, str):
        return MISSING if value in (None, "") else value
    if isinstance(value, bool):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    decimals = 3 if abs(x) < 10 else 2 if abs(x) < 100 else 1 if abs(x) < 1000 else 0
    text = f"{x:,.{decimals}f}"
    return text[1:] if text.startswith("-") and text.strip("-0.,") == "" else text


#: where the site's links to the episode viewer point: `marketarena view`'s default address
VIEWER = "http://127.0.0.1:8765"
#: board columns shown by default besides the rank, the player, the headline and the games played
#: (``games``, else ``episodes``): a board's role (lemon's buyers and sellers), and the validity of
#: the player's answers (shares of its decisions: valid at the first attempt, only after re-asks,
#: the market's fallback, split into answers that did not parse and answers that broke a rule; and
#: how many), whether its fallback share is above the user's threshold (``flagged``, a mark:
#: :data:`MARKS`); on a board of published games, where each row's games come from (``origin``:
#: published, or new on a joint board) and whose prompt it saw
MAIN_COLUMNS = (
    "role",
    "origin",
    "prompts",
    "flagged",
    "valid_first",
    "valid_reasked",
    "fallback",
    "format_failures",
    "rule_failures",
    "decisions",
)
#: boolean columns shown as a mark where true, empty where false (``–`` where unknown):
#: ``flagged`` (``metrics/validity.py``: the fallback share above ``ratings.flag_fallback_above``)
MARKS = {"flagged": "⚑"}


def mark(value: Any, symbol: str) -> str:
    """A boolean cell as a mark: ``symbol`` where true, empty where false, ``–`` where unknown
    (None, NaN, empty: a board of published games)."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, str):
        return symbol if value.strip().lower() == "true" else ""
    return symbol if bool(value) else ""


def roles(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A board's parts: one per role on a board of several (lemon's buyers and sellers, each
    ranked on its own), else the whole board under no name."""
    if "role" in frame.columns and frame["role"].nunique() > 1:
        return [(str(r), rows) for r, rows in frame.groupby("role", sort=False)]
    return [("", frame)]


def viewer_url(instance: str, *parts: str, **query: str) -> str:
    """The viewer's page of ``instance`` (``/i/<instance>/<parts...>?<query>``)."""
    path = "/".join(quote(x, safe="") for x in (instance, *parts))
    return f"{VIEWER}/i/{path}" + (f"?{urlencode(query)}" if query else "")


@dataclass
class Board:
    """A table of numbers as shown: columns, and rows of cells; ``x_lo`` / ``x_hi`` pairs are
    folded into one ``x [lo, hi]`` cell beside their value column (``x`` or ``x_mean``), or shown
    alone where there is none (a rank interval). ``main`` says which columns show by default (the
    others behind the page's "all columns" switch), ``keys`` holds each cell's number for sorting
    (None: sort by its text) and ``links`` each row's link for its player cell."""

    columns: list[str]
    rows: list[list[str]]
    main: list[bool] = field(default_factory=list)
    keys: list[list[float | None]] = field(default_factory=list)
    links: list[str | None] = field(default_factory=list)
    player_column: int | None = None

    @classmethod
    def of(
        cls,
        df: pd.DataFrame,
        main: set[str] | None = None,
        link: Callable[[str], str] | None = None,
    ) -> "Board":
        """``df`` as shown; ``main``: the CSV columns shown by default (None: every one),
        ``link``: a player's name -> the href of its cell."""
        cols = list(df.columns)
        pairs = {c[:-3] for c in cols if c.endswith("_lo") and f"{c[:-3]}_hi" in cols}
        value_of = {b: next((v for v in (b, f"{b}_mean") if v in cols), None) for b in pairs}
        shown: list[
            tuple[str, str | None, str | None]
        ] = []  # (header, value column, interval base)
        for c in cols:
            if c[:-3] in pairs and c.endswith(("_lo", "_hi")):
                if value_of[c[:-3]] is None and c.endswith("_lo"):
                    shown.append((f"{c[:-3]} (95% interval)", None, c[:-3]))
                continue
            base = next((b for b, v in value_of.items() if v == c), None)
            shown.append((f"{c} (95% interval)" if base else c, c, base))
        who = who_column(df)
        rows, keys, links = [], [], []
        for record in df.to_dict(orient="records"):
            row, key = [], []
            for _, value, base in shown:
                cell = (
                    mark(record[value], MARKS[value])
                    if value in MARKS
                    else number(record[value])
                    if value
                    else ""
                )
                if base:
                    interval = f"[{number(record[base + '_lo'])}, {number(record[base + '_hi'])}]"
                    cell = f"{cell} {interval}" if cell else interval
                row.append(cell)
                raw = record[value] if value else record[base + "_lo"]
                key.append(
                    float(raw)
                    if isinstance(raw, (int, float))
                    and not isinstance(raw, bool)
                    and not math.isnan(raw)
                    else None
                )
            rows.append(row)
            keys.append(key)
            links.append(link(str(record[who])) if link and who else None)
        return cls(
            [h for h, _, _ in shown],
            rows,
            [main is None or (v or b) in main or b in main for _, v, b in shown],
            keys,
            links,
            next((i for i, (_, v, _) in enumerate(shown) if v == who), None),
        )

    def html(self, css_class: str = "") -> str:
        main = self.main or [True] * len(self.columns)
        more = ["" if m else ' class="more"' for m in main]
        head = "".join(f"<th{m}>{escape(c)}</th>" for c, m in zip(self.columns, more))
        body = []
        for r, row in enumerate(self.rows):
            cells = []
            for c, value in enumerate(row):
                key = self.keys[r][c] if self.keys else None
                attrs = more[c] + (f' data-sort="{key!r}"' if key is not None else "")
                text = escape(value)
                if c == self.player_column and self.links and self.links[r]:
                    text = Markup(f'<a class="player" href="{escape(self.links[r])}">{text}</a>')
                cells.append(f"<td{attrs}>{text}</td>")
            who = (
                f' data-player="{escape(row[self.player_column])}"'
                if self.player_column is not None
                else ""
            )
            body.append(f"<tr{who}>" + "".join(cells) + "</tr>")
        attr = f' class="{css_class}"' if css_class else ""
        return (
            f"<table{attr}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
            + "\n".join(body)
            + "\n</tbody>\n</table>\n"
        )

    @property
    def hidden(self) -> int:
        """How many columns the default view leaves out."""
        return sum(not m for m in self.main)


def who_column(frame: pd.DataFrame) -> str | None:
    """The column naming a board's players (``name`` on instance boards, ``player`` on tables)."""
    return next((c for c in ("name", "player") if c in frame.columns), None)


def headline_text(row: pd.Series | dict, column: str) -> str:
    """A board row's headline value with its 95% interval (``6.41 [5.52, 7.64]``)."""
    base = column[:-5] if column.endswith("_mean") else column
    text = number(row.get(column))
    if f"{base}_lo" in row and f"{base}_hi" in row:
        text += f" [{number(row[f'{base}_lo'])}, {number(row[f'{base}_hi'])}]"
    return text


def summary(frame: pd.DataFrame, headline: captions_mod.Headline) -> Markup:
    """The board's result in a sentence or three (per role on a board of several): who leads on
    the headline, by how much, whether its rank interval settles the first place, and where the
    LLM players land. Names are escaped."""
    who = who_column(frame)
    if who is None or headline.column not in frame.columns or frame.empty:
        return Markup("")
    out = []
    for role, rows in roles(frame):
        rows = rows.reset_index(drop=True)
        top = rows.iloc[0]
        lead = (f"Among {escape(role)}s, " if role else "") + (
            f"<strong>{escape(top[who])}</strong> leads {len(rows)} players on "
            f"{escape(headline.label)}: {headline_text(top, headline.column)}"
        )
        if "games" in rows.columns:
            lead += f" over {number(top['games'])} games"
        if len(rows) > 1:
            second = rows.iloc[1]
            lead += (
                f"; next is <strong>{escape(second[who])}</strong> "
                f"({number(second[headline.column])})"
            )
        lead += "."
        if {"rank_lo", "rank_hi"} <= set(rows.columns) and not pd.isna(top["rank_hi"]):
            lead += (
                " Its 95% rank interval is [1, 1]: first place is clear."
                if top["rank_hi"] <= 1
                else f" Its 95% rank interval is [{number(top['rank_lo'])}, "
                f"{number(top['rank_hi'])}]: first place is not settled."
            )
        if "kind" in rows.columns:
            llm = rows[rows["kind"] == "llm"]
            if 0 < len(llm) < len(rows):  # where the LLMs land among the others
                placed = [
                    f"<strong>{escape(r[who])}</strong> ranks {i + 1} of {len(rows)} "
                    f"({headline_text(r, headline.column)})"
                    for i, r in llm.head(5).iterrows()
                ]
                lead += (
                    " LLM players: "
                    + "; ".join(placed)
                    + (f"; {len(llm) - 5} more" if len(llm) > 5 else "")
                    + "."
                )
        out.append(lead)
    return Markup(" ".join(out))


def llm_ranks(frame: pd.DataFrame) -> list[tuple[str, int, int]]:
    """(name, rank, players) of every LLM row of a board (``kind`` llm), the rank within its role
    on a board of several."""
    who = who_column(frame)
    if who is None or "kind" not in frame.columns:
        return []
    return [
        (str(r[who]), i + 1, len(rows))
        for _, rows in roles(frame)
        for i, (_, r) in enumerate(rows.reset_index(drop=True).iterrows())
        if r["kind"] == "llm"
    ]


#: players in a head-to-head matrix at most (the board's first; the CSV holds every pair)
