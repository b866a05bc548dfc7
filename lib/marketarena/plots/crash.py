"""crash figures and tables (seed 001: Figure 3, appendix C, Figure 8, the spillover of 5.3; the
EAS table). Every interval is a 95% percentile bootstrap over the cell's episodes (seeds),
clipped to what the quantity can be (shares to [0, 1], prices and volumes to [0, inf)); every
title says what was run (seeds per cell, days, who competes).

- ``fig3_bankruptcy_grid.png``: the bankruptcy rate of all firms per (stabilizing firms x discovery
  limit) cell, mean over its seeds with the 95% interval in each cell (the seed's Figure 3 as a grid);
- ``fig_spillover.png``: the spillover (seed 5.3): against the number of stabilizing firms, one line
  per discovery limit, (a) the competitors' bankruptcy rate, (b) the competitors' survival (share
  of the T days a competitor seat was in the market), (c) the stabilizers' own bankruptcy rate;
- ``fig_survival.png``: the share of firms still active on each day, one panel per discovery limit,
  one line per number of stabilizing firms (mean over the cell's episodes; a market that ended
  early counts 0 after its end); the legend sits outside the panels;
- ``fig8_days.png``: per day, the mean price over unit cost, the active firms and the units filled,
  one column per number of stabilizing firms (mean over the episodes with that number, 95% band;
  the seed's Figure 8);
- ``figC_price_volume_volatility.png``: price over unit cost, volume and price volatility against
  the number of stabilizing firms, one line per discovery limit (appendix C);
- tables ``<instance>_grid`` (every market metric per cell, mean over seeds),
  ``<instance>_spillover`` (per cell: competitor seats and their mix of kinds, the competitors' and
  the stabilizers' bankruptcy rates and the competitors' survival, with 95% intervals),
  ``<instance>_spillover_kinds`` (each competitor kind's survival by number of stabilizers) and
  ``<instance>_eas`` (per firm kind: TrueSkill, profit, its EAS components, the EAS on fixed
  anchors with a 95% interval over episodes, and the seed's relative EAS, labelled relative).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.style import (
    CONFIDENCE,
    apply_theme,
    dodge,
    mean_ci,
    mean_errorbar,
    no_data,
    save,
)
from marketarena.plots.tables import write_frame

BAND = f"{CONFIDENCE:.0%}"
SHARE = (0.0, 1.0)
POSITIVE = (0.0, np.inf)


def what_ran(market: pd.DataFrame, mp) -> str:
    """One line for a title: seeds per cell, days, stabilizer and competitors."""
    n = market.groupby(["discovery_limit", "stabilizing"]).size()
    seeds = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    who = ", ".join(mp.competitor_names())
    stab = f"; stabilizer: {mp.stabilizer}" if mp.stabilizer else ""
    return f"{seeds} seeds per cell, {mp.days} days; competitors: {who}{stab}"


def bankruptcy_grid(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    m = mean_ci(market, ["stabilizing", "discovery_limit"], "bankruptcy_rate", method="bootstrap",
                bounds=SHARE)
    grid = m.pivot(index="stabilizing", columns="discovery_limit", values="mean").sort_index(
        ascending=False)
    fig, ax = plt.subplots(figsize=(1.8 + 1.4 * max(grid.shape[1], 1), 1.4 + 0.8 * max(grid.shape[0], 1)))
    if grid.empty:
        no_data(ax)
        return save(fig, path)
    lo = m.pivot(index="stabilizing", columns="discovery_limit", values="lo").reindex_like(grid)
    hi = m.pivot(index="stabilizing", columns="discovery_limit", values="hi").reindex_like(grid)
    im = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Reds", aspect="auto")
    ax.grid(False)
    for (r, c), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        interval = "" if np.isnan(lo.iat[r, c]) else f"\n[{lo.iat[r, c]:.2f}, {hi.iat[r, c]:.2f}]"
        ax.text(c, r, f"{v:.2f}{interval}", ha="center", va="center",
                color="white" if v > 0.6 else "black", fontsize=8)
    ax.set_xticks(range(grid.shape[1]), grid.columns)
    ax.set_yticks(range(grid.shape[0]), grid.index)
    ax.set_xlabel("consumer discovery limit")
    ax.set_ylabel("stabilizing firms")
    fig.colorbar(im, ax=ax, label="bankruptcy rate (all firms)")
    ax.set_title(f"Bankruptcy rate, mean [{BAND} bootstrap interval]\n{what_ran(market, mp)}",
                 fontsize=9)
    return save(fig, path)


def spillover(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    panels = [("competitor_bankruptcy_rate", "(a) competitors' bankruptcy rate"),
              ("competitor_survival", "(b) competitors' survival\n(share of days in the market)"),
              ("stabilizer_bankruptcy_rate", "(c) stabilizers' bankruptcy rate")]
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 3.6), sharex=True)
    for ax, (col, label) in zip(axes, panels):
        data = market.dropna(subset=[col])
        if data.empty:
            no_data(ax)
            continue
        groups = data.groupby("discovery_limit")
        for i, (d, sub) in enumerate(groups):
            mean_errorbar(ax, sub, "stabilizing", col, f"discovery limit {d}",
                          offset=dodge(i, groups.ngroups, 0.4), method="bootstrap", bounds=SHARE)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xticks(sorted(market["stabilizing"].unique()))
        ax.set_xlabel("stabilizing firms")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    seating = ("stabilizers replace competitor seats" if mp.stabilizer_seats == "replace" else
               f"stabilizers added to {mp.firms} competitor seats")
    fig.suptitle(f"Spillover: do competitors survive beside stabilizers? ({seating}; means, "
                 f"{BAND} bootstrap intervals)\n{what_ran(market, mp)}", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def survival(survival: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    dls = sorted(market["discovery_limit"].unique())
    fig, axes = plt.subplots(1, max(len(dls), 1), figsize=(3.6 * max(len(dls), 1), 3.4),
                             sharey=True, squeeze=False)
    if survival.empty:
        no_data(axes[0, 0])
        return save(fig, path)
    stabs = sorted(market["stabilizing"].unique())
    styles = ["-", "--", "-.", ":"]
    for ax, d in zip(axes[0], dls):
        for k, s in enumerate(stabs):
            eps = market[(market["discovery_limit"] == d) & (market["stabilizing"] == s)]["episode_id"]
            curves = [survival[survival["episode_id"] == ep].set_index("step")["share_active"]
                      .reindex(range(mp.days)).fillna(0.0).to_numpy() for ep in eps]
            if curves:
                ax.plot(np.arange(1, mp.days + 1), np.mean(curves, axis=0), lw=1.5,
                        color=f"C{k}", ls=styles[k % len(styles)],
                        label=f"{s} stabilizing ({len(curves)} episodes)")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("day")
        ax.set_title(f"discovery limit {d}", fontsize=9)
    axes[0, 0].set_ylabel("share of firms active")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.suptitle(f"Survival of firms (mean over each cell's episodes)\n{what_ran(market, mp)}",
                 fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def per_day(days: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    stab = sorted(days["stabilizing"].unique()) if len(days) else []
    rows = [("price_over_cost", "mean price / unit cost"), ("active", "active firms"),
            ("filled", "units filled")]
    fig, axes = plt.subplots(len(rows), max(len(stab), 1), figsize=(3.2 * max(len(stab), 1), 6.5),
                             sharex=True, squeeze=False)
    if not stab:
        no_data(axes[0, 0])
        return save(fig, path)
    for c, s in enumerate(stab):
        sub = days[days["stabilizing"] == s]
        for r, (col, label) in enumerate(rows):
            ax = axes[r, c]
            m = mean_ci(sub, ["step"], col, method="bootstrap", bounds=POSITIVE, n_boot=1000)
            ax.plot(m["step"] + 1, m["mean"], lw=1.2, color="C0")
            ax.fill_between(m["step"] + 1, m["lo"], m["hi"], color="C0", alpha=0.2, lw=0)
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            if r == 0:
                ax.set_title(f"{s} stabilizing ({sub['episode_id'].nunique()} episodes)", fontsize=9)
        axes[-1, c].set_xlabel("day")
    fig.suptitle(f"Per day: mean over episodes with {BAND} bootstrap band (each column pools its "
                 f"discovery limits; days after a market's end are left out)\n"
                 f"{what_ran(market, mp)}", fontsize=9)
    return save(fig, path)


def appendix_c(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    panels = [("mean_price_over_cost", "price / unit cost"), ("volume", "units filled per day"),
              ("price_volatility", "price volatility (SD / unit cost)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.5))
    for ax, (col, label) in zip(axes, panels):
        groups = market.groupby("discovery_limit")
        for i, (d, sub) in enumerate(groups):
            mean_errorbar(ax, sub, "stabilizing", col, f"discovery limit {d}",
                          offset=dodge(i, groups.ngroups, 0.4), method="bootstrap", bounds=POSITIVE)
        ax.set_xticks(sorted(market["stabilizing"].unique()))
        ax.set_xlabel("stabilizing firms")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Appendix C: means over seeds with {BAND} bootstrap intervals\n"
                 f"{what_ran(market, mp)}", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def _with_ci(frame: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: each column's mean with its bootstrap interval, as ``m [lo, hi]``."""
    out = frame[keys].drop_duplicates().sort_values(keys)
    for col in cols:
        m = mean_ci(frame.dropna(subset=[col]), keys, col, method="bootstrap", bounds=SHARE)
        m[col] = [f"{a:.2f} [{b:.2f}, {c:.2f}]" if not np.isnan(b) else f"{a:.2f}"
                  for a, b, c in zip(m["mean"], m["lo"], m["hi"])]
        out = out.merge(m[[*keys, col]], on=keys, how="left")
    return out.fillna("–")


