"""crash rules by hand: demand, what a shopper sees and picks, partial fills, surplus."""

from __future__ import annotations

import numpy as np
import pytest

from marketarena.markets.crash import rules


def test_demand_spends_the_budget_and_stops_at_the_choke_price():
    income = np.array([10.0, 10.0, 10.0, 10.0])
    price = np.array([2.0, 5.0, 10.0, np.nan])
    assert rules.demand(income, price, max_price=10.0).tolist() == [5.0, 2.0, 0.0, 0.0]


def test_budgets_follow_the_authors_formula():
    rng = np.random.default_rng(0)
    c = rules.draw_consumers(rng, 10_000, 50, 200, 40, 1.24, 159.1)
    # mean of (U(50,200) + 40 U(1.24,159.1)) / 365 = (125 + 40 * 80.17) / 365
    assert c.income.mean() == pytest.approx((125 + 40 * (1.24 + 159.1) / 2) / 365, rel=0.02)
    assert c.income.min() >= (50 + 40 * 1.24) / 365 - 1e-12


def test_a_shopper_sees_only_firms_that_offer_and_picks_the_cheapest():
    rng = np.random.default_rng(3)
    offering = np.array([True, False, True, True, False])
    seen = rules.visible_firms(rng, 500, offering, discovery_limit=2)
    assert seen.shape == (500, 2) and set(np.unique(seen)) <= {0, 2, 3}
    assert (seen[:, 0] != seen[:, 1]).all()
    prices = np.array([3.0, 0.1, 2.0, 2.5, 0.1])
    chosen = rules.choose_cheapest(seen, prices)
    # a shopper picks firm 0 only if it did not see 2 or 3: never with limit 2 of {0, 2, 3}
    assert set(chosen) <= {2, 3} and (chosen == 2).sum() == ((seen == 2).any(axis=1)).sum()


def test_fewer_offering_firms_than_the_limit_pad_with_minus_one():
    seen = rules.visible_firms(np.random.default_rng(0), 3, np.array([False, True, False]), 3)
    assert seen.tolist() == [[1, -1, -1]] * 3
    assert rules.choose_cheapest(
        rules.visible_firms(np.random.default_rng(0), 2, np.zeros(3, bool), 3), np.ones(3)
    ).tolist() == [-1, -1]


def test_equal_prices_go_to_the_firm_drawn_first():
    seen = np.array([[2, 0, 1], [1, 2, 0]])
    assert rules.choose_cheapest(seen, np.array([1.0, 1.0, 1.0])).tolist() == [2, 1]


def test_orders_are_filled_in_order_up_to_the_stock():
    firm = np.array([0, 1, 0, -1, 0, 1])
    wanted = np.array([4.0, 2.0, 5.0, 3.0, 1.0, 1.0])
    stock = np.array([6.0, 10.0])
    filled = rules.fill_orders(firm, wanted, stock)
    # firm 0: 4 of 4, then 2 of 5 (stock 6 runs out), then 0 of 1; firm 1 fills everything
    assert filled.tolist() == [4.0, 2.0, 2.0, 0.0, 0.0, 1.0]


def test_consumer_surplus_is_the_area_under_demand_scaled_by_the_fill():
    surplus = rules.consumer_surplus(
        np.array([10.0, 10.0, 10.0]),
        np.array([5.0, 5.0, 0.0]),
        np.array([5.0, 2.5, 0.0]),
        np.array([2.0, 2.0, np.nan]),
        10.0,
    )
    assert surplus == pytest.approx([10 * np.log(5), 5 * np.log(5), 0.0])


def test_demand_on_the_mean_quote_and_at_a_price_of_zero():
    """The authors' engine: every shopper of the day orders I / (mean posted quote) at its chosen
    firm's price; a price of 0 is ordered from (the goods are free); no choke price."""
    income = np.array([6.0, 3.0, 9.0])
    price = np.array([2.0, 0.0, 50.0])
    index = rules.posted_mean(
        np.array([2.0, 0.0, 50.0, np.nan]), np.array([True, True, True, False])
    )
    assert index == pytest.approx(52 / 3)
    assert rules.demand(income, price, None, index).tolist() == pytest.approx(
        (income / index).tolist()
    )
    assert rules.demand(income, price, 10.0, index).tolist()[2] == 0.0  # a choke when asked


def test_day_costs_limited_liability_and_the_fee_after_the_tax():
    cash = np.array([100.0, 1.5, 2.0, 50.0])
    active = np.array([True, True, True, False])
    over, hold, tax, fee, bankrupt = rules.day_costs(cash, active, 2.0, np.zeros(4), 0.05, 0.05)
    assert over.tolist() == [2.0, 1.5, 2.0, 0.0]  # 1.5 < 2: pays what it has
    assert bankrupt.tolist() == [False, True, False, False]  # exactly 2 survives, at 0
    assert tax.tolist() == pytest.approx([4.9, 0.0, 0.0, 0.0])
    assert fee.tolist() == pytest.approx([0.05 * 93.1, 0.0, 0.0, 0.0])
    over, _, tax, _, bankrupt = rules.day_costs(
        cash, active, 2.0, np.zeros(4), 0.05, 0.0, limited=False
    )
    assert over.tolist()[1] == 2.0 and bankrupt.tolist()[1] and tax.tolist()[1] == 0.0
