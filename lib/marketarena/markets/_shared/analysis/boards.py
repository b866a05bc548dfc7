"""The usual leaderboard: TrueSkill by player, one free-for-all per episode between players, each
player's seats combined into one score (``analysis.seat_score``), ranked by ``analysis.rank_by``
(``ratings.leaderboard``). Markets whose board is this one (or starts from it) call
:func:`player_board` from their analysis's ``leaderboard`` hook; the core's analysis base class
does not know the ratings layer."""

from __future__ import annotations

import pandas as pd

from marketarena.core.analysis import MarketAnalysis
from marketarena.ratings import leaderboard


def player_board(analysis: MarketAnalysis, agents: pd.DataFrame, ratings, stats) -> pd.DataFrame:
    return leaderboard(agents, analysis.rank_by, ratings, stats, seat_score=analysis.seat_score)
