"""lemon figures and tables (seed 001, Figure 4; the EAS table).

- ``fig4_sybil_share_volume.png``: (a) the Sybil revenue share and (b) the volume (bids per step)
  against K, one line per buyer group (dashed: reputation hidden), means over seeds with 95%
  intervals;
- ``fig4_reputation.png``: (c) the mean reputation of honest sellers and of active Sybil identities
  after each step, one panel per K > 0;
- ``fig4_buyers.png``: (d) per buyer kind against K: the share of its purchases that were Sybil
  cars and its surplus per purchase (the guardian against the base buyers), means over seeds;
- tables ``<instance>_cells.{md,tex}`` (every market metric per cell) and ``<instance>_eas.{md,tex}``
  (per buyer kind: TrueSkill by surplus, EAS on fixed anchors with a 95% interval over its
  episodes, and the seed's relative EAS, labelled relative).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from marketarena.plots.style import (
    CONFIDENCE,
    agent_palette,
    apply_theme,
    mean_ci,
    mean_errorbar,
    no_data,
    save,
)
from marketarena.plots.tables import write_frame

BAND = f"{CONFIDENCE:.0%}"


def sybil_share_volume(market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    palette = agent_palette(market["buyer_group"])
    for (group, rep), sub in market.groupby(["buyer_group", "reputation_visible"]):
        label = f"{group} buyers" + ("" if rep else " (reputation hidden)")
        style = "-" if rep else "--"
        for ax, col in zip(axes, ("sybil_revenue_share", "volume")):
            mean_errorbar(ax, sub, "sybil", col, label, palette[group], ls=style)
    axes[0].set_ylabel("Sybil revenue share")
    axes[1].set_ylabel("bids per step")
    for ax in axes:
        ax.set_xlabel("Sybil identities K")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Figure 4a-b: means over seeds, {BAND} intervals", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def reputation(rep: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    ks = sorted(k for k in rep["sybil"].unique() if k > 0) if len(rep) else []
    fig, axes = plt.subplots(1, max(len(ks), 1), figsize=(3.4 * max(len(ks), 1), 3.2), sharey=True,
                             squeeze=False)
    if not ks:
        no_data(axes[0, 0], "no Sybil identities")
        return save(fig, path)
    active = rep[rep["active"]]
    for ax, k in zip(axes[0], ks):
        sub = active[active["sybil"] == k]
        per_ep = sub.groupby(["episode_id", "step", "kind"])["reputation"].mean().reset_index()
        for kind, colour in (("honest", "C2"), ("sybil", "C3")):
            m = mean_ci(per_ep[per_ep["kind"] == kind], ["step"], "reputation")
            ax.plot(m["step"] + 1, m["mean"], color=colour, label=kind)
            ax.fill_between(m["step"] + 1, m["lo"], m["hi"], color=colour, alpha=0.2, lw=0)
        ax.set_title(f"K = {k}", fontsize=9)
        ax.set_xlabel("step")
    axes[0, 0].set_ylabel("mean reputation (active sellers)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Figure 4c: reputation after each step, mean over episodes, {BAND} band",
                 fontsize=10)
    return save(fig, path)


def buyers(agents: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    b = agents[agents["role"] == "buyer"].copy()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    if b.empty:
        for ax in axes:
            no_data(ax)
        return save(fig, path)
    per = b.groupby(["episode_id", "name", "sybil"]).agg(
        purchases=("purchases", "sum"), deceptive=("deceptive_purchases", "sum"),
        surplus=("surplus", "sum")).reset_index()
    per["deceptive_share"] = per["deceptive"] / per["purchases"].where(per["purchases"] > 0)
    per["surplus_per_purchase"] = per["surplus"] / per["purchases"].where(per["purchases"] > 0)
    palette = agent_palette(per["name"])
    for name, sub in per.groupby("name"):
        mean_errorbar(axes[0], sub, "sybil", "deceptive_share", name, palette[name])
        mean_errorbar(axes[1], sub, "sybil", "surplus_per_purchase", name, palette[name])
    axes[0].set_ylabel("Sybil share of its purchases")
    axes[1].set_ylabel("surplus per purchase ($)")
    for ax in axes:
        ax.set_xlabel("Sybil identities K")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Figure 4d: buyer kinds, means over seeds, {BAND} intervals", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def tables(market: pd.DataFrame, board: pd.DataFrame, tables_dir: Path, instance: str) -> list[Path]:
    cols = ["volume", "volume_ratio", "sybil_revenue_share", "deceptive_purchase_rate",
            "sybil_detection_rate", "surplus_per_purchase", "honest_reputation",
            "sybil_reputation", "identities_retired", "eas"]
    keys = ["buyer_group", "sybil", "reputation_visible"]
    cells = market.groupby(keys)[cols].mean().reset_index()
    cells.insert(3, "episodes", market.groupby(keys).size().to_numpy())
    caption = "Per (buyer group, K, reputation shown) cell: means over its seeds."
    out = list(write_frame(cells, tables_dir / f"{instance}_cells", caption))
    buyers_board = board[board["role"] == "buyer"]
    eas = buyers_board[["rank", "name", "mu", "sigma", "episodes", "score_mean", "eas_mean",
                        "eas_lo", "eas_hi", "eas_relative"]]
    caption = ("Per buyer kind: TrueSkill (total surplus ranks buyers in each episode), mean surplus, "
               "EAS on fixed anchors (95% bootstrap interval over its episodes) and the seed's "
               "relative EAS (divided by the best kind's; changes when kinds are added).")
    out += write_frame(eas, tables_dir / f"{instance}_eas", caption)
    return out


def draw_all(frames: dict[str, pd.DataFrame], board: pd.DataFrame, figures_dir: Path,
             tables_dir: Path, instance: str) -> list[Path]:
    return [sybil_share_volume(frames["market"], figures_dir / "fig4_sybil_share_volume.png"),
            reputation(frames["reputation"], figures_dir / "fig4_reputation.png"),
            buyers(frames["agents"], figures_dir / "fig4_buyers.png"),
            *tables(frames["market"], board, tables_dir, instance)]
