"""The crash market by hand: supply within cash, sales, overhead and tax, bankruptcy at the
boundary, bankrupt firms never trade again, conservation of money and units, metrics, EAS."""

from __future__ import annotations

import asyncio

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from marketarena.config import parse_params
from marketarena.core.runner import run_episode
from marketarena.markets.crash.market import CrashMarket, market_health
from marketarena.markets.crash.observations import FirmAction


def params(**over):
    block = {
        "runs": 1,
        "firms": 3,
        "consumers": 20,
        "days": 10,
        "roster": [{"name": "a", "kind": "baseline", "strategy": "markup"}],
        **over,
    }
    return parse_params({"markets": {"crash": block}}).markets["crash"]


class Fixed:
    """Answers the same price and supply every day (None: no answer)."""

    def __init__(self, agent_id, price, supply):
        self.agent_id, self.price, self.supply = agent_id, price, supply

    def reset(self, rng):
        pass

    async def act(self, obs, decision, retry=None):
        return None if self.price is None else FirmAction(price=self.price, supply=self.supply)


def play(p, answers, discovery=3, seed=0):
    ids = [f"F{i + 1}" for i in range(len(answers))]
    market = CrashMarket(p, ids, ["competitor"] * len(ids), [""] * len(ids), discovery)
    agents = {a: Fixed(a, *ans) for a, ans in zip(ids, answers)}
    result = asyncio.run(run_episode(market, agents, seed))
    return result, market


def test_one_day_by_hand_supply_sales_overhead_and_tax():
    p = params(days=1, firms=1, initial_cash=100.0, overhead=2.0, tax_rate=0.05, max_price=10.0)
    result, market = play(p, [(2.0, 1000.0)])
    s = result.tables["states"].iloc[0]
    assert s["supply_asked"] == 1000 and s["supply"] == 100.0  # cash 100 buys 100 units at cost 1
    orders = result.tables["orders"]
    demand = (orders["wanted"]).sum()
    assert s["units_sold"] == pytest.approx(min(100.0, demand))
    revenue = 2.0 * s["units_sold"]
    assert s["revenue"] == pytest.approx(revenue)
    before_tax = 100 - 100 + revenue - 2.0
    assert s["tax"] == pytest.approx(0.05 * before_tax)
    assert s["cash_end"] == pytest.approx(before_tax * 0.95)
    assert s["profit"] == pytest.approx(revenue - 100 - 2 - 0.05 * before_tax)
    assert result.decisions["notes"].iloc[0].startswith("supply 1000 scaled down to 100")


def test_cash_exactly_zero_survives_below_zero_is_bankrupt_and_never_trades_again():
    # firm 1 spends all its cash on supply priced at the choke price: sells nothing, pays overhead 0
    p = params(days=4, firms=2, initial_cash=10.0, overhead=0.0, tax_rate=0.0, max_price=5.0)
    result, market = play(p, [(5.0, 10.0), (5.0, 5.0)])
    st = result.tables["states"]
    assert (st[st.agent_id == "F1"]["cash_end"] == 0).all() and not st["bankrupt"].any()
    assert result.events.empty
    # with an overhead of 0.5 it cannot pay: limited liability (the authors' engine) takes what it
    # has, 0, and it ends at 0; unlimited charges it in full, -0.5; bankrupt on day 0 either way
    for liability, end, paid in (("limited", 0.0, 0.0), ("unlimited", -0.5, 0.5)):
        p = params(
            days=4,
            firms=2,
            initial_cash=10.0,
            overhead=0.5,
            tax_rate=0.0,
            max_price=5.0,
            liability=liability,
        )
        result, market = play(p, [(5.0, 10.0), (5.0, 0.0)])
        st = result.tables["states"]
        f1 = st[st.agent_id == "F1"]
        assert f1["step"].tolist() == [0] and f1["bankrupt"].item()
        assert (f1["cash_end"].item(), f1["overhead"].item()) == (end, paid)
        assert result.events[["step", "agent_id", "event"]].values.tolist() == [
            [0, "F1", "retired"]
        ]
        assert "F1" not in set(result.decisions.query("step > 0")["agent_id"])
        assert "F1" not in set(result.tables["orders"].query("step > 0")["firm"])


def test_an_invalid_answer_keeps_yesterdays_price_and_buys_nothing():
    p = params(days=2, firms=2)
    result, _ = play(p, [(None, None), (1.5, 10.0)])
    st = result.tables["states"]
    f1 = st[st.agent_id == "F1"]  # the unit cost on day 1, as the authors' engine
    assert (f1["price"] == 1.0).all() and (f1["supply"] == 0).all()
    assert not result.decisions.query("agent_id == 'F1'")["valid"].any()


