"""What the crash metrics add for an imported instance of the authors' runs (``agent_bazaar.py``):
their own score beside ours, per model and cell, and the replay of their engine (``replay.py``).

**Their score** is the composite market health of their exp1 scoring script (exp1_score.py of
the authors' ``paper/fig/scripts``, read as ``notes/peers-crash-lemon-auction.md`` D.4 and checked
against their cached results), on the runs as imported:

- per run: b = the share of firms out of business at the run's last day; p_fin = the mean price of
  the firms in business at the end of the last day that posted a price above 0 (0 when none);
  sigma = the sample SD (ddof 1) over days of the day's mean price of the firms that posted a
  price above 0 that day (0 for a run of one such day): their script drops a price of 0
  (``price_per_firm_over_time`` of their ``dataframe_builder``, then ``value > 0``), and a firm's
  price of the day it went out of business stays in that day's state file. Checked against their
  cached Figure 3 grids (``benchmarks/bench_their_outputs.py``): every cell whose runs are the
  same agrees to 1e-6; pinned in CI against their cached per-run figures on a committed slice
  (``tests/markets/crash/test_their_outputs.py``);
- per cell (model x stabilizing firms x discovery limit): the means of b, sigma and
  dev = |p_fin / c - 1| over its seeds; d_max and sigma_max are the largest per-run dev and sigma of
  the model's runs (their normalisation, within one model);
- S = 0 when the cell's mean b is 1, else (1/3) [(1 - b) + (1 - sigma / sigma_max) +
  (1 - min(dev / d_max, 1))];
- per model: the mean of its cells' S. Their script stops at the cell; this mean is ours, so that a
  model has one number to rank by.

Their normalisers are relative (within a model), ours fixed: the two orderings are compared by
their Spearman, not their values. Differences of the runs themselves: we cut the 13 runs whose
folders mix two executions at the mixing day (their script reads whatever the last state file is).

**Where their runs depart from the seed's text** (:func:`departures`): the seed says stabilizing
firms reduce bankruptcy rates across all models; per model and discovery limit, the table lists
where the bankruptcy rate at the most stabilizing firms the model ran there is above its rate at
the fewest (Claude Sonnet 4.6 at discovery limit 3: 0.00 without, 0.60 with five).

**Ours, per model**: the market-level EAS of each run (``market.eas``, fixed anchors), averaged
over the model's runs with a 95% bootstrap interval, with the seed's other variables beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.markets._shared.sources.agent_bazaar import published_episodes
from marketarena.stats import bootstrap_mean_ci, cluster_bootstrap_spearman

CELL = ["model", "stabilizing", "discovery_limit"]


def run_figures(market: pd.DataFrame, states: pd.DataFrame, setting: pd.DataFrame) -> pd.DataFrame:
    """Per run: model, cell, seed, b, p_fin, sigma and dev as their script computes them."""
    posted = states[states["price"] > 0]
    last_step = states.groupby("episode_id")["step"].max()
    final = posted[posted["step"] == posted["episode_id"].map(last_step)]
    final_price = final[~final["bankrupt"].astype(bool)].groupby("episode_id")["price"].mean()
    per_day = posted.groupby(["episode_id", "step"])["price"].mean()
    sigma = per_day.groupby("episode_id").std(ddof=1).fillna(0.0)
    s = setting.set_index("episode_id")
    out = market[["episode_id", "discovery_limit", "stabilizing", "bankruptcy_rate"]].copy()
    out["model"] = out["episode_id"].map(s["model"])
    out["seed"] = out["episode_id"].map(s["seed"])
    out["p_fin"] = out["episode_id"].map(final_price).fillna(0.0)
    out["sigma"] = out["episode_id"].map(sigma).fillna(0.0)
    out["dev"] = (out["p_fin"] / out["episode_id"].map(s["unit_cost"]) - 1).abs()
    return out.rename(columns={"bankruptcy_rate": "b"})


def their_health(runs: pd.DataFrame) -> pd.DataFrame:
    """Their composite market health per cell (module docstring)."""
    norm = runs.groupby("model").agg(d_max=("dev", "max"), sigma_max=("sigma", "max"))
    cells = (
        runs.groupby(CELL)
        .agg(runs=("b", "size"), b=("b", "mean"), sigma=("sigma", "mean"), dev=("dev", "mean"))
        .reset_index()
    )
    cells = cells.join(norm, on="model")
    with np.errstate(divide="ignore", invalid="ignore"):
        sig = np.where(cells["sigma_max"] > 0, cells["sigma"] / cells["sigma_max"], 0.0)
        dev = np.where(cells["d_max"] > 0, np.minimum(cells["dev"] / cells["d_max"], 1.0), 0.0)
    health = ((1 - cells["b"]) + (1 - np.nan_to_num(sig)) + (1 - dev)) / 3
    cells["their_health"] = np.where(cells["b"] >= 1, 0.0, health)
    return cells


#: market-level columns an imported instance's ``agents`` rows carry (``market_<col>``), so that
#: its board (one row per model) can be built from ``agents`` alone, as every board is
MARKET_COLUMNS = (
    "eas",
    "bankruptcy_rate",
    "survival",
    "mean_price_over_cost",
    "price_volatility",
    "consumer_surplus",
)


def episode_frame(agents: pd.DataFrame) -> pd.DataFrame:
    """One row per run from an imported instance's ``agents``: model, cell, seed, the market
    columns and their cell's health."""
    cols = [
        "episode_id",
        "model",
        "stabilizing",
        "discovery_limit",
        "seed",
        "their_health",
        "origin",
        "run_harness",
        "prompts",
        *[f"market_{c}" for c in MARKET_COLUMNS if f"market_{c}" in agents],
    ]
    runs = agents[[c for c in cols if c in agents]].drop_duplicates("episode_id")
    return runs.rename(columns={f"market_{c}": c for c in MARKET_COLUMNS})


