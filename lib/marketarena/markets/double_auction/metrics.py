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
                   (``bazaar.py``)
  intra            the seat is intra-marginal: one of the q highest-valued buyers or q lowest-cost
                   sellers, q the game's competitive quantity (seats tied at the margin count in)
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
from marketarena.markets.double_auction.reference import (
    TABLE,
    load_reference,
    no_reference,
    seat_csa,
)

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
    seats = seats.merge(_margins(tables["seats"]), on=key)
    potential = seats.pop("potential")
    played = seats["episode_id"].map(ep["rounds"]) * potential
    seats["surplus_share"] = np.where(potential > 0, seats["surplus"].clip(lower=0)
                                      / played.where(potential > 0), 0.0)
    m = market.set_index("episode_id")
    seats["game_efficiency"] = seats["episode_id"].map(m["efficiency"])
    seats["ce_surplus"] = seats["episode_id"].map(m["ce_surplus"])
    rounds_frame = tables["agents"][key + ["name", "kind", "strategy"]].merge(
        st[key + ["step", "role", "value", "quote", "offset", "traded", "price", "margin"]],
        on=key)
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
        ["episode_id", "role"], sort=False)["key"]  # lower = better on either side
    k = key.rank(method="first").astype(int)  # 1 = the best of its side
    b = s[buyer].set_index([ep[buyer], k[buyer]])["value"].rename("b")
    c = s[~buyer].set_index([ep[~buyer], k[~buyer]])["value"].rename("c")
    pairs = pd.concat([b, c], axis=1, join="inner")
    q = (pairs["b"] > pairs["c"]).groupby(level=0).sum()  # the competitive quantity
    s["intra"] = (key.rank(method="min") - 1).to_numpy() < ep.map(q).fillna(0).to_numpy()
    return s[["episode_id", "agent_id", "potential", "intra"]]


def with_logged(seats: pd.DataFrame, logged: pd.DataFrame) -> pd.DataFrame:
    """``seats`` with the figures an imported game logged (``bazaar.LOGGED_COLUMNS``) beside
    ours: ``logged_efficiency``, ``logged_surplus_share``, ``logged_csa``."""
    return seats.merge(logged, on=["episode_id", "agent_id"], how="left")


def choose_csa(seats: pd.DataFrame) -> pd.DataFrame:
    """An imported game's CSα: the logged one where the game logged a CSα for every seat
    (BAZAAR's own reference, not published), else ours (``own_csa``: our truthful reference
    under the game's setting); ``csa_source`` says which (``logged`` or ``ours``), per game, so
    that a game is never rated on a mix of the two scales."""
    out = seats.copy()
    logged_game = out["logged_csa"].notna().groupby(out["episode_id"]).transform("all")
    own = out["own_csa"] if "own_csa" in out else pd.Series(np.nan, index=out.index)
    out["csa"] = np.where(logged_game, out["logged_csa"], own)
    out["csa_source"] = np.where(logged_game, "logged", "ours")
    return out


def imported_csa(seats: pd.DataFrame, reference: pd.DataFrame, mp,
                 logged: pd.DataFrame) -> pd.DataFrame:
    """The seats of imported games with their CSα (:func:`choose_csa`): ours (``own_csa``) is
    needed only for the games rated on it, so a seat of a game that logged its CSα may have a
    value our reference never met (NaN ``own_csa``: BAZAAR's games against a pool other than the
    instance's roster); a seat of a game rated on ours may not (an error naming its bucket)."""
    seats = seat_csa(seats, reference, mp, strict=False).rename(columns={"csa": "own_csa"})
    seats = choose_csa(with_logged(seats, logged))
    no_reference(seats, (seats["csa_source"] == "ours") & seats["ref_mu"].isna())
    return seats


#: chat recipients that reach more than one trader
GROUP_RECIPIENTS = ("all", "all_buyers", "all_sellers", "all_traders")


def with_chat(seats: pd.DataFrame, messages: pd.DataFrame) -> pd.DataFrame:
    """Per seat, its chat (``messages`` of an imported game), to whom:

    - ``messages_sent``: every message it wrote (an empty one, BAZAAR's way of staying silent,
      is not logged as a message);
    - ``messages_private`` (to one trader) and ``messages_group`` (to all, all buyers or all
      sellers);
    - ``messages_to_rivals``: to its own side (a seller to all sellers or to one seller): the
      channel a cartel needs; ``messages_to_counterparties``: to the other side; a message to
      everyone counts in neither;
    - ``chat_chars``: characters written; ``messages_received``: sent to it privately.

    Zero for a seat that wrote nothing; the columns are absent without a chat."""
    if messages is None or messages.empty or "sender" not in messages:
        return seats
    side = seats.set_index(["episode_id", "agent_id"])["role"]
    m = messages.assign(private=~messages["recipients"].isin(GROUP_RECIPIENTS))
    own = pd.Series(list(zip(m["episode_id"], m["sender"]))).map(side).to_numpy()
    to = np.where(m["recipients"] == "all_buyers", "buyer",
                  np.where(m["recipients"] == "all_sellers", "seller", ""))
    seat_to = pd.Series(list(zip(m["episode_id"], m["recipients"]))).map(side).fillna("").to_numpy()
    to = np.where(m["private"], seat_to, to)
    m = m.assign(to_rivals=(to == own) & (to != ""), to_counterparties=(to != own) & (to != ""))
    key = ["episode_id", "sender"]
    sent = m.groupby(key).agg(messages_sent=("text", "size"), messages_private=("private", "sum"),
                              messages_to_rivals=("to_rivals", "sum"),
                              messages_to_counterparties=("to_counterparties", "sum"),
                              chat_chars=("chars", "sum"))
    sent["messages_group"] = sent["messages_sent"] - sent["messages_private"]
    received = m[m["private"]].groupby(["episode_id", "recipients"]).size().rename(
        "messages_received")
    out = seats.merge(sent.rename_axis(["episode_id", "agent_id"]).reset_index(),
                      on=["episode_id", "agent_id"], how="left")
    out = out.merge(received.rename_axis(["episode_id", "agent_id"]).reset_index(),
                    on=["episode_id", "agent_id"], how="left")
    cols = ["messages_sent", "messages_private", "messages_group", "messages_to_rivals",
            "messages_to_counterparties", "chat_chars", "messages_received"]
    out[cols] = out[cols].fillna(0).astype("int64")
    return out


def compute(reader: EpisodeReader, mp, data_dir: Path) -> dict[str, pd.DataFrame]:
    """The metrics of played games, or of imported ones (``mp.imported``): then each game's CSα
    is its logged one where it logged one, else ours (:func:`choose_csa`), and the chat is
    counted per seat (:func:`with_chat`)."""
    reference = load_reference(reference_path(data_dir, mp.instance))
    tables = {name: reader.require().table(name) for name in TABLES}
    seats, rounds, market = frames(tables)
    if mp.imported:
        seats = imported_csa(seats, reference, mp, reader.table("bazaar_logged"))
        seats = with_chat(seats, reader.table("messages"))
    else:
        seats = seat_csa(seats, reference, mp)
    return {"agents": seats, "agent_rounds": rounds, "market": market}
