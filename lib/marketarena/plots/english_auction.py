"""english_auction figures and tables (seed 004: Figures 2-5, Table 1, the budget / profit plot).

- ``fig2_trueskill.png``: TrueSkill (multi-pass, by profit) of every bidder in each (budget x item
  order) cell, mu with the spread over passes (the seed's Figure 2);
- ``fig3_errors.png``: per bidder, its failed-bid rate, self and other belief-error rates and its
  corrected failure rate CFR, means over auctions (Figure 3);
- ``fig4_priorities.png``: per bidder, the mean priority of each item (columns: items in order)
  in the plan in force before each item is bid (rows), for the ascending and the descending orders
  (Figure 4);
- ``fig5_profit_bids.png``: per bidder, its mean profit per item (y) by the item's start price (x),
  the circle's size its mean number of bids on it, ascending vs descending orders (Figure 5);
- ``fig_budget_profit.png``: remaining budget and total profit after each item, per bidder, means
  over auctions, per budget;
- tables ``<instance>_table1.{md,tex}`` (Spearman of priority with engagement and winning, initial
  and current plan, with 95% cluster bootstrap intervals) and ``<instance>_board.{md,tex}``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.style import CONFIDENCE, agent_palette, apply_theme, mean_ci, no_data, save
from marketarena.plots.tables import write_frame


def trueskill_by_cell(agents: pd.DataFrame, path: Path) -> Path:
    from marketarena.ratings import TrueSkillParams, multipass, player_games

    apply_theme()
    cells = sorted(agents.groupby(["budget", "order"]).groups)
    fig, axes = plt.subplots(1, max(len(cells), 1), figsize=(3.2 * max(len(cells), 1), 3.4),
                             sharey=True, squeeze=False)
    palette = agent_palette(agents["name"])
    for ax, (budget, order) in zip(axes[0], cells):
        sub = agents[(agents["budget"] == budget) & (agents["order"] == order)]
        games = player_games(sub, "profit")
        if len(games) < 1:
            no_data(ax)
            continue
        board = multipass(games, TrueSkillParams(), passes=50, seed=0)
        ax.bar(board["player"], board["mu"], color=[palette[p] for p in board["player"]],
               yerr=[board["mu"] - board["mu_lo"], board["mu_hi"] - board["mu"]], capsize=3)
        ax.set_title(f"${budget:,.0f}, {order} ({len(games)} auctions)", fontsize=9)
        ax.tick_params(axis="x", rotation=60, labelsize=7)
    axes[0, 0].set_ylabel("TrueSkill mu (median over 50 passes)")
    fig.suptitle("Figure 2: TrueSkill by bidder per budget and item order", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def errors(agents: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    cols = [("failed_bid_rate", "failed bids"), ("self_error_rate", "self belief errors"),
            ("other_error_rate", "other belief errors"), ("cfr", "CFR")]
    means = agents.groupby("name")[[c for c, _ in cols]].mean()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x = np.arange(len(means))
    for k, (col, label) in enumerate(cols):
        ax.bar(x + (k - 1.5) * 0.2, 100 * means[col].fillna(0), width=0.2, label=label)
    ax.set_xticks(x, means.index, rotation=30, fontsize=8)
    ax.set_ylabel("% of answers")
    ax.legend(fontsize=8)
    ax.set_title(f"Figure 3: error rates, mean over {agents['episode_id'].nunique()} auctions",
                 fontsize=10)
    return save(fig, path)


def priorities(eng: pd.DataFrame, plans_per_step: pd.DataFrame, path: Path) -> Path:
    """``plans_per_step``: the metrics' ``plans`` frame (step, position, priority, name, order)."""
    apply_theme()
    names = sorted(eng["name"].unique())
    orders = [o for o in ("ascending", "descending") if o in set(eng["order"])]
    fig, axes = plt.subplots(max(len(orders), 1), max(len(names), 1),
                             figsize=(2.8 * max(len(names), 1), 3.0 * max(len(orders), 1)),
                             squeeze=False, layout="constrained")
    if not orders:
        no_data(axes[0, 0], "no ascending or descending auctions")
        return save(fig, path)
    im = None
    for r, order in enumerate(orders):
        for c, name in enumerate(names):
            ax = axes[r, c]
            sub = plans_per_step[(plans_per_step["order"] == order) & (plans_per_step["name"] == name)]
            grid = sub.pivot_table(index="step", columns="position", values="priority", aggfunc="mean")
            if grid.empty:
                no_data(ax)
                continue
            im = ax.imshow(grid.to_numpy(dtype=float), vmin=1, vmax=3, cmap="viridis", aspect="auto")
            ax.set_title(f"{name}, {order}", fontsize=8)
            ax.set_xlabel("item (order presented)", fontsize=7)
            ax.set_ylabel("before item", fontsize=7)
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.6, label="mean priority")
    fig.suptitle("Figure 4: priorities in the plan in force before each item", fontsize=10)
    return save(fig, path)


