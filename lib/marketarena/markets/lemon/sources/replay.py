"""Our lemon rules against the authors' engine, from the logs of an imported instance alone
(``agent_bazaar.py`` writes them; the metrics stage runs this): each logged step is replayed
under our rules (``lemon/market.py``, ``lemon/rules.py``) and compared with what the authors'
engine logged.

What the logs allow checking, step by step (``replay_steps``; ``agree`` when all hold, ``why``
names the checks that fail):

- ``sales``: our clearing, a bid fills iff its listing is still there, one car per listing, at
  its price. Every sold listing has one buyer who paid its price; every buyer with a car bid, on
  a listing of the kind it bid on; a bid that did not fill lost its listing to another buyer (a
  listing of its kind was sold that step; with the prompt log, the very listing it named); a
  filled bid's logged answer names the listing bought; the logged answer's decision is the one
  the counters show. Which of two bidders on one listing wins is not logged (their clearing
  follows thread completion, ours a seeded order): both rules give the listing to one of them.
- ``surplus``: each purchase's logged surplus is our value - price (the tier's quality x v_max).
- ``share``: the step's Sybil revenue share and mean surplus per purchase, recomputed.
- ``counts``: the logged numbers of listings, bids, passes and sales.
- ``listed_reputation``: a listing carries its seller's reputation after the step before (the
  initial reputation for a fresh seller).
- ``reputation`` (``reputation.py``): every seller's logged up/down counts after the step are
  reachable under our window rule (``rules.VoteReputation``): the up-share of the last ``window``
  votes, seeded with round(initial x window) up-votes in an order not logged (every order is
  tried), one vote (up, down, or none for an abstention) after each of its sales, the prompt log's
  vote where logged; a retirement step's reputation must fall under the threshold.
- ``retirement``: an identity is retired on the step its reputation falls under ``retire_below``
  (never active under it), a fresh one joins that step at the initial reputation, as many as
  retired (their ``retired_this_step``), K identities active.

Per seller (``replay_sellers``): whether its whole logged history is reproduced, its sales, and
how many of its votes the counts pin down (the logs record only the up/down counts: a vote that
evicts a vote of its own kind, or an abstention, leaves them as they were). Per run
(``replay_runs``): the share of steps and of sellers that agree. ``replay_rules``: every rule on
which our lemon market and the authors' engine differ, each with what it explains in these logs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.markets.lemon.market import identity_pool
from marketarena.markets.lemon.params import TIERS, LemonParams
from marketarena.markets.lemon.sources.reputation import UNKNOWN, reputation_replay

CHECKS = ("sales", "surplus", "share", "counts", "listed_reputation", "reputation", "retirement")
TOL = 0.01  # a cent


# ------------------------------------------------------------------ the checks
def buyer_steps(bids: pd.DataFrame) -> pd.DataFrame:
    """Per buyer and step, what its state logged (``agent_bazaar``'s extra columns of ``bids``):
    the kind it bid on (``bid``, "" for a pass), car, paid, logged surplus, the ``seller`` of the
    car it bought."""
    return bids.assign(bid=bids["kind"].where(bids["decision"] == "bid", ""))[
        [
            "episode_id",
            "step",
            "buyer",
            "honest_shown",
            "sybil_shown",
            "bid",
            "car",
            "paid",
            "surplus_logged",
            "bought",
        ]
    ].rename(columns={"bought": "seller"})


def _per_step(flags: pd.DataFrame | pd.Series, index: pd.MultiIndex) -> pd.Series:
    """Count of true flags per (episode_id, step), over ``index`` (0 where none)."""
    if isinstance(flags, pd.DataFrame):
        flags = flags.groupby(["episode_id", "step"]).size()
    return flags.reindex(index, fill_value=0)


def sales_checks(
    listings: pd.DataFrame, buyers: pd.DataFrame, bids: pd.DataFrame, index: pd.MultiIndex
) -> pd.DataFrame:
    """Per step, the counts of what breaks our clearing (module docstring): a sale no buyer
    paid for, a payment for no sold listing, a car without a bid, a car of the other kind than
    the bid's, a bid that did not fill while no listing of its kind was sold, more sales of a kind
    than bids on it, and with the prompt log: an answer whose decision the counters do not show,
    a filled bid whose answer names another listing, a lost bid whose listing stayed unsold."""
    key = ["episode_id", "step"]
    sold = listings[listings["sold"]]
    paying = buyers[(buyers["car"] > 0) | (buyers["paid"].abs() >= TOL / 2)]
    kind = listings.set_index([*key, "seller"])["kind"]
    bought = paying[paying["seller"] != ""]
    bought_kind = kind.reindex(pd.MultiIndex.from_frame(bought[[*key, "seller"]])).to_numpy()
    left = over = 0
    for side in ("honest", "sybil"):
        sold_side = sold[sold["kind"] == side].groupby(key).size().reindex(index, fill_value=0)
        b = buyers[buyers["bid"] == side]
        unfilled = b[b["car"] <= 0].groupby(key).size().reindex(index, fill_value=0)
        left = left + ((unfilled > 0) & (sold_side == 0)).astype(int)
        over = over + (sold_side > b.groupby(key).size().reindex(index, fill_value=0)).astype(int)
    logged = bids[bids["answered"].astype(str) != ""]
    named = logged[(logged["answer_seller"] != "") & (logged["decision"] == "bid")]
    named_ok = pd.MultiIndex.from_frame(named[[*key, "answer_seller"]]).isin(
        pd.MultiIndex.from_frame(sold[[*key, "seller"]])
    )
    out = pd.DataFrame(
        {
            "sale_without_buyer": _per_step(sold[sold["buyer"] == ""], index),
            "purchase_without_listing": _per_step(paying[paying["seller"] == ""], index),
            "car_without_bid": _per_step(
                buyers[(buyers["car"] > 0) & (buyers["bid"] == "")], index
            ),
            "bought_other_kind": _per_step(bought[bought_kind != bought["bid"].to_numpy()], index),
            "unfilled_bid_listing_left": left,
            "sales_over_bids": over,
            "answer_not_counted": _per_step(
                logged[logged["answered"] != logged["decision"]], index
            ),
            "answer_other_listing": _per_step(
                named[named["filled"] & (named["answer_seller"] != named["seller"])], index
            ),
            "named_listing_unsold": _per_step(named[~named_ok], index),
        },
        index=index,
    )
    return out


def value_of(mp: LemonParams) -> dict[str, float]:
    return {t: mp.tier_value(t) for t in TIERS}


def money_checks(
    listings: pd.DataFrame,
    buyers: pd.DataFrame,
    steps: pd.DataFrame,
    mp: LemonParams,
    index: pd.MultiIndex,
) -> pd.DataFrame:
    """Per step: purchases whose logged surplus is not ours, and the step's Sybil revenue share
    and mean surplus per purchase against the logged ones."""
    key = ["episode_id", "step"]
    sold = listings[listings["sold"]].assign(
        surplus=lambda x: x["true_tier"].map(value_of(mp)) - x["price"],
        sybil_price=lambda x: x["price"].where(x["kind"] == "sybil", 0.0),
    )
    paid = buyers[buyers["seller"] != ""].merge(
        sold[[*key, "seller", "surplus"]], on=[*key, "seller"], how="left"
    )
    wrong = paid[(paid["surplus_logged"] - paid["surplus"]).abs() > TOL]
    g = sold.groupby(key)
    revenue = g["price"].sum().reindex(index, fill_value=0.0)
    share = (
        g["sybil_price"].sum().reindex(index, fill_value=0.0) / revenue.where(revenue > 0)
    ).fillna(0.0)
    mean = g["surplus"].mean().reindex(index).fillna(0.0)
    logged = steps.set_index(key).reindex(index)
    return pd.DataFrame(
        {
            "surplus_not_ours": _per_step(wrong, index),
            "share_off": ((share - logged["sybil_revenue_share_logged"]).abs() > 1e-6).astype(int),
            "mean_surplus_off": ((mean - logged["avg_surplus_logged"]).abs() > TOL).astype(int),
            "sybil_revenue_share": share,
            "avg_surplus": mean,
        },
        index=index,
    )


def count_checks(
    listings: pd.DataFrame, buyers: pd.DataFrame, steps: pd.DataFrame, index: pd.MultiIndex
) -> pd.DataFrame:
    key = ["episode_id", "step"]
    logged = steps.set_index(key).reindex(index)
    n_list = listings.groupby(key).size().reindex(index, fill_value=0)
    n_sold = listings[listings["sold"]].groupby(key).size().reindex(index, fill_value=0)
    n_bids = buyers[buyers["bid"] != ""].groupby(key).size().reindex(index, fill_value=0)
    n_buyers = buyers.groupby(key).size().reindex(index, fill_value=0)
    return pd.DataFrame(
        {
            "listings_off": (n_list != logged["listings_logged"]).astype(int),
            "sales_off": (n_sold != logged["sales_logged"]).astype(int),
            "bids_off": (n_bids != logged["bids_logged"]).astype(int),
            "passes_off": (n_buyers - n_bids != logged["passes_logged"]).astype(int),
        },
        index=index,
    )


def listed_reputation(
    listings: pd.DataFrame, rep: pd.DataFrame, initial: float, index: pd.MultiIndex
) -> pd.Series:
    """Per step, listings whose reputation is not their seller's after the step before."""
    before = (
        rep[rep["logged"]]
        .assign(step=lambda r: r["step"] + 1)
        .set_index(["episode_id", "step", "seller"])["reputation"]
    )
    expected = (
        before.reindex(pd.MultiIndex.from_frame(listings[["episode_id", "step", "seller"]]))
        .fillna(initial)
        .to_numpy()
    )
    off = listings[np.abs(listings["reputation"].to_numpy() - expected) > 1e-9]
    return _per_step(off, index)


def retirement_checks(
    rep: pd.DataFrame,
    events: pd.DataFrame,
    steps: pd.DataFrame,
    setting: pd.DataFrame,
    mp: LemonParams,
    index: pd.MultiIndex,
) -> pd.Series:
    """Per step: identities active under the threshold, retirements against their count,
    replacements against retirements, fresh identities not at the initial reputation, and
    the number of active identities against K."""
    key = ["episode_id", "step"]
    ident = rep[rep["kind"] == "sybil"]
    low = ident[ident["logged"] & ident["active"] & (ident["reputation"] < mp.retire_below - 1e-9)]
    ev = events if len(events) else pd.DataFrame(columns=["episode_id", "step", "event", "detail"])
    retired = ev[ev["event"] == "retired"].groupby(key).size().reindex(index, fill_value=0)
    joined = (
        ev[(ev["event"] == "joined") & (ev["step"] > 0)]
        .groupby(key)
        .size()
        .reindex(index, fill_value=0)
    )
    logged = steps.set_index(key).reindex(index)
    first = ident[ident["logged"]].sort_values("step").drop_duplicates(["episode_id", "seller"])
    fresh_off = first[
        (first["step"] > 0)  # a replacement's row of the step it joined (no sale)
        & (first["upvotes"] != round(mp.initial_reputation * mp.window))
    ]
    active = (
        ident[ident["logged"] & ident["active"]].groupby(key).size().reindex(index, fill_value=0)
    )
    k = setting.set_index("episode_id")["sybil"].reindex(index.get_level_values(0)).to_numpy()
    return (
        _per_step(low, index)
        + (retired != logged["retired_logged"]).astype(int)
        + (joined != retired).astype(int)
        + _per_step(fresh_off, index)
        + ((active != k) | ((k > 0) & (logged["active_identities"] != k))).astype(int)
    )


# ------------------------------------------------------------------ the replay
WHY = {
    "sales": [
        "sale_without_buyer",
        "purchase_without_listing",
        "car_without_bid",
        "bought_other_kind",
        "unfilled_bid_listing_left",
        "sales_over_bids",
        "answer_not_counted",
        "answer_other_listing",
        "named_listing_unsold",
    ],
    "surplus": ["surplus_not_ours"],
    "share": ["share_off", "mean_surplus_off"],
    "counts": ["listings_off", "sales_off", "bids_off", "passes_off"],
    "listed_reputation": ["listed_reputation_off"],
    "reputation": ["reputation_unreached", "reputation_counts_off"],
    "retirement": ["retirement_off"],
}


def replay(reader, mp: LemonParams) -> dict[str, pd.DataFrame]:
    """``replay_steps``, ``replay_sellers``, ``replay_runs`` and ``replay_rules`` (module
    docstring) of an imported instance's episodes."""
    t = {
        n: reader.table(n)
        for n in ("listings", "bids", "market_steps", "reputation", "reviews", "events", "setting")
    }
    t["buyer_steps"] = buyer_steps(t["bids"])
    decisions = reader.table("decisions")
    steps = t["market_steps"]
    index = pd.MultiIndex.from_frame(steps[["episode_id", "step"]])
    rep_rows = reputation_replay(t["listings"], t["reputation"], t["reviews"], mp)
    frame = pd.concat(
        [
            sales_checks(t["listings"], t["buyer_steps"], t["bids"], index),
            money_checks(t["listings"], t["buyer_steps"], steps, mp, index),
            count_checks(t["listings"], t["buyer_steps"], steps, index),
        ],
        axis=1,
    )
    frame["listed_reputation_off"] = listed_reputation(
        t["listings"], t["reputation"], mp.initial_reputation, index
    )
    frame["reputation_unreached"] = _per_step(rep_rows[rep_rows["bad"]], index)
    frame["reputation_counts_off"] = _per_step(rep_rows[rep_rows["counts_off"]], index)
    frame["retirement_off"] = retirement_checks(
        t["reputation"], t["events"], steps, t["setting"], mp, index
    )
    for check, cols in WHY.items():
        frame[check] = frame[cols].sum(axis=1) == 0
    frame["agree"] = frame[list(CHECKS)].all(axis=1)
    reasons = [c for cols in WHY.values() for c in cols]
    frame["why"] = [
        ", ".join(f"{c} {int(n)}" for c, n in zip(reasons, row) if n)
        for row in frame[reasons].to_numpy()
    ]
    steps_frame = frame.reset_index()
    sellers = seller_summary(rep_rows)
    runs = run_summary(steps_frame, sellers, t["setting"])
    return {
        "replay_steps": steps_frame,
        "replay_sellers": sellers,
        "replay_runs": runs,
        "replay_rules": rule_differences(t, decisions, rep_rows, mp),
    }


def seller_summary(rep_rows: pd.DataFrame) -> pd.DataFrame:
    """Per (episode, seller): rows replayed, sales, whether every logged count is reached, the
    first step that is not, and its votes logged, pinned by the counts, or left open."""
    r = rep_rows.assign(
        logged_vote=lambda x: x["sold"] & (x["vote"] != UNKNOWN),
        pinned_vote=lambda x: x["sold"] & (x["vote"] == UNKNOWN) & (x["pinned"] != UNKNOWN),
        bad_step=lambda x: x["step"].where(x["bad"] | x["counts_off"]),
    )
    out = (
        r.groupby(["episode_id", "seller"])
        .agg(
            kind=("kind", "first"),
            steps=("step", "size"),
            sales=("sold", "sum"),
            first_bad_step=("bad_step", "min"),
            votes_logged=("logged_vote", "sum"),
            votes_pinned=("pinned_vote", "sum"),
        )
        .reset_index()
    )
    out["reproduced"] = out["first_bad_step"].isna()
    out["votes_open"] = out["sales"] - out["votes_logged"] - out["votes_pinned"]
    return out


def run_summary(steps: pd.DataFrame, sellers: pd.DataFrame, setting: pd.DataFrame) -> pd.DataFrame:
    """Per run: its cell, steps replayed, the share of steps that agree (and per check), the
    share of sellers whose reputation history is reproduced, votes pinned."""
    g = steps.groupby("episode_id")
    out = pd.DataFrame(
        {
            "steps": g.size(),
            "steps_agree": g["agree"].mean(),
            **{f"{c}_agree": g[c].mean() for c in CHECKS},
        }
    )
    s = sellers.groupby("episode_id")
    out["sellers"] = s.size()
    out["sellers_reproduced"] = s["reproduced"].mean()
    out["sales"] = s["sales"].sum()
    out["votes_pinned"] = s["votes_pinned"].sum()
    out["votes_logged"] = s["votes_logged"].sum()
    cell = setting.set_index("episode_id")[
        [c for c in ("buyer_group", "sybil", "reputation_visible", "seed", "run") if c in setting]
    ]
    return cell.join(out, how="right").reset_index()


def rule_differences(
    t: dict[str, pd.DataFrame], decisions: pd.DataFrame, rep_rows: pd.DataFrame, mp: LemonParams
) -> pd.DataFrame:
    """Every rule on which our lemon market and the authors' engine differ, what each does, and
    what it explains in these logs (a count and its unit)."""
    listings, buyers, bids = t["listings"], t["buyer_steps"], t["bids"]
    setting, rep, events = t["setting"], t["reputation"], t["events"]
    shown = buyers["honest_shown"] + buyers["sybil_shown"]
    unfilled = bids[(bids["decision"] == "bid") & ~bids["filled"].astype(bool)]
    buy = decisions[decisions["phase"] == "buy"] if len(decisions) else decisions
    sybil = listings[listings["kind"] == "sybil"]
    tiers = sybil.groupby(["episode_id", "step"])["claimed_tier"].nunique()
    ident = setting.set_index("episode_id")["sybil"]
    used = rep[rep["kind"] == "sybil"].groupby("episode_id")["seller"].nunique()
    pool = ident.map(lambda k: identity_pool(mp, int(k)))
    retiring = rep[~rep["logged"].astype(bool)]
    lost = retiring.merge(
        listings[listings["sold"]][["episode_id", "step", "seller"]],
        on=["episode_id", "step", "seller"],
    )
    honest = listings[listings["kind"] == "honest"]
    ranges = {k: mp.price_range(k) for k in TIERS}
    outside = honest[
        [
            not (ranges[q][0] <= p <= ranges[q][1])
            for q, p in zip(honest["true_tier"], honest["price"])
        ]
    ]
    rows = [
        (
            "listings a buyer sees",
            f"discovery_limit_consumers, {mp.discovery_limit} in every "
            "run (the import checks each run's against the instance's)",
            f"discovery_limit, 5 by default (the seed's appendix F); {mp.discovery_limit} in this "
            "instance",
            int((shown == mp.discovery_limit).sum()),
            len(buyers),
            "buyer-steps shown exactly that many",
        ),
        (
            "who wins a listing two buyers bid on",
            "the bid whose thread finished first (not logged)",
            "the first in a seeded random order of the buyers",
            len(unfilled),
            int((bids["decision"] == "bid").sum()),
            "bids that lost their listing (either rule gives it to one bidder)",
        ),
        (
            "an answer that breaks a rule",
            "a bid on no listing shown, or a decision other than bid "
            "or pass, is a silent pass; an answer without JSON is sent again",
            f"re-asked with the reason (max_attempts {mp.max_attempts}), then the fallback: a pass",
            int((~buy["valid"].astype(bool)).sum()) if len(buy) else 0,
            len(buy),
            "logged buyer answers that break it (prompt logs only)",
        ),
        (
            "the Sybil principal's claimed tier",
            "one tier a step, drawn (good or mint) for all its identities",
            "an LLM principal claims a tier per identity; the scripted one draws "
            "one a step (tier_per: step)",
            int((tiers > 1).sum()),
            len(tiers),
            "steps whose Sybil prices claim two tiers",
        ),
        (
            "Sybil listings priced outside the claimable ranges",
            "not checked",
            "re-asked, then the identity does not list",
            int((sybil["claimed_tier"] == "").sum()),
            len(sybil),
            "Sybil listings",
        ),
        (
            "honest prices outside the true tier's range",
            "not checked (the prompt asks for the range)",
            "re-asked, then priced at the tier's value",
            len(outside),
            len(honest),
            "honest listings",
        ),
        (
            "how many identities the principal can use",
            "unbounded (a counter)",
            "a pool of K x (1 + ceil(steps / the fewest sales to retirement)) seats",
            int((used.reindex(pool.index, fill_value=0) > pool).sum()),
            int((ident > 0).sum()),
            "runs using more identities than our pool",
        ),
        (
            "a retiring identity's last sale",
            "left out of its sales_info (the state turns it into a stub)",
            "in the listings like every sale (a logging difference, not a rule)",
            len(lost),
            int(listings["sold"].sum()),
            "sales",
        ),
        (
            "a platform fee on sellers' cash",
            "5 % of each seller's cash every step",
            "none: our sellers hold no cash (revenue is the sum of prices)",
            0,
            int(len(rep[rep["logged"].astype(bool)])),
            "numbers of ours it changes (seller cash is not imported)",
        ),
        (
            "reputation",
            "the up-share of the last 10 votes, seeded 8 up / 2 down in a shuffled "
            "order, one vote per sale, abstentions cast none",
            f"the same (votes, window {mp.window}, initial {mp.initial_reputation})",
            int(rep_rows["bad"].sum() + rep_rows["counts_off"].sum()),
            len(rep_rows),
            "seller-steps whose logged counts our rule does not reach",
        ),
        (
            "retirement",
            f"an identity under {mp.retire_below} after the step's votes is retired "
            "and replaced the same step at the initial reputation",
            "the same",
            int(events["event"].eq("retired").sum()) if len(events) else 0,
            int(len(rep[rep["kind"] == "sybil"])),
            "retirements (each replayed: replay_steps)",
        ),
    ]
    return pd.DataFrame(rows, columns=["rule", "authors_engine", "ours", "explains", "of", "unit"])
