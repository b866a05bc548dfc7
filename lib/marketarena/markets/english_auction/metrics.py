"""english_auction metrics from the logs alone (``items``, ``bids``, ``plans``, ``states``,
``setting``, ``agents``, ``decisions``; seed 004 section 4, notes B.4).

Per bidder and auction (``agents``), with the auction's ``budget`` and ``order``:
  profit, money_left, items_won       at the end
  bid_attempts, failed_bids, failed_bid_rate   answers to bid decisions, and the invalid ones
                                      (over budget, under the minimum, not valid JSON)
  belief_attempts, self_error_rate, other_error_rate   belief answers, and the share with an error
                                      about itself / about another bidder (recomputed from each
                                      answer and the truth in ``states`` and ``items``)
  cfr                                 corrected failure rate F / (C + F) over bid and belief answers
                                      (F invalid, C valid; every failure is eventually corrected)
  mean_bip                            mean bid increment, % of the start price: a bid's rise over
                                      the highest bid before its round (over the start price for
                                      an item's first bids)
Per bid (``bids``): step, round, bidder, bip. Per bidder, auction and item (``engagement``): its
valid bids, whether it won, the item's priority in its initial plan and in the plan in force
just before the item (the seed's r(1) and r(j)), the item's position and start price, its profit.
Every plan in force (``plans``): step (before item), bidder, item, its position, priority.
Per (player, which plan) the Spearman correlations of priority with engagement and with winning,
with a cluster bootstrap interval over auctions (``spearman``; the seed's Table 1).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.english_auction.market import display_name
from marketarena.markets.english_auction.rules import belief_errors

AGENT_METRICS = ("profit", "money_left", "items_won", "failed_bid_rate", "self_error_rate",
                 "other_error_rate", "cfr", "mean_bip")


def _belief_error_rows(decisions: pd.DataFrame, states: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """One row per belief answer: self and other errors against the truth after that item."""
    rows = []
    beliefs = decisions[decisions["phase"] == "belief"]
    for (ep, step), group in beliefs.groupby(["episode_id", "step"]):
        st = states[(states["episode_id"] == ep) & (states["step"] == step)]
        sold = items[(items["episode_id"] == ep) & (items["step"] <= step) & (items["winner"] != "")]
        profits = {display_name(a): p for a, p in zip(st["agent_id"], st["profit"])}
        wins = {display_name(a): {} for a in st["agent_id"]}
        for r in sold.itertuples():
            wins[display_name(r.winner)][r.item] = r.price
        budget = dict(zip(st["agent_id"], st["budget_left"]))
        for r in group.itertuples():
            truth = {"remaining_budget": budget[r.agent_id], "total_profits": profits,
                     "winning_bids": wins}
            try:
                answer = json.loads(r.action)
                own, others = belief_errors(display_name(r.agent_id), answer, truth)
            except (TypeError, ValueError, AttributeError):
                own, others = ["no status"], ["no status"]
            rows.append((ep, r.agent_id, r.attempt, bool(own), bool(others), bool(r.valid)))
    return pd.DataFrame(rows, columns=["episode_id", "agent_id", "attempt", "self_error",
                                       "other_error", "valid"])


def compute(reader: EpisodeReader) -> dict[str, pd.DataFrame]:
    reader.require()
    items, bids, plans = reader.table("items"), reader.table("bids"), reader.table("plans")
    states, setting = reader.table("states"), reader.table("setting")
    agents, decisions = reader.table("agents"), reader.table("decisions")
    key = ["episode_id", "agent_id"]

    final = states.sort_values("step").groupby(key).last()[["budget_left", "profit", "items_won"]]
    final = final.rename(columns={"budget_left": "money_left"})
    bid_dec = decisions[decisions["phase"] == "bid"]
    per = final.join(bid_dec.groupby(key).size().rename("bid_attempts"))
    per = per.join((~bid_dec["valid"]).groupby([bid_dec[k] for k in key]).sum().rename("failed_bids"))
    belief = _belief_error_rows(decisions, states, items)
    g = belief.groupby(key)
    per = per.join(g.size().rename("belief_attempts")).join(g["self_error"].mean().rename("self_error_rate"))
    per = per.join(g["other_error"].mean().rename("other_error_rate"))
    counted = decisions[decisions["phase"].isin(["bid", "belief"])]
    fails = (~counted["valid"]).groupby([counted[k] for k in key]).sum()
    per = per.join((fails / counted.groupby(key).size()).rename("cfr"))
    per[["bid_attempts", "failed_bids"]] = per[["bid_attempts", "failed_bids"]].fillna(0)
    per["failed_bid_rate"] = per["failed_bids"] / per["bid_attempts"].replace(0, np.nan)

    # bid increments: over the highest bid before the round (the start price at first)
    start = items.set_index(["episode_id", "step"])["start_price"]
    valid_bids = bids[bids["bid"].notna()].copy()
    valid_bids["start_price"] = [start[(e, s)] for e, s in zip(valid_bids["episode_id"], valid_bids["step"])]
    per_round = valid_bids.groupby(["episode_id", "step", "round"])["bid"].max()
    before = per_round.groupby(level=[0, 1]).transform(lambda r: r.cummax().shift(1))
    where = pd.MultiIndex.from_frame(valid_bids[["episode_id", "step", "round"]])
    valid_bids["before"] = before.reindex(where).to_numpy()
    base = valid_bids["before"].fillna(valid_bids["start_price"])
    valid_bids["bip"] = 100 * (valid_bids["bid"] - base) / valid_bids["start_price"]
    per = per.join(valid_bids.groupby(key)["bip"].mean().rename("mean_bip"))

    cell = setting[["episode_id", "budget", "order"]]
    agent_rows = agents.merge(per.reset_index(), on=key, how="left").merge(cell, on="episode_id")

    # engagement and priorities per item
    n_bids = valid_bids.groupby(["episode_id", "agent_id", "step"]).size().rename("n_bids")
    eng = agents[["episode_id", "agent_id", "name"]].merge(
        items[["episode_id", "step", "item", "start_price", "true_value", "winner", "price"]],
        on="episode_id")
    eng = eng.join(n_bids, on=["episode_id", "agent_id", "step"])
    eng["n_bids"] = eng["n_bids"].fillna(0).astype(int)
    eng["won"] = (eng["winner"] == eng["agent_id"]).astype(int)
    eng["profit"] = np.where(eng["won"] == 1, eng["true_value"] - eng["price"], 0.0)
    initial = plans[plans["step"] == 0].set_index(["episode_id", "agent_id", "item"])["priority"]
    current = plans.set_index(["episode_id", "agent_id", "step", "item"])["priority"]
    eng["priority_initial"] = [initial.get((e, a, i), np.nan)
                               for e, a, i in zip(eng["episode_id"], eng["agent_id"], eng["item"])]
    eng["priority_current"] = [current.get((e, a, s, i), np.nan) for e, a, s, i in
                               zip(eng["episode_id"], eng["agent_id"], eng["step"], eng["item"])]
    eng = eng.merge(cell, on="episode_id")

    spearman = _priority_spearman(eng)
    bids_frame = valid_bids[["episode_id", "step", "round", "agent_id", "bid", "bip"]].merge(
        agents[["episode_id", "agent_id", "name"]], on=key)
    position = items.set_index(["episode_id", "item"])["step"].rename("position")
    plan_frame = plans.join(position, on=["episode_id", "item"]).merge(
        agents[["episode_id", "agent_id", "name"]], on=key).merge(cell, on="episode_id")
    return {"agents": agent_rows, "engagement": eng, "bids": bids_frame, "spearman": spearman,
            "plans": plan_frame,
            "states": states.merge(agents[["episode_id", "agent_id", "name"]], on=key).merge(cell, on="episode_id")}


def _priority_spearman(eng: pd.DataFrame) -> pd.DataFrame:
    """The seed's Table 1: per player, rho(priority, engagement) and rho(priority, win) for the
    initial and the current plan, pooled over its (auction, item) rows, with a 95% interval from a
    bootstrap that resamples whole auctions."""
    from marketarena.stats import cluster_bootstrap_spearman

    rows = []
    for name, g in eng.groupby("name"):
        for plan in ("initial", "current"):
            for target, label in (("n_bids", "engagement"), ("won", "win")):
                r = cluster_bootstrap_spearman(g, f"priority_{plan}", target, "episode_id",
                                               n_boot=500, seed=0, level=0.95, n_perm=200)
                rows.append({"name": name, "plan": plan, "with": label, "rho": r["rho"],
                             "lo": r["lo"], "hi": r["hi"], "n": r["n"]})
    return pd.DataFrame(rows, columns=["name", "plan", "with", "rho", "lo", "hi", "n"])