def board(agents: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """The board of an imported instance: one row per model, ranked by our EAS (the mean of its
    runs' market EAS, with a 95% bootstrap interval over runs), with the seed's variables, its
    runs and their composite health (the mean over its cells) beside it, and each ranking."""
    runs = episode_frame(agents)
    rows = []
    for model, g in runs.groupby("model", sort=True):
        row = {"name": model, "runs": len(g)}
        for c, shown in (("origin", "origin"), ("run_harness", "harness"), ("prompts", "prompts")):
            if c in g:
                row[shown] = g[c].iloc[0]
        for c in [c for c in MARKET_COLUMNS if c in g]:
            row[c], row[f"{c}_lo"], row[f"{c}_hi"] = bootstrap_mean_ci(
                g[c].to_numpy(), n_boot, seed
            )
        row["their_health"] = float(
            g.drop_duplicates(["stabilizing", "discovery_limit"])["their_health"].mean()
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    table["rank_theirs"] = table["their_health"].rank(ascending=False, method="min")
    table = table.sort_values("eas", ascending=False, kind="stable").reset_index(drop=True)
    table.insert(0, "rank", range(1, len(table) + 1))
    return table


def spearman(board: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict:
    """The Spearman of our EAS with their health over the board's models (bootstrap interval over
    models, permutation p-value)."""
    valid = board.dropna(subset=["eas", "their_health"])
    if len(valid) < 3:
        return {"rho": np.nan, "lo": np.nan, "hi": np.nan, "p_perm": np.nan, "n": len(valid)}
    r = cluster_bootstrap_spearman(
        valid, "eas", "their_health", cluster=None, n_boot=n_boot, seed=seed, n_perm=n_boot
    )
    return {k: r.get(k) for k in ("rho", "lo", "hi", "p_perm", "n")}


def cell_table(agents: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per model and cell: runs, the seed's variables and our EAS, means over the cell's runs
    with 95% bootstrap intervals, and their health."""
    runs = episode_frame(agents)
    cols = [c for c in MARKET_COLUMNS if c in runs]
    rows = []
    for key, g in runs.groupby(CELL, sort=True):
        row = dict(zip(CELL, key), runs=len(g))
        for c in cols:
            row[c], row[f"{c}_lo"], row[f"{c}_hi"] = bootstrap_mean_ci(
                g[c].to_numpy(), n_boot, seed
            )
        row["their_health"] = float(g["their_health"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


#: a change of a bankruptcy rate smaller than this is no change (means' rounding: 0.8 vs 0.8+1e-16)
RISE = 1e-9


def departures(market: pd.DataFrame) -> pd.DataFrame:
    """Where the authors' runs depart from the seed's "stabilizing firms reduce bankruptcy rates
    across all models": per model and discovery limit with at least two numbers of stabilizing
    firms run, the mean bankruptcy rate (over the seeds) at the fewest and at the most, the runs
    behind each, and ``change`` (most minus fewest); the rows where it rises (by more than
    :data:`RISE`: two means of equal rates differ by float rounding), the largest rise first."""
    columns = [
        "model",
        "discovery_limit",
        "fewest",
        "bankruptcy_fewest",
        "runs_fewest",
        "most",
        "bankruptcy_most",
        "runs_most",
        "change",
    ]
    rows = []
    cells = market.groupby(CELL, sort=True)["bankruptcy_rate"].agg(["mean", "size"])
    for (model, dl), g in cells.groupby(level=["model", "discovery_limit"], sort=True):
        stabs = g.index.get_level_values("stabilizing")
        if len(stabs) < 2:
            continue
        lo, hi = g.loc[(model, stabs.min(), dl)], g.loc[(model, stabs.max(), dl)]
        rows.append(
            [model, dl, stabs.min(), lo["mean"], int(lo["size"]), stabs.max(), hi["mean"]]
            + [int(hi["size"]), hi["mean"] - lo["mean"]]
        )
    out = pd.DataFrame(rows, columns=columns)
    out = out[out["change"] > RISE].sort_values(["change", "model"], ascending=[False, True])
    return out.reset_index(drop=True)


#: whose prompts a firm of a run saw: the authors' engine (a published run) or their firm's code
#: run here from the user's copy (a joint instance's new run, ``authors_firm.py``)
PROMPTS = {
    "published": ("their engine", "Agent Bazaar's (their run)"),
    "new": ("agent_bazaar", "Agent Bazaar's firm code (your copy)"),
}


def with_origin(agents: pd.DataFrame, theirs: frozenset[str] | None) -> pd.DataFrame:
    """Each seat's ``origin`` (``published``: an episode of ``theirs``, the imported runs, None:
    every one; ``new``: a joint instance's run), the ``run_harness`` its model played under and
    whose ``prompts`` it saw (:data:`PROMPTS`)."""
    new = (
        np.zeros(len(agents), bool)
        if theirs is None
        else ~agents["episode_id"].isin(theirs).to_numpy()
    )
    origin = np.where(new, "new", "published")
    return agents.assign(
        origin=origin,
        run_harness=[PROMPTS[o][0] for o in origin],
        prompts=[PROMPTS[o][1] for o in origin],
    )


def frames(
    tables: dict[str, pd.DataFrame], out: dict[str, pd.DataFrame]
) -> dict[str, pd.DataFrame]:
    """The crash metrics' frames (``out``) of an imported instance, completed: the market frame
    and the agents rows carry the run's model and seed, the agents rows the market columns and
    their cell's health (``market_<col>``, ``their_health``), and the frames ``their_runs`` (per
    run: b, p_fin, sigma, dev as their script computes them), ``their_cells`` (their health per
    cell), ``replay`` (per firm-day), ``replay_runs`` and ``replay_rules`` (``replay.py``) are
    added."""
    from marketarena.markets.crash.sources import replay

    setting = tables["setting"]
    theirs = published_episodes(setting, "status")  # a joint instance's new runs have none
    market = out["market"].merge(
        setting[["episode_id", "model", "seed"]], on="episode_id", how="left"
    )
    runs = run_figures(market, tables["states"], setting)
    cells = their_health(runs)
    per_run = market[["episode_id", "model", "seed", *[c for c in MARKET_COLUMNS if c in market]]]
    per_run = per_run.rename(columns={c: f"market_{c}" for c in MARKET_COLUMNS})
    per_run = per_run.merge(runs[["episode_id", *CELL]], on=["episode_id", "model"])
    per_run = per_run.merge(cells[[*CELL, "their_health"]], on=CELL)
    added = [
        c for c in per_run.columns if c not in ("episode_id", "stabilizing", "discovery_limit")
    ]
    agents = with_origin(
        out["agents"]
        .drop(columns=added, errors="ignore")
        .merge(
            per_run.drop(columns=["stabilizing", "discovery_limit"]), on="episode_id", how="left"
        ),
        theirs,
    )
    # the replay is of their engine's logged runs only
    days, per_episode, rules_table = replay.replay(
        *(
            t if theirs is None else t[t["episode_id"].isin(theirs)]
            for t in (tables["states"], tables["orders"], tables["consumers"], setting)
        )
    )
    return {
        **out,
        "market": market,
        "agents": agents,
        "their_runs": runs,
        "their_cells": cells,
        "replay": days,
        "replay_runs": per_episode,
        "replay_rules": rules_table,
    }
