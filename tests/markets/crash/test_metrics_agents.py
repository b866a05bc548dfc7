"""crash metrics and EAS from a hand-made log; scripted firms' defining behaviour; an LLM firm whose
price is the one the market applies; the stabilizing harness's reflection block."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.markets.crash import metrics as cm
from marketarena.markets.crash.baselines import STRATEGIES
from marketarena.markets.crash.observations import DayRecord, FirmObservation
from marketarena.markets.crash.params import default_eas
from marketarena.testing import play_over_fake


def write(root, episode_id, tables):
    logs.write_episode(root, logs.PlannedEpisode(episode_id, 0, 0, "x"), tables, {}, {})


def test_market_metrics_and_eas_from_a_hand_made_log(tmp_path):
    agents = pd.DataFrame({"agent_id": ["F1", "F2"], "name": ["a", "b"], "kind": "baseline",
                           "model": "", "strategy": "x", "harness": "", "role": "competitor",
                           "actor": ["F1", "F2"]})
    states = pd.DataFrame({
        "step": [0, 0, 1, 1], "agent_id": ["F1", "F2", "F1", "F2"],
        "cash_start": 0.0, "price": [1.0, 3.0, 2.0, 2.0], "supply_asked": 0.0, "supply": 0.0,
        "cost": 0.0, "units_sold": [4.0, 0.0, 2.0, 2.0], "revenue": [4.0, 0.0, 4.0, 4.0],
        "unsold": 0.0, "overhead": 0.0, "holding": 0.0, "tax": 0.0, "fee": 0.0,
        "profit": [2.0, -2.0, 1.0, 1.0], "cash_end": [10.0, 5.0, 11.0, -1.0],
        "bankrupt": [False, False, False, True]})
    days = pd.DataFrame({"step": [0, 1], "active": [2, 2], "shoppers": [3, 3],
                         "mean_price": [2.0, 2.0 * 1.5], "filled": [4.0, 4.0],
                         "wanted": [8.0, 4.0], "spend": [4.0, 8.0], "surplus": [1.0, 2.0],
                         "health": [1.0, 0.5]})
    setting = pd.DataFrame([{"discovery_limit": 3, "stabilizing": 0, "firms": 2, "consumers": 5,
                             "days": 2, "unit_cost": 2.0, "max_price": 10.0}])
    write(tmp_path, "ep-0000", {"agents": agents, "states": states, "days": days,
                                "setting": setting})
    frames = cm.compute(EpisodeReader(tmp_path), default_eas())
    m = frames["market"].iloc[0]
    assert m["bankruptcy_rate"] == 0.5 and m["days_to_first_bankruptcy"] == 2
    assert m["mean_price_over_cost"] == pytest.approx((1.0 + 1.5) / 2)
    assert m["price_deviation"] == pytest.approx(0.25)
    assert m["price_volatility"] == pytest.approx(0.25)  # population SD of (1.0, 1.5)
    assert m["fill_rate"] == pytest.approx(8 / 12) and m["volume"] == 4.0
    assert m["profit_per_firm_day"] == pytest.approx(2.0 / (2 * 2))
    # EAS on the default anchors: stability mean(1 - 0.5, 1 - 0.25); welfare mean(1 - 0.25, 2/3);
    # profitability 0.5 / 10
    assert m["stability"] == pytest.approx(0.625)
    assert m["welfare"] == pytest.approx((0.75 + 2 / 3) / 2)
    assert m["profitability"] == pytest.approx(0.05)
    assert m["eas"] == pytest.approx((0.625 + (0.75 + 2 / 3) / 2 + 0.05) / 3)
    a = frames["agents"].set_index("agent_id")
    assert a.loc["F1", "profit"] == 3.0 and a.loc["F2", "survived"] == 0.0
    assert a.loc["F1", "mean_price_over_cost"] == pytest.approx(0.75)
    assert (a["eas"] == m["eas"]).all()


def obs(competitors=(), history=(), cash=500.0, health=1.0, last_profit=0.0):
    return FirmObservation(agent_id="F1", day=len(history) + 1, persona="", stabilizing=False,
                           cash=cash, stock=0.0, unit_cost=1.0, overhead=2.0, tax_rate=0.05,
                           history=list(history), competitor_prices=list(competitors),
                           active_firms=5, health=health, last_profit=last_profit)


def day(d, price, supply, sold, profit=0.0):
    return DayRecord(day=d, price=price, supply=supply, units_sold=sold, revenue=price * sold,
                     expenses=0.0, profit=profit)


def agent(strategy, **params):
    from marketarena.core.params import RosterEntry

    a = STRATEGIES.make("F1", RosterEntry(name="x", kind="baseline", strategy=strategy, params=params))
    a.reset(np.random.default_rng(0))
    return a


def test_the_undercutter_beats_the_cheapest_rival_down_to_its_floor():
    a = agent("undercut", step=0.1, floor=0.5)
    assert a.decide(obs([1.6, 1.2, 3.0]), None).price == pytest.approx(1.1)
    assert a.decide(obs([0.55]), None).price == pytest.approx(0.5)  # below cost, at its floor


def test_supply_follows_sales_grows_after_a_sell_out_and_stays_within_cash():
    a = agent("markup", markup=0.5, buffer=1.2, growth=1.5, min_supply=5, max_cash_share=0.5)
    assert a.decide(obs(), None).supply == 40  # initial
    assert a.decide(obs(history=[day(1, 1.5, 40, 40)]), None).supply == pytest.approx(60)
    assert a.decide(obs(history=[day(1, 1.5, 40, 10), day(2, 1.5, 40, 20)]), None).supply \
        == pytest.approx(18)
    assert a.decide(obs(history=[day(1, 1.5, 40, 40)], cash=50), None).supply == pytest.approx(25)


def test_the_stabilizer_does_not_follow_competitors_down():
    a = agent("stabilizer", margin=1.0)
    floor = 1.0 * 2 + 2.0 / 40
    assert a.decide(obs([0.5, 0.6]), None).price == pytest.approx(floor)
    assert a.decide(obs([0.1], history=[day(1, floor, 40, 0, -30)]), None).price == pytest.approx(floor)


def test_the_myopic_firm_prices_at_the_elasticity_optimum():
    a = agent("myopic", explore=0.0)
    # sales q = 100 p^-2: elasticity 2, best price c b / (b - 1) = 2
    hist = []
    for d, p in enumerate([1.0, 1.5, 2.5, 3.0], start=1):
        hist.append(day(d, p, 200, 100 * p ** -2))
        price = a.decide(obs(history=hist), None).price
    assert price == pytest.approx(2.0, rel=1e-6)


def test_an_llm_firm_sets_the_price_the_market_applies(tmp_path):
    def responder(body):
        text = body["messages"][-1]["content"]
        day_ = int(re.search(r"Day (\d+)\.", text).group(1))
        return Reply({"price": 1.5 + 0.1 * day_, "supply": 30})

    params = parse_params({
        "models": {"fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}},
        "llm": {"cache_dir": str(tmp_path)},
        "markets": {"crash": {"runs": 1, "firms": 2, "days": 3, "roster": [
            {"name": "gpt", "kind": "llm", "model": "fake"},
            {"name": "markup", "kind": "baseline", "strategy": "markup"}],
            "competitors": ["gpt", "markup"]}}})
    fake = FakeEndpoint(responder=responder)

    result, _ = play_over_fake("crash", params, fake)
    st = result.tables["states"].query("agent_id == 'F1'")
    assert st["price"].round(6).tolist() == [1.6, 1.7, 1.8] and (st["supply"] == 30).all()
    assert fake.n_calls == 3 and result.llm_calls["valid"].all()
    system = fake.requests[0].body["messages"][0]["content"]
    assert "competitive firm" in system and "unit cost of $1.00" in system


def test_the_stabilizing_harness_reflects_on_its_best_days(tmp_path):
    prices = iter([2.0, 2.2, 2.4, 2.6])

    def responder(body):
        return Reply({"price": next(prices), "supply": 10})

    params = parse_params({
        "models": {"fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}},
        "llm": {"cache_dir": str(tmp_path)},
        "markets": {"crash": {"runs": 1, "firms": 2, "days": 4, "stabilizing": [1],
                              "stabilizer": "stab", "roster": [
            {"name": "stab", "kind": "llm", "model": "fake", "harness": "stabilizing",
             "params": {"k": 2}},
            {"name": "markup", "kind": "baseline", "strategy": "markup"}]}}})
    fake = FakeEndpoint(responder=responder)

    result, _ = play_over_fake("crash", params, fake)
    system = fake.requests[0].body["messages"][0]["content"]
    assert "You are a Stabilizing Firm" in system and "Do not follow competitors down" in system
    st = result.tables["states"].query("agent_id == 'F1'").reset_index(drop=True)
    days = result.tables["days"]
    # the score of day t: 0.1 x profit(t) + health after day t (the next day's observation)
    scores = [0.1 * st.loc[t, "profit"] + days.loc[t, "health"] for t in range(3)]
    best = sorted(range(3), key=lambda t: (-scores[t], t))[:2]
    last_user = fake.requests[3].body["messages"][-1]["content"]
    block = last_user.split("Your best past steps", 1)[1]
    shown = [int(m) for m in re.findall(r"- step (\d+):", block)]
    assert shown == [t + 1 for t in best]
    for t in best:
        assert json.dumps({"price": [2.0, 2.2, 2.4][t], "supply": 10.0}) in block
