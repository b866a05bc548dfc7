"""double_auction metrics, computed from the episode logs (and the CSα reference table) alone.

Per seat (frame ``agents``, one row per seat and game):
  surplus          Σ payoffs over the game (states.payoff)
  csa              clip((surplus - μ_ref) / σ_ref, -5, 5), reference keyed by (distribution, role,
                   value bucket), see ``reference.py``
  n_trades, trade_freq   trades, and trades / rounds
  quote_rate       share of rounds with a quote (not sitting out)
  mean_offset      mean quote offset over the rounds it quoted: bid - value for buyers, value - ask
                   for sellers (same sign for both roles: negative = shading, 0 = truthful,
                   positive = quoting through its value); NaN if it never quoted
  game_efficiency  the efficiency of the game the seat played in (per trader: its mean)
  ce_surplus       the game's competitive-equilibrium surplus
Per seat and round (``agent_rounds``, ``step`` = the round, 0-based): quote, offset (NaN when sat out), traded, price, margin
  (payoff of the trade: v - p buyer, p - c seller; NaN without a trade).
Per game (``market``): distribution, ce_surplus = rounds × Σ_k max(b_k - s_k, 0) over sorted values,
  realised_surplus = Σ payoffs (= Σ over trades of buyer value - seller value), efficiency =
  realised / CE (NaN when CE is 0), n_trades, mean_price.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.double_auction.reference import TABLE, load_reference, seat_csa

# game_efficiency is constant within a game, so a within-game rank statistic on it is void: it
# stays a column of `agents` and of the leaderboard (per trader), not a ranked metric.
AGENT_METRICS = ("csa", "surplus", "trade_freq", "mean_offset")
TABLES = ("agents", "seats", "states", "game")


def reference_path(data_dir: Path, instance: str) -> Path:
    return Path(data_dir) / "references" / instance / TABLE


def frames(tables: dict[str, pd.DataFrame]):
    """(per-seat metrics without CSα, per-round rows, per-game frame) from log tables that carry an
    ``episode_id`` column (one or many games)."""
    states, game = tables["states"], tables["game"]
    key = ["episode_id", "agent_id"]
    st = states.copy()
    sign = np.where(st["role"] == "buyer", 1, -1)
    quoted = st["quote"] >= 0
    st["offset"] = np.where(quoted, sign * (st["quote"] - st["value"]), np.nan)
    st["margin"] = np.where(st["traded"], st["payoff"], np.nan)
    st["price"] = st["price"].where(st["traded"]).astype(float)
    st["quote"] = st["quote"].where(quoted).astype(float)
    g = st.groupby(key, sort=False)
    per = pd.DataFrame({"surplus": g["payoff"].sum(), "n_trades": g["traded"].sum(),
                        "quoted": g["quote"].count(), "mean_offset": g["offset"].mean()})
    per = per.reset_index()
    ep = game.set_index("episode_id")
    rounds = per["episode_id"].map(ep["rounds"])
    per["trade_freq"] = per["n_trades"] / rounds
    per["quote_rate"] = per.pop("quoted") / rounds
    gs = st.groupby("episode_id", sort=False)
    market = game[["episode_id", "distribution", "ce_surplus"]].copy()
    market["realised_surplus"] = market["episode_id"].map(gs["payoff"].sum()).astype(float)
    ce = market["ce_surplus"].astype(float)
    market["efficiency"] = np.where(ce > 0, market["realised_surplus"] / ce.where(ce > 0), np.nan)
    market["n_trades"] = market["episode_id"].map(gs["traded"].sum() // 2).astype(int)
    market["mean_price"] = market["episode_id"].map(gs["price"].mean())
    seats = tables["agents"].merge(tables["seats"][key + ["value", "distribution"]], on=key)
    seats = seats.merge(per, on=key)
    m = market.set_index("episode_id")
    seats["game_efficiency"] = seats["episode_id"].map(m["efficiency"])
    seats["ce_surplus"] = seats["episode_id"].map(m["ce_surplus"])
    rounds_frame = tables["agents"][key + ["name", "kind", "strategy"]].merge(
        st[key + ["step", "role", "value", "quote", "offset", "traded", "price", "margin"]],
        on=key)
    rounds_frame["distribution"] = rounds_frame["episode_id"].map(m["distribution"])
    return seats, rounds_frame, market


def compute(reader: EpisodeReader, mp, data_dir: Path) -> dict[str, pd.DataFrame]:
    reference = load_reference(reference_path(data_dir, mp.instance))
    tables = {name: reader.require().table(name) for name in TABLES}
    seats, rounds, market = frames(tables)
    return {"agents": seat_csa(seats, reference, mp), "agent_rounds": rounds, "market": market}
