"""Bertrand metrics from the episode logs alone (``states``, ``firms``, ``decisions``, ``agents``).

The collusion index (DESIGN.md 7.3) is ``clip((p_bar - p_N) / (p_M - p_N), 0, 1)`` over the last
``collusion_window`` periods, with ``p_N`` / ``p_M`` the Nash / monopoly prices logged for each
period's cost configuration (constant in the Calvano preset; they move with investments in the
start-up preset), averaged over the same periods.

Per agent and episode (``agents``): profit (Σ, rank_by), final_funds, investments (levels bought),
mean_price (own price over the window, mean over products), collusion_index (own prices vs the
references, per product, mean over products), invalid_rate.
Per episode (``market``): lineup, collusion_index of the mean price over firms and products
(the DESIGN formula), mean_price, nash_price, monopoly_price.
Start-up preset (``outcomes.py``): per agent its mean share of each product over the window
(``share_<product>``) and its ``investment_pattern``; per episode the ``outcome`` category
(domination, specialisation, collusion, competition), ``hhi_<product>`` and ``leader_<product>``.
Per agent, product and period (``product_rounds``, ``step`` 0-based): price, quantity, share, profit, cost, references.
Per period and product (``market_rounds``): mean price over firms, references, the period's index.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.bertrand.analysis import outcomes
from marketarena.markets.bertrand.economics import collusion_index

AGENT_METRICS = (
    "profit",
    "collusion_index",
    "mean_price",
    "final_funds",
    "investments",
    "invalid_rate",
)
TABLES = ("agents", "decisions", "states", "firms")


def _index(p_bar, p_n, p_m) -> float:
    if not p_m > p_n:
        return np.nan
    return float(collusion_index(p_bar, p_n, p_m))


def episode_metrics(
    tables: dict[str, pd.DataFrame], window: int, startup: bool = False
) -> dict[str, pd.DataFrame]:
    agents, states, firms, dec = (tables[k] for k in ("agents", "states", "firms", "decisions"))
    lineup = " vs ".join(agents.sort_values("agent_id")["name"])
    last = states[states["step"] > states["step"].max() - window]
    rounds = firms["step"].nunique()
    rows = []
    for agent_id in agents["agent_id"]:
        f = firms[firms["agent_id"] == agent_id].sort_values("step")
        s = last[last["agent_id"] == agent_id]
        per_product = s.groupby("product")[["price", "nash_price", "monopoly_price"]].mean()
        final_levels = states[
            (states["agent_id"] == agent_id) & (states["step"] == states["step"].max())
        ]
        d = dec[dec["agent_id"] == agent_id]
        rows.append(
            {
                "agent_id": agent_id,
                "lineup": lineup,
                "profit": f["profit"].sum(),
                "final_funds": f["funds"].iloc[-1],
                "investments": int(final_levels["level"].sum()),
                "mean_price": per_product["price"].mean(),
                "collusion_index": float(
                    np.nanmean(
                        [
                            _index(r.price, r.nash_price, r.monopoly_price)
                            for r in per_product.itertuples()
                        ]
                    )
                ),
                "invalid_rate": (~d["valid"].astype(bool)).sum() / max(rounds, 1),
            }
        )
    agent_rows = agents.merge(pd.DataFrame(rows), on="agent_id")
    if startup:
        agent_rows = agent_rows.merge(outcomes.firm_shares(last), on="agent_id", how="left")
        agent_rows["investment_pattern"] = [
            outcomes.investment_pattern(states, a) for a in agent_rows["agent_id"]
        ]
    product_rounds = agents[["agent_id", "name"]].merge(states, on="agent_id")
    product_rounds.insert(2, "lineup", lineup)
    mr = (
        states.groupby(["step", "product"])[["price", "nash_price", "monopoly_price"]]
        .mean()
        .reset_index()
    )
    mr["collusion_index"] = [
        _index(r.price, r.nash_price, r.monopoly_price) for r in mr.itertuples()
    ]
    mr.insert(0, "lineup", lineup)
    w = last[["price", "nash_price", "monopoly_price"]].mean()
    market = pd.DataFrame(
        [
            {
                "lineup": lineup,
                "mean_price": w["price"],
                "nash_price": w["nash_price"],
                "monopoly_price": w["monopoly_price"],
                "collusion_index": _index(w["price"], w["nash_price"], w["monopoly_price"]),
                **(outcomes.outcome(last) if startup else {}),
            }
        ]
    )
    return {
        "agents": agent_rows,
        "product_rounds": product_rounds,
        "market_rounds": mr,
        "market": market,
    }


def compute(reader: EpisodeReader, window: int, startup: bool = False) -> dict[str, pd.DataFrame]:
    out: dict[str, list[pd.DataFrame]] = {}
    for episode_id, tables in reader.require().episodes(*TABLES):
        for name, frame in episode_metrics(tables, window, startup).items():
            frame.insert(0, "episode_id", episode_id)
            out.setdefault(name, []).append(frame)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in out.items()}
