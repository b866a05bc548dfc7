"""The market state machine: determinism, conservation, fallbacks, observations, params, plugin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.markets.double_auction import KIND
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.observations import render_messages
from marketarena.markets.double_auction.schedule import lineup
from marketarena.simulate import build

from .conftest import ScriptAgent, baseline_lineup, play, small_params

MIX = ["zic", "random", "gd", "sniper", "bandit", "roth_erev", "signal_jammer", "zip"]


def test_same_seed_identical_tables(params):
    a, _ = play(params, baseline_lineup(MIX, params), seed=42, distribution="correlated")
    b, _ = play(params, baseline_lineup(MIX, params), seed=42, distribution="correlated")
    c, _ = play(params, baseline_lineup(MIX, params), seed=43, distribution="correlated")
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    pd.testing.assert_frame_equal(a.decisions, b.decisions)
    assert not a.tables["seats"].equals(c.tables["seats"])


@pytest.mark.parametrize("seed", range(4))
def test_payoffs_sum_to_realised_surplus(params, seed):
    rng = np.random.default_rng(seed)
    plan = {
        a: [None if rng.random() < 0.1 else int(rng.integers(0, 101)) for _ in range(10)]
        for a in ["B1", "B2", "B3", "B4", "S1", "S2", "S3", "S4"]
    }
    res, market = play(params, {a: ScriptAgent(a, q) for a, q in plan.items()}, seed=seed)
    st, tr = res.tables["states"], res.tables["trades"]
    assert st["payoff"].sum() == (tr["buyer_value"] - tr["seller_value"]).sum()
    final = st[st["step"] == st["step"].max()].set_index("agent_id")["surplus"]
    assert (final == st.groupby("agent_id")["payoff"].sum()).all()
    # one unit per seat and round; a trade's quotes cross and its price lies between them
    assert (
        not tr.duplicated(["step", "buyer"]).any() and not tr.duplicated(["step", "seller"]).any()
    )
    assert (tr["bid"] >= tr["ask"]).all()
    assert ((tr["price"] >= tr["ask"]) & (tr["price"] <= tr["bid"])).all()
    assert st["traded"].sum() == 2 * len(tr)


def test_truthful_self_play_is_efficient(params):
    values = (np.array([90, 70, 50, 30]), np.array([20, 40, 60, 80]))
    res, _ = play(params, baseline_lineup(["truthful"] * 8, params), values=values)
    tr, game = res.tables["trades"], res.tables["game"].iloc[0]
    assert game["ce_surplus_round"] == 100 and game["ce_surplus"] == 1000
    assert len(tr) == 20 and set(tr["price"]) == {55}
    assert res.tables["states"]["payoff"].sum() == 1000


def test_fallback_sits_out_and_is_logged(params):
    agents = {a: ScriptAgent(a, [60]) for a in ["B2", "B3", "B4", "S2", "S3", "S4"]}
    agents["B1"] = ScriptAgent("B1", [{"quote": 101}, {"quote": 50.5}, {"bid": 3}, None])
    agents["S1"] = ScriptAgent("S1", [{"quote": "40"}])  # strict: a string is not an int
    res, _ = play(params, agents, values=(np.array([90, 70, 50, 30]), np.array([20, 40, 60, 80])))
    d = res.decisions
    bad = d[d["agent_id"].isin(["B1", "S1"])]
    assert (~bad[bad["agent_id"] == "S1"]["valid"]).all()
    b1 = bad[bad["agent_id"] == "B1"].sort_values("step")
    assert b1["valid"].tolist()[:3] == [False, False, False] and b1["valid"].iloc[3]
    st = res.tables["states"]
    assert (st[st["agent_id"] == "S1"]["quote"] == -1).all()
    assert (st[(st["agent_id"] == "B1") & (st["step"] == 0)]["quote"] == -1).all()


def test_observation_and_prompt(params):
    res, market = play(params, baseline_lineup(MIX, params), seed=3)
    o = market._decision().observations["S2"]  # after the last round: full history
    assert o.role == "seller" and o.value == market.value["S2"] and len(o.history) == 10
    msgs = render_messages(o)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "seller" in msgs[0]["content"] and '{"quote"' in msgs[0]["content"]
    assert f"Your private cost: {o.value}" in msgs[1]["content"]
    assert "Round 10: bids B1=" in msgs[1]["content"]
    first = render_messages(market.reset(3).observations["B1"])[1]["content"]
    assert "no rounds played yet" in first and "Submit your bid" in first


def test_a_seats_next_prompt_repeats_its_previous_one_up_to_the_round(params):
    """What does not change comes first (llm/prompt_cache.py): the seat, its value and the rounds
    played; round 9's prompt is round 10's up to where round 10 adds its own history line."""
    from marketarena.markets.double_auction.observations import QuoteObservation

    _, market = play(params, baseline_lineup(MIX, params), seed=3)
    o = market._decision().observations["S2"]
    last = render_messages(o)[1]["content"]
    before = render_messages(
        QuoteObservation(**{**o.__dict__, "round": o.round - 1, "history": o.history[:-1]})
    )[1]["content"]
    shared = before[: before.index("Round: ")]
    assert last.startswith(shared) and len(shared) > 0.8 * len(before)


def test_params_games_per_distribution_and_checks():
    p = small_params()
    assert p.runs == 4
    q = parse_params(
        {
            "markets": {
                "double_auction": {
                    "games_per_distribution": 3,
                    "distributions": ["uniform", "heavy_tailed"],
                    "roster": [
                        {"name": n, "kind": "baseline", "strategy": n}
                        for n in sorted(STRATEGIES)[:8]
                    ],
                }
            }
        }
    )
    mp = q.markets["double_auction"]
    assert mp.runs == 6 and [mp.distribution_of(r) for r in range(4)] == [
        "uniform",
        "heavy_tailed",
        "uniform",
        "heavy_tailed",
    ]
    with pytest.raises(Exception, match="cannot fill 8 seats"):
        small_params(roster=small_params().roster[:7])


def test_lineup_distinct_and_reproducible(params):
    for run in range(20):
        seats = lineup(params, run)
        assert len(set(seats)) == 8 and seats == lineup(params, run)
    t = KIND.rules.agents_table(KIND.rules.seats(params, 0))
    assert t["role"].tolist() == ["buyer"] * 4 + ["seller"] * 4
    assert t["agent_id"].tolist() == ["B1", "B2", "B3", "B4", "S1", "S2", "S3", "S4"]


def test_llm_traders_not_wired_yet():
    params = parse_params(
        {
            "models": {
                "m": {"model": "x", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
            },
            "markets": {
                "double_auction": {
                    "roster": [{"name": "gpt", "kind": "llm", "model": "m"}]
                    + [
                        {"name": n, "kind": "baseline", "strategy": n}
                        for n in sorted(STRATEGIES)[:7]
                    ],
                    "pool": ["gpt"] + sorted(STRATEGIES)[:7],
                }
            },
        }
    )
    with pytest.raises(RuntimeError, match="without an LLM runtime"):
        build("double_auction", params, 0)
