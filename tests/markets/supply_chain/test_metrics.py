"""Every supply_chain metric on a hand-built two-agent, two-step log (values worked out by hand)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.supply_chain.analysis import metrics as M


def tables():
    agents = pd.DataFrame(
        {
            "agent_id": ["R01", "R02"],
            "name": ["a", "b"],
            "kind": "baseline",
            "model": "",
            "strategy": "x",
            "role": "retailer",
        }
    )
    items = pd.DataFrame(
        {"item": ["x", "y"], "category": ["c", "l"], "qty": [10, 5], "base_price": [10, 100]}
    )
    cols = [
        "step",
        "agent_id",
        "funds",
        "inventory_units",
        "inventory_value",
        "revenue",
        "cogs",
        "holding_cost",
        "profit",
        "spend",
        "units_won",
        "units_sold",
        "active",
    ]
    states = pd.DataFrame(
        [
            (0, "R01", 1000.0, 4, 40.0, 100.0, 60.0, 0.0, 40.0, 100.0, 10, 6, True),
            (1, "R01", 1050.0, 0, 0.0, 50.0, 40.0, 0.0, 10.0, 0.0, 0, 4, True),
            (0, "R02", 500.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, True),
            (1, "R02", 700.0, 1, 150.0, 200.0, 150.0, 10.0, 40.0, 300.0, 2, 1, True),
        ],
        columns=cols,
    )
    bids = pd.DataFrame(
        [
            # step, round, agent, item, qty, price, valid_set, allocated, final
            (0, 0, "R01", "x", 100, 10, True, 10, False),  # indicative round: ignored
            (0, 1, "R01", "x", 12, 10, True, 10, True),
            (0, 1, "R02", "y", 3, 120, False, 0, True),  # invalid set: ignored
            (1, 1, "R02", "y", 4, 150, True, 2, True),
        ],
        columns=[
            "step",
            "round",
            "agent_id",
            "item",
            "qty",
            "price",
            "valid_set",
            "allocated",
            "final",
        ],
    )
    visits = pd.DataFrame(
        [
            (0, 0, "R01", "x", 6, 10, 6, 10.0),
            (1, 1, "R01", "x", 4, 4, 4, 12.0),
            (1, 2, "R01", "x", 2, 0, 0, 12.0),  # stockout
            (1, 3, "R02", "y", 1, 2, 1, 200.0),
        ],
        columns=["step", "buyer", "agent_id", "item", "wanted", "stock_before", "bought", "price"],
    )
    # consideration sets: R01 is in buyers 0-3's; buyer 3 wants y, which R01 never offers
    attention = pd.DataFrame(
        {
            "step": [0, 1, 1, 1],
            "buyer": [0, 1, 2, 3],
            "agent_id": "R01",
            "sim": [0.2, 0.4, 0.3, 0.3],
        }
    )
    buyers = pd.DataFrame(
        {"step": [0, 1, 1, 1], "buyer": [0, 1, 2, 3], "item": ["x", "x", "x", "y"]}
    )
    posts = pd.DataFrame(
        {
            "step": [0, 1, 1],
            "agent_id": ["R01", "R01", "R02"],
            "item": ["x", "x", "y"],
            "price": [10.0, 12.0, 200.0],
        }
    )
    return {
        "agents": agents,
        "items": items,
        "states": states,
        "bids": bids,
        "visits": visits,
        "attention": attention,
        "buyers": buyers,
        "posts": posts,
    }


def test_agent_metrics_by_hand():
    m = M.episode_agent_metrics(tables()).set_index("agent_id")
    a, b = m.loc["R01"], m.loc["R02"]
    assert a["Pi"] == pytest.approx(50) and b["Pi"] == pytest.approx(40)
    assert a["NPM"] == pytest.approx(50 / 150) and b["NPM"] == pytest.approx(40 / 200)
    assert a["RAR"] == pytest.approx(25 / 15) and b["RAR"] == pytest.approx(20 / 20)  # pop. SD
    assert a["IEI"] == pytest.approx(10 / (10 + 2)) and b["IEI"] == pytest.approx(1 / 1.5)
    # attempts: R01's 4 (buyer, wanted item) pairs, y not on offer -> 1 of 4; R02 was in no set
    assert a["stockout_rate"] == pytest.approx(1 / 4) and b["stockout_rate"] == 0
    assert a["stockout_rate_visits"] == pytest.approx(1 / 3)  # the variant: 1 of 3 visits empty
    # final valid bids only: a 10/12 × (10·10)/(10·10); b 2/4 × (2·100)/(2·150)
    assert a["bid_efficiency"] == pytest.approx(10 / 12)
    assert b["bid_efficiency"] == pytest.approx(0.5 * 200 / 300)
    # OSI: a ordered [12, 0] CV 1, sold [6, 4] CV 0.2 -> 1/1.8; b ordered [3 (void), 4] CV 1/7,
    # sold [0, 1] CV 1 -> 1 / (1 + 6/7); OSI_won: b won [0, 2], sold [0, 1]: CV 1 both
    assert a["OSI"] == pytest.approx(1 / 1.8) and b["OSI"] == pytest.approx(7 / 13)
    assert a["OSI_won"] == pytest.approx(1 / 1.8) and b["OSI_won"] == pytest.approx(1.0)
    assert a["fill_rate"] == pytest.approx(10 / 12) and b["fill_rate"] == pytest.approx(1.0)
    assert a["MMS"] == pytest.approx(0.3) and np.isnan(b["MMS"])


def test_rar_is_undefined_for_constant_profit():
    t = tables()
    t["states"].loc[t["states"]["agent_id"] == "R01", "profit"] = 25.0
    m = M.episode_agent_metrics(t).set_index("agent_id")
    assert np.isnan(m.loc["R01", "RAR"])
    assert m.loc["R01", "Pi"] == pytest.approx(50)


def test_agent_steps_by_hand():
    sims = pd.DataFrame(
        {
            "step": [0, 1, 0, 1],
            "agent_id": ["R01", "R01", "R02", "R02"],
            "sim_t": [0.1, 0.2, np.nan, 0.3],
            "sim_weighted": [0.1, 0.2, np.nan, 0.3],
        }
    )
    s = M.episode_agent_steps(tables(), sims).set_index(["agent_id", "step"])
    assert s.loc[("R01", 0), "npm"] == pytest.approx(0.4)  # cumulative 40 / 100
    assert s.loc[("R01", 1), "npm"] == pytest.approx(50 / 150)
    assert s.loc[("R01", 0), "osi"] == pytest.approx(1.0)  # one point: both CVs 0
    assert s.loc[("R01", 1), "osi"] == pytest.approx(1 / 1.8)
    assert s.loc[("R01", 0), "bid_efficiency"] == pytest.approx(10 / 12)
    assert s.loc[("R01", 1), "bid_efficiency"] == 0.0  # no settled bids that step
    assert s.loc[("R01", 1), "fill_rate"] == pytest.approx(4 / 6)
    assert np.isnan(s.loc[("R02", 0), "fill_rate"])  # no directed demand
    assert s.loc[("R02", 1), "sim_t"] == pytest.approx(0.3)


def test_market_indices_by_hand():
    mk = M.episode_market_indices(tables()["states"]).set_index("step")
    assert mk.loc[0, "gini"] == pytest.approx(500 / 3000)  # Σ|xi-xj| / (2 n² μ) = 1000/6000
    assert mk.loc[0, "hhi"] == pytest.approx(1.0) and mk.loc[0, "cr4"] == pytest.approx(1.0)
    assert mk.loc[0, "active_ratio"] == pytest.approx(0.5)
    assert np.isnan(mk.loc[0, "rank_mobility"])
    assert mk.loc[1, "hhi"] == pytest.approx(0.2**2 + 0.8**2)
    assert mk.loc[1, "rank_mobility"] == pytest.approx(0.0)  # same order of funds
    assert mk.loc[1, "cv"] == pytest.approx(175 / 875)  # funds 1050, 700: SD 175, mean 875


def test_tribe_similarity_of_slogan_vectors():
    personas = pd.DataFrame({"tribe": ["t1", "t1", "t2"]})
    vecs = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1.0]])
    slogans = pd.DataFrame(
        {
            "step": [0, 0],
            "agent_id": ["R01", "R02"],
            "slogan": ["s", ""],
            "vector": [np.array([1.0, 0, 0]), np.zeros(3)],
        }
    )
    out = M.tribe_similarity(slogans, personas, vecs, {"t1": 0.75, "t2": 0.25}).set_index(
        "agent_id"
    )
    assert out.loc["R01", "sim_t1"] == pytest.approx((1.0 + 0.6) / 2)
    assert out.loc["R01", "sim_t2"] == pytest.approx(0.0)
    assert out.loc["R01", "sim_weighted"] == pytest.approx(0.75 * 0.8)
    assert np.isnan(out.loc["R02", "sim_t1"])  # an empty slogan has no similarity


def test_a_seat_that_never_holds_stock_scores_the_papers_table_2_row():
    """Market-Bench Table 2: stockout 1.000, OSI 0.796, RAR 0.000 for a retailer that never
    holds stock: it orders (below the reserve: nothing won), is in buyers' consideration sets,
    never has anything on offer and never profits."""
    t = tables()
    t["agents"] = pd.concat(
        [
            t["agents"],
            pd.DataFrame(
                {
                    "agent_id": ["R03"],
                    "name": ["c"],
                    "kind": "baseline",
                    "model": "",
                    "strategy": "x",
                    "role": "retailer",
                }
            ),
        ],
        ignore_index=True,
    )
    t["states"] = pd.concat(
        [
            t["states"],
            pd.DataFrame(
                [
                    (step, "R03", 500.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, True)
                    for step in (0, 1)
                ],
                columns=t["states"].columns,
            ),
        ],
        ignore_index=True,
    )
    t["bids"] = pd.concat(
        [
            t["bids"],
            pd.DataFrame(
                [  # orders 628 then 372: CV = 256 / 1000
                    (0, 1, "R03", "x", 628, 1, True, 0, True),
                    (1, 1, "R03", "x", 372, 1, True, 0, True),
                ],
                columns=t["bids"].columns,
            ),
        ],
        ignore_index=True,
    )
    t["attention"] = pd.concat(
        [
            t["attention"],
            pd.DataFrame({"step": [0, 1, 1], "buyer": [0, 1, 3], "agent_id": "R03", "sim": 0.1}),
        ],
        ignore_index=True,
    )
    c = M.episode_agent_metrics(t).set_index("agent_id").loc["R03"]
    assert c["stockout_rate"] == pytest.approx(1.0, abs=1e-6)
    assert round(c["OSI"], 3) == 0.796
    assert c["RAR"] == 0.0 and c["Pi"] == 0.0
    # the earlier definitions gave the opposite picture: no visits -> stockout 0, OSI_won 1
    assert c["stockout_rate_visits"] == 0.0 and c["OSI_won"] == 1.0
