"""Unit checks of pipeline helpers that need no episodes."""

import pandas as pd
import pytest

from marketarena.pipeline import games_from_metrics, overall_board


def test_overall_board_averages_percentiles_and_keeps_baselines_per_market():
    a = pd.DataFrame({"rank": [1, 2, 3], "name": ["gpt", "nash", "rnd"], "kind": ["llm", "baseline", "baseline"]})
    b = pd.DataFrame({"rank": [1, 2], "name": ["nash", "gpt"], "kind": ["baseline", "llm"]})
    board = overall_board({"m1": a, "m2": b}).set_index("player")
    assert board.loc["gpt", "mean_percentile"] == pytest.approx((1.0 + 0.0) / 2)
    assert board.loc["gpt", "n_markets"] == 2
    assert board.loc["m1/nash", "mean_percentile"] == pytest.approx(0.5)
    assert board.loc["m2/nash", "mean_percentile"] == pytest.approx(1.0)
    assert board.index[0] == "m2/nash" and len(board) == 4


def test_games_from_metrics_one_game_per_episode():
    df = pd.DataFrame({"episode_id": ["e1", "e1", "e2", "e2"], "agent_id": ["R1", "R2", "R1", "R2"],
                       "name": ["a", "b", "a", "b"], "Pi": [3.0, 1.0, 0.0, 5.0]})
    assert games_from_metrics(df, "Pi") == [{"a": 3.0, "b": 1.0}, {"a": 0.0, "b": 5.0}]
