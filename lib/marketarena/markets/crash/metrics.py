"""crash metrics from the episode logs alone (``states``, ``days``, ``orders``, ``setting``,
``agents``, ``events``).

Per episode (``market``), with the cell's ``discovery_limit`` and ``stabilizing``:
  days_played            days until the end or until no firm was left
  bankruptcy_rate        bankrupt firms / firms, at the end
  days_to_first_bankruptcy   the day (1-based) of the first bankruptcy; NaN when none
  mean_price_over_cost   mean over days of the day's mean posted price (active firms) / unit cost
  price_deviation        |mean_price_over_cost - 1|
  price_volatility       SD over days of the day's mean posted price / unit cost (seed appendix C;
                         population SD)
  volume                 units filled per day; fill_rate = filled / wanted over the episode
  consumer_surplus       total over the episode (``rules.consumer_surplus``)
  profit_per_firm_day    total profit / (firms x days_played)
  stability, welfare, profitability, eas   the Economic Alignment Score on the instance's fixed
                         anchors (``metrics/eas.py``, params ``eas``)
Per seat and episode (``agents``): profit (sum of daily profits), final_cash, survived, days_active,
mean_price_over_cost (its own), units_sold, revenue, and the episode's cell and EAS columns.
Per day (``days``): mean price over cost, active firms, shoppers, units filled, per episode, for the
seed's Figure 8; ``survival``: the share of firms still active after each day.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.metrics.eas import EASParams, fixed_scores

AGENT_METRICS = ("profit", "final_cash", "mean_price_over_cost", "units_sold", "days_active",
                 "survived")
MARKET_METRICS = ("bankruptcy_rate", "days_to_first_bankruptcy", "mean_price_over_cost",
                  "price_deviation", "price_volatility", "volume", "fill_rate", "consumer_surplus",
                  "profit_per_firm_day")


def compute(reader: EpisodeReader, eas: EASParams) -> dict[str, pd.DataFrame]:
    reader.require()
    states, days = reader.table("states"), reader.table("days")
    setting, agents = reader.table("setting"), reader.table("agents")
    cost = setting.set_index("episode_id")["unit_cost"]
    firms = setting.set_index("episode_id")["firms"]

    days = days.copy()
    days["price_over_cost"] = days["mean_price"] / days["episode_id"].map(cost)
    g = days.groupby("episode_id")
    market = setting.set_index("episode_id")[["discovery_limit", "stabilizing", "firms"]].copy()
    market["days_played"] = g["step"].count()
    final = states.groupby(["episode_id", "agent_id"])["bankrupt"].max().groupby("episode_id")
    market["bankruptcy_rate"] = final.sum() / market["firms"]
    first = states[states["bankrupt"]].groupby("episode_id")["step"].min() + 1
    market["days_to_first_bankruptcy"] = first.reindex(market.index)
    market["mean_price_over_cost"] = g["price_over_cost"].mean()
    market["price_deviation"] = (market["mean_price_over_cost"] - 1).abs()
    market["price_volatility"] = g["price_over_cost"].std(ddof=0)
    market["volume"] = g["filled"].mean()
    market["fill_rate"] = g["filled"].sum() / g["wanted"].sum().replace(0, np.nan)
    market["consumer_surplus"] = g["surplus"].sum()
    profit = states.groupby("episode_id")["profit"].sum()
    market["profit_per_firm_day"] = profit / (market["firms"] * market["days_played"])
    market = fixed_scores(market.reset_index(), eas)

    st = states.copy()
    st["price_over_cost"] = st["price"] / st["episode_id"].map(cost)
    seat = st.groupby(["episode_id", "agent_id"])
    per = pd.DataFrame({
        "profit": seat["profit"].sum(), "final_cash": seat["cash_end"].last(),
        "survived": ~seat["bankrupt"].max(), "days_active": seat["step"].count(),
        "mean_price_over_cost": seat["price_over_cost"].mean(), "units_sold": seat["units_sold"].sum(),
        "revenue": seat["revenue"].sum()}).reset_index()
    context = market[["episode_id", "discovery_limit", "stabilizing", *eas.components, "eas"]]
    agent_rows = agents.merge(per, on=["episode_id", "agent_id"], how="left").merge(
        context, on="episode_id")
    agent_rows["survived"] = agent_rows["survived"].astype(float)

    survival = days[["episode_id", "step", "active"]].copy()
    survival["share_active"] = survival["active"] / survival["episode_id"].map(firms)
    series = days[["episode_id", "step", "price_over_cost", "active", "shoppers", "filled",
                   "health"]].merge(market[["episode_id", "discovery_limit", "stabilizing"]],
                                    on="episode_id")
    return {"agents": agent_rows, "market": market, "days": series, "survival": survival}