def tables(market: pd.DataFrame, agents: pd.DataFrame, board: pd.DataFrame, mp, tables_dir: Path,
           instance: str) -> list[Path]:
    keys = ["discovery_limit", "stabilizing"]
    cols = ["bankruptcy_rate", "days_to_first_bankruptcy", "survival", "mean_price_over_cost",
            "price_volatility", "volume", "fill_rate", "consumer_surplus_share",
            "profit_per_firm_day", "competitor_bankruptcy_rate", "stabilizer_bankruptcy_rate",
            "stability", "welfare", "profitability", "eas"]
    grid = market.groupby(keys)[cols].mean().reset_index()
    grid.insert(2, "episodes", market.groupby(keys).size().to_numpy())
    caption = (f"Per (discovery limit, stabilizing firms) cell: means over its seeds "
               f"({what_ran(market, mp)}). EAS columns are the market's (every variable "
               f"market-level).")
    out = list(write_frame(grid, tables_dir / f"{instance}_grid", caption))

    spill = _with_ci(market, keys, ["competitor_bankruptcy_rate", "competitor_survival",
                                    "stabilizer_bankruptcy_rate"])
    comp = agents[agents["role"] == "competitor"]
    mix = comp.groupby(keys)["name"].agg(lambda n: ", ".join(
        f"{k} {v / len(n):.0%}" for k, v in n.value_counts().sort_index().items()))
    seats = comp.groupby(keys).size() / market.groupby(keys).size()
    spill = spill.merge(seats.rename("competitor_seats").reset_index(), on=keys, how="left")
    spill = spill.merge(mix.rename("competitor_mix").reset_index(), on=keys, how="left")
    caption = (f"The spillover: per cell, competitor seats per episode and their mix of kinds "
               f"(over the cell's seeds), the competitors' bankruptcy rate and survival (share of "
               f"the days in the market), the stabilizers' bankruptcy rate; means with {BAND} "
               f"bootstrap intervals over seeds ({what_ran(market, mp)}).")
    out += write_frame(spill, tables_dir / f"{instance}_spillover", caption)

    kinds = comp.groupby(["name", "stabilizing"]).agg(
        seats=("agent_id", "size"), survived=("survived", "mean"),
        active_share=("active_share", "mean")).reset_index()
    caption = ("Each competitor kind by number of stabilizing firms (all discovery limits): its "
               "seats, the share of them that survived, and their mean share of days in the market.")
    out += write_frame(kinds, tables_dir / f"{instance}_spillover_kinds", caption)

    components = [c for c in ("stability", "welfare", "profitability") if c in board.columns]
    eas = board[["rank", "name", "mu", "sigma", "episodes", "seats", "profit_mean", *components,
                 "eas_mean", "eas_lo", "eas_hi", "eas_relative"]]
    caption = ("Per firm kind: TrueSkill (mean profit per seat ranks a kind in each episode), mean "
               "profit, its EAS components (b and pi from its own seats; sigma, survival and "
               "consumer surplus market-level), the EAS on fixed anchors (95% bootstrap interval "
               "over episodes) and the seed's relative EAS (divided by the best kind's; changes "
               "when kinds are added).")
    out += write_frame(eas, tables_dir / f"{instance}_eas", caption)
    return out


def draw_all(frames: dict[str, pd.DataFrame], board: pd.DataFrame, mp, figures_dir: Path,
             tables_dir: Path, instance: str) -> list[Path]:
    market = frames["market"]
    return [bankruptcy_grid(market, mp, figures_dir / "fig3_bankruptcy_grid.png"),
            spillover(market, mp, figures_dir / "fig_spillover.png"),
            survival(frames["survival"], market, mp, figures_dir / "fig_survival.png"),
            per_day(frames["days"], market, mp, figures_dir / "fig8_days.png"),
            appendix_c(market, mp, figures_dir / "figC_price_volume_volatility.png"),
            *tables(market, frames["agents"], board, mp, tables_dir, instance)]
