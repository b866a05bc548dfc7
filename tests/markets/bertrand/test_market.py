"""Bertrand market rules by hand, investments, scripted firms, reference hook, metrics, determinism."""

from __future__ import annotations

import asyncio
import math
import re

import numpy as np
import pandas as pd
import pytest

from marketarena.config import ParamsError, parse_params
from marketarena.core import logs
from marketarena.core.registry import market_kind
from marketarena.core.runner import run_episode
from marketarena.markets.bertrand import KIND, rules
from marketarena.markets.bertrand.economics import (
    BertrandConfig,
    bertrand_nash,
    best_response,
    monopoly_prices,
    references,
)
from marketarena.markets.bertrand.market import BertrandMarket
from marketarena.markets.bertrand.observations import render_messages
from marketarena.pipeline import Paths, run_metrics, run_reference
from marketarena.simulate import build, simulate

P_NASH, P_MONO = 1.4729, 1.9249  # Calvano et al. (2020) at alpha = 1


def entry(name, strategy, **params):
    return {"name": name, "kind": "baseline", "strategy": strategy, "params": params}


def bertrand_params(roster, **overrides):
    return parse_params(
        {"markets": {"bertrand": {"runs": 1, "rounds": 6, "roster": roster, **overrides}}}
    )


def play(params, run=0, seed=0):
    market, agents, table, _ = build("bertrand", params, run)
    return asyncio.run(run_episode(market, agents, seed)), agents


def prices_of(result, agent_id):
    s = result.tables["states"]
    s = s[s["agent_id"] == agent_id].sort_values(["step", "product"])
    n_products = s["product"].nunique()
    return s["price"].to_numpy().reshape(-1, n_products)


class Scripted:
    def __init__(self, agent_id, answers):
        self.agent_id, self.answers, self.seen = agent_id, list(answers), []

    def reset(self, rng):
        pass

    async def act(self, obs, decision):
        self.seen.append(obs)
        return self.answers.pop(0)


def answer(*prices, option=None, plans=""):
    a = {
        "observations_and_thoughts": "",
        "new_content": {"PLANS.txt": plans, "INSIGHTS.txt": ""},
        "chosen_prices": {f"Product_{p}": v for p, v in zip("AB", prices)},
    }
    if option is not None:
        a["investment_option"] = option
    return a


def run_scripted(params, answers_f1, answers_f2, funds=None):
    mp = params.markets["bertrand"]
    market = BertrandMarket(mp, ["F1", "F2"])
    if funds is not None:  # start richer than the preset's 8,500
        reset = market.reset

        def rich_reset(seed):
            reset(seed)
            market.funds[:] = funds
            return market._decision()

        market.reset = rich_reset
    agents = {"F1": Scripted("F1", answers_f1), "F2": Scripted("F2", answers_f2)}
    return asyncio.run(run_episode(market, agents, 0)), agents


# ------------------------------------------------------------------------------------------ rules


def test_investment_options_by_hand():
    ladder, costs = (100.0, 80.0, 50.0), (10_000.0, 10_000.0)
    assert [
        o.letter for o in rules.investment_options([0, 0], 8_500, ["A", "B"], ladder, costs)
    ] == ["A"]
    opts = rules.investment_options([0, 0], 10_000, ["A", "B"], ladder, costs)
    assert [(o.letter, o.upgrades, o.cost) for o in opts] == [
        ("A", {}, 0),
        ("B", {"A": 1}, 10_000),
        ("C", {"B": 1}, 10_000),
    ]
    assert "from $100 to $80" in opts[1].text and "ONLY" in opts[1].text
    # the seed's options A-G (appendix C), in its order and words, re-lettered as shown
    seed = {
        "A": "No investments for either product at this time.",
        "B": "Invest in Phase I Product A Production ONLY to decrease MC from $100 to $80.",
        "C": "Invest in Phase I Product B Production ONLY to decrease MC from $100 to $80.",
        "D": "Invest in BOTH Phase I Product A and Product B Production ONLY to decrease MCs to $80.",
        "E": "Invest in Phase II Product A Production ONLY to decrease MC from $80 to $50.",
        "F": "Invest in Phase II Product B Production ONLY to decrease MC from $80 to $50.",
        "G": "Invest in BOTH Phase II Product A and Product B Production to decrease MCs from $80 to $50.",
    }
    first = rules.investment_options([0, 0], 1e9, ["A", "B"], ladder, costs)
    second = rules.investment_options([1, 1], 1e9, ["A", "B"], ladder, costs)
    assert [o.text for o in first] == [seed[k] for k in "ABCD"]
    assert [o.text for o in second] == [seed[k] for k in "AEFG"] and [
        o.letter for o in second
    ] == list("ABCD")
    # products at different phases: no mixed bundle unless asked for
    opts = rules.investment_options([1, 0], 25_000, ["A", "B"], ladder, costs)
    assert [o.upgrades for o in opts] == [{}, {"B": 1}, {"A": 2}]
    mixed = rules.investment_options([1, 0], 25_000, ["A", "B"], ladder, costs, mixed_bundles=True)
    assert [o.upgrades for o in mixed] == [{}, {"B": 1}, {"A": 2}, {"A": 2, "B": 1}]
    assert [
        o.upgrades for o in rules.investment_options([2, 1], 1e9, ["A", "B"], ladder, costs)
    ] == [{}, {"B": 2}]


