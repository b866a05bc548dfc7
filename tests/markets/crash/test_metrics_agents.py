"""crash: scripted firms' defining behaviour; an LLM firm whose price is the one the market applies;
the firm prompt (market size, the stock rule); the stabilizing harness's reflection block with the
authors' step score. The metrics and the EAS on hand-made logs: ``test_eas_logs.py``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.markets.crash.baselines import STRATEGIES
from marketarena.markets.crash.observations import DayRecord, FirmObservation, render_messages
from marketarena.testing import play_over_fake


def obs(
    competitors=(),
    history=(),
    cash=500.0,
    health=1.0,
    last_profit=0.0,
    stock=0.0,
    unsold="carry",
    persona="",
):
    return FirmObservation(
        agent_id="F1",
        day=len(history) + 1,
        persona=persona,
        stabilizing=False,
        cash=cash,
        stock=stock,
        unit_cost=1.0,
        overhead=2.0,
        tax_rate=0.05,
        consumers=50,
        unsold=unsold,
        initial_cash=500.0,
        history=list(history),
        competitor_prices=list(competitors),
        active_firms=5,
        health=health,
        last_profit=last_profit,
    )


def day(d, price, supply, sold, profit=0.0):
    return DayRecord(
        day=d,
        price=price,
        supply=supply,
        units_sold=sold,
        revenue=price * sold,
        expenses=0.0,
        profit=profit,
    )


def agent(strategy, **params):
    from marketarena.core.params import RosterEntry

    a = STRATEGIES.make(
        "F1", RosterEntry(name="x", kind="baseline", strategy=strategy, params=params)
    )
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
    assert a.decide(
        obs(history=[day(1, 1.5, 40, 10), day(2, 1.5, 40, 20)]), None
    ).supply == pytest.approx(18)
    assert a.decide(obs(history=[day(1, 1.5, 40, 40)], cash=50), None).supply == pytest.approx(25)
    # stock carried over from yesterday is counted: it buys the target minus what it holds
    assert a.decide(obs(history=[day(1, 1.5, 40, 40)], stock=15.0), None).supply == pytest.approx(
        45
    )


def test_the_stabilizer_holds_a_price_modestly_above_unit_cost_whatever_competitors_do():
    a = agent("stabilizer")  # margin 0.2, overhead 2 over 40 units
    target = 1.0 * 1.2 + 2.0 / 40
    assert a.decide(obs([0.5, 0.6]), None).price == pytest.approx(target) == pytest.approx(1.25)
    assert a.decide(obs([0.1], history=[day(1, target, 40, 0, -30)]), None).price == pytest.approx(
        target
    )
    assert a.decide(obs([9.0], history=[day(1, target, 40, 40, 8)]), None).price == pytest.approx(
        target
    )


def test_the_myopic_firm_prices_at_the_elasticity_optimum():
    a = agent("myopic", explore=0.0)
    # sales q = 100 p^-2: elasticity 2, best price c b / (b - 1) = 2
    hist = []
    for d, p in enumerate([1.0, 1.5, 2.5, 3.0], start=1):
        hist.append(day(d, p, 200, 100 * p**-2))
        price = a.decide(obs(history=hist), None).price
    assert price == pytest.approx(2.0, rel=1e-6)


def test_an_llm_firm_sets_the_price_the_market_applies(tmp_path):
    def responder(body):
        text = body["messages"][-1]["content"]
        day_ = int(re.search(r"Day (\d+)\.", text).group(1))
        return Reply({"price": 1.5 + 0.1 * day_, "supply": 30})

    params = parse_params(
        {
            "models": {
                "fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {
                "crash": {
                    "runs": 1,
                    "firms": 2,
                    "days": 3,
                    "roster": [
                        {"name": "gpt", "kind": "llm", "model": "fake"},
                        {"name": "markup", "kind": "baseline", "strategy": "markup"},
                    ],
                    "competitors": ["gpt", "markup"],
                }
            },
        }
    )
    fake = FakeEndpoint(responder=responder)

    result, _ = play_over_fake("crash", params, fake)
    st = result.tables["states"].query("agent_id == 'F1'")
    assert st["price"].round(6).tolist() == [1.6, 1.7, 1.8] and (st["supply"] == 30).all()
    assert fake.n_calls == 3 and result.llm_calls["valid"].all()
    system = fake.requests[0].body["messages"][0]["content"]
    assert "Your business strategy: You maximise profit" in system  # the first persona
    assert "unit cost of $1.00" in system and "This market has 50 consumers in total" in system


@pytest.mark.parametrize(
    "unsold, says",
    [
        ("carry", "Unsold units stay in your stock and can be sold on the following days."),
        (
            "perish",
            "Unsold units perish at the end of the day: what you do not sell today is lost.",
        ),
    ],
)
def test_the_firm_prompt_states_the_market_size_and_the_stock_rule(unsold, says):
    system = render_messages(obs(unsold=unsold))[0]["content"]
    assert "This market has 50 consumers in total" in system
    assert says in system
    other = {"carry": "perish", "perish": "stay in your stock"}[unsold]
    assert other not in system
    # the authors' prompt does not tell firms how consumers choose
    assert "cheapest" not in system


def test_the_stabilizing_harness_reflects_on_its_best_days(tmp_path):
    prices = iter([2.0, 2.2, 2.4, 2.6])

    def responder(body):
        return Reply({"price": next(prices), "supply": 10})

    params = parse_params(
        {
            "models": {
                "fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {
                "crash": {
                    "runs": 1,
                    "firms": 2,
                    "days": 4,
                    "stabilizing": [1],
                    "stabilizer": "stab",
                    "roster": [
                        {
                            "name": "stab",
                            "kind": "llm",
                            "model": "fake",
                            "harness": "stabilizing",
                            "params": {"k": 2},
                        },
                        {"name": "markup", "kind": "baseline", "strategy": "markup"},
                    ],
                }
            },
        }
    )
    fake = FakeEndpoint(responder=responder)

    result, _ = play_over_fake("crash", params, fake)
    system = fake.requests[0].body["messages"][0]["content"]
    assert "you are a stabilizing firm, a price anchor" in system
    assert "do not follow them down" in system and "Stable prices are your brand" in system
    st = result.tables["states"].query("agent_id == 'F1'").reset_index(drop=True)
    days = result.tables["days"]
    # the authors' score of day t: market health after day t + max(0, profit(t)) / initial cash
    scores = [days.loc[t, "health"] + max(0.0, st.loc[t, "profit"]) / 500.0 for t in range(3)]
    best = sorted(range(3), key=lambda t: (-scores[t], t))[:2]
    last_user = fake.requests[3].body["messages"][-1]["content"]
    block = last_user.split("Your best past steps", 1)[1]
    shown = [int(m) for m in re.findall(r"- step (\d+):", block)]
    assert shown == [t + 1 for t in best]
    for t in best:
        assert json.dumps({"price": [2.0, 2.2, 2.4][t], "supply": 10.0}) in block
        assert f"(score {scores[t]:.4g})" in block
