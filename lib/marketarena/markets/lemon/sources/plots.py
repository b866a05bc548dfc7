"""Figures and tables of an imported lemon instance (Agent Bazaar's own runs, ``agent_bazaar.py``):
the seed's Figure 4 from the authors' runs beside the same figure from our scripted sweep of the
same grid, their EAS beside ours, the replay of their steps under our rules. Every title says these are the authors' pre-release runs.

- ``fig4_authors.png``: rows (a) the Sybil revenue share per step, (b) bids (solid) and passes
  (dashed) per step, (c) the mean reputation of honest (solid) and Sybil (dashed) sellers per
  step (split by the seller's kind, retired identities' stubs dropped: the authors' own panel is
  empty for Sybils), (d) guardian vs base: the Sybil revenue share of the buyers the authors ran
  with their minimal prompt (their ``_base`` runs) against the same model with its default
  prompt, at the ``_base`` runs' K, reputation shown. One line per K, the mean over runs with a
  band of one standard deviation across runs (their scripts' band), reputation shown. Left: the
  authors' runs of the buyer models that ran every K of the grid (the seed's three frontier
  models; every model, said in the title, when none did: an import of a part of the grid), steps
  of a stopped run leave its mean; a panel with nothing to draw (only K = 0 runs) says so; right:
  our scripted sweep (the instance's reference, ``lemon/analysis/figure4.py``), its first buyer
  group in (a)-(c) and, in (d), its second group (base) against the first (guardian).
- ``their_score.png``: their EAS (their scripts/exp2_score.py) beside ours per model, one row per
  model sorted by ours with its rank under both (``plots/published_scores.py``), with the
  Spearman of the two orderings; the models their script scores none of the runs of (no run in
  the authors' grid: ``authors.NOT_IN_GRID``) are named under the title, and where that is every
  model the figure and the ``_their_score`` table say so instead of a score.
- tables ``<instance>_models`` (the buyers' board: our EAS with its 95% interval, and each model's
  invalid-answer rate where its prompt logs are present), ``_model_cells`` (per model and cell:
  Sybil revenue share, deceptive purchase rate, detection, volume and more), ``_their_score``,
  ``_replay`` (agreement per model and in total), ``_replay_rules`` and ``_reference_volume``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.markets.lemon.sources import authors
from marketarena.plots.published_scores import scores_beside, spearman_text
from marketarena.plots.style import apply_theme, no_data, save
from marketarena.plots.tables import write_frame

FRAMES = (
    "fig4_authors",
    "fig4_ours",
    "their_score",
    "replay_runs",
    "replay_rules",
    "reference_volume",
)
PRE_RELEASE = "the authors' pre-release runs (Agent Bazaar, logs-data of Market-v1)"
#: their scripts' colours by K (Okabe-Ito)
K_COLOURS = {0: "#999999", 3: "#56B4E9", 6: "#E69F00", 9: "#009E73"}


def k_colour(k: int, ks: list[int]) -> str:
    return K_COLOURS.get(k, plt.get_cmap("viridis")(ks.index(k) / max(len(ks) - 1, 1)))


def full_grid(series: pd.DataFrame, ks: list[int]) -> tuple[list[str], bool]:
    """The buyer groups (models) of ``series`` with runs at every K (reputation shown), and True;
    when none has (an import of a part of the grid), every group, and False."""
    shown = series[series["reputation_visible"].astype(bool)]
    if "base" in shown:
        shown = shown[~shown["base"].astype(bool)]
    cells = shown.groupby("buyer_group")["sybil"].unique()
    every = sorted(g for g, k in cells.items() if set(ks) <= set(k))
    return (every, True) if every else (sorted(cells.index), False)


def band(ax, frame: pd.DataFrame, column: str, colour, label: str | None, ls: str = "-") -> None:
    """The mean over episodes at each step and a band of one standard deviation across them."""
    per = frame.groupby("step")[column].agg(["mean", "std", "count"]).dropna(subset=["mean"])
    if per.empty:
        return
    sd = per["std"].fillna(0.0) * np.sqrt((per["count"] - 1) / per["count"])  # population SD
    ax.plot(per.index, per["mean"], color=colour, ls=ls, lw=1.4, label=label)
    ax.fill_between(per.index, per["mean"] - sd, per["mean"] + sd, color=colour, alpha=0.15, lw=0)


def panels(
    axes,
    series: pd.DataFrame,
    groups: list[str],
    base: tuple[str, str] | None,
    ks: list[int],
    k_d: int,
) -> None:
    """Rows (a)-(d) of one column: ``groups`` pooled in (a)-(c); (d) ``base`` = (the base
    group, the group it is compared with) at K ``k_d``."""
    shown = series[series["reputation_visible"].astype(bool)]
    main = shown[shown["buyer_group"].isin(groups)]
    for k in ks:
        sub, c = main[main["sybil"] == k], k_colour(k, ks)
        if k > 0:
            band(axes[0], sub, "sybil_revenue_share", c, f"K = {k}")
            band(axes[2], sub, "honest_reputation", c, f"K = {k} honest")
            band(axes[2], sub, "sybil_reputation", c, f"K = {k} Sybil", ls="--")
        band(axes[1], sub, "bids", c, f"K = {k} bids")
        band(axes[1], sub, "passes", c, f"K = {k} passes", ls="--")
    if base is None:
        no_data(axes[3], "no base runs")
    else:
        for group, colour, label in (
            (base[1], "C0", f"{base[1]} (default)"),
            (base[0], "C3", f"{base[0]}"),
        ):
            sub = shown[(shown["buyer_group"] == group) & (shown["sybil"] == k_d)]
            band(
                axes[3],
                sub,
                "sybil_revenue_share",
                colour,
                f"{label}: {sub['episode_id'].nunique()} runs",
            )
    for ax, label in zip(
        axes,
        (
            "Sybil revenue share",
            "buyers per step",
            "mean reputation",
            f"Sybil revenue share, K = {k_d}",
        ),
    ):
        ax.set_ylabel(label, fontsize=8)
        ax.set_xlabel("step")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, ncol=2)
        elif ax is not axes[3] or base is not None:
            no_data(
                ax, "no run with a Sybil cluster (K > 0)" if ax in (axes[0], axes[2]) else "no run"
            )
    axes[0].set_ylim(-0.03, 1.03)
    axes[2].set_ylim(-0.03, 1.03)
    axes[3].set_ylim(-0.03, 1.03)


def base_pair(series: pd.DataFrame) -> tuple[tuple[str, str] | None, int]:
    """(their base group, the default group of the same model) and the base runs' K."""
    if "base" not in series or not series["base"].astype(bool).any():
        return None, 6
    b = series[series["base"].astype(bool)]
    group, model = b["buyer_group"].iloc[0], b["model"].iloc[0]
    main = series[(series["model"] == model) & ~series["base"].astype(bool)]
    k = int(b["sybil"].mode().iloc[0])
    return ((group, main["buyer_group"].iloc[0]) if len(main) else None), k