def test_settle_by_hand_and_below_cost_rule():
    cfg = BertrandConfig.calvano(1.0)
    p = np.array([[1.5], [2.0]])
    q, profit, shares = rules.settle(p, cfg, False)
    denom = math.exp(2) + 2  # utilities (2 - 1.5)/.25 = 2, (2 - 2)/.25 = 0, outside 0
    np.testing.assert_allclose(q[:, 0], [100 * math.exp(2) / denom, 100 / denom])
    np.testing.assert_allclose(profit[:, 0], [0.5 * q[0, 0], 1.0 * q[1, 0]])
    np.testing.assert_allclose(shares.sum(axis=0), 1.0)
    q, profit, _ = rules.settle(np.array([[0.9], [2.0]]), cfg, True)  # below cost 1: sells nothing
    assert q[0, 0] == 0 and profit[0, 0] == 0 and q[1, 0] == pytest.approx(100 / (1 + 1))


# ------------------------------------------------------------------------------------------ market


def test_investment_is_paid_and_lowers_cost_at_once():
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="startup", rounds=3)
    # round 1: option "Z" is not offered (dropped, noted); round 2: B = product A to level 1
    f1 = [answer(120, 120, option="z"), answer(70, 120, option="B"), answer(70, 120, option="A")]
    f2 = [answer(120, 120, option="A")] * 3
    result, agents = run_scripted(params, f1, f2, funds=20_000)
    d = result.decisions.query("agent_id == 'F1'").set_index("step")
    assert d["valid"].all() and "not offered" in d.loc[0, "notes"]
    firms = result.tables["firms"].query("agent_id == 'F1'").set_index("step")
    assert firms.loc[0, "investment"] == "" and firms.loc[1, "investment"] == "B"
    assert firms.loc[1, "investment_cost"] == 10_000
    states = result.tables["states"].query("agent_id == 'F1'").set_index(["step", "product"])
    assert states.loc[(0, "A"), "cost"] == 100 and states.loc[(1, "A"), "cost"] == 80
    assert states.loc[(1, "A"), "level"] == 1 and states.loc[(1, "B"), "cost"] == 100
    # price 70 < new cost 80 sells nothing; funds = 8,500 + profits - 10,000
    assert states.loc[(1, "A"), "quantity"] == 0
    profit = result.tables["states"].query("agent_id == 'F1' and step <= 1")["profit"].sum()
    assert firms.loc[1, "funds"] == pytest.approx(20_000 + profit - 10_000)
    assert [o.letter for o in agents["F1"].seen[1].options] == ["A", "B", "C", "D"]
    assert agents["F1"].seen[2].costs == {"A": 80.0, "B": 100.0}
    # the next prompt's "Total profit so far" is those funds (the prompt says investments come out
    # of it), not the sum of profits
    user = render_messages(agents["F1"].seen[2])[1]["content"]
    totals = re.findall(r"Total profit so far: ([\d.-]+)", user)
    assert float(totals[-1]) == pytest.approx(firms.loc[1, "funds"])
    assert float(totals[-1]) != pytest.approx(firms.loc[1, "total_profit"])


def test_preset_funds_cannot_pay_an_investment():
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="startup", rounds=2)
    result, agents = run_scripted(
        params, [answer(110, 110, option="B")] * 2, [answer(110, 110, option="A")] * 2
    )
    assert [o.letter for o in agents["F1"].seen[0].options] == ["A"]  # 8,500 < 10,000
    assert (result.tables["firms"]["investment"] == "").all()


def test_fallback_keeps_last_prices():
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], rounds=3)
    f1 = [answer(1.7, plans="hold 1.7"), {"chosen_prices": {"Product_A": -1}}, answer(1.6)]
    result, agents = run_scripted(params, f1, [answer(1.8)] * 3)
    np.testing.assert_allclose(prices_of(result, "F1")[:, 0], [1.7, 1.7, 1.6])
    assert list(result.decisions.query("agent_id == 'F1'")["valid"]) == [True, False, True]


