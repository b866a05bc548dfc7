"""english_auction metrics from the logs alone (``items``, ``bids``, ``plans``, ``states``,
``setting``, ``agents``, ``decisions``, ``events``; seed 004 section 4, notes B.4).

Every answer in ``decisions`` is one of: *valid*; a *rule breach* (its error starts with the
market's tag, ``observations.TAGS``: a failed bid, a wrong belief, an invalid plan); or a *format
failure* (anything else: an answer that was not valid JSON for the answer's schema, or no answer).

**Silence is failure** (issue 55). A format failure ends its decision (the runner does not re-ask
it; the fallback plays: a forced withdrawal, a corrected belief): a decision never given validly.
Every rate the board shows counts it as failed at every answer the decision still had, its own
included (``bid_attempts`` / ``belief_attempts`` minus its attempt: ``unanswered_bids``,
``unanswered_beliefs``), each unused belief answer wrong in every field a complete status has (3
about itself, 2 per other bidder). So a decision left unanswered weighs exactly what one answered
wrongly at every attempt weighs, and a bidder that answers garbage never shows a lower CFR or error
rate than one that answers validly but wrongly. The seed's own rates, which count only the answers
the rules judged (format failures left out, so a silent bidder's belief rates were empty and its
CFR only its bids'), are kept beside as ``seed_failed_bid_rate``, ``seed_self_error_rate``,
``seed_other_error_rate``, ``seed_cfr`` (in ``agents.parquet``, not on the board). Plans and
replans have no rate.

Per bidder and auction (``agents``), with the auction's ``budget``, ``order``, its ``role``
(baseline / challenger / bidder) and ``plan_mode`` (adaptive / static / none, from ``plans``):
  profit, money_left, items_won          at the end
  bid_answers, bids_made                 answers to bid decisions, and those that named an amount
  judged_bids, failed_bids,              bid answers judged by the rules, the rule-breaking ones
  failed_over_budget,                    and their kinds (the seed's "bids below the previous
  failed_under_minimum                   round's highest bid or beyond the budget")
  unanswered_bids, unanswered_beliefs    answers left unused by format failures (above)
  bid_failures / bid_tries               failed_bids + unanswered_bids / judged_bids + unanswered
  failed_bid_rate                        their ratio (the board's)
  self_fields, self_field_errors,        belief errors per checked field, the authors' way
  other_fields, other_field_errors       (``rules.seed_belief_fields``), judged answers only
  self_failures / self_checks,           the same with the unanswered belief answers' fields
  other_failures / other_checks          (3 self, 2 x (bidders - 1) other each), all failed
  self_error_rate, other_error_rate      their ratios (the seed's Figure 3, silence counted)
  judged_beliefs, self_answer_errors,    ours: belief answers judged, and those with an error
  other_answer_errors                    about itself / another bidder (``rules.belief_errors``)
  self_answer_error_rate,                (self_answer_errors + unanswered_beliefs) / (judged_beliefs
  other_answer_error_rate                + unanswered_beliefs); the same for others
  cfr                                    the seed's corrected failure rate F / (C + F) over bid
                                         answers and checked belief fields: F the failures (bid,
                                         self, other), C + F the tries and checks, silence counted
  seed_failed_bid_rate, seed_self_error_rate, seed_other_error_rate, seed_cfr
                                         the seed's definitions over judged answers only (above)
  format_failures, format_failure_rate   over every answer of the bidder (all four decisions)
  forced_withdrawals, beliefs_corrected  events: a bid decision without a valid answer (the
                                         ``bid_attempts`` cap hit, or a format failure), a belief
                                         the auctioneer corrected
  mean_bip                               mean bid increment percentage (below)
Per valid bid (``bids``): step, round, bidder, bip = its rise over the highest bid before its
round (over the start price for an item's first bids), in % of the start price; ``bip_range``
its bracket for the seed's Figure 6 (``BIP_RANGES``: [0, 10) is where first bids fall, [10, 11)
the minimum raise of 10%, then [11, 20), [20, 50), [50, inf)).
Per bidder, auction and item (``engagement``): its valid bids, whether it won, its profit on the
item, the item's priority in its initial plan and in the plan in force just before the item (the
seed's r(1) and r(j); NaN without a plan), the item's position and start price, and how many
bidders placed a valid bid on the item (``n_bidders``, Figure 8).
Every plan in force (``plans``): step (before item), bidder, item, its position, priority.
Per (player, which plan) the Spearman correlations of priority with engagement and with winning,
with a cluster bootstrap interval over auctions (``spearman``; the seed's Table 1). A player
without a plan has no rows there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.english_auction.market import display_name
from marketarena.markets.english_auction.observations import TAGS
from marketarena.markets.english_auction.params import EnglishAuctionParams
from marketarena.markets.english_auction.rules import (
    OVER_BUDGET,
    UNDER_MINIMUM,
    belief_errors,
    seed_belief_fields,
)

#: the per-auction metrics the stats stage correlates with profit (the agents frame has more)
AGENT_METRICS = (
    "profit",
    "money_left",
    "items_won",
    "failed_bid_rate",
    "self_error_rate",
    "other_error_rate",
    "cfr",
    "mean_bip",
)
#: answers per decision by phase when the instance's are not given: the params' defaults
ATTEMPTS = {
    "bid": EnglishAuctionParams.model_fields["bid_attempts"].default,
    "belief": EnglishAuctionParams.model_fields["belief_attempts"].default,
}
BIP_RANGES = [(0, 10), (10, 11), (11, 20), (20, 50), (50, np.inf)]
KEY = ["episode_id", "agent_id"]


def bip_label(lo: float, hi: float) -> str:
    return f"[{lo:g}, {'inf' if np.isinf(hi) else f'{hi:g}'})"


def classify(decisions: pd.DataFrame) -> pd.Series:
    """Each answer's kind: valid, rule (a rule breach: the error starts with the market's tag) or
    format."""
    tags = decisions["phase"].map(TAGS).fillna("\0")
    rule = [e.startswith(t) for e, t in zip(decisions["error"].astype(str), tags)]
    return pd.Series(
        np.where(decisions["valid"], "valid", np.where(rule, "rule", "format")),
        index=decisions.index,
    )


def _truths(
    states: pd.DataFrame, items: pd.DataFrame
) -> dict[tuple[str, int], tuple[dict, dict, dict]]:
    """(episode, step) -> (budget per agent id, profit per display name, winning bids per display
    name) after that item."""
    after: dict[tuple[str, int], tuple[dict, dict]] = {}
    for ep, step, agent, budget, profit in zip(
        states["episode_id"],
        states["step"],
        states["agent_id"],
        states["budget_left"],
        states["profit"],
    ):
        budgets, profits = after.setdefault((ep, step), ({}, {}))
        budgets[agent], profits[display_name(agent)] = budget, profit
    sales: dict[tuple[str, int], tuple[str, str, float]] = {
        (ep, step): (display_name(w), it, pr)
        for ep, step, w, it, pr in zip(
            items["episode_id"], items["step"], items["winner"], items["item"], items["price"]
        )
        if w
    }
    out, wins, episode = {}, {}, None
    for ep, step in sorted(after):
        budgets, profits = after[(ep, step)]
        if ep != episode:
            episode, wins = ep, {name: {} for name in profits}
        if (ep, step) in sales:
            winner, item, price = sales[(ep, step)]
            wins[winner][item] = price
        out[(ep, step)] = (budgets, profits, {k: dict(v) for k, v in wins.items()})
    return out


def _belief_rows(beliefs: pd.DataFrame, truths: dict) -> pd.DataFrame:
    """One row per belief answer judged by the rules: the seed's per-field counts and ours."""
    rows = []
    for ep, step, agent, action in zip(
        beliefs["episode_id"], beliefs["step"], beliefs["agent_id"], beliefs["action"]
    ):
        budgets, profits, wins = truths[(ep, step)]
        truth = {"remaining_budget": budgets[agent], "total_profits": profits, "winning_bids": wins}
        answer, me = json.loads(action), display_name(agent)
        own, others = belief_errors(me, answer, truth)
        rows.append((ep, agent, *seed_belief_fields(me, answer, truth), bool(own), bool(others)))
    return pd.DataFrame(
        rows,
        columns=[
            *KEY,
            "self_field_errors",
            "self_fields",
            "other_field_errors",
            "other_fields",
            "self_answer_error",
            "other_answer_error",
        ],
    )


