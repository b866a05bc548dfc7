"""The replay of the authors' crash engine (``markets/crash/sources/replay.py``) on hand-made firm-days:
their float quirk where a shopper that got nothing came in the fill order (issue 59: the 4
firm-days of the published runs no rule explained).

One firm on day 0 prices at 1.5 and buys 10 units (unit cost 1); two shoppers order from it.
Shopper 0 has 9.0 (its one day's income): it wants 9 / 1.5 = 6 and gets 6. Shopper 1 has
``CASH``: it wants CASH / 1.5, and 1.5 * (CASH / 1.5) is above CASH by a rounding error, so their
engine's ledger refuses the transfer whole wherever the stock covers its demand. It logged
nothing; the importer puts it after the firm's fills, where only 4 units are left: capped at 4
(6.0 < CASH), it would fill. The firm logged 6 units sold, 9.0 of revenue and 4 units left.
Costs: 500 + 9 - 10 = 499, overhead 2, tax 5% of 497 = 24.85, fee 5% of 472.15 = 23.6075.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.crash.sources import replay

CASH = 12.48077863247162  # a shopper's cash in a published run (gpt-5.4-k5-d3-s16, day 0)
EP = "hand-k5-d3-s16"


def tables(supply: float, sold: float, cash_end: float) -> tuple[pd.DataFrame, ...]:
    states = pd.DataFrame(
        [
            {
                "episode_id": EP,
                "step": 0,
                "agent_id": "stabilizing_firm_1",
                "cash_start": 500.0,
                "price": 1.5,
                "supply": supply,
                "units_sold": sold,
                "revenue": 1.5 * sold,
                "unsold": supply - sold,
                "cash_end": cash_end,
                "bankrupt": False,
            }
        ]
    )
    orders = pd.DataFrame(
        [  # in the importer's order: the fill first, who got nothing after
            {
                "episode_id": EP,
                "step": 0,
                "order": 0,
                "consumer": 0,
                "seen_firms": "stabilizing_firm_1",
                "budget": 9.0,
                "filled": 6.0,
            },
            {
                "episode_id": EP,
                "step": 0,
                "order": 1,
                "consumer": 1,
                "seen_firms": "stabilizing_firm_1",
                "budget": CASH,
                "filled": 0.0,
            },
        ]
    )
    consumers = pd.DataFrame({"episode_id": EP, "consumer": [0, 1], "income": [9.0, CASH]})
    setting = pd.DataFrame(
        [
            {
                "episode_id": EP,
                "demand_index": "mean_quote",
                "max_price": np.nan,
                "consumer_savings": True,
                "liability": "limited",
                "tax_rate": 0.05,
                "platform_fee": 0.05,
                "overhead": 2.0,
                "unit_cost": 1.0,
            }
        ]
    )
    return states, orders, consumers, setting


QUIRK = next(v for v in replay.variants() if v.float_quirk)


def test_the_cash_is_one_their_ledger_refuses():
    wanted = CASH / 1.5
    assert 1.5 * wanted > CASH and 1.5 * (CASH / 1.5) > CASH  # capped at its cash: still above
    assert CASH > 1.5 * 4.0  # capped by the stock left after shopper 0: below


def test_who_got_nothing_from_a_firm_with_stock_left_failed_before_the_fills():
    states, orders, consumers, setting = tables(
        supply=10.0, sold=6.0, cash_end=(497 - 24.85) * 0.95
    )
    days, _, rules = replay.replay(states, orders, consumers, setting)
    row = days.iloc[0]
    # our rules (no quirk): shopper 1 gets the 4 units left; 10 sold, 15.0 of revenue
    assert (row["units_ours"], row["revenue_ours"]) == pytest.approx((10.0, 15.0))
    assert not row["agree"]
    rules = rules.set_index("rules")
    assert rules.loc[replay.BASE.name, ["agree", "explains"]].tolist() == [0, 1]
    # their quirk, shopper 1 replayed before shopper 0: it fails whole, shopper 0 gets its 6
    assert rules.loc[replay.FLOAT_QUIRK, ["agree", "explains"]].tolist() == [1, 1]
    d = replay.days_of(states, orders, consumers, setting)
    assert replay.replay_with(d, QUIRK)["filled"].tolist() == [6.0, 0.0]
    assert replay.replay_with(d, QUIRK)["cash_end"][0] == pytest.approx(448.5425)


def test_who_got_nothing_from_a_firm_sold_out_keeps_its_place():
    """Supply 6: shopper 0 takes it all, shopper 1 finds it sold out. Replayed first, shopper 1
    would take the 6 (capped by the stock, it does not fail) and shopper 0 nothing."""
    states, orders, consumers, setting = tables(supply=6.0, sold=6.0, cash_end=(501 - 25.05) * 0.95)
    days, _, rules = replay.replay(states, orders, consumers, setting)
    assert days["agree"].all()
    assert rules.set_index("rules").loc[replay.FLOAT_QUIRK, ["agree", "explains"]].tolist() == [
        1,
        0,
    ]
    d = replay.days_of(states, orders, consumers, setting)
    assert replay.replay_with(d, QUIRK)["filled"].tolist() == [6.0, 0.0]
