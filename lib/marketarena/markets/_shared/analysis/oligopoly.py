"""What the analysis of ``cournot`` and ``bertrand`` shares: the board (TrueSkill by firm, ranked
by profit) and the helpers of their figures, which are faceted by *lineup* (the firms that met,
seats in order; a round-robin roster has several), one line per seat, the mean across that
lineup's episodes with a Student-t band at ``plots.style.CONFIDENCE`` (95%)."""

from __future__ import annotations

import pandas as pd

from marketarena.core.analysis import MarketAnalysis
from marketarena.markets._shared.analysis.boards import player_board
from marketarena.stats import CONFIDENCE, mean_ci

BAND = f"{CONFIDENCE:.0%}"


class OligopolyAnalysis(MarketAnalysis):
    """The board both oligopolies share: firms ranked by profit in each episode, TrueSkill by
    player (``_shared/analysis/boards.py``)."""

    rank_by = "profit"

    def leaderboard(self, agents, mp, ratings, stats):
        return player_board(self, agents, ratings, stats)


def per_episode(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """The mean of ``value`` per episode and ``keys`` (a seat's round series, one per episode)."""
    return df.groupby(["episode_id", *keys], sort=True)[value].mean().reset_index()


def line_with_band(ax, df: pd.DataFrame, x: str, value: str, colour, label: str) -> None:
    """The mean of ``value`` over episodes per ``x`` with its band (none with one episode)."""
    stats = mean_ci(df, [x], value)
    ax.plot(stats[x], stats["mean"], color=colour, label=label, lw=1.6)
    ax.fill_between(stats[x], stats["lo"], stats["hi"], color=colour, alpha=0.18, lw=0)


def lineup_names(df: pd.DataFrame) -> list[str]:
    """The lineups of ``df`` in the order of their first episode."""
    return list(dict.fromkeys(df.sort_values("episode_id")["lineup"])) if len(df) else []


def seat_label(g: pd.DataFrame) -> str:
    return f"{g['agent_id'].iloc[0]} {g['name'].iloc[0]}"


def episodes_note(df: pd.DataFrame) -> str:
    n = df["episode_id"].nunique() if len(df) else 0
    return f"{n} episode{'s' if n != 1 else ''}"