def test_observation_and_prompts():
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], rounds=4, history_window=2)
    _, agents = run_scripted(params, [answer(1.7)] * 4, [answer(1.8)] * 4)
    obs = agents["F1"].seen[-1]
    assert [r.round for r in obs.history] == [2, 3]
    assert obs.history[-1].products[0].competitor_prices == [1.8]
    system, user = (m["content"] for m in render_messages(obs))
    assert "The cost to produce each unit is $1" in system and "Competitor's price: 1.8" in user
    # Fish et al.'s ceiling: 1.5 x the monopoly price of the current costs
    mono = references(BertrandConfig.calvano(1.0))[1][0, 0]
    assert f"No customer would pay more than ${1.5 * mono:.2f}." in system
    assert "investment_option" not in user and "of 4" not in user + system
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="startup", rounds=2)
    _, agents = run_scripted(
        params, [answer(120, 120, option="A")] * 2, [answer(120, 120, option="A")] * 2
    )
    system, user = (m["content"] for m in render_messages(agents["F1"].seen[-1]))
    assert "$8,500 in initial funds" in system and '"investment_option"' in user
    assert "power ups purchased: 0" in user and '"Product_B"' in user
    # two products: the seed's own wording (C, Figure 10)
    for phrase in (
        "For BOTH Product A and B",
        "NOT reduce costs for Product B",
        "(i.e. If you invested in Product A, you can aggressively decrease the price for "
        "ONLY Product A.",
        "YOU DO NOT NEED TO SELL BOTH PRODUCTS",
        "THE OTHER PRODUCT for the time being (if Product A is doing poorly, focus on Product B",
    ):
        assert phrase in system, phrase


def test_params_validation():
    with pytest.raises(ParamsError, match="unknown bertrand strategy"):
        bertrand_params([entry("a", "nash"), entry("b", "cheat")])
    with pytest.raises(ParamsError, match="seats"):
        bertrand_params([entry("a", "nash")])
    with pytest.raises(ParamsError, match="preset"):
        bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="other")


