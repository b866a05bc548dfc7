"""crash figures and tables (seed 001: Figure 3, appendix C, Figure 8, the spillover of 5.3; the
EAS table). Every interval is a 95% percentile bootstrap over the cell's episodes (seeds),
clipped to what the quantity can be (shares to [0, 1], prices and volumes to [0, inf)); every
title says what was run (seeds per cell, days, who competes).

- ``fig3_bankruptcy_grid.png``: the bankruptcy rate of all firms per (stabilizing firms x discovery
  limit) cell, mean over its seeds with the 95% interval in each cell (the seed's Figure 3 as a grid;
  with several stabilizer kinds, a row per number and kind);
- ``fig_spillover.png`` (an instance with several stabilizer kinds, ``stabilizers``): the seed's
  spillover (5.3): the competitors' survival (share of the T days a competitor seat was in the
  market) and bankruptcy rate beside each stabilizer kind, and with none, at one fixed mix of
  competitors, one line per discovery limit. A paired design (``CrashParams.paired``): replicate j
  of every cell has the same seed (the same consumers and seat streams) and the same number of
  firms (under ``add`` the none cell seats a filler competitor in the stabilizer's seat); the
  title says so;
- ``fig_competitors.png`` (an instance with one stabilizer kind): against the number of
  stabilizing firms, one line per discovery limit, (a) the competitors' bankruptcy rate, (b) their
  survival, (c) the stabilizers' own bankruptcy rate. Not the seed's spillover: under ``replace``
  the number of competitors falls as stabilizers are added (the title says so);
- ``fig_survival.png``: the share of firms still active on each day, one panel per discovery limit,
  one line per number of stabilizing firms (mean over the cell's episodes; a market that ended
  early counts 0 after its end); the legend sits outside the panels;
- ``fig8_days.png``: per day, the mean price over unit cost, the active firms and the units filled,
  one column per number of stabilizing firms, one line per discovery limit (mean over the cell's
  episodes, 95% band; the seed's Figure 8 is one setting: pooling limit 1's gouging with limit 5's
  near-cost prices would show neither regime);
- ``figC_price_volume_volatility.png``: price over unit cost, volume and price volatility against
  the number of stabilizing firms, one line per discovery limit (appendix C);
- tables ``<instance>_grid`` (every market metric per cell, mean over seeds),
  ``<instance>_spillover`` (per cell: competitor seats and their mix of kinds, the fillers' kinds
  in a paired design, the competitors' and the stabilizers' bankruptcy rates and the competitors'
  survival, with 95% intervals),
  ``<instance>_spillover_kinds`` (each competitor kind's survival by number of stabilizers) and
  ``<instance>_eas`` (per firm kind: TrueSkill, how its decisions were answered, profit, its
  EAS components from its own firms, the EAS on fixed anchors with a 95% interval over episodes,
  the seed's relative EAS, labelled relative, and the market's components of its episodes,
  labelled market_) and ``<instance>_eas_correlation`` (Pearson and Spearman of each pair of the
  market's components over the episodes, ``metrics.eas.component_correlations``).
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


CELL = ["discovery_limit", "stabilizing", "stabilizer"]


def what_ran(market: pd.DataFrame, mp) -> str:
    """One line for a title: seeds per cell, days, stabilizer and competitors."""
    n = market.groupby(CELL).size()
    seeds = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    who = ", ".join(mp.competitor_names())
    names = mp.stabilizer_names()
    stab = f"; stabilizer{'s' if len(names) > 1 else ''}: {', '.join(names)}" if names else ""
    return f"{seeds} seeds per cell, {mp.days} days; competitors: {who}{stab}"


def stabilizer_rows(market: pd.DataFrame, mp) -> pd.DataFrame:
    """``market`` with ``row``: the number of stabilizing firms, and their kind when the instance
    has several (``stabilizers``), ordered by number then by the roster's order of kinds."""
    names = mp.stabilizer_names()
    order = {n: i for i, n in enumerate(names)}
    several = len(names) > 1
    out = market.assign(
        row=[
            f"{s} {k}" if several and s > 0 else str(s)
            for s, k in zip(market["stabilizing"], market["stabilizer"])
        ],
        row_order=[
            (s, order.get(k, -1)) for s, k in zip(market["stabilizing"], market["stabilizer"])
        ],
    )
    return out


