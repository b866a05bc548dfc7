"""The usual leaderboard: TrueSkill by player, one free-for-all per episode between players, each
player's seats combined into one score (``plugin.seat_score``), ranked by ``plugin.rank_by``
(``ratings.leaderboard``). Markets whose board is this one (or starts from it) call
:func:`player_board` from their plugin's ``leaderboard`` hook; the core's plugin base class does
not know the ratings layer."""

from __future__ import annotations

import pandas as pd

from marketarena.core.plugin import MarketPlugin
from marketarena.ratings import leaderboard


def player_board(plugin: MarketPlugin, agents: pd.DataFrame, ratings, stats) -> pd.DataFrame:
    return leaderboard(agents, plugin.rank_by, ratings, stats, seat_score=plugin.seat_score)
