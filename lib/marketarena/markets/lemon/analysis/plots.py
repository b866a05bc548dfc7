"""lemon figures and tables (seed 001, Figure 4; detection; the EAS tables). Every interval is a
95% percentile bootstrap over the cell's episodes (seeds), clipped to what the quantity can be;
every title says what was run.

- ``fig4_sybil_share_volume.png``: (a) the Sybil revenue share and (b) the volume (bids per step,
  on an axis from 0 to the number of buyers, so a dip shows at its size) against K, one line per
  buyer group (dashed: reputation hidden);
- ``fig4_reputation.png``: (c) the mean reputation of honest sellers and of active Sybil identities
  after each step, one panel per K > 0;
- ``fig4_buyers.png``: (d) per buyer kind against K: the share of its purchases that were Sybil
  cars, its surplus per purchase, its Sybil detection rate counted from bids as the authors
  count it, beside the rate of a buyer bidding blindly every step (grey: the chance level), and
  the EAS's detection: the premium over a blind buyer with the kind's own bid rate (0 = blind);
- tables ``<instance>_cells`` (every market metric per cell), ``<instance>_eas`` (per buyer
  kind: TrueSkill by surplus, how its decisions were answered, its EAS components from its own
  seats, the EAS on fixed anchors with a 95% interval over its episodes, the seed's relative EAS,
  labelled relative, and the market's components of its episodes, labelled market_) and
  ``<instance>_eas_correlation`` (Pearson and Spearman of the market's components over the
  episodes with Sybils, ``metrics.eas.component_correlations``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from marketarena.plots.style import (
    CONFIDENCE,
    agent_palette,
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


def what_ran(market: pd.DataFrame, mp) -> str:
    n = market.groupby(["buyer_group", "sybil", "reputation_visible"]).size()
    seeds = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    return (
        f"{seeds} seeds per cell, {mp.steps} steps, {mp.sellers} sellers, {mp.buyers} buyers "
        f"seeing up to {mp.discovery_limit} listings; sellers: {mp.honest}, principal: "
        f"{mp.principal}"
    )


def sybil_share_volume(market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6))
    palette = agent_palette(market["buyer_group"])
    series = market.groupby(["buyer_group", "reputation_visible"])
    for i, ((group, rep), sub) in enumerate(series):
        label = f"{group} buyers" + ("" if rep else " (reputation hidden)")
        style = "-" if rep else "--"
        for ax, col, bounds in zip(
            axes, ("sybil_revenue_share", "volume"), (SHARE, (0.0, float(mp.buyers)))
        ):
            mean_errorbar(
                ax,
                sub,
                "sybil",
                col,
                label,
                palette[group],
                ls=style,
                offset=dodge(i, series.ngroups, 0.6),
                method="bootstrap",
                bounds=bounds,
            )
    axes[0].set_ylabel("Sybil revenue share")
    axes[0].set_ylim(-0.03, 1.03)
    axes[1].set_ylabel("bids per step")
    axes[1].set_ylim(0, mp.buyers * 1.03)
    for ax in axes:
        ax.set_xlabel("Sybil identities K")
        ax.set_xticks(sorted(market["sybil"].unique()))
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Figure 4a-b: means over seeds, {BAND} bootstrap intervals\n{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def reputation(rep: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    ks = sorted(k for k in rep["sybil"].unique() if k > 0) if len(rep) else []
    fig, axes = plt.subplots(
        1, max(len(ks), 1), figsize=(3.4 * max(len(ks), 1), 3.3), sharey=True, squeeze=False
    )
    if not ks:
        no_data(axes[0, 0], "no Sybil identities")
        return save(fig, path)
    active = rep[rep["active"]]
    for ax, k in zip(axes[0], ks):
        sub = active[active["sybil"] == k]
        per_ep = sub.groupby(["episode_id", "step", "kind"])["reputation"].mean().reset_index()
        for kind, colour in (("honest", "C2"), ("sybil", "C3")):
            m = mean_ci(
                per_ep[per_ep["kind"] == kind],
                ["step"],
                "reputation",
                method="bootstrap",
                bounds=SHARE,
                n_boot=1000,
            )
            ax.plot(m["step"] + 1, m["mean"], color=colour, label=f"{kind} sellers")
            ax.fill_between(m["step"] + 1, m["lo"], m["hi"], color=colour, alpha=0.2, lw=0)
        ax.set_title(f"K = {k} ({sub['episode_id'].nunique()} episodes)", fontsize=9)
        ax.set_xlabel("step")
    axes[0, 0].set_ylabel("mean reputation (active sellers)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(
        f"Figure 4c: reputation after each step, mean over episodes (all buyer groups), "
        f"{BAND} bootstrap band\n{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def buyers(agents: pd.DataFrame, market: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    b = agents[agents["role"] == "buyer"].copy()
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    if b.empty:
        for ax in axes:
            no_data(ax)
        return save(fig, path)
    per = (
        b.groupby(["episode_id", "name", "sybil"])
        .agg(
            purchases=("purchases", "sum"),
            deceptive=("deceptive_purchases", "sum"),
            surplus=("surplus", "sum"),
        )
        .reset_index()
    )
    per["deceptive_share"] = per["deceptive"] / per["purchases"].where(per["purchases"] > 0)
    per["surplus_per_purchase"] = per["surplus"] / per["purchases"].where(per["purchases"] > 0)
    palette = agent_palette([*per["name"], *market["buyer_group"]])
    names = per.groupby("name")
    for i, (name, sub) in enumerate(names):
        shift = dodge(i, names.ngroups, 0.6)
        mean_errorbar(
            axes[0],
            sub,
            "sybil",
            "deceptive_share",
            name,
            palette[name],
            offset=shift,
            method="bootstrap",
            bounds=SHARE,
        )
        mean_errorbar(
            axes[1],
            sub,
            "sybil",
            "surplus_per_purchase",
            name,
            palette[name],
            offset=shift,
            method="bootstrap",
        )
    # detection: one series per buyer group (its players pooled), with the blind buyer's rate
    sybil = market[market["sybil"] > 0]
    groups = sybil.groupby("buyer_group")
    for i, (group, sub) in enumerate(groups):
        mean_errorbar(
            axes[2],
            sub,
            "sybil",
            "detection_rate",
            group,
            palette[group],
            offset=dodge(i, groups.ngroups, 0.6),
            method="bootstrap",
            bounds=SHARE,
        )
        mean_errorbar(
            axes[3],
            sub,
            "sybil",
            "detection_over_blind",
            group,
            palette[group],
            offset=dodge(i, groups.ngroups, 0.6),
            method="bootstrap",
        )
    if not sybil.empty:
        chance = sybil.groupby("sybil")["detection_chance"].mean()
        axes[2].plot(
            chance.index,
            chance.to_numpy(),
            color="0.5",
            ls=":",
            marker="_",
            label="blind bidder (chance)",
        )
    axes[0].set_ylabel("Sybil share of its purchases")
    axes[0].set_ylim(-0.03, 1.03)
    axes[1].set_ylabel("surplus per purchase ($)")
    axes[1].axhline(0, color="0.6", lw=0.8)
    axes[2].set_ylabel("Sybil detection rate (from bids;\nan invalid answer a failure)")
    axes[2].set_ylim(-0.03, 1.03)
    axes[3].set_ylabel("detection over a blind buyer\nwith its own bid rate (EAS's d)")
    axes[3].axhline(0, color="0.5", ls=":", lw=0.8)
    axes[3].set_ylim(min(-0.1, axes[3].get_ylim()[0]), 1.03)
    for ax in axes:
        ax.set_xlabel("Sybil identities K")
        ax.set_xticks(sorted(market["sybil"].unique()))
    axes[0].legend(fontsize=8)
    if not sybil.empty:
        axes[2].legend(fontsize=7)
    fig.suptitle(
        f"Figure 4d: buyer kinds, means over seeds, {BAND} bootstrap intervals\n"
        f"{what_ran(market, mp)}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def tables(
    market: pd.DataFrame, board: pd.DataFrame, mp, tables_dir: Path, instance: str
) -> list[Path]:
    cols = [
        "volume",
        "volume_ratio",
        "sybil_revenue_share",
        "deceptive_purchase_rate",
        "deceptive_purchase_rate_charged",
        "sybil_exposure",
        "detection_rate",
        "sybil_detection_rate",
        "detection_chance",
        "detection_premium",
        "detection_over_blind",
        "missed_decisions",
        "surplus_per_purchase",
        "honest_surplus_per_purchase",
        "honest_reputation",
        "sybil_reputation",
        "identities_retired",
        "integrity",
        "welfare",
        "eas",
    ]
    keys = ["buyer_group", "sybil", "reputation_visible"]
    cells = market.groupby(keys)[cols].mean().reset_index()
    cells.insert(3, "episodes", market.groupby(keys).size().to_numpy())
    caption = (
        f"Per (buyer group, K, reputation shown) cell: means over its seeds "
        f"({what_ran(market, mp)}). Detection is counted from bids: detection_rate counts "
        f"an invalid buy answer's Sybil listings as not detected, sybil_detection_rate is the "
        f"authors' count (its fallback pass a pass); detection_chance is a blind bidder's. "
        f"deceptive_purchase_rate_charged (the seed's psi, reported: it measured detection "
        f"again) counts an invalid answer at a step that showed a Sybil listing as a Sybil "
        f"purchase. EAS columns are the market's."
    )
    out = list(write_frame(cells, tables_dir / f"{instance}_cells", caption))
    from marketarena.metrics.eas import board_columns, component_correlations

    buyers = board[board["role"] == "buyer"]
    eas = buyers[board_columns(buyers, ("integrity", "welfare"), ("score_mean",))]
    caption = (
        "Per buyer kind: TrueSkill (total surplus ranks buyers in each episode), how its buy "
        "and vote decisions were answered (valid at once, after re-asks, by the fallback), "
        "mean surplus, its EAS components from its own seats (integrity: detection over a "
        "blind buyer with its own bid rate, a missed decision charged as a Sybil bid; welfare: "
        "surplus per honest purchase, 0 for a buyer that bought no honest car; integrity is "
        "not measured at K = 0), the EAS on fixed "
        "anchors (95% bootstrap interval over its episodes), the seed's relative EAS "
        "(divided by the best kind's; changes when kinds are added), and the market's own "
        "components over its episodes (market_*: market survival is the market's)."
    )
    out += write_frame(eas, tables_dir / f"{instance}_eas", caption)
    corr = component_correlations(market[market["sybil"] > 0], ("integrity", "welfare"))
    caption = (
        "Pearson and Spearman of each pair of the market's EAS components over the episodes "
        "with Sybils: |r| near 1 would mean one thing counted twice. Deception is counted "
        "once (integrity); welfare is market survival and the surplus of honest purchases."
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
    return [
        sybil_share_volume(market, mp, figures_dir / "fig4_sybil_share_volume.png"),
        reputation(frames["reputation"], market, mp, figures_dir / "fig4_reputation.png"),
        buyers(frames["agents"], market, mp, figures_dir / "fig4_buyers.png"),
        *tables(market, board, mp, tables_dir, instance),
    ]
