"""How each player's decisions were answered (``metrics/validity.py``), by hand: the runner's
attempts and the client's re-asks, an actor deciding for several seats, the board's columns beside
mu, the overall board's pooling, and published games without a ``decisions`` table."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel

from marketarena.config import ParamsError, RatingsParams, parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.runner import run_episode
from marketarena.core.types import Checked, Decision, Reply
from marketarena.metrics.validity import (
    BOARD_COLUMNS,
    COLUMNS,
    FLAG_FALLBACK_ABOVE,
    decision_outcomes,
    flag,
    player_validity,
    pooled,
    with_validity,
)
from marketarena.overall import overall_board


def decisions(rows):
    """rows: (step, agent_id, attempt, valid[, failure]), all in round 0 of phase "p"; an invalid
    row's failure is "rule" unless given."""
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
                "failure": rest[0] if rest else ("" if v else "rule"),
            }
            for s, a, k, v, *rest in rows
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
    # llm: 4 decisions: 1 first, 2 re-asked, 1 fallback (a rule broken to the end); sybil: 2
    # decisions (P1's), both first
    assert counts.loc["llm", list(COLUMNS)].tolist() == [4, 1, 2, 1, 0, 1]
    assert counts.loc["sybil", list(COLUMNS)].tolist() == [2, 2, 0, 0, 0, 0]


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
        *BOARD_COLUMNS,
        "profit_mean",
    ]
    out = out.set_index("name")
    assert out.loc["llm", "decisions"] == 4 and out.loc["llm", "valid_first"] == 0.25
    assert out.loc["llm", "valid_reasked"] == 0.5 and out.loc["llm", "fallback"] == 0.25
    shares = out[["valid_first", "valid_reasked", "fallback"]].dropna()
    assert np.allclose(shares.sum(axis=1), 1.0)
    assert out.loc["llm", "rule_failures"] == 0.25 and out.loc["llm", "format_failures"] == 0
    assert out.loc["ghost", list(COLUMNS)].isna().all()  # no logged decision
    # 0.25 of llm's decisions fell back: above the default 0.2, flagged; sybil's 0 is not;
    # ghost's share is unknown: neither
    assert out.loc["llm", "flagged"] is True and out.loc["sybil", "flagged"] is False
    assert out.loc["ghost", "flagged"] is None


def test_published_games_without_decisions_give_nan_columns_not_an_error(tmp_path):
    write(tmp_path, "ep-0000", {"agents": AGENTS})
    counts = player_validity(EpisodeReader(tmp_path))
    assert counts.empty and list(counts.columns) == ["episode_id", "name", *COLUMNS]
    board = pd.DataFrame({"rank": [1], "name": ["llm"], "mu": [25.0]})
    out = with_validity(board, counts)
    assert out[list(COLUMNS)].isna().all().all() and out["flagged"].isna().all()
    assert with_validity(board, None)[list(COLUMNS)].isna().all().all()


def test_the_overall_board_pools_decisions_over_instances():
    def board(names, decisions, first, reasked, fallback, fmt, rule):
        return pd.DataFrame(
            {
                "rank": range(1, len(names) + 1),
                "name": names,
                "kind": "llm",
                "decisions": decisions,
                "valid_first": first,
                "valid_reasked": reasked,
                "fallback": fallback,
                "format_failures": fmt,
                "rule_failures": rule,
            }
        )

    a = board(["gpt", "x"], [100.0, 10], [0.9, 1], [0.0, 0], [0.1, 0], [0.1, 0], [0.0, 0])
    b = board(
        ["y", "gpt_b"], [10.0, 300], [1.0, 0.5], [0.0, 0.25], [0.0, 0.25], [0, 0.05], [0, 0.2]
    )
    players = {"m1": {"gpt": "gpt+plain", "x": None}, "m2": {"y": None, "gpt_b": "gpt+plain"}}
    out, _ = overall_board({"m1": a, "m2": b}, players)
    row = out.set_index("player").loc["gpt+plain"]
    # 100 x (0.9, 0, 0.1) + 300 x (0.5, 0.25, 0.25): 240 first, 75 re-asked, 85 fallback of 400;
    # the fallbacks: 10 + 15 format, 0 + 60 rule
    assert row["decisions"] == 400
    assert row["valid_first"] == pytest.approx(240 / 400)
    assert row["valid_reasked"] == pytest.approx(75 / 400)
    assert row["fallback"] == pytest.approx(85 / 400)
    assert row["format_failures"] == pytest.approx(25 / 400)
    assert row["rule_failures"] == pytest.approx(60 / 400)
    assert row["flagged"] is True  # 0.2125 > 0.2 (the default)
    out, _ = overall_board({"m1": a, "m2": b}, players, flag_above=0.25)
    assert out.set_index("player").loc["gpt+plain", "flagged"] is False
    # a board written before the kinds: the pooled kinds are unknown, the outcomes are not
    old = b.drop(columns=["format_failures", "rule_failures"])
    row = overall_board({"m1": a, "m2": old}, players)[0].set_index("player").loc["gpt+plain"]
    assert row["fallback"] == pytest.approx(85 / 400)
    assert np.isnan(row["format_failures"]) and np.isnan(row["rule_failures"])
    # a board without the columns (published games) adds nothing; all absent: NaN
    assert pooled({"m1": a.drop(columns=list(COLUMNS))}, players).empty
    out, _ = overall_board(
        {"m1": a.drop(columns=list(COLUMNS)), "m2": b.drop(columns=list(COLUMNS))}, players
    )
    assert out[list(COLUMNS)].isna().all().all() and out["flagged"].isna().all()


