"""Unit checks of the ratings helpers that need no episodes: players' games and the overall board."""

import pandas as pd
import pytest

from marketarena.overall import overall_board
from marketarena.ratings import player_games


def board(names, kind):
    return pd.DataFrame({"rank": range(1, len(names) + 1), "name": names, "kind": kind})


def test_overall_board_ranks_only_players_of_two_or_more_instances():
    a = board(["gpt_a", "nash", "rnd"], ["llm", "baseline", "baseline"])
    b = board(["nash", "gpt_b"], ["baseline", "llm"])
    players = {
        "m1": {"gpt_a": "gpt-4o+plain", "nash": None, "rnd": None},
        "m2": {"nash": None, "gpt_b": "gpt-4o+plain"},
    }
    out, note = overall_board({"m1": a, "m2": b}, players)
    assert note == "" and out["player"].tolist() == ["gpt-4o+plain"]
    row = out.iloc[0]
    assert row["mean_percentile"] == pytest.approx((1.0 + 0.0) / 2) and row["n_markets"] == 2


def test_overall_board_with_no_shared_players_is_a_note_not_a_ranking():
    out, note = overall_board(
        {"m1": board(["nash", "rnd"], "baseline"), "m2": board(["nash"], "baseline")},
        {"m1": {"nash": None, "rnd": None}, "m2": {"nash": None}},
    )
    assert out.empty and "no cross-market ranking" in note


def test_a_baseline_entered_deliberately_in_two_markets_is_ranked():
    out, _ = overall_board(
        {"m1": board(["x", "y"], "baseline"), "m2": board(["y2", "x2"], "baseline")},
        {"m1": {"x": "shared-x", "y": None}, "m2": {"x2": "shared-x", "y2": None}},
    )
    assert out["player"].tolist() == ["shared-x"]
    assert out.iloc[0]["mean_percentile"] == pytest.approx(0.5)


def test_player_games_one_game_per_episode_with_seats_summed():
    agents = pd.DataFrame(
        {
            "episode_id": ["e1", "e1", "e1", "e2", "e2"],
            "agent_id": ["S1", "S2", "B1", "S1", "B1"],
            "name": ["sybil", "sybil", "buyer", "sybil", "buyer"],
            "profit": [1.0, 2.0, 2.5, 0.0, 1.0],
        }
    )
    games = player_games(agents, "profit")
    assert games == [{"buyer": 2.5, "sybil": 3.0}, {"buyer": 1.0, "sybil": 0.0}]
    assert list(games[0]) == ["buyer", "sybil"]  # in seat order (B1 before S1)
    assert player_games(agents, "profit", "mean")[0]["sybil"] == 1.5