def test_llm_firms_raise_a_clear_error():
    params = parse_params(
        {
            "models": {
                "m": {"model": "x", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
            },
            "markets": {
                "bertrand": {
                    "roster": [{"name": "gpt", "kind": "llm", "model": "m"}, entry("b", "nash")]
                }
            },
        }
    )
    with pytest.raises(RuntimeError, match="without an LLM runtime"):
        play(params)


# ------------------------------------------------------------------------------------------ firms


def test_nash_collude_myopic_and_tit_for_tat():
    result, _ = play(bertrand_params([entry("n", "nash"), entry("c", "collude")]))
    np.testing.assert_allclose(prices_of(result, "F1"), P_NASH, atol=1e-4)
    np.testing.assert_allclose(prices_of(result, "F2"), P_MONO, atol=1e-4)
    result, _ = play(bertrand_params([entry("m", "myopic"), entry("f", "fixed", prices=[1.8])]))
    cfg = BertrandConfig.calvano(1.0)
    br = best_response(0, np.array([[0.0], [1.8]]), cfg)
    np.testing.assert_allclose(prices_of(result, "F1")[0], bertrand_nash(cfg)[0])
    np.testing.assert_allclose(prices_of(result, "F1")[1:], np.tile(br, (5, 1)))
    # tit for tat against a rival that undercuts once (round 3): Nash for 2 rounds, then monopoly
    params = bertrand_params(
        [entry("t", "tit_for_tat", punish_rounds=2), entry("x", "nash")], rounds=7
    )
    market, agents, _, _ = build("bertrand", params, 0)
    agents["F2"] = Scripted("F2", [answer(P_MONO)] * 2 + [answer(1.5)] + [answer(P_MONO)] * 4)
    result = asyncio.run(run_episode(market, agents, 0))
    expected = [P_MONO] * 3 + [P_NASH] * 2 + [P_MONO] * 2
    np.testing.assert_allclose(prices_of(result, "F1")[:, 0], expected, atol=1e-4)


def test_qlearning_grid_initial_values_and_one_update():
    params = bertrand_params(
        [entry("q", "qlearning", decay=0.0), entry("f", "fixed", prices=[1.7])], rounds=3
    )
    market, agents, _, _ = build("bertrand", params, 0)
    q = agents["F1"]
    cfg = BertrandConfig.calvano(1.0)
    nash, mono = bertrand_nash(cfg)[0, 0], monopoly_prices(cfg)[0, 0]
    grid = q.grids[0] + 1.0
    assert grid.size == 15
    np.testing.assert_allclose(
        [grid[0], grid[-1]], [nash - 0.1 * (mono - nash), mono + 0.1 * (mono - nash)]
    )
    # Q0(s, a) = mean over rival grid prices of the profit of a, / (1 - delta)
    a = 4
    expected = (
        np.mean(
            [
                (
                    (grid[a] - 1)
                    * 100
                    * math.exp((2 - grid[a]) / 0.25)
                    / (math.exp((2 - grid[a]) / 0.25) + math.exp((2 - b) / 0.25) + 1)
                )
                for b in grid
            ]
        )
        / 0.05
    )
    assert q.q0[0][3, 7, a] == pytest.approx(expected)
    result = asyncio.run(run_episode(market, agents, 0))
    # with decay 0 it explores every round; the update of round 2 used round 1's profit
    assert result.decisions["valid"].all()
    p = prices_of(result, "F1")[:, 0]
    assert all(np.isclose(grid, x).any() for x in p)


def test_qlearning_is_seeded():
    params = bertrand_params([entry("q", "qlearning"), entry("m", "myopic")], rounds=40)
    a, _ = play(params, seed=1)
    b, _ = play(params, seed=1)
    c, _ = play(params, seed=2)
    pd.testing.assert_frame_equal(a.tables["states"], b.tables["states"])
    assert not a.tables["states"].equals(c.tables["states"])


# ------------------------------------------------------------------------------------------ pipeline


def test_reference_hook(tmp_path):
    params = bertrand_params([entry("a", "nash"), entry("b", "nash")], alpha=3.2)
    ref = KIND.analysis.compute_reference(params.markets["bertrand"], tmp_path)
    np.testing.assert_allclose(ref["nash"]["prices"], [[3.2 * P_NASH]] * 2, atol=1e-3)
    np.testing.assert_allclose(ref["monopoly"]["prices"], [[3.2 * P_MONO]] * 2, atol=1e-3)
    ref = KIND.analysis.compute_reference(
        bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="startup").markets[
            "bertrand"
        ],
        tmp_path,
    )
    assert set(ref["by_level"]) == {"0", "1", "2"} and ref["products"] == ["A", "B"]
    assert (
        ref["by_level"]["2"]["nash"]["prices"][0][0] < ref["by_level"]["0"]["nash"]["prices"][0][0]
    )
    plugin = market_kind("bertrand").rules
    mp = bertrand_params([entry("a", "nash"), entry("b", "nash")]).markets["bertrand"]
    assert KIND.analysis.rank_by == "profit"
    assert plugin.input_files(mp, tmp_path) == [
        tmp_path / "references" / "bertrand" / "summary.json"
    ]


def _pipeline(root, params):
    paths = Paths(root)
    run_reference("bertrand", params, paths)
    simulate("bertrand", params, paths.data, paths.episodes("bertrand"), progress=False)
    return paths


def test_metrics_collusion_index_and_determinism(tmp_path):
    roster = [entry("nash", "nash"), entry("collude", "collude"), entry("q", "qlearning")]
    params = bertrand_params(roster, runs=3, rounds=30, collusion_window=10)
    a, b = _pipeline(tmp_path / "a", params), _pipeline(tmp_path / "b", params)
    for folder in logs.episode_folders(a.episodes("bertrand")):
        for f in sorted(folder.glob("*.parquet")):
            assert f.read_bytes() == (b.episodes("bertrand") / folder.name / f.name).read_bytes(), f
    frames = run_metrics("bertrand", params, a)
    agents = frames["agents"].set_index(["lineup", "name"])
    assert agents.loc[("nash vs collude", "nash"), "collusion_index"] == pytest.approx(
        0.0, abs=1e-6
    )
    assert agents.loc[("nash vs collude", "collude"), "collusion_index"] == pytest.approx(1.0)
    market = frames["market"].set_index("lineup")
    assert market.loc["nash vs collude", "collusion_index"] == pytest.approx(0.5, abs=1e-6)
    assert (
        agents.loc[("nash vs collude", "nash"), "profit"]
        > agents.loc[("nash vs collude", "collude"), "profit"]
    )
    pd.testing.assert_frame_equal(frames["agents"], run_metrics("bertrand", params, b)["agents"])


