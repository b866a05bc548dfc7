"""Who beats whom: for every two players of an instance, the games they met in, the share of those
games the first scored above the second (a tie counts half) and the mean difference of their
scores. A player's score in a game is the market's ranking metric (``MarketAnalysis.rank_by``) combined
over its seats as its board combines them (``seat_score``), read from the metrics stage's
``data/metrics/<instance>/agents.parquet``: the same numbers the board's TrueSkill ranks.

Arena's pairwise win-fraction and battle-count matrices, computed from the games as played (a
double_auction pool game seats 8 of 29 traders, so each pair meets in a fraction of them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["player", "opponent", "games", "win_share", "mean_difference"]


def combined(per_seat, combine: str = "sum") -> pd.Series:
    """A player's score in a game from its seats' (a grouped series): their sum (NaN when none is
    scored) or their mean, as the market's analysis says (``seat_score``)."""
    return per_seat.sum(min_count=1) if combine == "sum" else per_seat.mean()


def game_scores(agents: pd.DataFrame, score: str, combine: str = "sum") -> pd.DataFrame:
    """Episodes by players: each player's score in each episode it played (NaN: not in it)."""
    return combined(agents.groupby(["episode_id", "name"])[score], combine).unstack("name")


def head_to_head(scores: pd.DataFrame, players: list[str]) -> pd.DataFrame:
    """``COLUMNS`` for every ordered pair of ``players`` (those in ``scores``) that met."""
    players = [p for p in players if p in scores.columns]
    values = scores[players].to_numpy(dtype=float)
    present = ~np.isnan(values)
    rows = []
    for i, player in enumerate(players):
        diff = values[:, [i]] - values  # this player's score minus each other's, per episode
        met = present[:, [i]] & present
        games = met.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            wins = np.where(met, (diff > 0) + 0.5 * (diff == 0), 0.0).sum(axis=0) / games
            mean = np.where(met, diff, 0.0).sum(axis=0) / games
        for j, opponent in enumerate(players):
            if j != i and games[j]:
                rows.append((player, opponent, int(games[j]), float(wins[j]), float(mean[j])))
    return pd.DataFrame(rows, columns=COLUMNS)
