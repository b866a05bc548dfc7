"""supply_chain metrics, computed from the episode logs alone (Market-Bench appendix C).

Per agent and episode (ε = 1e-9 guards every ratio, as in the paper):
  NPM = Σ_t Π(t) / (Σ_t R(t) + ε)                      states: profit, revenue
  Pi  = Σ_t Π(t)
  RAR = mean_t Π(t) / (SD_t Π(t) + ε)                   population SD over steps; 0 for an
        all-zero profit series (the paper's Table 2 row of a seat that never holds stock); NaN
        when the per-step profit is another constant (SD within 1e-9 of zero, relative): the
        paper's ε would turn "no variability" into ratios of 10^12 (scripted retailers that sell
        out identically every step do this), the very instability appendix D replaced ITR and the
        bullwhip ratio for
  IEI = U_sold / (U_sold + Ī + ε)                       Ī = mean end-of-step inventory units
  stockout_rate = stockouts / (directed attempts + ε)   an attempt: every (buyer, seller in its
        consideration set, the item it wants) of a step (``attention`` x ``buyers``); a stockout:
        that seller has none of the item on offer (no posted price for it: ``posts``). A seat
        that never holds stock scores 1, as in the paper's Table 2.
  stockout_rate_visits                                  the earlier variant: visits with
        stock_before == 0 / all visits (only sellers a buyer actually walked to)
  bid_efficiency = Q_win/(Q_bid+ε) × V_base/(C_win+ε)    final settling round, valid bid sets only
  OSI = 1 / (1 + |CV(units ordered per step) − CV(units sold per step)|)   population CVs; orders
        are the requested quantities of the final round's bids, void (over-budget) sets included
  OSI_won                                               the earlier variant: orders = units won
  fill_rate = units sold / (directed demand + ε)        directed demand = Σ units wanted on visits
  MMS = mean sim over the (buyer, agent) pairs where the buyer's consideration set held the agent
        (NaN if no buyer ever saw the agent)

Per agent and step (figures 4-7): npm and osi cumulative through the step (so the last step equals
the episode value), profit and funds of the step, bid_efficiency and fill_rate of the step alone,
and the slogan's mean cosine to each tribe's personas (plus their tribe-weighted mean).

Per step (figure 3), over all retailers: Gini, Theil and CV of end-of-step funds; HHI and CR4 of the
step's revenue shares; active ratio = share of retailers that sold anything in the step; rank
mobility = 1 − Spearman(funds at t, funds at t−1) (NaN at step 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.embeddings import similarity
from marketarena.metrics import indices

EPS = 1e-9
AGENT_METRICS = (
    "NPM",
    "Pi",
    "RAR",
    "IEI",
    "stockout_rate",
    "bid_efficiency",
    "OSI",
    "fill_rate",
    "MMS",
    "stockout_rate_visits",
    "OSI_won",
)


def _pop_cv(x: np.ndarray) -> float:
    mean = x.mean()
    return float(x.std() / (mean + EPS))


def _rar(profit: np.ndarray) -> float:
    sd = profit.std()
    if not profit.any():
        return 0.0
    if sd <= 1e-9 * max(1.0, abs(profit.mean())):
        return np.nan
    return float(profit.mean() / (sd + EPS))


def _osi(won: np.ndarray, sold: np.ndarray) -> float:
    return 1.0 / (1.0 + abs(_pop_cv(won) - _pop_cv(sold)))


def _ordered(bids: pd.DataFrame) -> pd.Series:
    """Units requested per (agent_id, step) in the final round, void (over-budget) sets included:
    OSI's orders."""
    return bids[bids["final"]].groupby(["agent_id", "step"])["qty"].sum()


def _orders(ordered: pd.DataFrame, agent_id: str, steps: int) -> np.ndarray:
    """Units an agent requested per step (final round); zeros for a seat that never bid."""
    if agent_id in ordered.index:
        return ordered.loc[agent_id].to_numpy(dtype=float)
    return np.zeros(steps)


def _attempts(tables: dict[str, pd.DataFrame]) -> tuple[pd.Series, pd.Series]:
    """Per agent: directed attempts (buyer, seller in its consideration set, wanted item) and
    the stockouts among them (the seller has none of that item on offer)."""
    att = tables["attention"][["step", "buyer", "agent_id"]].merge(
        tables["buyers"][["step", "buyer", "item"]], on=["step", "buyer"]
    )
    offered = tables["posts"][["step", "agent_id", "item"]].drop_duplicates().assign(offered=True)
    att = att.merge(offered, on=["step", "agent_id", "item"], how="left")
    missing = att["offered"].isna()
    return att.groupby("agent_id").size(), missing.groupby(att["agent_id"]).sum()


