"""Cournot market rules by hand: capacity, settlement, notes, fallback, observations, lineups."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from marketarena.agents.harnesses.notes import Notes
from marketarena.config import ParamsError, parse_params
from marketarena.core.registry import market_kind
from marketarena.core.runner import run_episode
from marketarena.core.types import Reply
from marketarena.markets.cournot import rules
from marketarena.markets.cournot.economics import CournotConfig, reference_summary
from marketarena.markets.cournot.market import CournotMarket
from marketarena.markets.cournot.observations import (
    CournotObservation,
    action_schema,
    render_messages,
)
from tests.markets.cournot.conftest import cournot_params, entry, play


def answer(qa, qb, plans="", insights=""):
    return {
        "observations_and_thoughts": "t",
        "new_content": {"PLANS.txt": plans, "INSIGHTS.txt": insights},
        "chosen_quantities": {"Product_A": qa, "Product_B": qb},
    }


class Scripted:
    """Answers from a list, one per round (a dict, or None for no answer)."""

    def __init__(self, agent_id, answers):
        self.agent_id, self.answers, self.seen = agent_id, list(answers), []

    def reset(self, rng):
        pass

    async def act(self, obs, decision):
        self.seen.append(obs)
        a = self.answers.pop(0)
        return Reply(action=None, error="silent") if a is None else a


def run_scripted(answers_f1, answers_f2, rounds=None, **overrides):
    rounds = rounds or len(answers_f1)
    params = cournot_params([entry("a", "nash"), entry("b", "nash")], rounds=rounds, **overrides)
    mp = params.markets["cournot"]
    market = CournotMarket(mp, ["F1", "F2"], reference_summary(mp.config()))
    agents = {"F1": Scripted("F1", answers_f1), "F2": Scripted("F2", answers_f2)}
    return asyncio.run(run_episode(market, agents, 0)), agents


def test_enforce_capacity_scales_proportionally():
    q, scaled = rules.enforce_capacity([80, 40], 100)
    np.testing.assert_allclose(q, [200 / 3, 100 / 3])
    assert scaled
    q, scaled = rules.enforce_capacity([60, 40], 100)  # exactly at capacity: untouched
    np.testing.assert_allclose(q, [60, 40])
    assert not scaled


@settings(max_examples=100, deadline=None)
@given(plan=st.lists(st.floats(0, 1e4), min_size=1, max_size=5), cap=st.floats(1, 500))
def test_capacity_invariants(plan, cap):
    q, scaled = rules.enforce_capacity(plan, cap)
    assert q.sum() <= cap * (1 + 1e-12) and np.all(q >= 0)
    assert scaled == (sum(plan) > cap)
    if scaled:  # the product mix is kept
        np.testing.assert_allclose(q * sum(plan), np.asarray(plan) * q.sum(), rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_array_equal(q, plan)


@settings(max_examples=50, deadline=None)
@given(q=st.lists(st.floats(0, 300), min_size=6, max_size=6))
def test_settlement_invariants(q):
    q = np.array(q).reshape(3, 2)
    cfg = CournotConfig(costs=((40.0, 50.0), (50.0, 40.0), (45.0, 45.0)))
    prices, profits, shares = rules.settle(q, cfg)
    assert np.all(prices >= 0)
    produced = q.sum(axis=0) > 0
    np.testing.assert_allclose(shares[:, produced].sum(axis=0), 1.0)
    # revenue minus cost, product by product
    np.testing.assert_allclose(
        profits.sum(axis=0), prices * q.sum(axis=0) - (cfg.cost_matrix * q).sum(axis=0), atol=1e-6
    )


def test_settlement_by_hand():
    # Q_A = 40 -> P_A = 100 - 40/2 = 80; Q_B = 60 -> P_B = 70
    prices, profits, shares = rules.settle(np.array([[30.0, 20.0], [10.0, 40.0]]), CournotConfig())
    np.testing.assert_allclose(prices, [80, 70])
    np.testing.assert_allclose(
        profits, [[(80 - 40) * 30, (70 - 50) * 20], [(80 - 50) * 10, (70 - 40) * 40]]
    )
    np.testing.assert_allclose(shares, [[0.75, 1 / 3], [0.25, 2 / 3]])
    _, _, shares = rules.settle(np.array([[0.0, 5.0], [0.0, 5.0]]), CournotConfig())
    assert np.isnan(shares[:, 0]).all()


def test_round_settles_and_logs_by_hand():
    result, _ = run_scripted([answer(30, 20)] * 2, [answer(10, 40)] * 2)
    s = result.tables["states"].query("step == 0").set_index(["agent_id", "product"])
    assert s.loc[("F1", "A"), "price"] == 80 and s.loc[("F2", "B"), "price"] == 70
    assert s.loc[("F1", "A"), "profit"] == 1200 and s.loc[("F2", "B"), "profit"] == 1200
    assert s.loc[("F1", "B"), "share"] == pytest.approx(1 / 3)
    f = result.tables["firms"].query("step == 0").set_index("agent_id")
    assert f.loc["F1", "profit"] == 1600 and f.loc["F2", "profit"] == 1500
    assert f.loc["F1", "cv"] == pytest.approx(10 / 50)  # |30 - 20| / (30 + 20)
    assert result.decisions["valid"].all()


def test_over_capacity_plan_is_scaled_flagged_and_shown():
    result, agents = run_scripted(
        [answer(150, 50), answer(10, 10)], [answer(10, 10), answer(10, 10)]
    )
    s = result.tables["states"]
    first = s[(s["step"] == 0) & (s["agent_id"] == "F1")].set_index("product")
    np.testing.assert_allclose(first["quantity"], [75, 25])
    np.testing.assert_allclose(first["planned"], [150, 50])
    assert result.tables["firms"].query("step == 0 and agent_id == 'F1'")["scaled"].item()
    d = result.decisions.query("step == 0 and agent_id == 'F1'").iloc[0]
    assert d["valid"] and "scaled by 0.5" in d["notes"]
    obs = agents["F1"].seen[1]
    assert obs.history[-1].scaled and "scaled down" in obs.note
    assert "scaled down proportionally" in render_messages(obs)[1]["content"]
    assert agents["F2"].seen[1].note is None


def test_invalid_answers_fall_back_to_zero():
    result, agents = run_scripted(
        [
            answer(10, 10, plans="P1", insights="I1"),
            answer(-5, 10),
            {"chosen_quantities": {"Product_A": 1}},
            None,
            answer(1, 1),
        ],
        [answer(10, 10)] * 5,
    )
    d = result.decisions[result.decisions["agent_id"] == "F1"].set_index("step")
    assert list(d["valid"]) == [True, False, False, False, True]
    assert "schema" in d.loc[1, "error"] and d.loc[3, "error"] == "silent"
    s = result.tables["states"].query("agent_id == 'F1' and step in (1, 2, 3)")
    assert (s["quantity"] == 0).all()


def test_notes_given_to_the_templates_are_shown():
    _, agents = run_scripted([answer(1, 1), answer(1, 1)], [answer(1, 1)] * 2)
    obs = agents["F1"].seen[1]
    user = render_messages(obs, notes=Notes("try 60/0", "A is cheap"))[1]["content"]
    assert "try 60/0" in user and "A is cheap" in user
    empty = render_messages(obs)[1]["content"]
    assert "PLANS.txt\n+++++++++++++++++++++\n(empty)" in empty


def test_observation_shows_own_window_and_never_the_number_of_rounds():
    result, agents = run_scripted([answer(5, 5)] * 8, [answer(7, 7)] * 8, history_window=3)
    obs = agents["F1"].seen[-1]
    assert [r.round for r in obs.history] == [5, 6, 7] and obs.round == 8
    assert obs.costs == {"A": 40.0, "B": 50.0} and obs.capacity == 100
    system, user = (m["content"] for m in render_messages(obs))
    assert "The cost to produce each unit is $40" in system and "cannot exceed 100 units" in system
    assert "last 3 rounds" in system
    assert "of 8" not in system + user and " 8 rounds" not in system + user
    assert "Round 7:" in user and "Round 4:" not in user
    assert '"Product_A": <just the number' in user and "My quantity: 5" in user
    assert "7" not in [p.quantity for r in obs.history for p in r.products]  # own data only


def test_action_schema_is_strict_and_stable():
    schema = action_schema(("A", "B"))
    assert schema is action_schema(("A", "B"))
    ok = schema.model_validate(answer("40", 5))  # numeric strings are accepted
    assert ok.chosen_quantities.Product_A == 40
    for bad in (
        answer(1, 2) | {"extra": 1},
        {"chosen_quantities": {"Product_A": 1, "Product_B": 2, "Product_C": 3}},
        {"chosen_quantities": {"Product_A": "many", "Product_B": 2}},
    ):
        with pytest.raises(ValidationError):
            schema.model_validate(bad)
    js = schema.model_json_schema()
    assert set(js["required"]) == {"observations_and_thoughts", "new_content", "chosen_quantities"}
    with pytest.raises(ValidationError):  # every key of the template is required
        schema.model_validate({"chosen_quantities": {"Product_A": 1, "Product_B": 2}})


def test_params_validation_and_round_robin_lineups():
    roster = [entry(n, "nash") for n in "abcd"]
    params = cournot_params(roster)
    mp = params.markets["cournot"]
    assert len(mp.lineups()) == 6
    # the circle method: rounds of two lineups in which every firm plays once; seats in roster order
    assert [[e.name for e in mp.lineup(r)] for r in range(6)] == [
        ["a", "d"],
        ["b", "c"],
        ["a", "c"],
        ["b", "d"],
        ["a", "b"],
        ["c", "d"],
    ]
    assert [e.name for e in mp.lineup(7)] == ["b", "c"]  # run 7 plays lineup 7 mod 6
    with pytest.raises(ParamsError, match="unknown cournot strategy"):
        cournot_params([entry("a", "nash"), entry("b", "cheat")])
    with pytest.raises(ParamsError, match="costs"):
        cournot_params([entry("a", "nash"), entry("b", "nash")], costs=[[40, 50], [50]])
    with pytest.raises(ParamsError, match="roster has only"):
        cournot_params([entry("a", "nash")])
    with pytest.raises(ParamsError, match="inertia"):
        cournot_params([entry("a", "myopic", inertia=2), entry("b", "nash")])


def test_llm_firms_raise_a_clear_error():
    params = parse_params(
        {
            "models": {
                "m": {"model": "x", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
            },
            "markets": {
                "cournot": {
                    "roster": [{"name": "gpt", "kind": "llm", "model": "m"}, entry("b", "nash")]
                }
            },
        }
    )
    with pytest.raises(RuntimeError, match="without an LLM runtime"):
        play(params)


def test_the_market_is_registered_with_its_rules_and_analysis(tmp_path):
    kind = market_kind("cournot")
    plugin = kind.rules
    assert kind.analysis.rank_by == "profit" and kind.rules.cost_seat == "myopic"
    mp = cournot_params([entry("a", "nash"), entry("b", "nash")]).markets["cournot"]
    assert plugin.input_files(mp, tmp_path) == [
        tmp_path / "references" / "cournot" / "summary.json"
    ]
    obs = CournotObservation(
        agent_id="F1",
        round=1,
        products=["A", "B"],
        costs={"A": 1, "B": 2},
        capacity=10,
        history_window=30,
    )
    assert [m["role"] for m in plugin.render_messages(obs)] == ["system", "user"]


def test_summarize(pair):
    result, table, _ = play(pair)
    summary = market_kind("cournot").analysis.summarize(table, result)
    assert list(summary["name"]) == ["nash", "collude"]  # most profitable first
    assert summary.set_index("name").loc["collude", "mean_cv"] == pytest.approx(1.0)