def figure4(theirs: pd.DataFrame, ours: pd.DataFrame, mp, path: Path) -> Path:
    apply_theme()
    ks = sorted(set(mp.sybil))
    fig, axes = plt.subplots(4, 2, figsize=(11, 13), squeeze=False)
    if theirs.empty:
        for ax in axes[:, 0]:
            no_data(ax)
        models, whole = [], True
    else:
        models, whole = full_grid(theirs, ks)
        pair, k_d = base_pair(theirs)
        panels(axes[:, 0], theirs, models, pair, ks, k_d)
    if ours.empty:
        for ax in axes[:, 1]:
            no_data(ax, "no sweep (the reference stage)")
        groups = []
    else:
        groups = list(dict.fromkeys(ours["buyer_group"]))
        k_ours = 6 if 6 in ks else max(ks)
        panels(
            axes[:, 1],
            ours,
            groups[:1],
            (groups[1], groups[0]) if len(groups) > 1 else None,
            ks,
            k_ours,
        )
    n_theirs = theirs[theirs["buyer_group"].isin(models)]["episode_id"].nunique() if models else 0
    seeds = ours.groupby(["buyer_group", "sybil", "reputation_visible"])["episode_id"].nunique()
    axes[0, 0].set_title(
        f"the authors' runs: {', '.join(models) or 'none'}\n({n_theirs} runs"
        f"{'' if whole else '; no model ran every K of the grid: every model'})",
        fontsize=8,
    )
    axes[0, 1].set_title(
        f"our scripted sweep: {groups[0] if groups else '-'} buyers, "
        f"{int(seeds.min()) if len(seeds) else 0} seeds per cell",
        fontsize=8,
    )
    for ax, letter in zip(axes[:, 0], "abcd"):
        ax.text(-0.2, 1.02, f"({letter})", transform=ax.transAxes, fontsize=10, weight="bold")
    fig.suptitle(
        f"Figure 4 from {PRE_RELEASE} (left) and from our rules with scripted agents "
        f"(right)\nreputation shown, {mp.sellers} sellers, {mp.buyers} buyers, "
        f"{mp.discovery_limit} listings shown; mean ± 1 SD across runs",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def unscored(table: pd.DataFrame) -> str:
    """The models without their EAS and why (``their_note``), as a sentence; "" when none."""
    missing = table[table["their_eas"].isna()]
    if missing.empty:
        return ""
    notes = missing.get("their_note", pd.Series(authors.NOT_IN_GRID, index=missing.index))
    return "; ".join(
        f"{note or 'no score of theirs'}: {', '.join(g['model'])}"
        for note, g in missing.groupby(notes.fillna(""), sort=True)
    )


def scores(table: pd.DataFrame, rho: dict, path: Path) -> Path:
    shown = table.dropna(subset=["their_eas", "our_eas"])
    left_out = unscored(table)
    return scores_beside(
        table,
        "their_eas",
        "our_eas",
        "model",
        path,
        "their lemon EAS (exp2_score.py; ± SE)",
        "our EAS (fixed anchors; 95% interval)",
        f"Their score beside ours, {len(shown)} buyer models of {PRE_RELEASE}\n"
        f"{spearman_text(rho)}" + (f"\nwithout their score ({left_out})" if left_out else ""),
        theirs_err="their_se",
        empty=(
            authors.NOT_IN_GRID if table["their_eas"].isna().all() else "no model has both scores"
        ),
    )


def replay_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per buyer model and in total: runs, steps, the share of steps that agree (and per check),
    sellers reproduced, votes pinned and logged."""
    checks = [c for c in runs.columns if c.endswith("_agree") and c != "steps_agree"]
    w = runs.assign(
        **{c: runs[c] * runs["steps"] for c in ["steps_agree", *checks]},
        reproduced=runs["sellers_reproduced"] * runs["sellers"],
    )

    def total(g: pd.DataFrame) -> pd.Series:
        s = g[
            [
                "steps",
                "steps_agree",
                *checks,
                "sellers",
                "reproduced",
                "sales",
                "votes_pinned",
                "votes_logged",
            ]
        ].sum()
        out = pd.Series(
            {"runs": len(g), "steps": s["steps"], "steps_agree": s["steps_agree"] / s["steps"]}
        )
        for c in checks:
            out[c] = s[c] / s["steps"]
        out["sellers"] = s["sellers"]
        out["sellers_reproduced"] = s["reproduced"] / s["sellers"]
        out["sales"], out["votes_pinned"], out["votes_logged"] = (
            s["sales"],
            s["votes_pinned"],
            s["votes_logged"],
        )
        return out

    per = w.groupby("buyer_group").apply(total, include_groups=False).reset_index()
    every = total(w).to_frame().T.assign(buyer_group="all runs")
    out = pd.concat([per, every], ignore_index=True).rename(columns={"buyer_group": "model"})
    counts = ["runs", "steps", "sellers", "sales", "votes_pinned", "votes_logged"]
    return out.astype(dict.fromkeys(counts, "int64"))


def tables(
    frames: dict[str, pd.DataFrame],
    board: pd.DataFrame,
    mp,
    tables_dir: Path,
    instance: str,
    comparison: pd.DataFrame,
    rho: dict,
) -> list[Path]:
    market = frames["market"]
    out = []
    buyers = board[board["role"] == "buyer"]
    cols = [
        c
        for c in (
            "rank",
            "name",
            "episodes",
            "score_mean",
            "integrity",
            "welfare",
            "eas_mean",
            "eas_lo",
            "eas_hi",
            "answers",
            "invalid_answer_rate",
        )
        if c in buyers.columns
    ]
    out += write_frame(
        buyers[cols],
        tables_dir / f"{instance}_models",
        f"The buyer models of {PRE_RELEASE}, ranked by our EAS (fixed anchors; 95% "
        "bootstrap interval over their runs); answers re-parsed from the prompt "
        "logs where present (invalid: their engine turned it into a pass), NaN "
        "where no log survives.",
    )
    keys = ["buyer_group", "sybil", "reputation_visible"]
    cols = [
        c
        for c in (
            "volume",
            "volume_ratio",
            "sybil_revenue_share",
            "deceptive_purchase_rate",
            "sybil_detection_rate",
            "detection_chance",
            "surplus_per_purchase",
            "honest_reputation",
            "sybil_reputation",
            "identities_retired",
            "eas",
        )
        if c in market.columns
    ]
    cells = market.groupby(keys)[cols].mean().reset_index()
    cells.insert(3, "runs", market.groupby(keys).size().to_numpy())
    out += write_frame(
        cells.rename(columns={"buyer_group": "model"}),
        tables_dir / f"{instance}_model_cells",
        f"Per buyer model and cell of {PRE_RELEASE}: means over its runs.",
    )
    caption = (
        f"Their lemon EAS (exp2_score.py, run-level min-max within each model) beside our "
        f"EAS per model; Spearman of the two orderings ρ = {rho['rho']:.3f} "
        f"[{rho['lo']:.3f}, {rho['hi']:.3f}] (95% bootstrap over models), permutation "
        f"p = {rho['p_perm']:.3f}, n = {rho['n']} models."
        if not np.isnan(rho["rho"])
        else f"Their lemon EAS (exp2_score.py, run-level min-max within each model) beside our "
        f"EAS per model; {spearman_text(rho)}."
    )
    if comparison["their_eas"].isna().all():
        caption = (
            f"Their lemon EAS (exp2_score.py) beside our EAS per model: theirs for none "
            f"({unscored(comparison) or 'no model'}; their script reads only the runs "
            f"named <model folder>_k<K>_rep<r>_seed<s> with K in {list(authors.KS)} "
            f"and seeds in {list(authors.SEEDS)})."
        )
    elif comparison["their_eas"].isna().any():
        caption += f" Without their score: {unscored(comparison)}."
    out += write_frame(comparison, tables_dir / f"{instance}_their_score", caption)
    out += write_frame(
        replay_table(frames["replay_runs"]),
        tables_dir / f"{instance}_replay",
        "Their logged steps under our rules: the share that agree, per check.",
    )
    out += write_frame(
        frames["replay_rules"],
        tables_dir / f"{instance}_replay_rules",
        "Where our lemon rules and their engine differ, and what each explains.",
    )
    out += write_frame(
        frames["reference_volume"],
        tables_dir / f"{instance}_reference_volume",
        "The K = 0 volume (bids per step) each model's survival term divides by.",
    )
    return out


def draw_all(
    frames: dict[str, pd.DataFrame],
    board: pd.DataFrame,
    mp,
    figures_dir: Path,
    tables_dir: Path,
    instance: str,
) -> list[Path]:
    comparison, rho = authors.comparison(frames["their_score"], board)
    return [
        figure4(frames["fig4_authors"], frames["fig4_ours"], mp, figures_dir / "fig4_authors.png"),
        scores(comparison, rho, figures_dir / "their_score.png"),
        *tables(frames, board, mp, tables_dir, instance, comparison, rho),
    ]
