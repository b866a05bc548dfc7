"""A mock model scripted per phase (``llm/mock.py``) plays supply_chain, whose retailers decide in
two phases (procurement, retail) with two answer schemas: with an answer for each phase, every
decision of the seat is logged valid in both; with garbage for one phase, that phase's decisions
are logged invalid and the other's stay valid; a script's answers are given in turn (a
seat's k-th request in a phase gets its answer k mod its length, re-asks counting); and the episode's logs are the same played
afresh, replayed from the response cache or with another cache.

The world is the conftest's (hand-made persona vectors, a hash embedder): no personas stage and no
embedding model, so the episodes take a second."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from pandas.testing import assert_frame_equal

from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint
from marketarena.markets.supply_chain.market import Resources
from marketarena.testing import play_over_fake

from .conftest import buyer_model, fake_embed

PROCURE = '{"bids": {}}'
RETAIL = '{"prices": {}, "slogan": "idle"}'


def play(tmp_path, answers, cache="llm"):
    """One episode with a cost_plus and a volume retailer and an LLM retailer on the mock:
    (decisions of the LLM seat, its llm_calls, every log table)."""
    params = parse_params(
        {
            "llm": {"cache_dir": str(tmp_path / cache)},
            "models": {
                "idle": {
                    "model": "idle",
                    "provider": "mock",
                    "mock": {"policy": "scripted", "answers": answers},
                }
            },
            "markets": {
                "supply_chain": {
                    "runs": 1,
                    "steps": 3,
                    "rounds": 2,
                    "items": [
                        {"id": "a", "category": "commodity", "qty": 40, "base_price": 10},
                        {"id": "b", "category": "luxury", "qty": 10, "base_price": 100},
                    ],
                    "roster": [
                        {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
                        {"name": "vol", "kind": "baseline", "strategy": "volume"},
                        {"name": "idle", "kind": "llm", "model": "idle"},
                    ],
                }
            },
        }
    )
    resources = Resources(buyers=buyer_model(), embedder=SimpleNamespace(encode=fake_embed))
    result, table = play_over_fake("supply_chain", params, FakeEndpoint(), resources=resources)
    me = table.loc[table["name"] == "idle", "agent_id"].item()
    decisions = result.decisions.query("agent_id == @me")
    calls = result.llm_calls
    assert set(calls["agent_id"]) == {me}
    return decisions, calls, result.log_tables()


def valid_by_phase(decisions: pd.DataFrame) -> dict[str, list[bool]]:
    return {p: d["valid"].tolist() for p, d in decisions.groupby("phase")}


def test_an_answer_for_each_phase_plays_both_phases_validly(tmp_path):
    decisions, calls, _ = play(tmp_path, {"procurement": [PROCURE], "retail": [RETAIL]})
    # 3 steps x 2 procurement rounds, 3 retail decisions: all valid at the first ask
    assert valid_by_phase(decisions) == {"procurement": [True] * 6, "retail": [True] * 3}
    assert calls["valid"].all() and (calls["attempts"] == 1).all()


def test_garbage_for_one_phase_is_invalid_there_and_only_there(tmp_path):
    decisions, calls, _ = play(tmp_path, {"retail": ["garbage"], "default": [PROCURE]})
    assert valid_by_phase(decisions) == {"procurement": [True] * 6, "retail": [False] * 3}
    retail = decisions.query("phase == 'retail'")
    assert retail["error"].str.startswith("llm:").all()  # the model's answer, not the rules
    # every retail call asked 3 times (max_reasks 2), garbage each time; procurement once
    assert calls.groupby("phase")["attempts"].unique().map(list).to_dict() == {
        "procurement": [1],
        "retail": [3],
    }


def test_a_phases_answers_are_given_in_turn_reasks_included(tmp_path):
    """The seat's k-th request in a phase gets the phase's answer k mod its length, counted per
    phase over the episode, every request (first asks and re-asks) counting."""
    answers = {"procurement": ["garbage", PROCURE, PROCURE], "retail": [RETAIL, "garbage"]}
    decisions, calls, _ = play(tmp_path, answers)
    assert valid_by_phase(decisions) == {"procurement": [True] * 6, "retail": [True] * 3}
    attempts = {
        p: c.sort_values(["step", "round"])["attempts"].tolist() for p, c in calls.groupby("phase")
    }
    # procurement: requests 0 garbage, 1 valid | 2 valid | 3 garbage, 4 valid | 5 valid | ...
    # retail: request 0 valid | 1 garbage, 2 valid | 3 garbage, 4 valid
    assert attempts == {"procurement": [2, 1, 2, 1, 2, 1], "retail": [1, 2, 2]}


def test_the_same_logs_afresh_from_the_cache_and_with_another_cache(tmp_path):
    answers = {"procurement": ["garbage", PROCURE, PROCURE], "retail": [RETAIL, "garbage"]}
    _, _, fresh = play(tmp_path, answers)
    _, _, replay = play(tmp_path, answers)  # the same cache: every answer from it
    _, _, other = play(tmp_path, answers, cache="other")
    assert not fresh["llm_costs"]["cached"].any() and replay["llm_costs"]["cached"].all()
    assert set(fresh) == set(replay) == set(other) and len(fresh["llm_calls"]) == 9
    for name, frame in fresh.items():  # how each answer was had aside (llm_costs' cache, time)
        drop = ["latency_s", "cached"] if name == "llm_costs" else []
        for again in (replay, other):
            assert_frame_equal(frame.drop(columns=drop), again[name].drop(columns=drop))
