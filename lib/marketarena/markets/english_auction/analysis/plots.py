"""english_auction figures and tables (seed 004: Figures 2-8, Table 1, the budget / profit plot).

Intervals: TrueSkill mu is the median over the instance's ``rating_passes`` shuffled passes, its
bar the 95% bootstrap interval over auctions of that same median; other intervals are 95% over
auctions.

- ``fig2_trueskill.png``: TrueSkill by profit of every bidder in each budget x item order cell
  (the seed's Figure 2);
- ``fig3_errors.png``: (a) the seed's Figure 3 per bidder: failed-bid rate (of bid answers), self
  and other belief-error rates (of checked fields, the authors' comparisons) and the corrected
  failure rate CFR, a decision never given validly counted as failed at every answer it had left
  (``metrics._unanswered``); (b) failed bids by kind (under the minimum, over the budget,
  unanswered) and format failures (of all answers). Pooled over auctions: errors / checks summed;
- ``fig4_priorities_<budget>.png`` (one per budget; the seed's Figure 4 is $20,000, Figure 9
  $40,000): per bidder with a plan, the mean priority of each item (columns: items in the order
  presented) in the plan in force before each item is bid (rows), ascending and descending orders;
- ``fig5_profit_bids.png``: per budget (rows) and order (columns), per bidder its mean profit per
  item *won* (y) by the item's start price (x), the circle's area its mean number of bids on items
  of that price (the seed's Figure 5 and appendix B.2); a price it never won has no circle;
- ``fig6_bip.png``: the distribution of bid increment percentages (BIP, % of the start price over
  the highest bid before the round) per bidder over the seed's brackets (Figure 6);
- ``fig7_ablation.png``: TrueSkill by profit per budget, each bar coloured by the bidder's plan
  mode (adaptive / static / none, read from the logs): in an instance where bidders of one design
  with the three modules meet (``english_auction_ablation``), the seed's Figure 7;
- ``fig8_objectives.png``: the seed's Figure 8 (its objectives study, section 4.3): per budget, the
  density histogram and kernel density estimate of the winning bids of the bidders pursuing
  profit (``maximize_profit``) and of those pursuing items (``maximize_items``), from the
  roster's objectives (the ``bdi`` harness's ``desire``; the scripted planner's ``desire``; the
  collector's items); bidders stating none are left out. Its study is the
  ``english_auction_objectives`` instance: 2 + 2 bidders, 16 cheap and 4 expensive items. Offline
  its bidders are scripted planners: the profit bidders rank the items by their impression of their
  value (priciest first), the item bidders in a seeded random order (``rank: shuffle``), so no
  niche is scripted into the item bidders; what separates the groups comes from the profit
  bidders' ranking and the budgets (``rank: cheapest`` would build the niche in);
- ``fig_profit_by_bidders.png``: per budget, the winner's mean profit on an item by the number of
  bidders that placed a valid bid on it, per bidder (not a figure of the seed's);
- ``fig_budget_profit.png``: remaining budget and total profit after each item, per bidder, means
  over auctions, per budget;
- tables ``<instance>_table1.{md,tex}`` (Spearman of priority with engagement and winning, initial
  then current plan as in the seed, with 95% cluster bootstrap intervals; bidders without a plan
  are named below it, as the seed does for LLaMA-2) and ``<instance>_board.{md,tex}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from marketarena.plots.style import (
    CONFIDENCE,
    agent_palette,
    apply_theme,
    error_extents,
    mean_ci,
    no_data,
    save,
)
from marketarena.plots.tables import write_frame
from marketarena.stats import bootstrap_mean_ci, gaussian_kde_1d

ORDERS = ("ascending", "descending")
MODE_COLOURS = {"adaptive": "#1b7837", "static": "#e08214", "none": "#762a83"}

#: the ratings of a subset of the agents table's auctions: one row per player with its TrueSkill
#: ``mu`` and the interval ``mu_lo``-``mu_hi`` (the analysis's ``rate_players``, handed in by it)
Rate = Callable[[pd.DataFrame], pd.DataFrame]


def _rating_bars(ax, agents: pd.DataFrame, rate: Rate, colour) -> None:
    board = rate(agents).sort_values("player", kind="stable")
    x = np.arange(len(board))
    ax.bar(
        x,
        board["mu"],
        color=[colour(p) for p in board["player"]],
        yerr=error_extents(board["mu"], board["mu_lo"], board["mu_hi"]),
        capsize=3,
    )
    ax.set_xticks(x, board["player"], rotation=45, ha="right", fontsize=7)


def trueskill_by_cell(agents: pd.DataFrame, path: Path, rate: Rate, passes: int) -> Path:
    apply_theme()
    budgets, orders = sorted(agents["budget"].unique()), sorted(agents["order"].unique())
    fig, axes = plt.subplots(
        len(budgets),
        len(orders),
        figsize=(3.4 * len(orders), 3.0 * len(budgets)),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    palette = agent_palette(agents["name"])
    for r, budget in enumerate(budgets):
        for c, order in enumerate(orders):
            ax = axes[r, c]
            sub = agents[(agents["budget"] == budget) & (agents["order"] == order)]
            if sub["episode_id"].nunique() < 1:
                no_data(ax)
                continue
            _rating_bars(ax, sub, rate, palette.__getitem__)
            ax.set_title(
                f"${budget:,.0f}, {order} ({sub['episode_id'].nunique()} auctions)", fontsize=9
            )
            ax.label_outer()
        axes[r, 0].set_ylabel("TrueSkill mu")
    fig.suptitle(
        f"Figure 2: TrueSkill by profit per budget and item order (median of {passes} "
        f"passes, {CONFIDENCE:.0%} bootstrap interval over auctions)",
        fontsize=10,
    )
    return save(fig, path)


def _pooled(agents: pd.DataFrame) -> pd.DataFrame:
    """Figure 3's rates pooled over auctions, as the board counts them: a decision never given
    validly is failed at every answer it had left (``metrics._unanswered``)."""
    s = agents.groupby("name")[
        [
            "bid_failures",
            "bid_tries",
            "self_failures",
            "self_checks",
            "other_failures",
            "other_checks",
            "failed_under_minimum",
            "failed_over_budget",
            "unanswered_bids",
            "format_failures",
            "answers",
        ]
    ].sum()
    div = lambda a, b: 100 * s[a] / s[b].replace(0, np.nan)  # noqa: E731
    return pd.DataFrame(
        {
            "failed bids": div("bid_failures", "bid_tries"),
            "self belief errors": div("self_failures", "self_checks"),
            "other belief errors": div("other_failures", "other_checks"),
            "CFR": 100
            * (s["bid_failures"] + s["self_failures"] + s["other_failures"])
            / (s["bid_tries"] + s["self_checks"] + s["other_checks"]).replace(0, np.nan),
            "under the minimum": div("failed_under_minimum", "bid_tries"),
            "over the budget": div("failed_over_budget", "bid_tries"),
            "unanswered": div("unanswered_bids", "bid_tries"),
            "format failures": div("format_failures", "answers"),
        }
    )


def errors(agents: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    rates = _pooled(agents)
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), layout="constrained")
    for ax, cols, title in (
        (
            axes[0],
            ["failed bids", "self belief errors", "other belief errors", "CFR"],
            "(a) the seed's rates, silence counted as failure",
        ),
        (
            axes[1],
            ["under the minimum", "over the budget", "unanswered", "format failures"],
            "(b) failed bids by kind (unanswered: a bid never given validly); format failures",
        ),
    ):
        x = np.arange(len(rates))
        width = 0.8 / len(cols)
        for k, col in enumerate(cols):
            ax.bar(
                x + (k - (len(cols) - 1) / 2) * width, rates[col].fillna(0), width=width, label=col
            )
        ax.set_xticks(x, rates.index, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("%")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"Figure 3: error rates pooled over {agents['episode_id'].nunique()} auctions "
        "(failed bids: of bid answers; belief errors: of checked fields; a decision never given "
        "validly: failed at every answer it had left; format: of answers)",
        fontsize=10,
    )
    return save(fig, path)


def priorities(plans: pd.DataFrame, path: Path, budget: float) -> Path:
    """``plans``: the metrics' ``plans`` frame (step, position, priority, name, order, budget)."""
    apply_theme()
    sub = plans[(plans["budget"] == budget) & plans["priority"].notna()]
    names = sorted(sub["name"].unique())
    orders = [o for o in ORDERS if o in set(sub["order"])]
    fig, axes = plt.subplots(
        max(len(orders), 1),
        max(len(names), 1),
        figsize=(2.6 * max(len(names), 1), 2.8 * max(len(orders), 1)),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    if not orders or not names:
        no_data(axes[0, 0], "no plans in ascending or descending auctions")
        return save(fig, path)
    im = None
    for r, order in enumerate(orders):
        for c, name in enumerate(names):
            ax = axes[r, c]
            cell = sub[(sub["order"] == order) & (sub["name"] == name)]
            grid = cell.pivot_table(
                index="step", columns="position", values="priority", aggfunc="mean"
            )
            if grid.empty:
                no_data(ax)
                continue
            im = ax.imshow(
                grid.to_numpy(dtype=float), vmin=1, vmax=3, cmap="viridis", aspect="auto"
            )
            ax.grid(False)
            ax.set_xticks(range(grid.shape[1]), [str(int(c) + 1) for c in grid.columns], fontsize=6)
            ax.set_yticks(range(grid.shape[0]), [str(int(r) + 1) for r in grid.index], fontsize=6)
            ax.set_title(f"{name}, {order}", fontsize=8)
            ax.set_xlabel("item (order presented)", fontsize=7)
            ax.set_ylabel("before item", fontsize=7)
            ax.label_outer()
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.6, label="mean priority")
    fig.suptitle(
        f"Figure 4: priorities in the plan in force before each item, budget ${budget:,.0f}",
        fontsize=10,
    )
    return save(fig, path)


