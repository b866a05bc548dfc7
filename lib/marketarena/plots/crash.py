"""crash figures and tables (seed 001: Figure 3, appendix C, Figure 8; the EAS table).

- ``fig3_bankruptcy_grid.png``: the mean bankruptcy rate of each (stabilizing firms x discovery
  limit) cell of the instance, over its seeds, as a heatmap (the seed's Figure 3 as a grid);
- ``fig_survival.png``: the share of firms still active at the start of each day, one line per
  cell (mean over the cell's episodes; a market that ended early counts 0 after its end);
- ``fig8_days.png``: per day, the mean price over unit cost, the active firms and the units
  filled, one column per number of stabilizing firms (mean over the episodes with that number,
  95% band; the seed's Figure 8);
- ``figC_price_volume_volatility.png``: price over unit cost, volume and price volatility against
  the number of stabilizing firms, one line per discovery limit (appendix C), 95% intervals over
  seeds;
- tables ``<instance>_grid.{md,tex}`` (every metric per cell, mean over seeds) and
  ``<instance>_eas.{md,tex}`` (per firm kind: TrueSkill, profit, EAS on fixed anchors with its
  95% interval over episodes, and the seed's relative EAS, labelled relative).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.style import CONFIDENCE, apply_theme, mean_ci, mean_errorbar, no_data, save
from marketarena.plots.tables import write_frame

BAND = f"{CONFIDENCE:.0%}"


def bankruptcy_grid(market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    grid = market.pivot_table(index="stabilizing", columns="discovery_limit",
                              values="bankruptcy_rate", aggfunc="mean").sort_index(ascending=False)
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * max(grid.shape[1], 1), 1.2 + 0.7 * max(grid.shape[0], 1)))
    if grid.empty:
        no_data(ax)
    else:
        im = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Reds", aspect="auto")
        for (r, c), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            ax.text(c, r, f"{v:.2f}", ha="center", va="center",
                    color="white" if v > 0.6 else "black", fontsize=9)
        ax.set_xticks(range(grid.shape[1]), grid.columns)
        ax.set_yticks(range(grid.shape[0]), grid.index)
        ax.set_xlabel("consumer discovery limit")
        ax.set_ylabel("stabilizing firms")
        fig.colorbar(im, ax=ax, label="bankruptcy rate")
    n = market.groupby(["stabilizing", "discovery_limit"]).size()
    ax.set_title(f"Bankruptcy rate (mean over {n.min()}-{n.max()} seeds per cell)", fontsize=10)
    return save(fig, path)


def _cell_label(d, s) -> str:
    return f"dlc {d}, {s} stabilizing"


def survival(survival: pd.DataFrame, market: pd.DataFrame, days: int, path: Path) -> Path:
    apply_theme()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    if survival.empty:
        no_data(ax)
        return save(fig, path)
    cells = market[["episode_id", "discovery_limit", "stabilizing"]]
    for (d, s), eps in cells.groupby(["discovery_limit", "stabilizing"]):
        curves = []
        for ep in eps["episode_id"]:
            one = survival[survival["episode_id"] == ep].set_index("step")["share_active"]
            curves.append(one.reindex(range(days)).fillna(0.0).to_numpy())
        ax.plot(np.arange(1, days + 1), np.mean(curves, axis=0), lw=1.4, label=_cell_label(d, s))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("day")
    ax.set_ylabel("share of firms active")
    ax.set_title("Survival of firms (mean over each cell's seeds)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, path)


def per_day(days: pd.DataFrame, path: Path) -> Path:
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
            m = mean_ci(sub, ["step"], col)
            ax.plot(m["step"] + 1, m["mean"], lw=1.2, color="C0")
            ax.fill_between(m["step"] + 1, m["lo"], m["hi"], color="C0", alpha=0.2, lw=0)
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            if r == 0:
                ax.set_title(f"{s} stabilizing ({sub['episode_id'].nunique()} episodes)", fontsize=9)
        axes[-1, c].set_xlabel("day")
    fig.suptitle(f"Per day: mean over episodes with {BAND} band (each column pools its discovery "
                 "limits)", fontsize=10)
    return save(fig, path)


def appendix_c(market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    panels = [("mean_price_over_cost", "price / unit cost"), ("volume", "units filled per day"),
              ("price_volatility", "price volatility (SD / unit cost)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.3))
    for ax, (col, label) in zip(axes, panels):
        for d, sub in market.groupby("discovery_limit"):
            mean_errorbar(ax, sub, "stabilizing", col, f"dlc {d}")
        ax.set_xlabel("stabilizing firms")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Appendix C: means over seeds with {BAND} intervals", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def tables(market: pd.DataFrame, board: pd.DataFrame, tables_dir: Path, instance: str) -> list[Path]:
    cols = ["bankruptcy_rate", "days_to_first_bankruptcy", "mean_price_over_cost",
            "price_volatility", "volume", "fill_rate", "consumer_surplus", "eas"]
    grid = market.groupby(["discovery_limit", "stabilizing"])[cols].mean().reset_index()
    grid.insert(2, "episodes", market.groupby(["discovery_limit", "stabilizing"]).size().to_numpy())
    caption = "Per (discovery limit, stabilizing firms) cell: means over its seeds."
    out = list(write_frame(grid, tables_dir / f"{instance}_grid", caption))
    eas = board[["rank", "name", "mu", "sigma", "episodes", "seats", "profit_mean", "eas_mean",
                 "eas_lo", "eas_hi", "eas_relative"]]
    caption = ("Per firm kind: TrueSkill (mean profit per seat ranks a kind in each episode), mean "
               "profit, EAS on fixed anchors (95% bootstrap interval over episodes) and the seed's "
               "relative EAS (divided by the best kind's; changes when kinds are added).")
    out += write_frame(eas, tables_dir / f"{instance}_eas", caption)
    return out


def draw_all(frames: dict[str, pd.DataFrame], board: pd.DataFrame, mp, figures_dir: Path,
             tables_dir: Path, instance: str) -> list[Path]:
    market = frames["market"]
    return [bankruptcy_grid(market, figures_dir / "fig3_bankruptcy_grid.png"),
            survival(frames["survival"], market, mp.days, figures_dir / "fig_survival.png"),
            per_day(frames["days"], figures_dir / "fig8_days.png"),
            appendix_c(market, figures_dir / "figC_price_volume_volatility.png"),
            *tables(market, board, tables_dir, instance)]