# ------------------------------------------------------------------ the kinds of failure
class Guess(BaseModel):
    value: int


class GuessMarket:
    """Four decision points, each asked up to twice on a broken rule; a guess is valid if
    0 <= value <= 10 (the rule); the fallback is 0."""

    name = "guess"

    def reset(self, seed):
        self.t = 0
        return self._decision()

    def _decision(self):
        seats = {a: {} for a in ("T", "R", "M", "G")}
        return Decision("guess", self.t, 0, seats, Guess, max_attempts=2)

    def check(self, agent_id, action, decision):
        if not 0 <= action.value <= 10:
            return Checked(None, f"value {action.value} out of range")
        return Checked(action)

    def fallback(self, agent_id, decision):
        return Guess(value=0)

    def step(self, actions):
        self.t += 1
        return self._decision() if self.t < 4 else None

    def tables(self):
        return {}


class Seat:
    """T answers text that did not parse at steps 0-2 (its client gave up: no action, as an LLM
    harness hands it back), then 3; R answers parsed JSON breaking the rule (99) at step 0, both
    attempts, then 3; M breaks the rule, then, re-asked, answers text that did not parse (its last
    failure is a format one), at every step; G answers 3."""

    def __init__(self, agent_id):
        self.agent_id = agent_id

    def reset(self, rng):
        pass

    async def act(self, observation, decision, retry=None):
        unparsed = Reply(action=None, error="llm: not valid JSON: 'I bid high!'")
        if self.agent_id == "T":
            return unparsed if decision.step < 3 else {"value": 3}
        if self.agent_id == "R":
            return {"value": 99} if decision.step == 0 else {"value": 3}
        if self.agent_id == "M":
            return {"value": 99} if retry is None else unparsed
        return {"value": 3}


SEATS = pd.DataFrame(
    {
        "agent_id": ["T", "R", "M", "G"],
        "name": ["text", "rule", "mixed", "good"],
        "kind": "llm",
        "model": "",
        "strategy": "",
        "harness": "",
        "role": "",
        "actor": ["T", "R", "M", "G"],
    }
)


def test_unparseable_text_and_a_broken_rule_are_told_apart(tmp_path):
    seats = {a: Seat(a) for a in ("T", "R", "M", "G")}
    result = asyncio.run(run_episode(GuessMarket(), seats, seed=0))
    d = result.decisions.set_index(["step", "agent_id", "attempt"])["failure"]
    assert d[(0, "T", 0)] == "format" and d[(3, "T", 0)] == ""
    assert d[(0, "R", 0)] == "rule" and d[(0, "R", 1)] == "rule"
    assert d[(0, "M", 0)] == "rule" and d[(0, "M", 1)] == "format"
    write(tmp_path, "ep-0000", {"agents": SEATS, "decisions": result.decisions})
    counts = player_validity(EpisodeReader(tmp_path))
    board = with_validity(pd.DataFrame({"rank": [1, 2, 3, 4], "name": SEATS["name"]}), counts)
    got = board.set_index("name")[list(COLUMNS)]
    # decisions, first, re-asked, fallback, format, rule (shares of 4 decisions)
    assert got.loc["text"].tolist() == [4, 0.25, 0, 0.75, 0.75, 0]
    assert got.loc["rule"].tolist() == [4, 0.75, 0, 0.25, 0, 0.25]
    assert got.loc["mixed"].tolist() == [4, 0, 0, 1, 1, 0]  # the last failure's kind
    assert got.loc["good"].tolist() == [4, 1, 0, 0, 0, 0]
    outcomes = got[["valid_first", "valid_reasked", "fallback"]].sum(axis=1)
    assert np.allclose(outcomes, 1)
    assert np.allclose(got["format_failures"] + got["rule_failures"], got["fallback"])
    flagged = board.set_index("name")["flagged"]  # above 0.2 (the default): 0.75, 0.25, 1
    assert flagged.to_dict() == {"text": True, "rule": True, "mixed": True, "good": False}