def profit_bids(eng: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    orders = [o for o in ("ascending", "descending") if o in set(eng["order"])]
    fig, axes = plt.subplots(1, max(len(orders), 1), figsize=(5 * max(len(orders), 1), 3.6),
                             squeeze=False)
    palette = agent_palette(eng["name"])
    if not orders:
        no_data(axes[0, 0], "no ascending or descending auctions")
        return save(fig, path)
    for ax, order in zip(axes[0], orders):
        sub = eng[eng["order"] == order]
        g = sub.groupby(["name", "start_price"]).agg(profit=("profit", "mean"),
                                                     bids=("n_bids", "mean")).reset_index()
        for name, h in g.groupby("name"):
            ax.scatter(h["start_price"], h["profit"], s=30 + 40 * h["bids"], alpha=0.55,
                       color=palette[name], label=name)
        ax.set_title(f"{order} start prices", fontsize=9)
        ax.set_xlabel("start price ($)")
    axes[0, 0].set_ylabel("mean profit per item ($)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Figure 5: profit per item by start price (circle size: mean number of bids)",
                 fontsize=10)
    return save(fig, path)


def budget_profit(states: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    budgets = sorted(states["budget"].unique())
    fig, axes = plt.subplots(1, max(len(budgets), 1), figsize=(4.6 * max(len(budgets), 1), 3.4),
                             squeeze=False)
    palette = agent_palette(states["name"])
    for ax, budget in zip(axes[0], budgets):
        sub = states[states["budget"] == budget]
        twin = ax.twinx()
        for name, g in sub.groupby("name"):
            b = mean_ci(g, ["step"], "budget_left")
            p = mean_ci(g, ["step"], "profit")
            ax.plot(b["step"] + 1, b["mean"], color=palette[name], label=name)
            twin.plot(p["step"] + 1, p["mean"], color=palette[name], ls="--")
        ax.set_title(f"budget ${budget:,.0f}", fontsize=9)
        ax.set_xlabel("after item")
        ax.set_ylabel("remaining budget (solid)")
        twin.set_ylabel("total profit (dashed)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Budget and profit over the auction, means over auctions ({CONFIDENCE:.0%} "
                 "intervals omitted)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def tables(spearman: pd.DataFrame, board: pd.DataFrame, tables_dir: Path, instance: str) -> list[Path]:
    # a constant plan (the rule bidder's all-2s) has no correlation: its row shows NaN and "-"
    wide = spearman.pivot_table(index="name", columns=["plan", "with"], values="rho", dropna=False)
    wide.columns = [f"rho_{p}_{w}" for p, w in wide.columns]
    intervals = spearman.assign(ci=[f"[{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else "-"
                                    for lo, hi in zip(spearman["lo"], spearman["hi"])])
    ci = intervals.pivot_table(index="name", columns=["plan", "with"], values="ci", aggfunc="first",
                             dropna=False)
    ci.columns = [f"ci_{p}_{w}" for p, w in ci.columns]
    table = wide.join(ci).reset_index()
    caption = ("Table 1: Spearman correlation of an item's priority (initial plan, and the plan in "
               "force before the item) with the bidder's engagement (bids) and winning, pooled over "
               "auctions, 95% cluster bootstrap intervals.")
    out = list(write_frame(table, tables_dir / f"{instance}_table1", caption))
    cols = ["rank", "name", "mu_multipass", "sigma_multipass", "mu_lo", "mu_hi", "episodes",
            "profit_mean", "items_won", "failed_bid_rate", "cfr", "mean_bip"]
    shown = board[[c for c in cols if c in board.columns]]
    out += write_frame(shown, tables_dir / f"{instance}_board")
    return out


def draw_all(frames: dict[str, pd.DataFrame], board: pd.DataFrame, figures_dir: Path,
             tables_dir: Path, instance: str) -> list[Path]:
    eng, plans = frames["engagement"], frames["plans"]
    return [trueskill_by_cell(frames["agents"], figures_dir / "fig2_trueskill.png"),
            errors(frames["agents"], figures_dir / "fig3_errors.png"),
            priorities(eng, plans, figures_dir / "fig4_priorities.png"),
            profit_bids(eng, figures_dir / "fig5_profit_bids.png"),
            budget_profit(frames["states"], figures_dir / "fig_budget_profit.png"),
            *tables(frames["spearman"], board, tables_dir, instance)]
