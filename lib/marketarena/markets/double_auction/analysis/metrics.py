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
  surplus_share    BAZAAR's ``seat_surplus_share``: max(0, surplus) / (rounds × potential),
                   potential = what one unit a round earns at the best opposing value (a buyer:
                   v - the lowest seller cost, a seller: the highest buyer value - c; at least 0);
                   0 when the potential is 0. Reproduces every logged seat of BAZAAR's games
                   (``double_auction/sources/bazaar.py``)
  intra            the seat is intra-marginal: one of the q highest-valued buyers or q lowest-cost
                   sellers, q the game's competitive quantity (seats tied at the margin count in)
Per seat and round (``agent_rounds``, ``step`` = the round, 0-based): quote, offset (NaN when sat
  out), traded, price, margin (payoff of the trade: v - p buyer, p - c seller; NaN without a
  trade).
Per game (``market``): distribution, ce_surplus = rounds × Σ_k max(b_k - s_k, 0) over sorted values,
  realised_surplus = Σ payoffs (= Σ over trades of buyer value - seller value), efficiency =
  realised / CE (NaN when CE is 0), n_trades, mean_price.

An imported instance's games add each game's logged figures, its chat and the check of ours
against the logged ones (``double_auction/sources/metrics.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.double_auction.analysis.reference import TABLE, load_reference, seat_csa

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
    per = pd.DataFrame(
        {
            "surplus": g["payoff"].sum(),
            "n_trades": g["traded"].sum(),
            "quoted": g["quote"].count(),
            "mean_offset": g["offset"].mean(),
        }
    )
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
    seats = seats.merge(_margins(tables["seats"]), on=key)
    potential = seats.pop("potential")
    played = seats["episode_id"].map(ep["rounds"]) * potential
    seats["surplus_share"] = np.where(
        potential > 0, seats["surplus"].clip(lower=0) / played.where(potential > 0), 0.0
    )
    m = market.set_index("episode_id")
    seats["game_efficiency"] = seats["episode_id"].map(m["efficiency"])
    seats["ce_surplus"] = seats["episode_id"].map(m["ce_surplus"])
    rounds_frame = tables["agents"][key + ["name", "kind", "strategy"]].merge(
        st[key + ["step", "role", "value", "quote", "offset", "traded", "price", "margin"]], on=key
    )
    rounds_frame["distribution"] = rounds_frame["episode_id"].map(m["distribution"])
    return seats, rounds_frame, market


def _margins(seats: pd.DataFrame) -> pd.DataFrame:
    """Per seat (episode_id, agent_id): ``potential`` (see ``surplus_share``) and ``intra``."""
    s = seats[["episode_id", "agent_id", "role", "value"]].copy()
    buyer = s["role"].eq("buyer")
    ep = s["episode_id"]
    best_buyer = s["value"].where(buyer).groupby(ep).transform("max")
    best_seller = s["value"].where(~buyer).groupby(ep).transform("min")
    s["potential"] = np.where(buyer, s["value"] - best_seller, best_buyer - s["value"]).clip(0)
    key = s.assign(key=np.where(buyer, -s["value"], s["value"])).groupby(
        ["episode_id", "role"], sort=False
    )["key"]  # lower = better on either side
    k = key.rank(method="first").astype(int)  # 1 = the best of its side
    b = s[buyer].set_index([ep[buyer], k[buyer]])["value"].rename("b")
    c = s[~buyer].set_index([ep[~buyer], k[~buyer]])["value"].rename("c")
    pairs = pd.concat([b, c], axis=1, join="inner")
    q = (pairs["b"] > pairs["c"]).groupby(level=0).sum()  # the competitive quantity
    s["intra"] = (key.rank(method="min") - 1).to_numpy() < ep.map(q).fillna(0).to_numpy()
    return s[["episode_id", "agent_id", "potential", "intra"]]


def measured(reader: EpisodeReader, mp, data_dir: Path):
    """(per-seat metrics without CSα, per-round rows, per-game frame, the CSα reference table) of
    the games under ``reader``, the reference being the instance's (``data/references/``)."""
    reference = load_reference(reference_path(data_dir, mp.instance))
    tables = {name: reader.require().table(name) for name in TABLES}
    seats, rounds, market = frames(tables)
    return seats, rounds, market, reference


def compute(reader: EpisodeReader, mp, data_dir: Path) -> dict[str, pd.DataFrame]:
    """The metrics of played games, each seat's CSα from the instance's reference (an imported
    instance's: ``double_auction/sources/analysis.py``)."""
    seats, rounds, market, reference = measured(reader, mp, data_dir)
    return {"agents": seat_csa(seats, reference, mp), "agent_rounds": rounds, "market": market}