def _bid_increments(bids: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Valid bids with their increment over the highest bid before their round, % of start."""
    start = items.set_index(["episode_id", "step"])["start_price"]
    valid = bids[bids["bid"].notna()].copy()
    valid["start_price"] = start.reindex(
        pd.MultiIndex.from_frame(valid[["episode_id", "step"]])
    ).to_numpy()
    per_round = valid.groupby(["episode_id", "step", "round"], sort=True)["bid"].max()
    before = (
        per_round.groupby(level=[0, 1], sort=False)
        .cummax()
        .groupby(level=[0, 1], sort=False)
        .shift(1)
    )
    where = pd.MultiIndex.from_frame(valid[["episode_id", "step", "round"]])
    base = pd.Series(before.reindex(where).to_numpy(), index=valid.index).fillna(
        valid["start_price"]
    )
    valid["bip"] = (100 * (valid["bid"] - base) / valid["start_price"]).round(6)
    edges = [lo for lo, _ in BIP_RANGES] + [np.inf]
    labels = [bip_label(lo, hi) for lo, hi in BIP_RANGES]
    valid["bip_range"] = pd.cut(valid["bip"], edges, right=False, labels=labels).astype(str)
    return valid


def plan_modes(plans: pd.DataFrame) -> pd.Series:
    """adaptive / static / none per (episode, agent), from the plans table's sources."""
    by = [plans[k] for k in KEY]
    has_plan = plans["priority"].notna().groupby(by).any()
    static = (plans["source"] == "static").groupby(by).any()
    return pd.Series(
        np.where(~has_plan, "none", np.where(static, "static", "adaptive")),
        index=has_plan.index,
        name="plan_mode",
    )


def compute(
    reader: EpisodeReader, attempts: Mapping[str, int] | None = None
) -> dict[str, pd.DataFrame]:
    """The metrics frames. ``attempts``: answers per decision by phase (``bid``, ``belief``: the
    instance's ``bid_attempts`` and ``belief_attempts``; :data:`ATTEMPTS`, the defaults, for any
    left out), which a decision never given validly counts as failed (:func:`_unanswered`)."""
    attempts = {**ATTEMPTS, **(attempts or {})}
    reader.require()
    items, bids, plans = reader.table("items"), reader.table("bids"), reader.table("plans")
    states, setting = reader.table("states"), reader.table("setting")
    agents, decisions, events = (
        reader.table("agents"),
        reader.table("decisions"),
        reader.table("events"),
    )

    final = states.sort_values("step").groupby(KEY).last()[["budget_left", "profit", "items_won"]]
    per = final.rename(columns={"budget_left": "money_left"})

    decisions = decisions.assign(kind=classify(decisions))
    counts = lambda frame, name: frame.groupby(KEY).size().rename(name)  # noqa: E731
    bid_dec = decisions[decisions["phase"] == "bid"]
    judged = bid_dec[bid_dec["kind"] != "format"]
    amounts = np.array([json.loads(a).get("bid") is not None for a in judged["action"]], dtype=bool)
    rule = judged[judged["kind"] == "rule"]
    per = per.join(
        [
            counts(bid_dec, "bid_answers"),
            counts(judged, "judged_bids"),
            counts(judged[amounts], "bids_made"),
            counts(rule, "failed_bids"),
            counts(
                rule[rule["error"].str.startswith(f"{TAGS['bid']} ({OVER_BUDGET})")],
                "failed_over_budget",
            ),
            counts(
                rule[rule["error"].str.startswith(f"{TAGS['bid']} ({UNDER_MINIMUM})")],
                "failed_under_minimum",
            ),
        ]
    )

    belief = _belief_rows(
        decisions[(decisions["phase"] == "belief") & (decisions["kind"] != "format")],
        _truths(states, items),
    )
    g = belief.groupby(KEY)
    per = per.join(
        g[["self_field_errors", "self_fields", "other_field_errors", "other_fields"]].sum()
    )
    per = per.join(
        g[["self_answer_error", "other_answer_error"]]
        .sum()
        .rename(columns=lambda c: c.replace("error", "errors"))
    )
    per = per.join(counts(belief, "judged_beliefs"))

    fill = [
        "bid_answers",
        "judged_bids",
        "bids_made",
        "failed_bids",
        "failed_over_budget",
        "failed_under_minimum",
        "self_field_errors",
        "self_fields",
        "other_field_errors",
        "other_fields",
        "self_answer_errors",
        "other_answer_errors",
        "judged_beliefs",
    ]
    per[fill] = per[fill].fillna(0).astype(int)
    answers = decisions[decisions["phase"].isin(list(TAGS))]
    per = per.join(
        [
            counts(answers[answers["kind"] == "format"], "format_failures"),
            counts(answers, "answers"),
        ]
    )
    per[["format_failures", "answers"]] = per[["format_failures", "answers"]].fillna(0).astype(int)
    per["format_failure_rate"] = per["format_failures"] / per["answers"].replace(0, np.nan)
    per = _rates(per, _unanswered(decisions, attempts), setting)
    for event, name in (
        ("forced_withdrawal", "forced_withdrawals"),
        ("belief_corrected", "beliefs_corrected"),
    ):
        per = (
            per.join(counts(events[events["event"] == event], name))
            if len(events)
            else per.assign(**{name: 0})
        )
        per[name] = per[name].fillna(0).astype(int)

    valid_bids = _bid_increments(bids, items)
    per = per.join(valid_bids.groupby(KEY)["bip"].mean().rename("mean_bip"))
    per = per.join(plan_modes(plans))

    cell = setting[["episode_id", "budget", "order"]]
    agent_rows = agents.merge(per.reset_index(), on=KEY, how="left").merge(cell, on="episode_id")

    # engagement and priorities per item
    n_bids = valid_bids.groupby(["episode_id", "agent_id", "step"]).size().rename("n_bids")
    n_bidders = valid_bids.groupby(["episode_id", "step"])["agent_id"].nunique().rename("n_bidders")
    eng = agents[["episode_id", "agent_id", "name", "role"]].merge(
        items[["episode_id", "step", "item", "start_price", "true_value", "winner", "price"]],
        on="episode_id",
    )
    eng = eng.join(n_bids, on=["episode_id", "agent_id", "step"]).join(
        n_bidders, on=["episode_id", "step"]
    )
    eng[["n_bids", "n_bidders"]] = eng[["n_bids", "n_bidders"]].fillna(0).astype(int)
    eng["won"] = (eng["winner"] == eng["agent_id"]).astype(int)
    eng["profit"] = np.where(eng["won"] == 1, eng["true_value"] - eng["price"], 0.0)
    initial = plans[plans["step"] == 0].set_index(["episode_id", "agent_id", "item"])["priority"]
    current = plans.set_index(["episode_id", "agent_id", "step", "item"])["priority"]
    eng["priority_initial"] = initial.reindex(
        pd.MultiIndex.from_frame(eng[["episode_id", "agent_id", "item"]])
    ).to_numpy()
    eng["priority_current"] = current.reindex(
        pd.MultiIndex.from_frame(eng[["episode_id", "agent_id", "step", "item"]])
    ).to_numpy()
    eng = eng.join(plan_modes(plans), on=KEY).merge(cell, on="episode_id")

    spearman = _priority_spearman(eng)
    bids_frame = (
        valid_bids[["episode_id", "step", "round", "agent_id", "bid", "bip", "bip_range"]]
        .merge(agents[["episode_id", "agent_id", "name"]], on=KEY)
        .merge(cell, on="episode_id")
    )
    position = items.set_index(["episode_id", "item"])["step"].rename("position")
    plan_frame = (
        plans.join(position, on=["episode_id", "item"])
        .merge(agents[["episode_id", "agent_id", "name"]], on=KEY)
        .merge(cell, on="episode_id")
    )
    return {
        "agents": agent_rows,
        "engagement": eng,
        "bids": bids_frame,
        "spearman": spearman,
        "plans": plan_frame,
        "states": states.merge(agents[["episode_id", "agent_id", "name"]], on=KEY).merge(
            cell, on="episode_id"
        ),
    }


def _unanswered(decisions: pd.DataFrame, attempts: Mapping[str, int]) -> pd.DataFrame:
    """Per (episode, agent): the bid and belief answers its format failures left unused.

    A format failure ends its decision (the runner does not re-ask it) with the fallback played: a
    decision never given validly. It counts as failed at every attempt the decision still had, its
    own included: ``attempts[phase] - attempt`` failures (at least 1), so a silent decision weighs
    exactly what a decision answered wrongly at every attempt weighs."""
    fmt = decisions[(decisions["kind"] == "format") & decisions["phase"].isin(["bid", "belief"])]
    most = np.array([attempts[phase] for phase in fmt["phase"]], dtype=int)
    left = np.maximum(most - fmt["attempt"].to_numpy(dtype=int), 1)
    out = (
        fmt.assign(left=left)
        .pivot_table(index=KEY, columns="phase", values="left", aggfunc="sum", fill_value=0)
        .reindex(columns=["bid", "belief"], fill_value=0)
    )
    return out.rename(columns={"bid": "unanswered_bids", "belief": "unanswered_beliefs"})


def _rates(per: pd.DataFrame, unanswered: pd.DataFrame, setting: pd.DataFrame) -> pd.DataFrame:
    """The board's rates (a decision never given validly counts as failed: its unused answers,
    :func:`_unanswered`, are failed bids, or belief answers wrong in every field a complete status
    has, 3 about itself and 2 per other bidder) and, beside them, the seed's (``seed_``: over the
    answers judged by the rules only)."""
    per = per.join(unanswered)
    per[list(unanswered.columns)] = per[list(unanswered.columns)].fillna(0).astype(int)
    others = per.index.get_level_values("episode_id").map(
        setting.set_index("episode_id")["bidders"] - 1
    )
    u, ub = per["unanswered_beliefs"], per["unanswered_bids"]
    per["bid_failures"] = per["failed_bids"] + ub
    per["bid_tries"] = per["judged_bids"] + ub
    per["self_failures"] = per["self_field_errors"] + 3 * u
    per["self_checks"] = per["self_fields"] + 3 * u
    per["other_failures"] = per["other_field_errors"] + 2 * others.to_numpy() * u
    per["other_checks"] = per["other_fields"] + 2 * others.to_numpy() * u
    ratio = lambda a, b: per[a] / per[b].replace(0, np.nan)  # noqa: E731
    per["failed_bid_rate"] = ratio("bid_failures", "bid_tries")
    per["self_error_rate"] = ratio("self_failures", "self_checks")
    per["other_error_rate"] = ratio("other_failures", "other_checks")
    per["cfr"] = (per["bid_failures"] + per["self_failures"] + per["other_failures"]) / (
        per["bid_tries"] + per["self_checks"] + per["other_checks"]
    ).replace(0, np.nan)
    beliefs = (per["judged_beliefs"] + u).replace(0, np.nan)
    per["self_answer_error_rate"] = (per["self_answer_errors"] + u) / beliefs
    per["other_answer_error_rate"] = (per["other_answer_errors"] + u) / beliefs
    per["seed_failed_bid_rate"] = ratio("failed_bids", "judged_bids")
    per["seed_self_error_rate"] = ratio("self_field_errors", "self_fields")
    per["seed_other_error_rate"] = ratio("other_field_errors", "other_fields")
    per["seed_cfr"] = (
        per["failed_bids"] + per["self_field_errors"] + per["other_field_errors"]
    ) / (per["judged_bids"] + per["self_fields"] + per["other_fields"]).replace(0, np.nan)
    return per


def _priority_spearman(eng: pd.DataFrame) -> pd.DataFrame:
    """The seed's Table 1: per player with a plan, rho(priority, engagement) and rho(priority, win)
    for the initial and the current plan, pooled over its (auction, item) rows, with a 95%
    interval from a bootstrap that resamples whole auctions."""
    from marketarena.stats import cluster_bootstrap_spearman

    rows = []
    for name, g in eng[eng["priority_initial"].notna() | eng["priority_current"].notna()].groupby(
        "name"
    ):
        for plan in ("initial", "current"):
            for target, label in (("n_bids", "engagement"), ("won", "win")):
                r = cluster_bootstrap_spearman(
                    g,
                    f"priority_{plan}",
                    target,
                    "episode_id",
                    n_boot=200,
                    seed=0,
                    level=0.95,
                    n_perm=0,
                )
                rows.append(
                    {
                        "name": name,
                        "plan": plan,
                        "with": label,
                        "rho": r["rho"],
                        "lo": r["lo"],
                        "hi": r["hi"],
                        "n": r["n"],
                    }
                )
    return pd.DataFrame(rows, columns=["name", "plan", "with", "rho", "lo", "hi", "n"])