def profit_bids(eng: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    budgets = sorted(eng["budget"].unique())
    orders = [o for o in ORDERS if o in set(eng["order"])]
    fig, axes = plt.subplots(
        len(budgets),
        max(len(orders), 1),
        figsize=(5 * max(len(orders), 1), 3.2 * len(budgets)),
        squeeze=False,
        sharey="row",
        layout="constrained",
    )
    palette = agent_palette(eng["name"])
    if not orders:
        no_data(axes[0, 0], "no ascending or descending auctions")
        return save(fig, path)
    for r, budget in enumerate(budgets):
        for c, order in enumerate(orders):
            ax = axes[r, c]
            sub = eng[(eng["order"] == order) & (eng["budget"] == budget)]
            bids = sub.groupby(["name", "start_price"])["n_bids"].mean()
            profit = sub[sub["won"] == 1].groupby(["name", "start_price"])["profit"].mean()
            g = pd.DataFrame({"bids": bids, "profit": profit}).dropna().reset_index()
            for name, h in g.groupby("name"):
                ax.scatter(
                    h["start_price"],
                    h["profit"],
                    s=20 + 40 * h["bids"],
                    alpha=0.55,
                    color=palette[name],
                    label=name,
                )
            ax.axhline(0, color="0.6", lw=0.8)
            ax.set_title(f"${budget:,.0f}, {order} start prices", fontsize=9)
            ax.set_xlabel("start price ($)")
        axes[r, 0].set_ylabel("mean profit per item won ($)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=7)
    fig.suptitle(
        "Figure 5: profit per item won by start price (circle area: mean bids on the item)",
        fontsize=10,
    )
    return save(fig, path)


def bip(bids: pd.DataFrame, path: Path, labels: Sequence[str]) -> Path:
    """``labels``: the brackets of ``bids["bip_range"]``, in their order."""
    apply_theme()
    labels = list(labels)
    shares = pd.crosstab(bids["name"], bids["bip_range"], normalize="index").reindex(
        columns=labels, fill_value=0
    )
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(len(shares), 1) + 1.5), layout="constrained")
    if shares.empty:
        no_data(ax)
        return save(fig, path)
    left = np.zeros(len(shares))
    colours = plt.get_cmap("RdYlBu_r")(np.linspace(0.1, 0.9, len(labels)))
    for label, colour in zip(labels, colours):
        ax.barh(shares.index, 100 * shares[label], left=left, color=colour, label=label)
        left += 100 * shares[label].to_numpy()
    ax.set_xlabel("% of valid bids")
    fig.legend(title="BIP (% of start price)", fontsize=7, loc="outside right upper")
    ax.set_title(f"Figure 6: bid increment percentage, {len(bids):,} valid bids", fontsize=10)
    return save(fig, path)