def test_figures_and_table(tmp_path):
    import matplotlib

    matplotlib.use("Agg")

    params = bertrand_params(
        [entry("n", "nash"), entry("c", "collude")],
        runs=2,
        rounds=12,
        collusion_window=5,
        preset="startup",
    )
    paths = _pipeline(tmp_path, params)
    run_metrics("bertrand", params, paths)
    out = KIND.analysis.draw_figures(
        paths.metrics("bertrand"),
        tmp_path / "fig",
        tmp_path / "tab",
        params.markets["bertrand"],
        "bertrand",
    )
    assert [p.name for p in out] == [
        "fig_prices.png",
        "fig_collusion_index.png",
        "bertrand_collusion.md",
        "bertrand_collusion.tex",
        "bertrand_outcomes.md",
        "bertrand_outcomes.tex",
    ]
    assert "| n vs c | 2 |" in (tmp_path / "tab" / "bertrand_collusion.md").read_text()
    outcomes = (tmp_path / "tab" / "bertrand_outcomes.md").read_text()
    assert "| domination |" in outcomes and "unreliable for this preset" in outcomes
    agents = pd.read_parquet(paths.metrics("bertrand") / "agents.parquet")
    assert {"share_A", "share_B", "investment_pattern"} <= set(agents.columns)


# ------------------------------------------------------------------------------- start-up outcomes
def _states(shares, prices, nash=120.0, steps=4):
    """A hand-made start-up log: per (firm, product) a constant share and price."""
    rows = []
    for step in range(steps):
        for (agent, product), share in shares.items():
            rows.append(
                {
                    "step": step,
                    "agent_id": agent,
                    "product": product,
                    "share": share,
                    "price": prices[(agent, product)],
                    "nash_price": nash,
                    "level": 0,
                }
            )
    return pd.DataFrame(rows)


def test_startup_outcome_categories_on_hand_made_episodes():
    from marketarena.markets.bertrand.analysis.outcomes import investment_pattern, outcome

    p = {(a, x): 150.0 for a in ("F1", "F2") for x in "AB"}
    dom = outcome(
        _states({("F1", "A"): 0.9, ("F2", "A"): 0.1, ("F1", "B"): 0.95, ("F2", "B"): 0.05}, p)
    )
    assert dom["outcome"] == "domination" and dom["leader_A"] == dom["leader_B"] == "F1"
    assert dom["hhi_A"] == pytest.approx(0.82)
    spec = outcome(
        _states({("F1", "A"): 0.9, ("F2", "A"): 0.1, ("F1", "B"): 0.1, ("F2", "B"): 0.9}, p)
    )
    assert spec["outcome"] == "specialisation" and (spec["leader_A"], spec["leader_B"]) == (
        "F1",
        "F2",
    )
    even = {(a, x): 0.5 for a in ("F1", "F2") for x in "AB"}
    assert outcome(_states(even, p))["outcome"] == "collusion"  # same price, 25% over Nash
    assert outcome(_states(even, p, nash=149.0))["outcome"] == "competition"  # not above Nash
    apart = {**p, ("F2", "B"): 170.0}
    assert outcome(_states(even, apart))["outcome"] == "competition"  # prices 13% apart
    s = _states(even, p)
    s.loc[(s["agent_id"] == "F1") & (s["product"] == "A") & (s["step"] >= 1), "level"] = 1
    s.loc[(s["agent_id"] == "F1") & (s["product"] == "A") & (s["step"] >= 3), "level"] = 2
    assert investment_pattern(s, "F1") == "1:A1 3:A2" and investment_pattern(s, "F2") == ""


def test_calvano_history_defaults_to_100_rounds_and_the_prefix_comes_first():
    params = bertrand_params(
        [entry("a", "nash"), entry("b", "nash")],
        rounds=3,
        prompt_prefix="P1: keep in mind your primary goal.",
    )
    mp = params.markets["bertrand"]
    assert mp.history_rounds == 100
    assert (
        bertrand_params([entry("a", "nash"), entry("b", "nash")], preset="startup")
        .markets["bertrand"]
        .history_rounds
        == 10
    )
    _, agents = run_scripted(params, [answer(1.7)] * 3, [answer(1.8)] * 3)
    system = render_messages(agents["F1"].seen[-1])[0]["content"]
    assert system.startswith("P1: keep in mind your primary goal.\n\nYour task is to assist")
    assert "up to the last 100 rounds" in system
    no_ceiling = bertrand_params(
        [entry("a", "nash"), entry("b", "nash")], rounds=2, price_ceiling=None
    )
    _, agents = run_scripted(no_ceiling, [answer(1.7)] * 2, [answer(1.8)] * 2)
    assert "No customer would pay" not in render_messages(agents["F1"].seen[-1])[0]["content"]