def test_the_flag_is_strictly_above_the_threshold():
    frame = pd.DataFrame({"fallback": [0.19, 0.2, 0.21, np.nan]})
    assert flag(frame, 0.2).tolist() == [False, False, True, None]
    assert flag(frame, 0.19).tolist() == [False, True, True, None]
    assert flag(frame, 0.0).tolist() == [True, True, True, None]
    assert not any(flag(frame, 1.0).dropna())
    # one fallback in five decisions: 0.2, flagged just below it, not at it
    counts = pd.DataFrame(
        {
            "episode_id": "e",
            "name": ["p"],
            "decisions": [5],
            "valid_first": [4],
            "valid_reasked": [0],
            "fallback": [1],
            "format_failures": [1.0],
            "rule_failures": [0.0],
        }
    )
    board = pd.DataFrame({"rank": [1], "name": ["p"], "mu": [1.0]})
    assert with_validity(board, counts, 0.2)["flagged"].tolist() == [False]
    assert with_validity(board, counts, 0.199)["flagged"].tolist() == [True]


def test_the_threshold_is_a_validated_param_with_the_documented_default():
    roster = [
        {"name": "a", "kind": "baseline", "strategy": "cost_plus"},
        {"name": "b", "kind": "baseline", "strategy": "volume"},
    ]
    base = {"markets": {"supply_chain": {"roster": roster}}}
    assert RatingsParams().flag_fallback_above == FLAG_FALLBACK_ABOVE == 0.2
    for bad in (1.5, -0.1, "often"):
        with pytest.raises(ParamsError, match=r"ratings\.flag_fallback_above"):
            parse_params({**base, "ratings": {"flag_fallback_above": bad}})
    assert parse_params({**base, "ratings": {"flag_fallback_above": 0.5}}).ratings == (
        RatingsParams(flag_fallback_above=0.5)
    )


def old(frame):
    """A decisions table as logged before the ``failure`` column."""
    return frame.drop(columns=["failure"])


def test_old_logs_without_the_kind_read_with_kinds_unknown(tmp_path):
    write(tmp_path, "ep-0000", {"agents": AGENTS, "decisions": old(DEC), "llm_calls": CALLS})
    counts = player_validity(EpisodeReader(tmp_path)).set_index("name")
    # llm had a fallback whose kind the log does not say: both kinds NaN; sybil had none: 0, 0
    assert counts.loc["llm", list(COLUMNS[:4])].tolist() == [4, 1, 2, 1]
    assert counts.loc["llm", ["format_failures", "rule_failures"]].isna().all()
    assert counts.loc["sybil", ["format_failures", "rule_failures"]].tolist() == [0, 0]
    # an old episode beside a new one: the player's kinds are unknown over both, the outcomes
    # pooled; the flag reads the fallback share alone
    write(tmp_path, "ep-0001", {"agents": AGENTS, "decisions": DEC, "llm_calls": CALLS})
    counts = player_validity(EpisodeReader(tmp_path))
    board = with_validity(pd.DataFrame({"rank": [1, 2], "name": ["llm", "sybil"]}), counts)
    row = board.set_index("name").loc["llm"]
    assert row["decisions"] == 8 and row["fallback"] == 0.25 and row["flagged"] is True
    assert np.isnan(row["format_failures"]) and np.isnan(row["rule_failures"])


def test_old_and_new_shards_read_together(tmp_path):
    games = [
        ("a-0000", {"agents": AGENTS, "decisions": old(DEC)}, {}),
        ("b-0000", {"agents": AGENTS, "decisions": DEC}, {}),
    ]
    logs.write_games(tmp_path, iter(games), shard_episodes=10)
    reader = EpisodeReader(tmp_path)
    got = reader.table("decisions", ["agent_id", "failure"], optional=("failure",))
    assert got.loc[got["episode_id"] == "a-0000", "failure"].isna().all()
    assert set(got.loc[got["episode_id"] == "b-0000", "failure"]) == {"", "rule"}
    counts = player_validity(reader).set_index(["episode_id", "name"])
    assert np.isnan(counts.loc[("a-0000", "llm"), "rule_failures"])
    assert counts.loc[("b-0000", "llm"), "rule_failures"] == 1
    # only old shards: the column is in none of them, still read (as unknown)
    logs.write_games(tmp_path / "only_old", iter(games[:1]), shard_episodes=10)
    counts = player_validity(EpisodeReader(tmp_path / "only_old")).set_index("name")
    assert np.isnan(counts.loc["llm", "format_failures"])