def test_the_market_ends_when_every_firm_is_bankrupt():
    p = params(days=50, firms=2, initial_cash=5.0, overhead=1.0, tax_rate=0.0, max_price=2.0)
    result, _ = play(p, [(3.0, 0.0), (3.0, 0.0)])
    # cash 5 -> 4, 3, 2, 1, 0 (day 5: zero survives) -> -1 on day 6: both bankrupt at step 5
    assert result.tables["days"]["step"].max() == 5
    assert sorted(result.events["agent_id"]) == ["F1", "F2"]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.2, 12.0), st.floats(0.0, 300.0)), min_size=1, max_size=5),
    st.integers(1, 5),
    st.sampled_from(["perish", "carry"]),
    st.integers(0, 10**6),
)
def test_money_and_units_are_conserved_every_day(answers, discovery, unsold, seed):
    p = params(days=6, firms=len(answers), unsold=unsold, holding_cost=0.1, platform_fee=0.01)
    result, market = play(p, answers, discovery, seed)
    st, orders = result.tables["states"], result.tables["orders"]
    for day, g in st.groupby("step"):
        spend = orders[orders.step == day]["spend"].sum()
        assert g["revenue"].sum() == pytest.approx(spend, abs=1e-9)
        expenses = g[["cost", "overhead", "holding", "tax", "fee"]].sum(axis=1)
        np.testing.assert_allclose(
            g["cash_end"] - g["cash_start"], g["revenue"] - expenses, atol=1e-9
        )
        today = orders[(orders.step == day) & (orders.firm != "")]
        filled = today.groupby("firm")["filled"].sum()
        sold = g.set_index("agent_id")["units_sold"]
        np.testing.assert_allclose(sold.reindex(filled.index), filled, atol=1e-9)
        assert (g["supply"] <= g["cash_start"] / p.unit_cost + 1e-9).all()
        assert (
            orders[orders.step == day]["filled"] <= orders[orders.step == day]["wanted"] + 1e-12
        ).all()
    # units: carried stock in = yesterday's unsold; bought = sold + unsold (perish) per day
    for _, g in st.groupby("agent_id"):
        g = g.sort_values("step")
        carried = np.r_[0.0, g["unsold"].to_numpy()[:-1]] if unsold == "carry" else 0.0
        np.testing.assert_allclose(g["supply"] + carried, g["units_sold"] + g["unsold"], atol=1e-9)


def test_the_authors_engine_by_hand_mean_quote_savings_and_costs():
    """Two firms, one day, one shopper of income I who sees both (discovery 2): A at 2 with 10
    units, B at 4 with 10; the mean quote is 3, so the shopper orders I / 3 from A. Overhead 2,
    tax 5% of the cash left, fee 10% of the cash left after the tax."""
    p = params(
        days=1,
        firms=2,
        consumers=1,
        initial_cash=100.0,
        overhead=2.0,
        tax_rate=0.05,
        platform_fee=0.1,
        consumer={"arrival_rate": 10.0},
    )
    result, market = play(p, [(2.0, 10.0), (4.0, 10.0)], discovery=2)
    orders, st = result.tables["orders"], result.tables["states"].set_index("agent_id")
    income = float(result.tables["consumers"]["income"].iloc[0])
    o = orders.iloc[0]
    assert o["firm"] == "F1" and o["wanted"] == pytest.approx(income / 3.0)
    assert o["budget"] == pytest.approx(income)  # day 0: the day's income, saved from nothing
    assert o["filled"] == pytest.approx(income / 3.0) and o["spend"] == pytest.approx(
        2 * income / 3
    )
    cash = 100 - 10 + 2 * income / 3 - 2
    tax = 0.05 * cash
    fee = 0.1 * (cash - tax)
    assert st.loc["F1", ["tax", "fee", "cash_end"]].tolist() == pytest.approx(
        [tax, fee, cash - tax - fee]
    )
    # WTP = P (I / P)^(1/5) at the index P = 3: the surplus of the units it got at 2
    wtp = 3.0 * (income / 3.0) ** 0.2
    assert o["surplus"] == pytest.approx(max(0.0, (wtp - 2.0) * income / 3.0))


def test_a_shopper_cannot_spend_more_than_it_has_and_saves_the_rest():
    """One firm at 1 with 1,000 units, one shopper: each day it earns I and orders I / 1; it
    spends all it has each day, so its budget is I every day; with a firm at 2 and another at 0.5
    (mean 1.25) it wants I / 1.25 from the cheap one and pays 0.4 I, keeping 0.6 I."""
    p = params(days=2, firms=2, consumers=1, consumer={"arrival_rate": 10.0})
    result, _ = play(p, [(2.0, 100.0), (0.5, 100.0)], discovery=2)
    o = result.tables["orders"].sort_values("step")
    income = float(result.tables["consumers"]["income"].iloc[0])
    assert o["firm"].tolist() == ["F2", "F2"]
    assert o["spend"].tolist() == pytest.approx([0.4 * income] * 2)
    assert o["budget"].tolist() == pytest.approx([income, 1.6 * income])  # 0.6 I saved


def test_market_health_by_hand():
    assert market_health(5, 5, 1.0, 1.0) == 1.0
    assert market_health(2, 4, 1.5, 1.0) == pytest.approx((0.5 + 0.5) / 2)
    assert market_health(0, 4, float("nan"), 1.0) == 0.0
