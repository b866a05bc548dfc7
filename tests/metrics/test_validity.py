"""How each player's decisions were answered (``metrics/validity.py``), by hand: the runner's
attempts and the client's re-asks, an actor deciding for several seats, the board's columns beside
mu, the overall board's pooling, and published games without a ``decisions`` table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.metrics.validity import (
    COLUMNS,
    decision_outcomes,
    player_validity,
    pooled,
    with_validity,
)
from marketarena.overall import overall_board


def decisions(rows):
    """rows: (step, agent_id, attempt, valid), all in round 0 of phase "p"."""
    return pd.DataFrame(
        [
            {
                "step": s,
                "round": 0,
                "phase": "p",
                "agent_id": a,
                "attempt": k,
                "action": "{}",
                "valid": v,
                "error": "" if v else "bad",
                "notes": "",
            }
            for s, a, k, v in rows
        ]
    )


def calls(rows):
    """rows: (step, agent_id, attempt, purpose, client attempts)."""
    return pd.DataFrame(
        [
            {
                "step": s,
                "round": 0,
                "phase": "p",
                "agent_id": a,
                "attempt": k,
                "purpose": p,
                "model": "m",
                "request_hash": "h",
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "attempts": n,
                "valid": True,
            }
            for s, a, k, p, n in rows
        ]
    )


DEC = decisions(
    [
        (0, "B1", 0, True),  # valid at once
        (1, "B1", 0, False),
        (1, "B1", 1, True),  # a rule broken, re-asked by the runner, then valid
        (2, "B1", 0, True),  # valid, but the client re-asked (below)
        (3, "B1", 0, False),
        (3, "B1", 1, False),  # invalid to the end: the fallback played
        (0, "P1", 0, True),  # the principal, for its identity seats
        (1, "P1", 0, True),  # a re-asked review call does not make it re-asked
    ]
)
CALLS = calls([(2, "B1", 0, "act", 2), (1, "P1", 0, "review", 3), (1, "P1", 0, "act", 1)])
AGENTS = pd.DataFrame(
    {
        "agent_id": ["B1", "P1", "S1", "S2"],
        "name": ["llm", "sybil", "sybil", "sybil"],
        "kind": ["llm", "baseline", "baseline", "baseline"],
        "model": "",
        "strategy": "",
        "harness": "",
        "role": ["buyer", "principal", "identity", "identity"],
        "actor": ["B1", "P1", "P1", "P1"],
    }
)


def test_each_decision_point_is_first_reasked_or_fallback():
    out = decision_outcomes(DEC.assign(episode_id="e"), CALLS.assign(episode_id="e"))
    got = dict(zip(zip(out["agent_id"], out["step"]), out["outcome"]))
    assert got == {
        ("B1", 0): "valid_first",
        ("B1", 1): "valid_reasked",
        ("B1", 2): "valid_reasked",
        ("B1", 3): "fallback",
        ("P1", 0): "valid_first",
        ("P1", 1): "valid_first",
    }
    # without the client's records the client re-ask is not seen: attempt 0 valid is first
    plain = decision_outcomes(DEC.assign(episode_id="e"))
    assert (plain["outcome"] == "valid_first").sum() == 4


def write(root, episode_id, tables):
    logs.write_episode(root, logs.PlannedEpisode(episode_id, 0, 0, "x"), tables, {}, {})


def test_per_player_counts_from_the_logs_an_actor_deciding_for_its_seats(tmp_path):
    write(tmp_path, "ep-0000", {"agents": AGENTS, "decisions": DEC, "llm_calls": CALLS})
    counts = player_validity(EpisodeReader(tmp_path)).set_index("name")
    # llm: 4 decisions: 1 first, 2 re-asked, 1 fallback; sybil: 2 decisions (P1's), both first
    assert counts.loc["llm", list(COLUMNS)].tolist() == [4, 1, 2, 1]
    assert counts.loc["sybil", list(COLUMNS)].tolist() == [2, 2, 0, 0]


def test_the_board_carries_the_shares_beside_mu(tmp_path):
    write(tmp_path, "ep-0000", {"agents": AGENTS, "decisions": DEC, "llm_calls": CALLS})
    counts = player_validity(EpisodeReader(tmp_path))
    board = pd.DataFrame(
        {
            "rank": [1, 2, 3],
            "name": ["sybil", "llm", "ghost"],
            "mu": [30.0, 20, 10],
            "sigma": 1.0,
            "mu_lo": 0.0,
            "mu_hi": 50.0,
            "profit_mean": 1.0,
        }
    )
    out = with_validity(board, counts)
    assert list(out.columns) == [
        "rank",
        "name",
        "mu",
        "sigma",
        "mu_lo",
        "mu_hi",
        *COLUMNS,
        "profit_mean",
    ]
    out = out.set_index("name")
    assert out.loc["llm", "decisions"] == 4 and out.loc["llm", "valid_first"] == 0.25
    assert out.loc["llm", "valid_reasked"] == 0.5 and out.loc["llm", "fallback"] == 0.25
    shares = out[["valid_first", "valid_reasked", "fallback"]].dropna()
    assert np.allclose(shares.sum(axis=1), 1.0)
    assert out.loc["ghost", list(COLUMNS)].isna().all()  # no logged decision


def test_published_games_without_decisions_give_nan_columns_not_an_error(tmp_path):
    write(tmp_path, "ep-0000", {"agents": AGENTS})
    counts = player_validity(EpisodeReader(tmp_path))
    assert counts.empty and list(counts.columns) == ["episode_id", "name", *COLUMNS]
    board = pd.DataFrame({"rank": [1], "name": ["llm"], "mu": [25.0]})
    out = with_validity(board, counts)
    assert out[list(COLUMNS)].isna().all().all()
    assert with_validity(board, None)[list(COLUMNS)].isna().all().all()


def test_the_overall_board_pools_decisions_over_instances():
    def board(names, decisions, first, reasked, fallback):
        return pd.DataFrame(
            {
                "rank": range(1, len(names) + 1),
                "name": names,
                "kind": "llm",
                "decisions": decisions,
                "valid_first": first,
                "valid_reasked": reasked,
                "fallback": fallback,
            }
        )

    a = board(["gpt", "x"], [100.0, 10], [1.0, 1], [0.0, 0], [0.0, 0])
    b = board(["y", "gpt_b"], [10.0, 300], [1.0, 0.5], [0.0, 0.25], [0.0, 0.25])
    players = {"m1": {"gpt": "gpt+plain", "x": None}, "m2": {"y": None, "gpt_b": "gpt+plain"}}
    out, _ = overall_board({"m1": a, "m2": b}, players)
    row = out.set_index("player").loc["gpt+plain"]
    # 100 first + 300 x (0.5, 0.25, 0.25): 250 first, 75 re-asked, 75 fallback of 400
    assert row["decisions"] == 400
    assert row["valid_first"] == pytest.approx(250 / 400)
    assert row["valid_reasked"] == pytest.approx(75 / 400)
    assert row["fallback"] == pytest.approx(75 / 400)
    # a board without the columns (published games) adds nothing; all absent: NaN
    assert pooled({"m1": a.drop(columns=list(COLUMNS))}, players).empty
    out, _ = overall_board(
        {"m1": a.drop(columns=list(COLUMNS)), "m2": b.drop(columns=list(COLUMNS))}, players
    )
    assert out[list(COLUMNS)].isna().all().all()