def ablation(agents: pd.DataFrame, path: Path, rate: Rate) -> Path:
    apply_theme()
    budgets = sorted(agents["budget"].unique())
    fig, axes = plt.subplots(
        1,
        len(budgets),
        figsize=(3.6 * len(budgets), 3.4),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    mode = agents.groupby("name")["plan_mode"].agg(
        lambda m: m.mode().iat[0] if len(m.mode()) else "none"
    )
    for ax, budget in zip(axes[0], budgets):
        sub = agents[agents["budget"] == budget]
        _rating_bars(ax, sub, rate, lambda p: MODE_COLOURS.get(mode.get(p, "none"), "0.5"))
        ax.set_title(f"${budget:,.0f} ({sub['episode_id'].nunique()} auctions)", fontsize=9)
    axes[0, 0].set_ylabel("TrueSkill mu")
    fig.legend(
        handles=[Patch(color=c, label=m) for m, c in MODE_COLOURS.items()],
        title="plan",
        fontsize=7,
        loc="outside right upper",
    )
    fig.suptitle(
        "Figure 7: TrueSkill by profit per budget, by plan mode (adaptive / static / none)",
        fontsize=10,
    )
    return save(fig, path)


def bidders_profit(eng: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    won = eng[eng["won"] == 1]
    budgets = sorted(eng["budget"].unique())
    fig, axes = plt.subplots(
        1,
        len(budgets),
        figsize=(4.2 * len(budgets), 3.4),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    palette = agent_palette(eng["name"])
    for ax, budget in zip(axes[0], budgets):
        sub = won[won["budget"] == budget]
        if sub.empty:
            no_data(ax)
            continue
        for name, g in sub.groupby("name"):
            m = pd.DataFrame(
                [
                    (n, *bootstrap_mean_ci(h["profit"].to_numpy(), n_boot=1000, seed=0))
                    for n, h in g.groupby("n_bidders")
                ],
                columns=["n", "mean", "lo", "hi"],
            )
            ax.errorbar(
                m["n"],
                m["mean"],
                yerr=error_extents(m["mean"], m["lo"], m["hi"]),
                marker="o",
                capsize=3,
                lw=1.2,
                color=palette[name],
                label=name,
            )
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xticks(sorted(set(won["n_bidders"])))
        ax.set_xlabel("bidders that bid on the item")
        ax.set_title(f"${budget:,.0f}", fontsize=9)
    axes[0, 0].set_ylabel("winner's profit on the item ($)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=7)
    fig.suptitle(
        f"Profit by the number of bidders on the item (means, {CONFIDENCE:.0%} "
        "bootstrap intervals over the items won)",
        fontsize=10,
    )
    return save(fig, path)


OBJECTIVE_COLOURS = {"maximize_profit": "#d62728", "maximize_items": "#1f77b4"}
OBJECTIVE_LABELS = {"maximize_profit": "profit bidders", "maximize_items": "item bidders"}


def objectives(eng: pd.DataFrame, objective: dict[str, str | None], path: Path) -> Path:
    """The seed's Figure 8: winning bids of profit bidders against item bidders, per budget."""
    apply_theme()
    won = eng[eng["won"] == 1].assign(objective=lambda e: e["name"].map(objective))
    won = won[won["objective"].isin(list(OBJECTIVE_COLOURS))]
    budgets = sorted(eng["budget"].unique())
    fig, axes = plt.subplots(
        1,
        max(len(budgets), 1),
        figsize=(4.2 * max(len(budgets), 1), 3.4),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    groups = {o: sorted(n for n, v in objective.items() if v == o) for o in OBJECTIVE_COLOURS}
    if won.empty:
        no_data(axes[0, 0], "no item won by a bidder with a stated objective")
        return save(fig, path)
    bins = np.linspace(0, float(won["price"].max()) * 1.05, 25)
    for ax, budget in zip(axes[0], budgets):
        sub = won[won["budget"] == budget]
        for goal, colour in OBJECTIVE_COLOURS.items():
            bids = sub.loc[sub["objective"] == goal, "price"].to_numpy(dtype=float)
            if not len(bids):
                continue
            ax.hist(
                bids,
                bins=bins,
                density=True,
                alpha=0.35,
                color=colour,
                label=f"{OBJECTIVE_LABELS[goal]} ({len(bids)} items won)",
            )
            if len(bids) > 1 and np.ptp(bids) > 0:
                grid = np.linspace(bins[0], bins[-1], 200)
                ax.plot(grid, gaussian_kde_1d(bids, grid), color=colour, lw=1.3)
        ax.set_title(f"budget ${budget:,.0f} ({sub['episode_id'].nunique()} auctions)", fontsize=9)
        ax.set_xlabel("winning bid ($)")
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("density")
    who = "; ".join(f"{OBJECTIVE_LABELS[o]}: {', '.join(n) or 'none'}" for o, n in groups.items())
    fig.suptitle(
        f"Figure 8: winning bids of profit bidders and item bidders (histogram and KDE)\n{who}",
        fontsize=9,
    )
    return save(fig, path)


def budget_profit(states: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    budgets = sorted(states["budget"].unique())
    fig, axes = plt.subplots(
        1,
        max(len(budgets), 1),
        figsize=(4.6 * max(len(budgets), 1), 3.4),
        squeeze=False,
        layout="constrained",
    )
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
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=7)
    fig.suptitle("Budget and profit over the auction, means over auctions", fontsize=10)
    return save(fig, path)


def tables(
    spearman: pd.DataFrame,
    board: pd.DataFrame,
    agents: pd.DataFrame,
    tables_dir: Path,
    instance: str,
) -> list[Path]:
    cols = [(p, w) for p in ("initial", "current") for w in ("engagement", "win")]
    rho = spearman.pivot_table(index="name", columns=["plan", "with"], values="rho", dropna=False)
    ci = spearman.assign(
        ci=[
            f"[{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else "-"
            for lo, hi in zip(spearman["lo"], spearman["hi"])
        ]
    ).pivot_table(
        index="name", columns=["plan", "with"], values="ci", aggfunc="first", dropna=False
    )
    table = pd.DataFrame(index=rho.index)
    for p, w in cols:
        if (p, w) in rho.columns:
            table[f"rho_{p}_{w}"] = rho[(p, w)]
            table[f"ci_{p}_{w}"] = ci[(p, w)]
    planless = sorted(set(agents["name"]) - set(spearman["name"]))
    caption = (
        "Table 1: Spearman correlation of an item's priority (initial plan r(1), and the plan "
        "in force before the item r(j)) with the bidder's engagement (valid bids) and winning, "
        "pooled over auctions, 95% cluster bootstrap intervals; a constant plan has none (-)."
        + (f" Without a plan, left out: {', '.join(planless)}." if planless else "")
    )
    out = list(write_frame(table.reset_index(), tables_dir / f"{instance}_table1", caption))
    shown = [
        "rank",
        "name",
        "role",
        "plan_mode",
        "mu",
        "mu_lo",
        "mu_hi",
        "sigma",
        "episodes",
        "profit_mean",
        "profit_lo",
        "profit_hi",
        "items_won",
        "failed_bid_rate",
        "self_error_rate",
        "other_error_rate",
        "cfr",
        "format_failure_rate",
        "mean_bip",
    ]
    caption = (
        "Board: TrueSkill by profit, mu the median over shuffled passes with the 95% bootstrap "
        "interval over auctions of that median (mu_lo, mu_hi); mean profit per auction with its "
        "95% interval; error rates as the seed defines them but with a decision never given validly "
        "counted as failed at every answer it had left (a format failure is not left out), means "
        "over auctions."
    )
    out += write_frame(
        board[[c for c in shown if c in board.columns]], tables_dir / f"{instance}_board", caption
    )
    return out


def draw_all(
    frames: dict[str, pd.DataFrame],
    board: pd.DataFrame,
    figures_dir: Path,
    tables_dir: Path,
    instance: str,
    passes: int,
    rate: Rate,
    bip_labels: Sequence[str],
    objective: dict[str, str | None] | None = None,
) -> list[Path]:
    """Every figure and table of the module docstring. ``rate``: the ratings of a subset of
    auctions (:data:`Rate`) over ``passes`` passes; ``bip_labels``: the BIP brackets in their
    order; ``objective``: roster name -> the objective it bids for (None: none stated)."""
    eng, plans, agents = frames["engagement"], frames["plans"], frames["agents"]
    return [
        trueskill_by_cell(agents, figures_dir / "fig2_trueskill.png", rate, passes),
        errors(agents, figures_dir / "fig3_errors.png"),
        *[
            priorities(plans, figures_dir / f"fig4_priorities_{int(b)}.png", b)
            for b in sorted(plans["budget"].unique())
        ],
        profit_bids(eng, figures_dir / "fig5_profit_bids.png"),
        bip(frames["bids"], figures_dir / "fig6_bip.png", bip_labels),
        ablation(agents, figures_dir / "fig7_ablation.png", rate),
        objectives(eng, objective or {}, figures_dir / "fig8_objectives.png"),
        bidders_profit(eng, figures_dir / "fig_profit_by_bidders.png"),
        budget_profit(frames["states"], figures_dir / "fig_budget_profit.png"),
        *tables(frames["spearman"], board, agents, tables_dir, instance),
    ]