def episode_agent_metrics(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per agent of one episode; ``tables`` are that episode's log tables."""
    agents, states = tables["agents"], tables["states"].sort_values(["agent_id", "step"])
    base = dict(zip(tables["items"]["item"], tables["items"]["base_price"]))
    visits, attention = tables["visits"], tables["attention"]
    bids = tables["bids"]
    final = bids[bids["final"] & bids["valid_set"]]
    steps = np.sort(states["step"].unique())
    ordered = _ordered(bids).unstack(fill_value=0).reindex(columns=steps, fill_value=0)
    attempts, stockouts = _attempts(tables)
    rows = []
    for agent_id in agents["agent_id"]:
        s = states[states["agent_id"] == agent_id]
        profit, revenue = s["profit"].to_numpy(), s["revenue"].to_numpy()
        sold_units = s["units_sold"].to_numpy().astype(float)
        v = visits[visits["agent_id"] == agent_id]
        b = final[final["agent_id"] == agent_id]
        q_win, q_bid = b["allocated"].sum(), b["qty"].sum()
        v_base = (b["allocated"] * b["item"].map(base).astype(float)).sum()
        c_win = (b["allocated"] * b["price"]).sum()
        sims = attention.loc[attention["agent_id"] == agent_id, "sim"]
        rows.append(
            {
                "agent_id": agent_id,
                "NPM": profit.sum() / (revenue.sum() + EPS),
                "Pi": profit.sum(),
                "RAR": _rar(profit),
                "IEI": sold_units.sum() / (sold_units.sum() + s["inventory_units"].mean() + EPS),
                "stockout_rate": stockouts.get(agent_id, 0) / (attempts.get(agent_id, 0) + EPS),
                "bid_efficiency": q_win / (q_bid + EPS) * v_base / (c_win + EPS),
                "OSI": _osi(_orders(ordered, agent_id, len(sold_units)), sold_units),
                "fill_rate": v["bought"].sum() / (v["wanted"].sum() + EPS),
                "MMS": sims.mean() if len(sims) else np.nan,
                "stockout_rate_visits": (v["stock_before"] == 0).sum() / (len(v) + EPS),
                "OSI_won": _osi(s["units_won"].to_numpy().astype(float), sold_units),
            }
        )
    return agents.merge(pd.DataFrame(rows), on="agent_id")


def tribe_similarity(
    slogans: pd.DataFrame,
    personas: pd.DataFrame,
    vectors: np.ndarray,
    tribe_weights: dict[str, float],
) -> pd.DataFrame:
    """Mean cosine of each logged slogan vector with each tribe's personas, plus the weighted mean.

    ``vectors`` are the persona embeddings in the row order of ``personas``. Empty slogans -> NaN.
    The cosines are exact (``embeddings.similarity`` of quantised vectors), their means numpy's
    pairwise sums in a fixed order: the same bits on every machine.
    """
    out = slogans[["step", "agent_id"]].copy()
    slog = (
        np.stack(slogans["vector"].to_numpy()) if len(slogans) else np.zeros((0, vectors.shape[1]))
    )
    empty = slogans["slogan"].eq("").to_numpy()
    weighted = np.zeros(len(slogans))
    for tribe, w in tribe_weights.items():
        members = vectors[personas["tribe"].to_numpy() == tribe]
        sim = (
            similarity(slog, members).mean(axis=1)
            if len(members)
            else np.full(len(slogans), np.nan)
        )
        sim = np.where(empty, np.nan, sim)
        out[f"sim_{tribe}"] = sim
        weighted += w * sim
    out["sim_weighted"] = weighted / sum(tribe_weights.values())
    return out


def episode_agent_steps(tables: dict[str, pd.DataFrame], tribe_sims: pd.DataFrame) -> pd.DataFrame:
    states = tables["states"].sort_values(["agent_id", "step"]).copy()
    g = states.groupby("agent_id")
    states["npm"] = g["profit"].cumsum() / (g["revenue"].cumsum() + EPS)
    ordered = _ordered(tables["bids"]).rename("ordered")
    ordered = (
        states[["agent_id", "step"]].join(ordered, on=["agent_id", "step"])["ordered"].fillna(0)
    )
    states["ordered"] = ordered.to_numpy(float)
    osi = []
    for _, s in states.groupby("agent_id"):
        orders, sold = s["ordered"].to_numpy(float), s["units_sold"].to_numpy(float)
        osi.extend(_osi(orders[: t + 1], sold[: t + 1]) for t in range(len(s)))
    states["osi"] = osi
    final = tables["bids"]
    final = final[final["final"] & final["valid_set"]].copy()
    base = dict(zip(tables["items"]["item"], tables["items"]["base_price"]))
    final["v_base"] = final["allocated"] * final["item"].map(base)
    final["c_win"] = final["allocated"] * final["price"]
    be = final.groupby(["agent_id", "step"])[["allocated", "qty", "v_base", "c_win"]].sum()
    be["bid_efficiency"] = be["allocated"] / (be["qty"] + EPS) * be["v_base"] / (be["c_win"] + EPS)
    visits = tables["visits"].groupby(["agent_id", "step"])[["bought", "wanted"]].sum()
    visits["fill_rate"] = visits["bought"] / (visits["wanted"] + EPS)
    out = states.merge(be[["bid_efficiency"]].reset_index(), on=["agent_id", "step"], how="left")
    out["bid_efficiency"] = out["bid_efficiency"].fillna(0.0)
    out = out.merge(visits[["fill_rate"]].reset_index(), on=["agent_id", "step"], how="left")
    out = out.merge(tribe_sims, on=["agent_id", "step"], how="left")
    cols = ["step", "agent_id", "npm", "profit", "funds", "osi", "bid_efficiency", "fill_rate"]
    cols += [c for c in tribe_sims.columns if c.startswith("sim_")]
    return tables["agents"].merge(out[cols], on="agent_id")


def episode_market_indices(states: pd.DataFrame) -> pd.DataFrame:
    rows, prev = [], None
    for step, s in states.sort_values(["step", "agent_id"]).groupby("step"):
        funds, revenue = s["funds"].to_numpy(), s["revenue"].to_numpy()
        rows.append(
            {
                "step": step,
                "gini": indices.gini(funds),
                "theil": indices.theil(funds),
                "cv": indices.cv(funds),
                "hhi": indices.hhi(revenue),
                "cr4": indices.cr(revenue, 4),
                "active_ratio": float((s["units_sold"] > 0).mean()),
                "rank_mobility": indices.rank_mobility(prev, funds) if prev is not None else np.nan,
            }
        )
        prev = funds
    return pd.DataFrame(rows)
