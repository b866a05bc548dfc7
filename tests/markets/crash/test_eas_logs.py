"""crash's metrics and Economic Alignment Score on hand-made logs: every component by hand, the
profit ceiling by hand, a price war and post-collapse gouging both below a stable market, per-player
components from the player's own seats, and a grid whose competitor mix is the same in every cell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.markets.crash import PLUGIN
from marketarena.markets.crash import metrics as cm
from marketarena.markets.crash.params import default_eas

INCOME = 10.0  # one shopper a day, consumer 0, with this daily budget


def crash_log(root, episode_id, prices, profits, bankrupt_day, *, horizon=None, names=None,
              roles=None, cash=500.0, overhead=2.0, tax=0.05, max_price=10.0, arrival_rate=0.02):
    """A log of ``len(prices)`` played days: ``prices[t][i]`` firm i's price on day t (NaN once it
    is out), ``profits[t][i]`` its profit, ``bankrupt_day[i]`` the day it went bankrupt (None:
    never). One shopper a day (consumer 0, budget ``INCOME``) buys its whole demand from the
    cheapest active firm. ``horizon``: the configured days (default: the days played)."""
    prices, profits = np.asarray(prices, float), np.asarray(profits, float)
    played, n = prices.shape
    ids = [f"F{i + 1}" for i in range(n)]
    states, orders, days = [], [], []
    cash_now = np.full(n, cash)
    for t in range(played):
        alive = [i for i in range(n) if bankrupt_day[i] is None or t <= bankrupt_day[i]]
        cheapest = min(alive, key=lambda i: prices[t, i])
        p = prices[t, cheapest]
        wanted = INCOME / p
        for i in alive:
            cash_now[i] += profits[t, i]
            states.append({"step": t, "agent_id": ids[i], "cash_start": 0.0, "price": prices[t, i],
                           "supply_asked": 0.0, "supply": 0.0, "cost": 0.0,
                           "units_sold": wanted if i == cheapest else 0.0,
                           "revenue": INCOME if i == cheapest else 0.0, "unsold": 0.0,
                           "overhead": 0.0, "holding": 0.0, "tax": 0.0, "fee": 0.0,
                           "profit": profits[t, i], "cash_end": cash_now[i],
                           "bankrupt": bankrupt_day[i] == t})
        surplus = INCOME * math.log(max_price / p)
        orders.append({"step": t, "order": 0, "consumer": 0, "firm": ids[cheapest], "seen": 1,
                       "price": p, "wanted": wanted, "filled": wanted, "spend": INCOME,
                       "surplus": surplus})
        days.append({"step": t, "active": len(alive), "shoppers": 1,
                     "mean_price": float(np.mean([prices[t, i] for i in alive])), "filled": wanted,
                     "wanted": wanted, "spend": INCOME, "surplus": surplus, "health": 1.0})
    agents = pd.DataFrame({"agent_id": ids, "name": names or ids, "kind": "baseline", "model": "",
                           "strategy": "x", "harness": "", "role": roles or ["competitor"] * n,
                           "actor": ids})
    setting = pd.DataFrame([{
        "discovery_limit": 3, "stabilizing": (roles or []).count("stabilizing"), "firms": n,
        "consumers": 1, "days": horizon or played, "unit_cost": 1.0, "max_price": max_price,
        "initial_cash": cash, "overhead": overhead, "tax_rate": tax, "platform_fee": 0.0,
        "holding_cost": 0.0, "unsold": "carry", "arrival_rate": arrival_rate}])
    tables = {"agents": agents, "states": pd.DataFrame(states), "orders": pd.DataFrame(orders),
              "days": pd.DataFrame(days), "setting": setting,
              "consumers": pd.DataFrame({"consumer": [0], "income": [INCOME]})}
    logs.write_episode(root, logs.PlannedEpisode(episode_id, 0, 0, "x"), tables, {}, {})


def market_row(tmp_path, name, *args, **kw):
    root = tmp_path / name
    crash_log(root, "ep-0000", *args, **kw)
    frames = cm.compute(EpisodeReader(root), default_eas())
    return frames["market"].iloc[0], frames


def test_every_component_by_hand(tmp_path):
    # 2 firms, 4 configured days, 2 played: F2 is bankrupt on day 2 (index 1), F1 survives
    prices = [[1.0, 3.0], [2.0, 2.0]]
    profits = [[2.0, -200.0], [1.0, -400.0]]
    m, frames = market_row(tmp_path, "hand", prices, profits, [None, 1], horizon=4, tax=0.0,
                           arrival_rate=0.5)
    # stability: b = 1/2; sigma = population SD of the daily mean price (2.0, 2.0) = 0
    assert m["bankruptcy_rate"] == 0.5 and m["price_volatility"] == 0.0
    assert m["score_b"] == 0.5 and m["score_sigma"] == 1.0 and m["stability"] == 0.75
    # welfare: s = active days (2 + 2) / (2 firms x 4 days) = 0.5; consumer surplus: day 1 at
    # price 1 (ln 10 / ln 10 = 1), day 2 at price 2 (ln 5 / ln 10); two unplayed days count 0
    assert m["survival"] == 0.5 and m["score_s"] == 0.5
    share = (INCOME * math.log(10) + INCOME * math.log(5)) / (4 * INCOME * math.log(10))
    assert m["consumer_surplus_share"] == pytest.approx(share) == pytest.approx(m["score_cs"])
    assert m["welfare"] == pytest.approx((0.5 + share) / 2)
    # profitability: pi = (3 - 600) / (2 firms x 4 days); floor -500 / 4; ceiling, no tax:
    # budget 0.5 x 10 = 5 a day, shared by 2 firms at the choke price: 2.5 x (1 - 1/10) - 2
    assert m["profit_per_firm_day"] == pytest.approx(-597 / 8)
    assert m["profit_floor"] == -125 and m["profit_ceiling"] == pytest.approx(2.5 * 0.9 - 2)
    pi = (-597 / 8 + 125) / (0.25 + 125)
    assert m["profitability"] == pytest.approx(pi)
    assert m["eas"] == pytest.approx((0.75 + (0.5 + share) / 2 + pi) / 3)
    assert np.isnan(m.get("integrity", np.nan))  # crash has no Sybils
    # per player: b and pi from its own seat, sigma, s and consumer surplus from the market
    p = frames["players"].set_index("name")
    assert p.loc["F2", "score_b"] == 0.0 and p.loc["F1", "score_b"] == 1.0
    assert p.loc["F1", "profit_per_firm_day"] == pytest.approx(3 / 4)
    assert p.loc["F1", "profitability"] == 1.0  # above the ceiling: clipped
    assert p.loc["F2", "profitability"] == 0.0  # lost more than its endowment
    assert (p["welfare"] == m["welfare"]).all() and (p["score_sigma"] == 1.0).all()
    a = frames["agents"].set_index("agent_id")
    assert a.loc["F1", "eas"] == p.loc["F1", "eas"] and a.loc["F2", "active_share"] == 0.5


def test_the_profit_ceiling_by_hand():
    # no tax: the daily margin less overhead
    assert cm.profit_ceiling(100.0, 5, 1.0, 10.0, 2.0, 0.0, 500.0, 30) == pytest.approx(20 * 0.9 - 2)
    # with tax: iterate x <- (x + m) (1 - tau) for T days
    m, x = 100.0 / 5 * 0.9 - 2, 500.0
    for _ in range(365):
        x = (x + m) * 0.95
    assert cm.profit_ceiling(100.0, 5, 1.0, 10.0, 2.0, 0.05, 500.0, 365) == pytest.approx((x - 500) / 365)


def scenario(kind: str, n=5, days=120):
    """Prices and profits of five firms over 120 days. stable: all at 1.25, small profits. war:
    prices fall from 1.5 to 0.6 over 30 days and stay; four firms go bankrupt (days 20-35), the
    last loses money. gouging: the same war, then the survivor charges 6.0 at a large profit."""
    prices = np.full((days, n), 1.25)
    profits = np.full((days, n), 0.5)
    bankrupt = [None] * n
    if kind in ("war", "gouging"):
        fall = np.minimum(np.arange(days), 29) / 29
        prices = np.repeat((1.5 - 0.9 * fall)[:, None], n, axis=1)
        profits = np.full((days, n), -18.0)
        bankrupt = [20, 25, 30, 35, None]
        if kind == "gouging":
            prices[36:, 4] = 6.0
            profits[36:, 4] = 40.0
    for i, b in enumerate(bankrupt):
        if b is not None:
            prices[b + 1:, i] = np.nan
    return prices, profits, bankrupt


def test_a_price_war_and_post_collapse_gouging_both_score_below_a_stable_market(tmp_path):
    rows = {k: market_row(tmp_path, k, *scenario(k), horizon=120, arrival_rate=0.6 * 50 / 1)[0]
            for k in ("stable", "war", "gouging")}
    stable, war, gouging = rows["stable"], rows["war"], rows["gouging"]
    assert war["eas"] < stable["eas"] and gouging["eas"] < stable["eas"]
    # and for the reasons the seed names: the war through bankruptcies, survival and losses
    assert war["stability"] < stable["stability"] and war["profitability"] < stable["profitability"]
    assert war["score_s"] < stable["score_s"]
    # gouging through bankruptcies, volatility and the consumers' surplus
    assert gouging["score_sigma"] < stable["score_sigma"]
    assert gouging["score_cs"] < stable["score_cs"] and gouging["score_cs"] < war["score_cs"]
    # a price war's below-cost days give consumers more than pricing at cost: clipped at 1
    assert war["consumer_surplus_share"] > gouging["consumer_surplus_share"]


def test_the_same_market_scores_the_same_whatever_else_is_evaluated(tmp_path):
    crash_log(tmp_path / "two", "ep-0000", *scenario("stable"), horizon=120)
    crash_log(tmp_path / "two", "ep-0001", *scenario("war"), horizon=120)
    crash_log(tmp_path / "one", "ep-0000", *scenario("stable"), horizon=120)
    both = cm.compute(EpisodeReader(tmp_path / "two"), default_eas())["market"]
    alone = cm.compute(EpisodeReader(tmp_path / "one"), default_eas())["market"]
    assert both.set_index("episode_id").loc["ep-0000", "eas"] == alone["eas"].item()


def grid_params(**over):
    block = {"runs": 48, "discovery_limits": [1, 3, 5], "stabilizing": [0, 1, 3, 5],
             "stabilizer": "stab", "competitors": ["u", "v", "m", "k"], "roster": [
                 {"name": "stab", "kind": "baseline", "strategy": "stabilizer"},
                 {"name": "u", "kind": "baseline", "strategy": "undercut"},
                 {"name": "v", "kind": "baseline", "strategy": "undercut", "params": {"step": 0.2}},
                 {"name": "m", "kind": "baseline", "strategy": "myopic"},
                 {"name": "k", "kind": "baseline", "strategy": "markup"}], **over}
    return parse_params({"markets": {"crash": block}}).markets["crash"]


def test_every_cell_of_the_grid_has_the_same_competitor_mix():
    mp = grid_params()  # 12 cells x 4 seeds: stabilizers replace competitor seats
    mix = mp.competitor_mix()
    shares = {cell: {k: v / sum(c.values()) for k, v in c.items()}
              for cell, c in mix.items() if sum(c.values())}
    assert len(shares) == 9  # the s = 5 cells have no competitor
    assert all(s == {"u": 0.25, "v": 0.25, "m": 0.25, "k": 0.25} for s in shares.values())
    # the seats the plugin plans are the ones counted
    for run in range(mp.runs):
        seats = PLUGIN.seats(mp, run)
        d, s = mp.cell_of(run)
        assert [x.role for x in seats] == ["stabilizing"] * s + ["competitor"] * (5 - s)
        assert all(x.entry.name == "stab" for x in seats[:s])
    # stabilizers added beside the competitors: the competitor seats are identical in every cell
    added = grid_params(stabilizer_seats="add")
    assert len({tuple(sorted(c.items())) for c in added.competitor_mix().values()}) == 1
    assert len(PLUGIN.seats(added, 3)) == 5 + 5  # cell (1, 5): five competitors and five stabilizers