def bankruptcy_grid(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    market = stabilizer_rows(market, mp)
    rows = market.drop_duplicates("row").sort_values("row_order", kind="stable")["row"].tolist()
    m = mean_ci(
        market, ["row", "discovery_limit"], "bankruptcy_rate", method="bootstrap", bounds=SHARE
    )
    grid = m.pivot(index="row", columns="discovery_limit", values="mean").reindex(rows[::-1])
    fig, ax = plt.subplots(
        figsize=(1.8 + 1.4 * max(grid.shape[1], 1), 1.4 + 0.8 * max(grid.shape[0], 1))
    )
    if grid.empty:
        no_data(ax)
        return save(fig, path)
    lo = m.pivot(index="row", columns="discovery_limit", values="lo").reindex_like(grid)
    hi = m.pivot(index="row", columns="discovery_limit", values="hi").reindex_like(grid)
    im = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Reds", aspect="auto")
    ax.grid(False)
    for (r, c), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        interval = "" if np.isnan(lo.iat[r, c]) else f"\n[{lo.iat[r, c]:.2f}, {hi.iat[r, c]:.2f}]"
        ax.text(
            c,
            r,
            f"{v:.2f}{interval}",
            ha="center",
            va="center",
            color="white" if v > 0.6 else "black",
            fontsize=8,
        )
    ax.set_xticks(range(grid.shape[1]), grid.columns)
    ax.set_yticks(range(grid.shape[0]), grid.index)
    ax.set_xlabel("consumer discovery limit")
    ax.set_ylabel("stabilizing firms")
    fig.colorbar(im, ax=ax, label="bankruptcy rate (all firms)")
    ax.set_title(
        f"Bankruptcy rate, mean [{BAND} bootstrap interval]\n{what_ran(market, mp)}", fontsize=9
    )
    return save(fig, path)


def spillover(market: pd.DataFrame, mp, path: Path) -> Path:
    """The seed's spillover: competitors beside stabilizers of different quality at one mix."""
    apply_theme()
    names = ["none", *mp.stabilizer_names()]
    data = market.assign(kind=market["stabilizer"].replace("", "none"))
    data = data.assign(x=data["kind"].map({n: i for i, n in enumerate(names)}).astype(float))
    panels = [
        ("competitor_survival", "(a) competitors' survival\n(share of days in the market)"),
        ("competitor_bankruptcy_rate", "(b) competitors' bankruptcy rate"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 + 1.1 * len(names), 3.8), sharex=True)
    for ax, (col, label) in zip(axes, panels):
        sub = data.dropna(subset=[col])
        if sub.empty:
            no_data(ax)
            continue
        groups = sub.groupby(["discovery_limit", "stabilizing"])
        # the "none" cell (0 stabilizers) belongs to every line of its discovery limit
        lines = [(d, s) for d, s in groups.groups if s > 0] or list(groups.groups)
        for i, (d, s) in enumerate(lines):
            cells = sub[(sub["discovery_limit"] == d) & sub["stabilizing"].isin([0, s])]
            label_s = f"{s} stabilizing, " if len({s for _, s in lines}) > 1 else ""
            mean_errorbar(
                ax,
                cells,
                "x",
                col,
                f"{label_s}discovery limit {d}",
                offset=dodge(i, len(lines), 0.4),
                method="bootstrap",
                bounds=SHARE,
            )
        ax.set_ylim(-0.03, 1.03)
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
        ax.set_xlabel("stabilizer beside the competitors")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    seating = (
        "stabilizers replace competitor seats"
        if mp.stabilizer_seats == "replace"
        else f"stabilizers added to the same {mp.firms} competitor seats"
    )
    if mp.filler_seats(0):
        seating += ", filler competitors in the missing stabilizers' seats"
    paired = (
        f"; paired: seed k the same in every cell (the same consumers), "
        f"{market['firms'].max()} firms in every cell"
        if mp.paired and market["firms"].nunique() == 1
        else ""
    )
    fig.suptitle(
        f"Spillover (seed 5.3): competitors beside stabilizers of different quality, one "
        f"mix of competitors (means, {BAND} bootstrap intervals)\n{seating}{paired}\n"
        f"{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def competitors(market: pd.DataFrame, mp, path: Path) -> Path:
    """Competitors against the number of stabilizers (not the seed's spillover under replace)."""
    apply_theme()
    panels = [
        ("competitor_bankruptcy_rate", "(a) competitors' bankruptcy rate"),
        ("competitor_survival", "(b) competitors' survival\n(share of days in the market)"),
        ("stabilizer_bankruptcy_rate", "(c) stabilizers' bankruptcy rate"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 3.6), sharex=True)
    for ax, (col, label) in zip(axes, panels):
        data = market.dropna(subset=[col])
        if data.empty:
            no_data(ax)
            continue
        groups = data.groupby("discovery_limit")
        for i, (d, sub) in enumerate(groups):
            mean_errorbar(
                ax,
                sub,
                "stabilizing",
                col,
                f"discovery limit {d}",
                offset=dodge(i, groups.ngroups, 0.4),
                method="bootstrap",
                bounds=SHARE,
            )
        ax.set_ylim(-0.03, 1.03)
        ax.set_xticks(sorted(market["stabilizing"].unique()))
        ax.set_xlabel("stabilizing firms")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    if mp.stabilizer_seats == "replace":
        seating = (
            f"stabilizers replace competitor seats: {mp.firms} - S competitors, so this is "
            "not the seed's spillover (a better stabilizer at one mix: stabilizers: [...])"
        )
    else:
        seating = f"stabilizers added to the same {mp.firms} competitor seats"
    fig.suptitle(
        f"Competitors against the number of stabilizing firms ({seating}; means, "
        f"{BAND} bootstrap intervals)\n{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def survival(survival: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    dls = sorted(market["discovery_limit"].unique())
    fig, axes = plt.subplots(
        1, max(len(dls), 1), figsize=(3.6 * max(len(dls), 1), 3.4), sharey=True, squeeze=False
    )
    if survival.empty:
        no_data(axes[0, 0])
        return save(fig, path)
    stabs = sorted(market["stabilizing"].unique())
    styles = ["-", "--", "-.", ":"]
    for ax, d in zip(axes[0], dls):
        for k, s in enumerate(stabs):
            eps = market[(market["discovery_limit"] == d) & (market["stabilizing"] == s)][
                "episode_id"
            ]
            curves = [
                survival[survival["episode_id"] == ep]
                .set_index("step")["share_active"]
                .reindex(range(mp.days))
                .fillna(0.0)
                .to_numpy()
                for ep in eps
            ]
            if curves:
                ax.plot(
                    np.arange(1, mp.days + 1),
                    np.mean(curves, axis=0),
                    lw=1.5,
                    color=f"C{k}",
                    ls=styles[k % len(styles)],
                    label=f"{s} stabilizing ({len(curves)} episodes)",
                )
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("day")
        ax.set_title(f"discovery limit {d}", fontsize=9)
    axes[0, 0].set_ylabel("share of firms active")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.suptitle(
        f"Survival of firms (mean over each cell's episodes)\n{what_ran(market, mp)}", fontsize=9
    )
    fig.tight_layout()
    return save(fig, path)


def per_day(days: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    stab = sorted(days["stabilizing"].unique()) if len(days) else []
    limits = sorted(days["discovery_limit"].unique()) if len(days) else []
    rows = [
        ("price_over_cost", "mean price / unit cost"),
        ("active", "active firms"),
        ("filled", "units filled"),
    ]
    fig, axes = plt.subplots(
        len(rows),
        max(len(stab), 1),
        figsize=(3.2 * max(len(stab), 1), 6.5),
        sharex=True,
        sharey="row",
        squeeze=False,
    )
    if not stab:
        no_data(axes[0, 0])
        return save(fig, path)
    axes[1, 0].set_ylim(0, float(days["active"].max()) + 0.3)
    for c, s in enumerate(stab):
        for k, d in enumerate(limits):
            sub = days[(days["stabilizing"] == s) & (days["discovery_limit"] == d)]
            for r, (col, label) in enumerate(rows):
                ax = axes[r, c]
                m = mean_ci(sub, ["step"], col, method="bootstrap", bounds=POSITIVE, n_boot=1000)
                ax.plot(
                    m["step"] + 1,
                    m["mean"],
                    lw=1.1,
                    color=f"C{k}",
                    label=f"discovery limit {d} ({sub['episode_id'].nunique()} episodes)",
                )
                ax.fill_between(m["step"] + 1, m["lo"], m["hi"], color=f"C{k}", alpha=0.15, lw=0)
                if c == 0:
                    ax.set_ylabel(label, fontsize=8)
        axes[0, c].set_title(f"{s} stabilizing", fontsize=9)
        axes[-1, c].set_xlabel("day")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, [lab.split(" (")[0] for lab in labels], loc="upper right", fontsize=7)
    fig.suptitle(
        f"Per day, one line per discovery limit: mean over the cell's episodes with "
        f"{BAND} bootstrap band (days after a market's end are left out)\n"
        f"{what_ran(market, mp)}",
        fontsize=9,
    )
    return save(fig, path)


def appendix_c(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    panels = [
        ("mean_price_over_cost", "price / unit cost"),
        ("volume", "units filled per day"),
        ("price_volatility", "price volatility (SD / unit cost)"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.5))
    for ax, (col, label) in zip(axes, panels):
        groups = market.groupby("discovery_limit")
        for i, (d, sub) in enumerate(groups):
            mean_errorbar(
                ax,
                sub,
                "stabilizing",
                col,
                f"discovery limit {d}",
                offset=dodge(i, groups.ngroups, 0.4),
                method="bootstrap",
                bounds=POSITIVE,
            )
        ax.set_xticks(sorted(market["stabilizing"].unique()))
        ax.set_xlabel("stabilizing firms")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Appendix C: means over seeds with {BAND} bootstrap intervals\n{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def _with_ci(frame: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: each column's mean with its bootstrap interval, as ``m [lo, hi]``."""
    out = frame[keys].drop_duplicates().sort_values(keys)
    for col in cols:
        m = mean_ci(frame.dropna(subset=[col]), keys, col, method="bootstrap", bounds=SHARE)
        m[col] = [
            f"{a:.2f} [{b:.2f}, {c:.2f}]" if not np.isnan(b) else f"{a:.2f}"
            for a, b, c in zip(m["mean"], m["lo"], m["hi"])
        ]
        out = out.merge(m[[*keys, col]], on=keys, how="left")
    return out.fillna("–")


def tables(
    market: pd.DataFrame,
    agents: pd.DataFrame,
    board: pd.DataFrame,
    mp,
    tables_dir: Path,
    instance: str,
) -> list[Path]:
    from marketarena.metrics.eas import board_columns, component_correlations

    keys = CELL
    cols = [
        "bankruptcy_rate",
        "days_to_first_bankruptcy",
        "survival",
        "mean_price_over_cost",
        "price_volatility",
        "volume",
        "fill_rate",
        "consumer_surplus_share",
        "profit_per_firm_day",
        "operating_profit_per_firm_day",
        "profit_up_to_stable",
        "competitor_bankruptcy_rate",
        "stabilizer_bankruptcy_rate",
        "stability",
        "welfare",
        "profitability",
        "eas",
    ]
    grid = market.groupby(keys)[cols].mean().reset_index()
    grid.insert(3, "episodes", market.groupby(keys).size().to_numpy())
    caption = (
        f"Per (discovery limit, stabilizing firms, stabilizer) cell: means over its seeds "
        f"({what_ran(market, mp)}). EAS columns are the market's (every variable over all "
        f"its firms)."
    )
    out = list(write_frame(grid, tables_dir / f"{instance}_grid", caption))

    spill = _with_ci(
        market,
        keys,
        ["competitor_bankruptcy_rate", "competitor_survival", "stabilizer_bankruptcy_rate"],
    )
    comp = agents[agents["role"] == "competitor"]
    mix = comp.groupby(keys)["name"].agg(
        lambda n: ", ".join(
            f"{k} {v / len(n):.0%}" for k, v in n.value_counts().sort_index().items()
        )
    )
    seats = comp.groupby(keys).size() / market.groupby(keys).size()
    spill = spill.merge(seats.rename("competitor_seats").reset_index(), on=keys, how="left")
    spill = spill.merge(mix.rename("competitor_mix").reset_index(), on=keys, how="left")
    fill, fill_note = agents[agents["role"] == "filler"], ""
    if not fill.empty:  # a paired design's none cell: which competitor kinds filled in
        fillers = fill.groupby(keys)["name"].agg(
            lambda n: ", ".join(f"{k} {v}" for k, v in n.value_counts().sort_index().items())
        )
        spill = spill.merge(fillers.rename("fillers").reset_index(), on=keys, how="left")
        spill["fillers"] = spill["fillers"].fillna("")
        fill_note = (
            "; fillers: the competitor kinds that held a missing stabilizer's seat, so that "
            "every cell seats as many firms, and how many seats each"
        )
    caption = (
        f"The spillover: per cell, competitor seats per episode and their mix of kinds "
        f"(over the cell's seeds{fill_note}), the competitors' bankruptcy rate and survival (share of "
        f"the days in the market), the stabilizers' bankruptcy rate; means with {BAND} "
        f"bootstrap intervals over seeds ({what_ran(market, mp)})."
    )
    out += write_frame(spill, tables_dir / f"{instance}_spillover", caption)

    kinds = (
        comp.groupby(["name", "stabilizing", "stabilizer"])
        .agg(
            seats=("agent_id", "size"),
            survived=("survived", "mean"),
            active_share=("active_share", "mean"),
        )
        .reset_index()
    )
    caption = (
        "Each competitor kind by number of stabilizing firms and stabilizer (all discovery "
        "limits): its seats, the share of them that survived, and their mean share of days "
        "in the market."
    )
    out += write_frame(kinds, tables_dir / f"{instance}_spillover_kinds", caption)

    eas = board[
        board_columns(board, ("stability", "welfare", "profitability"), ("seats", "profit_mean"))
    ]
    caption = (
        "Per firm kind: TrueSkill (mean profit per seat ranks a kind in each episode), how "
        "its decisions were answered (valid at once, after re-asks, by the fallback), mean "
        "profit, its EAS components from its own firms (bankruptcy and price volatility, "
        "credited by the share of its days it traded; its customers' surplus, 0 without "
        "customers; its gross profit per trading day at prices up to a stable firm's), the EAS on "
        "fixed anchors (95% bootstrap interval over episodes), the seed's relative EAS "
        "(divided by the best kind's; changes when kinds are added), and the market's own "
        "components over its episodes (market_*: the markets it played in, not its score)."
    )
    out += write_frame(eas, tables_dir / f"{instance}_eas", caption)
    corr = component_correlations(market, ("stability", "welfare", "profitability"))
    caption = (
        "Pearson and Spearman of each pair of the market's EAS components over the episodes "
        "(|r| near 1 would mean one thing counted twice)."
    )
    out += write_frame(corr, tables_dir / f"{instance}_eas_correlation", caption)
    return out


def draw_all(
    frames: dict[str, pd.DataFrame],
    board: pd.DataFrame,
    mp,
    figures_dir: Path,
    tables_dir: Path,
    instance: str,
) -> list[Path]:
    market = frames["market"]
    study = (
        spillover(market, mp, figures_dir / "fig_spillover.png")
        if mp.paired
        else competitors(market, mp, figures_dir / "fig_competitors.png")
    )
    return [
        bankruptcy_grid(market, mp, figures_dir / "fig3_bankruptcy_grid.png"),
        study,
        survival(frames["survival"], market, mp, figures_dir / "fig_survival.png"),
        per_day(frames["days"], market, mp, figures_dir / "fig8_days.png"),
        appendix_c(market, mp, figures_dir / "figC_price_volume_volatility.png"),
        *tables(market, frames["agents"], board, mp, tables_dir, instance),
    ]
